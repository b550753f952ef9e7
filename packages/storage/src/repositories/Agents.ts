// Agent users: rows of `users` with kind agent, keyed by (account, agent_identifier), each
// stewarded by one human.
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { isUuid } from "../Ids.ts"
import type { UserRow } from "./Accounts.ts"

export interface AgentRow extends UserRow {
  readonly agent_identifier: string
  readonly steward_id: bigint
  readonly steward_generation: number
}

export const findAgentByIdentifier = Effect.fnUntraced(function* (accountId: bigint, agentIdentifier: string) {
  const sql = yield* SqlClient
  const rows = yield* sql<AgentRow>`
    SELECT * FROM users WHERE account_id = ${accountId} AND kind = 'agent' AND agent_identifier = ${agentIdentifier}
    FOR UPDATE`
  return rows[0]
})

export const findAgentByPublicId = Effect.fnUntraced(function* (publicId: string) {
  if (!isUuid(publicId)) return undefined
  const sql = yield* SqlClient
  const rows = yield* sql<AgentRow>`SELECT * FROM users WHERE public_id = ${publicId} AND kind = 'agent'`
  return rows[0]
})

export const insertAgent = Effect.fnUntraced(function* (agent: {
  readonly publicId: string
  readonly accountId: bigint
  readonly agentIdentifier: string
  readonly displayName: string
  readonly handle: string
  readonly stewardId: bigint
  readonly stewardGeneration: number
  readonly now: Date
}) {
  const sql = yield* SqlClient
  const rows = yield* sql<AgentRow>`
    INSERT INTO users (public_id, account_id, kind, role, display_name, handle, agent_identifier, steward_id,
                       steward_generation, created_at, updated_at)
    VALUES (${agent.publicId}, ${agent.accountId}, 'agent', 'member', ${agent.displayName}, ${agent.handle},
            ${agent.agentIdentifier}, ${agent.stewardId}, ${agent.stewardGeneration}, ${agent.now}, ${agent.now})
    RETURNING *`
  return rows[0]!
})

/** A winning connection: the agent is active again, under the steward's current generation. */
export const reconnectAgent = Effect.fnUntraced(function* (
  id: bigint,
  displayName: string,
  stewardGeneration: number,
  now: Date
) {
  const sql = yield* SqlClient
  const rows = yield* sql<AgentRow>`
    UPDATE users SET status = 'active', display_name = ${displayName}, steward_generation = ${stewardGeneration},
                     updated_at = ${now}
    WHERE id = ${id} RETURNING *`
  return rows[0]!
})

export const listStewardedAgents = Effect.fnUntraced(function* (stewardId: bigint) {
  const sql = yield* SqlClient
  return yield* sql<
    AgentRow & { readonly application_public_id: string | null; readonly application_epoch: number | null }
  >`
    SELECT u.*, e.public_id AS application_public_id, e.credential_epoch AS application_epoch
    FROM users u
    LEFT JOIN executors e ON e.agent_id = u.id AND e.kind = 'agent_application' AND e.status = 'active'
    WHERE u.kind = 'agent' AND u.steward_id = ${stewardId}
    ORDER BY u.display_name, u.id`
})

export const setAgentStatus = Effect.fnUntraced(function* (id: bigint, status: "active" | "removed", now: Date) {
  const sql = yield* SqlClient
  yield* sql`UPDATE users SET status = ${status}, updated_at = ${now} WHERE id = ${id} AND kind = 'agent'`
})
