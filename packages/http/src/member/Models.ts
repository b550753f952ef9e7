// Handler of GET /agent_api/v1/models: the catalog's rows (ModelCatalog) for any member
// credential. Accounts have no cost unit until budgets give them one, so prices read unit null.
import { TroupeApi } from "@troupe/contracts/Api"
import { ModelCatalog } from "@troupe/domain/models/ModelCatalog"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"

export const ModelsHandlers = HttpApiBuilder.group(
  TroupeApi,
  "models",
  Effect.fn(function* (handlers) {
    const catalog = yield* ModelCatalog
    return handlers.handle("list", ({ query }) =>
      Effect.map(catalog.rows({ workload: query.workload, costUnit: null }), (models) => ({ models }))
    )
  })
)
