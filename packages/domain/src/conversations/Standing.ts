// Who may do what to a conversation (supplement "Standing"): visible when its workspace is and
// the caller's level is not none (else 404, like absence); the level is full for the creator and
// the answerer, else the caller's access entry, else access.default. Writes add, in order: a read
// level is 403 not_authorized, then the workspace's write standing.
import type { ConversationRow, StandingWorkspace } from "@troupe/storage/repositories/Conversations"
import { Effect } from "effect"
import type { Caller } from "../accounts/Caller.ts"
import { Absent, NotPermitted, StateConflict } from "../kernel/Refusals.ts"
import { passesFence } from "../workspaces/DedicationFence.ts"

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

/**
 * Whether two accesses are the same replacement: the default, then each entry's principal and level
 * in order (the stored row comes back from jsonb with its members reordered, so never compare text).
 */
export const sameAccess = (a: StoredAccess, b: StoredAccess) =>
  a.default === b.default &&
  a.entries.length === b.entries.length &&
  a.entries.every(
    (entry, index) => entry.user_id === b.entries[index]?.user_id && entry.level === b.entries[index]?.level
  )

/** The caller's level; storage repositories/ConversationLevel.ts is its SQL form (keep the two in step). */
export const levelOf = (
  row: Pick<ConversationRow, "creator_id" | "answerer_id" | "access">,
  caller: { readonly user: Pick<Caller["user"], "id"> }
): Level => {
  if (row.creator_id === caller.user.id || row.answerer_id === caller.user.id) return "full"
  const access = storedAccess(row)
  const entry = access.entries.find((each) => each.user_id === String(caller.user.id))
  return entry?.level ?? access.default
}

/** Workspaces' seeing: the caller's account, not tombstoned, owned by its human or account-wide. */
export const seesWorkspace = (workspace: StandingWorkspace, caller: Caller) =>
  workspace.account_id === caller.human.accountId &&
  workspace.state !== "tombstoned" &&
  (workspace.owner_id === caller.human.id || workspace.access_mode === "account_wide")

/** Workspaces' write standing past seeing: the dedication fence, then active. */
export const writeStanding = Effect.fnUntraced(function* (workspace: StandingWorkspace, caller: Caller) {
  if (!(yield* passesFence(workspace.dedicated_agent_id, caller.user))) {
    return yield* new NotPermitted({
      code: "workspace_agent_identifier_mismatch",
      message: "This workspace is dedicated to another agent"
    })
  }
  if (workspace.state !== "active") {
    return yield* new StateConflict({ code: "workspace_not_active", message: "The workspace is not active" })
  }
})

/** What an answerer's write standing reads of a workspace: who sees it and whom it is dedicated to. */
export type WorkspaceWriters = Pick<StandingWorkspace, "owner_id" | "access_mode" | "dedicated_agent_id">

/**
 * Whether the agent `agent` may write in the workspace, as an answerer must (spec "Create rules";
 * supplement "Inputs": fenced is not eligible): its steward sees the workspace, and the dedication
 * fence passes it. A named definition passes the fence where its declarer does (instance scope)
 * or always (steward scope); only an agent the fence would refuse costs a read.
 */
export const agentWrites = Effect.fnUntraced(function* (
  workspace: WorkspaceWriters,
  agent: { readonly id: bigint; readonly steward_id: bigint | null }
) {
  const steward = agent.steward_id
  if (steward === null || (steward !== workspace.owner_id && workspace.access_mode !== "account_wide")) return false
  return yield* passesFence(workspace.dedicated_agent_id, { id: agent.id, kind: "agent" })
})

/**
 * The standing judged from one read of a workspace and a conversation in it (the repository's
 * `standingOf`): unseen workspace, absent, tombstoned or none level is 404; for a write, a read
 * level is 403 not_authorized, then the workspace's write standing.
 */
export const judgeStanding = (
  found: { readonly workspace: StandingWorkspace; readonly conversation: ConversationRow | undefined } | undefined,
  caller: Caller,
  need: "read" | "write"
) =>
  Effect.gen(function* () {
    if (found === undefined || !seesWorkspace(found.workspace, caller)) {
      return yield* new Absent({ code: "not_found", message: "Not found" })
    }
    const { workspace, conversation: row } = found
    if (!row || row.state === "tombstoned")
      return yield* new Absent({ code: "not_found", message: "No such conversation" })
    const level = levelOf(row, caller)
    if (level === "none") return yield* new Absent({ code: "not_found", message: "No such conversation" })
    if (need === "write") {
      if (level === "read") {
        return yield* new NotPermitted({ code: "not_authorized", message: "Read access does not permit writes" })
      }
      yield* writeStanding(workspace, caller)
    }
    return { workspace, row, level }
  })
