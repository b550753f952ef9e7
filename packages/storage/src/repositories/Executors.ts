// Rows of `executors`: delivery addresses (agent applications, runners, tool providers) with
// their authority epoch and announcement.
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

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
