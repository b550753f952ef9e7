// Handlers of the conversation store-entry host: the host found by the domain (read level for
// reads; full level, write standing and not archived for writes), then the five operations every
// host shares (storeEntryRequests). An unseen conversation answers like absence.
import { TroupeApi } from "@troupe/contracts/Api"
import { CurrentMemberCaller } from "@troupe/contracts/member/Caller"
import { Conversations } from "@troupe/domain/conversations/Conversations"
import { conversationStoreHost } from "@troupe/domain/conversations/StoreHost"
import { StoreEntries } from "@troupe/domain/memory/StoreEntries"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { answerRefusals } from "../conventions/DomainRefusals.ts"
import { storeEntryRequests } from "./StoreEntries.ts"

export const ConversationStoreEntriesHandlers = HttpApiBuilder.group(
  TroupeApi,
  "conversationStoreEntries",
  Effect.fn(function* (handlers) {
    const entries = yield* StoreEntries
    const conversations = yield* Conversations
    const host = (params: { readonly workspace_id: string; readonly conversation_id: string }, write: boolean) =>
      Effect.flatMap(CurrentMemberCaller, (caller) =>
        conversationStoreHost(caller, params.workspace_id, params.conversation_id, write ? "write" : "read")
      ).pipe(Effect.provideService(Conversations, conversations), answerRefusals)
    const withEntries = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      Effect.provideService(effect, StoreEntries, entries)
    return handlers
      .handle("list", ({ params, query }) =>
        withEntries(Effect.flatMap(host(params, false), (h) => storeEntryRequests.list(h, query)))
      )
      .handle("create", ({ params, payload }) =>
        withEntries(Effect.flatMap(host(params, true), (h) => storeEntryRequests.create(h, payload)))
      )
      .handle("show", ({ params }) =>
        withEntries(Effect.flatMap(host(params, false), (h) => storeEntryRequests.show(h, params.store_entry_id)))
      )
      .handle("update", ({ params, payload }) =>
        withEntries(
          Effect.flatMap(host(params, true), (h) => storeEntryRequests.update(h, params.store_entry_id, payload))
        )
      )
      .handle("remove", ({ params, query }) =>
        withEntries(
          Effect.flatMap(host(params, true), (h) => storeEntryRequests.remove(h, params.store_entry_id, query))
        )
      )
  })
)
