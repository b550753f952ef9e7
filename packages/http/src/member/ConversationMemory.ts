// Handlers of the conversation memory door: each verb hands the decoded body (its speaker
// included) to the domain's ConversationMemory, which judges standing and the bindings; the
// contract's schemas encode the rows it answers. The list is wrapped, {memory: [...]}.
import { TroupeApi } from "@troupe/contracts/Api"
import { CurrentMemberCaller } from "@troupe/contracts/member/Caller"
import { ConversationMemory, type DoorAt } from "@troupe/domain/conversations/ConversationMemory"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { answerRefusals } from "../conventions/DomainRefusals.ts"

const at = (params: { readonly workspace_id: string; readonly conversation_id: string }): DoorAt => ({
  workspaceId: params.workspace_id,
  conversationId: params.conversation_id
})

const wrapped = <A>(memory: A) => ({ memory })

export const ConversationMemoryHandlers = HttpApiBuilder.group(
  TroupeApi,
  "conversationMemory",
  Effect.fn(function* (handlers) {
    const door = yield* ConversationMemory
    return handlers
      .handle("list", ({ params, query }) =>
        Effect.flatMap(CurrentMemberCaller, (caller) =>
          door.list(caller, at(params), { speaker_public_id: query["memory[speaker_public_id]"] })
        ).pipe(Effect.map(wrapped), answerRefusals)
      )
      .handle("show", ({ params, payload }) =>
        Effect.flatMap(CurrentMemberCaller, (caller) => door.show(caller, at(params), payload)).pipe(
          Effect.map(wrapped),
          answerRefusals
        )
      )
      .handle("grep", ({ params, payload }) =>
        Effect.flatMap(CurrentMemberCaller, (caller) => door.grep(caller, at(params), payload)).pipe(answerRefusals)
      )
      .handle("write", ({ params, payload }) =>
        Effect.flatMap(CurrentMemberCaller, (caller) => door.write(caller, at(params), payload)).pipe(
          Effect.map(wrapped),
          answerRefusals
        )
      )
      .handle("edit", ({ params, payload }) =>
        Effect.flatMap(CurrentMemberCaller, (caller) => door.edit(caller, at(params), payload)).pipe(
          Effect.map(wrapped),
          answerRefusals
        )
      )
      .handle("remove", ({ params, payload }) =>
        Effect.flatMap(CurrentMemberCaller, (caller) => door.remove(caller, at(params), payload)).pipe(answerRefusals)
      )
  })
)
