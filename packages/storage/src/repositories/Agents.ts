// Agent users: rows of `users` with kind agent, keyed by (account, agent_identifier), each
// stewarded by one human.
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { isUuid } from "../Ids.ts"
import { UserRow } from "./Accounts.ts"
import * as Rows from "./Rows.ts"

/** A user row of kind agent: its identifier, steward and steward generation are never null. */
export const AgentRow = Schema.Struct({
  ...UserRow.fields,
  agent_identifier: Schema.String,
  steward_id: Schema.BigInt,
  steward_generation: Schema.Number
})
export type AgentRow = typeof AgentRow.Type

const byIdentifier = Rows.maybe("Agents.findAgentByIdentifier", {
  Request: Schema.Struct({ accountId: Schema.BigInt, agentIdentifier: Schema.String }),
  Result: AgentRow,
  execute: ({ accountId, agentIdentifier }, sql) => sql`
    SELECT * FROM users WHERE account_id = ${accountId} AND kind = 'agent' AND agent_identifier = ${agentIdentifier}
    FOR UPDATE`
})

const findAgentByIdentifier = (accountId: bigint, agentIdentifier: string) =>
  byIdentifier({ accountId, agentIdentifier })

const byPublicId = Rows.maybe("Agents.findAgentByPublicId", {
  Request: Schema.Struct({ publicId: Schema.String }),
  Result: AgentRow,
  execute: ({ publicId }, sql) => sql`SELECT * FROM users WHERE public_id = ${publicId} AND kind = 'agent'`
})

const findAgentByPublicId = Effect.fnUntraced(function* (publicId: string) {
  if (!isUuid(publicId)) return undefined
  return yield* byPublicId({ publicId })
})

const insertAgent = Rows.one("Agents.insertAgent", {
  Request: Schema.Struct({
    publicId: Schema.String,
    accountId: Schema.BigInt,
    agentIdentifier: Schema.String,
    displayName: Schema.String,
    handle: Schema.String,
    stewardId: Schema.BigInt,
    stewardGeneration: Schema.Number,
    now: Schema.Date
  }),
  Result: AgentRow,
  execute: (agent, sql) => sql`
    INSERT INTO users (public_id, account_id, kind, role, display_name, handle, agent_identifier, steward_id,
                       steward_generation, created_at, updated_at)
    VALUES (${agent.publicId}, ${agent.accountId}, 'agent', 'member', ${agent.displayName}, ${agent.handle},
            ${agent.agentIdentifier}, ${agent.stewardId}, ${agent.stewardGeneration}, ${agent.now}, ${agent.now})
    RETURNING *`
})

const reconnect = Rows.one("Agents.reconnectAgent", {
  Request: Schema.Struct({
    id: Schema.BigInt,
    displayName: Schema.String,
    stewardGeneration: Schema.Number,
    now: Schema.Date
  }),
  Result: AgentRow,
  execute: ({ id, displayName, stewardGeneration, now }, sql) => sql`
    UPDATE users SET status = 'active', display_name = ${displayName}, steward_generation = ${stewardGeneration},
                     updated_at = ${now}
    WHERE id = ${id} RETURNING *`
})

/** A winning connection: the agent is active again, under the steward's current generation. */
const reconnectAgent = (id: bigint, displayName: string, stewardGeneration: number, now: Date) =>
  reconnect({ id, displayName, stewardGeneration, now })

/** An agent with its live agent application, when it has one. */
export const StewardedAgentRow = Schema.Struct({
  ...AgentRow.fields,
  application_public_id: Schema.NullOr(Schema.String),
  application_epoch: Schema.NullOr(Schema.Number)
})
export type StewardedAgentRow = typeof StewardedAgentRow.Type

const stewarded = Rows.all("Agents.listStewardedAgents", {
  Request: Schema.Struct({ stewardId: Schema.BigInt }),
  Result: StewardedAgentRow,
  execute: ({ stewardId }, sql) => sql`
    SELECT u.*, e.public_id AS application_public_id, e.credential_epoch AS application_epoch
    FROM users u
    LEFT JOIN executors e ON e.agent_id = u.id AND e.kind = 'agent_application' AND e.status = 'active'
    WHERE u.kind = 'agent' AND u.steward_id = ${stewardId}
    ORDER BY u.display_name, u.id`
})

const listStewardedAgents = (stewardId: bigint) => stewarded({ stewardId })

const setAgentStatus = Effect.fnUntraced(function* (id: bigint, status: "active" | "removed", now: Date) {
  const sql = yield* SqlClient
  yield* sql`UPDATE users SET status = ${status}, updated_at = ${now} WHERE id = ${id} AND kind = 'agent'`
})

export class AgentsRepository extends Context.Service<AgentsRepository>()("@troupe/storage/AgentsRepository", {
  make: Effect.map(SqlClient, (sql) =>
    Rows.bind(sql, {
      findAgentByIdentifier,
      findAgentByPublicId,
      insertAgent,
      reconnectAgent,
      listStewardedAgents,
      setAgentStatus
    })
  )
}) {
  static readonly layer = Layer.effect(AgentsRepository, AgentsRepository.make)
}
