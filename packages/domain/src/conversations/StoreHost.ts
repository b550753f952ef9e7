// A conversation as a store-entry host (spec "Member: store entries"; supplement "Access, default
// runner, messaging, memory, store"): the workspace host's rules over the conversation's standing.
// Reads need read level; writes full level, write standing and a conversation not archived. The
// entries themselves are memory/StoreEntries.ts's (a fork copies them under new ids).
import { Effect } from "effect"
import type { Caller } from "../accounts/Caller.ts"
import type { StoreEntryHost } from "../memory/StoreEntries.ts"
import { Conversations } from "./Conversations.ts"
import { unarchived } from "./Settings.ts"

/** The conversation's host, once the caller may read it (`read`) or write to it (`write`). */
export const conversationStoreHost = (
  caller: Caller,
  workspaceId: string,
  conversationId: string,
  intent: "read" | "write"
) =>
  Effect.gen(function* () {
    const standing = yield* (yield* Conversations).standing(caller, workspaceId, conversationId, intent)
    if (intent === "write") yield* unarchived(standing)
    return { kind: "conversation", id: standing.row.id } satisfies StoreEntryHost
  })
