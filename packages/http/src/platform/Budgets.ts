// Handlers of Platform: budgets (domain/budgets/Budgets.ts): the caller acts as the administrator;
// the domain judges the gate, the members and the ledger, and its refusals answer by code. Open and
// adjust name their entry, and revocation the budget's revocation, by the request's Idempotency-Key.
// BudgetAdministrator refuses a caller who is not an owner or admin before the key is judged.
import { TroupeApi } from "@troupe/contracts/Api"
import { errors } from "@troupe/contracts/Errors"
import { BudgetAdministrator } from "@troupe/contracts/platform/Budgets"
import { CurrentPlatformCaller } from "@troupe/contracts/platform/Caller"
import { Budgets } from "@troupe/domain/budgets/Budgets"
import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { answerRefusals } from "../conventions/DomainRefusals.ts"

export const BudgetAdministratorLive = Layer.succeed(BudgetAdministrator, (httpEffect) =>
  Effect.gen(function* () {
    const { role } = (yield* CurrentPlatformCaller).user
    if (role !== "owner" && role !== "admin") {
      return yield* errors.forbidden("administrator_required", "Only a signed-in owner or admin administers budgets")
    }
    return yield* httpEffect
  })
)

export const BudgetsHandlers = HttpApiBuilder.group(
  TroupeApi,
  "budgets",
  Effect.fn(function* (handlers) {
    const budgets = yield* Budgets
    const actorId = Effect.map(CurrentPlatformCaller, (caller) => caller.user.id)
    return handlers
      .handle("costUnit", ({ payload }) =>
        Effect.flatMap(actorId, (actor) => budgets.configureCostUnit(actor, payload)).pipe(
          Effect.map((unit) => ({ account: { cost_unit: unit } })),
          answerRefusals
        )
      )
      .handle("open", ({ params, payload, headers }) =>
        Effect.flatMap(actorId, (actor) =>
          budgets.open(actor, params.user_public_id, payload, headers["idempotency-key"])
        ).pipe(
          Effect.map((budget) => ({ budget })),
          answerRefusals
        )
      )
      .handle("adjust", ({ params, payload, headers }) =>
        Effect.flatMap(actorId, (actor) =>
          budgets.adjust(actor, params.user_public_id, params.public_id, payload, headers["idempotency-key"])
        ).pipe(answerRefusals)
      )
      .handle("revoke", ({ params, payload, headers }) =>
        Effect.flatMap(actorId, (actor) =>
          budgets.revoke(actor, params.user_public_id, params.public_id, payload, headers["idempotency-key"])
        ).pipe(
          Effect.map((budget) => ({ budget })),
          answerRefusals
        )
      )
  })
)
