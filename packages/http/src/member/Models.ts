// Handler of GET /agent_api/v1/models: the catalog's rows (ModelCatalog) for any member
// credential. Prices read in the account's cost unit (null while unset).
import { TroupeApi } from "@troupe/contracts/Api"
import { Budgets } from "@troupe/domain/budgets/Budgets"
import { ModelCatalog } from "@troupe/domain/models/ModelCatalog"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"

export const ModelsHandlers = HttpApiBuilder.group(
  TroupeApi,
  "models",
  Effect.fn(function* (handlers) {
    const catalog = yield* ModelCatalog
    const budgets = yield* Budgets
    return handlers.handle("list", ({ query }) =>
      Effect.gen(function* () {
        const costUnit = yield* budgets.costUnit
        return { models: yield* catalog.rows({ workload: query.workload, costUnit }) }
      })
    )
  })
)
