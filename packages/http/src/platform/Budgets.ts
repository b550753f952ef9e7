// Handlers of Platform: budgets (domain/budgets/Budgets.ts): the caller acts as the administrator;
// the domain judges the gate, the members and the ledger, and its refusals answer by code. Open and
// adjust name their entry, and revocation the budget's revocation, by the request's Idempotency-Key.
import { TroupeApi } from "@troupe/contracts/Api"
import { CurrentPlatformCaller } from "@troupe/contracts/platform/Caller"
import { Budgets } from "@troupe/domain/budgets/Budgets"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { answerRefusals } from "../conventions/DomainRefusals.ts"

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
