// Who may do what to a conversation (supplement "Standing"): visible when its workspace is and
// the caller's level is not none (else 404, like absence); the level is full for the creator and
// the answerer, else the caller's access entry, else access.default. Writes add, in order: a read
// level is 403 not_authorized, then the workspace's write standing.
import type { ConversationRow } from "@troupe/storage/repositories/Conversations"
import type { Caller } from "../accounts/Caller.ts"

export type Level = "full" | "read" | "none"

/** The stored access: entries carry both ids (the internal one for judging, the public one for answers). */
export interface StoredAccess {
  readonly default: Level
  readonly entries: ReadonlyArray<{ readonly user_id: string; readonly user_public_id: string; readonly level: Level }>
}

export const storedAccess = (row: Pick<ConversationRow, "access">): StoredAccess => {
  const access = row.access as Partial<StoredAccess> | null
  return { default: access?.default ?? "full", entries: access?.entries ?? [] }
}

export const levelOf = (row: Pick<ConversationRow, "creator_id" | "answerer_id" | "access">, caller: Caller): Level => {
  if (row.creator_id === caller.user.id || row.answerer_id === caller.user.id) return "full"
  const access = storedAccess(row)
  const entry = access.entries.find((each) => each.user_id === String(caller.user.id))
  return entry?.level ?? access.default
}
