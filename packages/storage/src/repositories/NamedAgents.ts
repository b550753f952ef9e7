// Named agent definitions: agent users (kind agent) declared by a paired agent, with their side
// row in `named_agents` (name, scope, description, system prompt, revision). The configuration
// lives on the user row (`users.configuration`), like any agent's.
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { AgentRow } from "./Agents.ts"
import * as Rows from "./Rows.ts"

export const NamedScope = Schema.Literals(["instance", "steward"])
export type NamedScope = typeof NamedScope.Type

export const NamedAgentRow = Schema.Struct({
  ...AgentRow.fields,
  derived_from_id: Schema.BigInt,
  derived_from_public_id: Schema.String,
  steward_public_id: Schema.String,
  name: Schema.String,
  scope: NamedScope,
  description: Schema.String,
  system_prompt: Schema.NullOr(Schema.String),
  revision: Schema.Number
})
export type NamedAgentRow = typeof NamedAgentRow.Type

const selectNamed = (sql: SqlClient) => sql`
  SELECT u.*, n.derived_from_id, d.public_id AS derived_from_public_id, s.public_id AS steward_public_id,
         n.name, n.scope, n.description, n.system_prompt, n.revision
  FROM named_agents n
  JOIN users u ON u.id = n.user_id
  JOIN users d ON d.id = n.derived_from_id
  JOIN users s ON s.id = u.steward_id`

const agentRowByIdentifier = Rows.maybe("NamedAgents.findAgentRowByIdentifier", {
  Request: Schema.Struct({ accountId: Schema.BigInt, agentIdentifier: Schema.String }),
  Result: Schema.Struct({ ...AgentRow.fields, named: Schema.Boolean }),
  execute: ({ accountId, agentIdentifier }, sql) => sql`
    SELECT u.*, EXISTS (SELECT 1 FROM named_agents n WHERE n.user_id = u.id) AS named
    FROM users u WHERE u.account_id = ${accountId} AND u.kind = 'agent' AND u.agent_identifier = ${agentIdentifier}`
})

/** The agent row holding `agent_identifier` in the account, named or paired, removed included. */
const findAgentRowByIdentifier = (accountId: bigint, agentIdentifier: string) =>
  agentRowByIdentifier({ accountId, agentIdentifier })

const byName = Rows.maybe("NamedAgents.findByName", {
  Request: Schema.Struct({ derivedFromId: Schema.BigInt, name: Schema.String, lock: Schema.Boolean }),
  Result: NamedAgentRow,
  execute: ({ derivedFromId, name, lock }, sql) => sql`
    ${selectNamed(sql)} WHERE n.derived_from_id = ${derivedFromId} AND n.name = ${name}
    ${lock ? sql`FOR UPDATE OF n, u` : sql``}`
})

/** A declarer's definition by name (active or removed); `lock` takes the row for update. */
const findByName = (derivedFromId: bigint, name: string, lock = false) => byName({ derivedFromId, name, lock })

const byUserId = Rows.maybe("NamedAgents.findByUserId", {
  Request: Schema.Struct({ userId: Schema.BigInt }),
  Result: NamedAgentRow,
  execute: ({ userId }, sql) => sql`${selectNamed(sql)} WHERE n.user_id = ${userId}`
})

const findByUserId = (userId: bigint) => byUserId({ userId })

const visible = Rows.all("NamedAgents.listVisible", {
  Request: Schema.Struct({ declarerId: Schema.BigInt, stewardId: Schema.BigInt }),
  Result: NamedAgentRow,
  execute: ({ declarerId, stewardId }, sql) => sql`
    ${selectNamed(sql)}
    WHERE u.status = 'active' AND u.steward_id = ${stewardId}
      AND (n.derived_from_id = ${declarerId} OR n.scope = 'steward')
    ORDER BY u.display_name, u.id`
})

/** The declarer's own active rows of both scopes plus the steward's other published rows. */
const listVisible = (declarerId: bigint, stewardId: bigint) => visible({ declarerId, stewardId })

export interface NamedAgentWrite {
  readonly displayName: string
  readonly scope: NamedScope
  readonly description: string
  readonly systemPrompt: string | null
  readonly configuration: unknown
  readonly now: Date
}

