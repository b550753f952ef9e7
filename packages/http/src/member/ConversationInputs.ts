// Handlers of Member: conversation inputs. The domain judges what needs the catalog and the
// people; the conversation's actor holds the queue bound, the fences and the drain.
import { TroupeApi } from "@troupe/contracts/Api"
import { CurrentMemberCaller, type MemberCaller } from "@troupe/contracts/member/Caller"
import { Inputs } from "@troupe/domain/conversations/Inputs"
import { flagParameter } from "@troupe/domain/kernel/Flags"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { answerRefusals } from "../conventions/DomainRefusals.ts"

export const ConversationInputsHandlers = HttpApiBuilder.group(
  TroupeApi,
  "conversationInputs",
  Effect.fn(function* (handlers) {
    const inputs = yield* Inputs
    const command = <A, E>(run: (caller: MemberCaller) => Effect.Effect<A, E>) =>
      Effect.flatMap(CurrentMemberCaller, run)

    return handlers
      .handle("list", ({ params }) =>
        command((caller) => inputs.list(caller, params.workspace_id, params.conversation_id)).pipe(answerRefusals)
      )
      .handle("create", ({ params, payload, request }) =>
        command((caller) =>
          inputs.create(
            caller,
            params.workspace_id,
            params.conversation_id,
            payload,
            request.headers["idempotency-key"]
          )
        ).pipe(
          Effect.map((input) => ({ input })),
          answerRefusals
        )
      )
      .handle("update", ({ params, payload }) =>
        command((caller) =>
          inputs.edit(caller, params.workspace_id, params.conversation_id, params.input_id, payload)
        ).pipe(
          Effect.map((input) => ({ input })),
          answerRefusals
        )
      )
      .handle("remove", ({ params }) =>
        command((caller) => inputs.remove(caller, params.workspace_id, params.conversation_id, params.input_id)).pipe(
          answerRefusals
        )
      )
      .handle("reorder", ({ params, payload }) =>
        command((caller) => inputs.reorder(caller, params.workspace_id, params.conversation_id, payload.inputs)).pipe(
          answerRefusals
        )
      )
      .handle("materialization", ({ params, query }) =>
        Effect.gen(function* () {
          const includeHidden = yield* flagParameter(query.include_hidden, "include_hidden")
          const materialization = yield* inputs.materialization(
            yield* CurrentMemberCaller,
            params.workspace_id,
            params.conversation_id,
            params.input_id,
            includeHidden
          )
          return { materialization }
        }).pipe(answerRefusals)
      )
  })
)
