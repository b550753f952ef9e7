// Handlers of Member: context. The estimate (a read), a manual compaction and a candidate's sealed
// request; the domain (ConversationContext) judges standing, models and what may run now, and its
// refusals are answered by `answerRefusals`.
import { TroupeApi } from "@troupe/contracts/Api"
import { CurrentMemberCaller, type MemberCaller } from "@troupe/contracts/member/Caller"
import { ConversationContext } from "@troupe/domain/conversations/ContextEstimate"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { answerRefusals } from "../conventions/DomainRefusals.ts"

export const ConversationContextHandlers = HttpApiBuilder.group(
  TroupeApi,
  "conversationContext",
  Effect.fn(function* (handlers) {
    const context = yield* ConversationContext
    const command = <A, E>(run: (caller: MemberCaller) => Effect.Effect<A, E>) =>
      Effect.flatMap(CurrentMemberCaller, run).pipe(answerRefusals)

    return handlers
      .handle("estimate", ({ params, payload }) =>
        command((caller) =>
          context
            .estimate(caller, params.workspace_id, params.conversation_id, payload)
            .pipe(Effect.map((estimate) => ({ context_estimate: estimate })))
        )
      )
      .handle("compaction", ({ params, payload }) =>
        command((caller) => context.compaction(caller, params.workspace_id, params.conversation_id, payload))
      )
      .handle("sealedRequest", ({ params }) =>
        command((caller) =>
          context.sealedRequest(caller, params.workspace_id, params.conversation_id, params.turn_id, params.variant_id)
        )
      )
  })
)