const insertNamedUser = Rows.one("NamedAgents.insertNamed", {
  Request: Schema.Struct({
    publicId: Schema.String,
    accountId: Schema.BigInt,
    displayName: Schema.String,
    handle: Schema.String,
    agentIdentifier: Schema.String,
    stewardId: Schema.BigInt,
    stewardGeneration: Schema.Number,
    configuration: Schema.Unknown,
    now: Schema.Date
  }),
  Result: Schema.Struct({ id: Schema.BigInt }),
  execute: (row, sql) => sql`
    INSERT INTO users (public_id, account_id, kind, role, display_name, handle, agent_identifier, steward_id,
                       steward_generation, configuration, created_at, updated_at)
    VALUES (${row.publicId}, ${row.accountId}, 'agent', 'member', ${row.displayName}, ${row.handle},
            ${row.agentIdentifier}, ${row.stewardId}, ${row.stewardGeneration},
            ${JSON.stringify(row.configuration)}::jsonb, ${row.now}, ${row.now})
    RETURNING id`
})

const insertNamed = Effect.fnUntraced(function* (
  row: NamedAgentWrite & {
    readonly publicId: string
    readonly accountId: bigint
    readonly agentIdentifier: string
    readonly handle: string
    readonly stewardId: bigint
    readonly stewardGeneration: number
    readonly derivedFromId: bigint
    readonly name: string
  }
) {
  const sql = yield* SqlClient
  const { id: userId } = yield* insertNamedUser(row)
  yield* sql`
    INSERT INTO named_agents (user_id, derived_from_id, name, scope, description, system_prompt)
    VALUES (${userId}, ${row.derivedFromId}, ${row.name}, ${row.scope}, ${row.description}, ${row.systemPrompt})`
  return userId
})

/** Whole replacement (and restore): active again under the steward's current generation. */
const replaceNamed = Effect.fnUntraced(function* (userId: bigint, stewardGeneration: number, write: NamedAgentWrite) {
  const sql = yield* SqlClient
  yield* sql`
    UPDATE users SET status = 'active', display_name = ${write.displayName}, steward_generation = ${stewardGeneration},
                     configuration = ${JSON.stringify(write.configuration)}::jsonb, updated_at = ${write.now}
    WHERE id = ${userId}`
  yield* sql`
    UPDATE named_agents SET scope = ${write.scope}, description = ${write.description},
                            system_prompt = ${write.systemPrompt}, revision = revision + 1
    WHERE user_id = ${userId}`
})

const setNamedStatus = Effect.fnUntraced(function* (userId: bigint, status: "active" | "removed", now: Date) {
  const sql = yield* SqlClient
  yield* sql`UPDATE users SET status = ${status}, updated_at = ${now} WHERE id = ${userId}`
  yield* sql`UPDATE named_agents SET revision = revision + 1 WHERE user_id = ${userId}`
})

/** Instance-scope definitions go with their declarer (steward-scope ones survive it). */
const removeInstanceDefinitions = Effect.fnUntraced(function* (declarerId: bigint, now: Date) {
  const sql = yield* SqlClient
  yield* sql`
    UPDATE users SET status = 'removed', updated_at = ${now}
    WHERE status = 'active'
      AND id IN (SELECT user_id FROM named_agents WHERE derived_from_id = ${declarerId} AND scope = 'instance')`
})

/** Serializes definition writes of one declarer inside the current transaction. */
const lockDeclarer = Effect.fnUntraced(function* (declarerId: bigint) {
  const sql = yield* SqlClient
  yield* sql`SELECT pg_advisory_xact_lock(hashtext('troupe.named_agents'), hashtext(${String(declarerId)}))`
})

export class NamedAgentsRepository extends Context.Service<NamedAgentsRepository>()(
  "@troupe/storage/NamedAgentsRepository",
  {
    make: Effect.map(SqlClient, (sql) =>
      Rows.bind(sql, {
        findAgentRowByIdentifier,
        findByName,
        findByUserId,
        listVisible,
        insertNamed,
        replaceNamed,
        setNamedStatus,
        removeInstanceDefinitions,
        lockDeclarer
      })
    )
  }
) {
  static readonly layer = Layer.effect(NamedAgentsRepository, NamedAgentsRepository.make)
}
