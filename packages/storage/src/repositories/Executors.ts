// Rows of `executors`: delivery addresses (agent applications, runners, tool providers) with
// their authority epoch and announcement.
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { isUuid } from "../Ids.ts"

export type ExecutorKind = "agent_application" | "runner" | "tool_provider"
export type AssignmentScope = "agent_private" | "user_private" | "account_wide"

export interface ExecutorRow {
  readonly id: bigint
  readonly public_id: string
  readonly account_id: bigint
  readonly kind: ExecutorKind
  readonly status: "active" | "revoked"
  readonly display_name: string
  readonly credential_epoch: number
  readonly manager_id: bigint
  readonly registration_identifier: string | null
  readonly agent_id: bigint | null
  readonly assignment_scope: AssignmentScope
  readonly announcement: {
    readonly tools: ReadonlyArray<unknown>
    readonly environment: unknown
    readonly documents: ReadonlyArray<unknown>
  }
  readonly last_seen_at: Date | null
  readonly connected_at: Date | null
  readonly created_at: Date
  readonly updated_at: Date
  readonly revoked_at: Date | null
}

export const insertExecutor = Effect.fnUntraced(function* (executor: {
  readonly publicId: string
  readonly accountId: bigint
  readonly kind: ExecutorKind
  readonly displayName: string
  readonly managerId: bigint
  readonly registrationIdentifier: string | null
  readonly agentId: bigint | null
  readonly assignmentScope: AssignmentScope
  readonly now: Date
}) {
  const sql = yield* SqlClient
  const rows = yield* sql<ExecutorRow>`
    INSERT INTO executors (public_id, account_id, kind, display_name, manager_id, registration_identifier, agent_id,
                           assignment_scope, created_at, updated_at)
    VALUES (${executor.publicId}, ${executor.accountId}, ${executor.kind}, ${executor.displayName},
            ${executor.managerId}, ${executor.registrationIdentifier}, ${executor.agentId},
            ${executor.assignmentScope}, ${executor.now}, ${executor.now})
    RETURNING *`
  return rows[0]!
})

export const findExecutorById = Effect.fnUntraced(function* (id: bigint) {
  const sql = yield* SqlClient
  const rows = yield* sql<ExecutorRow>`SELECT * FROM executors WHERE id = ${id}`
  return rows[0]
})

export const findExecutorByPublicId = Effect.fnUntraced(function* (publicId: string) {
  if (!isUuid(publicId)) return undefined
  const sql = yield* SqlClient
  const rows = yield* sql<ExecutorRow>`SELECT * FROM executors WHERE public_id = ${publicId}`
  return rows[0]
})

/** The live machine address registered by `managerId` under `registrationIdentifier`. */
export const findLiveRegistration = Effect.fnUntraced(function* (
  accountId: bigint,
  managerId: bigint,
  registrationIdentifier: string
) {
  const sql = yield* SqlClient
  const rows = yield* sql<ExecutorRow>`
    SELECT * FROM executors
    WHERE account_id = ${accountId} AND manager_id = ${managerId}
      AND registration_identifier = ${registrationIdentifier} AND status = 'active'
    FOR UPDATE`
  return rows[0]
})

export const findLiveAgentApplication = Effect.fnUntraced(function* (agentId: bigint) {
  const sql = yield* SqlClient
  const rows = yield* sql<ExecutorRow>`
    SELECT * FROM executors WHERE agent_id = ${agentId} AND kind = 'agent_application' AND status = 'active'
    FOR UPDATE`
  return rows[0]
})

/** Advances the authority epoch (fencing every credential of the previous one); renames it. */
export const advanceEpoch = Effect.fnUntraced(function* (id: bigint, displayName: string, now: Date) {
  const sql = yield* SqlClient
  const rows = yield* sql<ExecutorRow>`
    UPDATE executors SET credential_epoch = credential_epoch + 1, display_name = ${displayName}, updated_at = ${now}
    WHERE id = ${id} RETURNING *`
  return rows[0]!
})

export const revokeExecutor = Effect.fnUntraced(function* (publicId: string, now: Date) {
  const sql = yield* SqlClient
  yield* sql`
    UPDATE executors SET status = 'revoked', revoked_at = ${now}, updated_at = ${now}
    WHERE public_id = ${publicId} AND status = 'active'`
})

export const replaceAnnouncement = Effect.fnUntraced(function* (
  id: bigint,
  announcement: ExecutorRow["announcement"],
  now: Date
) {
  const sql = yield* SqlClient
  const rows = yield* sql<ExecutorRow>`
    UPDATE executors SET announcement = ${JSON.stringify(announcement)}::jsonb, updated_at = ${now}
    WHERE id = ${id} RETURNING *`
  return rows[0]!
})

/**
 * Active machines (runners, tool providers) a member may discover: account-wide ones, the
 * user-private ones of `managerId`, and the agent-private ones of the given agents.
 */
export const listDiscoverable = Effect.fnUntraced(function* (filter: {
  readonly accountId: bigint
  readonly managerId: bigint
  readonly agentIds: ReadonlyArray<bigint>
  readonly kind: "runner" | "tool_provider" | undefined
  readonly publicId: string | undefined
}) {
  const sql = yield* SqlClient
  return yield* sql<ExecutorRow & { readonly agent_public_id: string | null }>`
    SELECT e.*, a.public_id AS agent_public_id
    FROM executors e LEFT JOIN users a ON a.id = e.agent_id
    WHERE e.account_id = ${filter.accountId} AND e.status = 'active' AND e.kind IN ('runner', 'tool_provider')
      AND ${filter.kind === undefined ? sql`true` : sql`e.kind = ${filter.kind}`}
      AND ${filter.publicId === undefined ? sql`true` : sql`e.public_id = ${filter.publicId}`}
      AND (e.assignment_scope = 'account_wide'
           OR (e.assignment_scope = 'user_private' AND e.manager_id = ${filter.managerId})
           OR (e.assignment_scope = 'agent_private' AND e.agent_id = ANY(${[...filter.agentIds]}::bigint[])))
    ORDER BY e.display_name, e.public_id`
})

/** The agents a human stewards. */
export const stewardedAgentIds = Effect.fnUntraced(function* (stewardId: bigint) {
  const sql = yield* SqlClient
  const rows = yield* sql<{ id: bigint }>`SELECT id FROM users WHERE kind = 'agent' AND steward_id = ${stewardId}`
  return rows.map((row) => row.id)
})

/** Presence marks: an inbox subscription opened or closed, or the executor was heard from. */
export const markPresence = Effect.fnUntraced(function* (
  id: bigint,
  mark: "connected" | "seen" | "disconnected",
  now: Date
) {
  const sql = yield* SqlClient
  yield* sql`
    UPDATE executors SET
      last_seen_at = ${now},
      connected_at = ${mark === "connected" ? sql`${now}` : mark === "disconnected" ? sql`NULL` : sql`connected_at`}
    WHERE id = ${id}`
})

/** The machines a human connected (runners and tool providers), live ones first. */
export const listManagedMachines = Effect.fnUntraced(function* (managerId: bigint) {
  const sql = yield* SqlClient
  return yield* sql<ExecutorRow>`
    SELECT * FROM executors
    WHERE manager_id = ${managerId} AND kind IN ('runner', 'tool_provider')
    ORDER BY status, display_name, id`
})
