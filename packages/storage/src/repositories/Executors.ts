// Rows of `executors`: delivery addresses (agent applications, runners, tool providers) with
// their authority epoch and announcement. After its insertion a row is written only by the
// executor address actor's binding (actors/src/bindings/executorAddress.ts), inside its steps:
// `status`, `revoked_at` and `credential_epoch` are projections of the machine's state and
// context; `display_name` and `announcement` take what its re-pair and announcement events carry.
// `last_seen_at` and `connected_at` are presence marks the cable writes, outside any step
// (docs/decisions.md "Executor addresses").
import { Context, Effect, Layer, Predicate, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { isUuid } from "../Ids.ts"
import * as Rows from "./Rows.ts"

export const ExecutorKind = Schema.Literals(["agent_application", "runner", "tool_provider"])
export type ExecutorKind = typeof ExecutorKind.Type
export const AssignmentScope = Schema.Literals(["agent_private", "user_private", "account_wide"])
export type AssignmentScope = typeof AssignmentScope.Type

/** What an address serves, as its announcement replaced it last (none before the first). */
export interface Announcement {
  readonly tools: ReadonlyArray<{
    readonly name: string
    readonly effect_profile: {
      readonly kind: "read_only" | "pure" | "write"
      readonly destructive: boolean
      readonly effect_scope: "closed" | "open"
      readonly idempotency: "intrinsic" | "none"
      readonly reconciliation: "none" | "lookup"
    }
    readonly timeout_ms?: number
    readonly description?: string
    readonly input_schema?: { readonly [key: string]: unknown }
  }>
  readonly environment: { readonly [key: string]: unknown } | null
  readonly documents: ReadonlyArray<{ readonly name: string; readonly description: string }>
}

/**
 * The announcement column, checked at its top level only: its members were decoded by the
 * contract's schema when it was written, and the row is read on every executor request.
 */
const AnnouncementColumn = Schema.declare(
  (u): u is Announcement =>
    Predicate.isObject(u) &&
    Array.isArray(u.tools) &&
    Array.isArray(u.documents) &&
    (u.environment === null || Predicate.isObject(u.environment)),
  { expected: "an announcement ({ tools, environment, documents })" }
)

export const ExecutorRow = Schema.Struct({
  id: Schema.BigInt,
  public_id: Schema.String,
  account_id: Schema.BigInt,
  kind: ExecutorKind,
  status: Schema.Literals(["active", "revoked"]),
  display_name: Schema.String,
  credential_epoch: Schema.Number,
  manager_id: Schema.BigInt,
  registration_identifier: Schema.NullOr(Schema.String),
  agent_id: Schema.NullOr(Schema.BigInt),
  assignment_scope: AssignmentScope,
  announcement: AnnouncementColumn,
  last_seen_at: Schema.NullOr(Schema.Date),
  connected_at: Schema.NullOr(Schema.Date),
  created_at: Schema.Date,
  updated_at: Schema.Date,
  revoked_at: Schema.NullOr(Schema.Date)
})
export type ExecutorRow = typeof ExecutorRow.Type

const insertExecutor = Rows.one("Executors.insertExecutor", {
  Request: Schema.Struct({
    publicId: Schema.String,
    accountId: Schema.BigInt,
    kind: ExecutorKind,
    displayName: Schema.String,
    managerId: Schema.BigInt,
    registrationIdentifier: Schema.NullOr(Schema.String),
    agentId: Schema.NullOr(Schema.BigInt),
    assignmentScope: AssignmentScope,
    now: Schema.Date
  }),
  Result: ExecutorRow,
  execute: (executor, sql) => sql`
    INSERT INTO executors (public_id, account_id, kind, display_name, manager_id, registration_identifier, agent_id,
                           assignment_scope, created_at, updated_at)
    VALUES (${executor.publicId}, ${executor.accountId}, ${executor.kind}, ${executor.displayName},
            ${executor.managerId}, ${executor.registrationIdentifier}, ${executor.agentId},
            ${executor.assignmentScope}, ${executor.now}, ${executor.now})
    RETURNING *`
})

const ById = Schema.Struct({ id: Schema.BigInt })

const byId = Rows.maybe("Executors.findExecutorById", {
  Request: ById,
  Result: ExecutorRow,
  execute: ({ id }, sql) => sql`SELECT * FROM executors WHERE id = ${id}`
})

const findExecutorById = (id: bigint) => byId({ id })

const byPublicId = Rows.maybe("Executors.findExecutorByPublicId", {
  Request: Schema.Struct({ publicId: Schema.String }),
  Result: ExecutorRow,
  execute: ({ publicId }, sql) => sql`SELECT * FROM executors WHERE public_id = ${publicId}`
})

const findExecutorByPublicId = Effect.fnUntraced(function* (publicId: string) {
  if (!isUuid(publicId)) return undefined
  return yield* byPublicId({ publicId })
})

const liveRegistration = Rows.maybe("Executors.findLiveRegistration", {
  Request: Schema.Struct({
    accountId: Schema.BigInt,
    managerId: Schema.BigInt,
    registrationIdentifier: Schema.String
  }),
  Result: ExecutorRow,
  execute: ({ accountId, managerId, registrationIdentifier }, sql) => sql`
    SELECT * FROM executors
    WHERE account_id = ${accountId} AND manager_id = ${managerId}
      AND registration_identifier = ${registrationIdentifier} AND status = 'active'
    FOR UPDATE`
})

/** The live machine address registered by `managerId` under `registrationIdentifier`. */
const findLiveRegistration = (accountId: bigint, managerId: bigint, registrationIdentifier: string) =>
  liveRegistration({ accountId, managerId, registrationIdentifier })

const liveAgentApplication = Rows.maybe("Executors.findLiveAgentApplication", {
  Request: ById,
  Result: ExecutorRow,
  execute: ({ id }, sql) => sql`
    SELECT * FROM executors WHERE agent_id = ${id} AND kind = 'agent_application' AND status = 'active'
    FOR UPDATE`
})

const findLiveAgentApplication = (agentId: bigint) => liveAgentApplication({ id: agentId })

const epochAfter = Rows.one("Executors.nextEpoch", {
  Request: ById,
  Result: Schema.Struct({ epoch: Schema.Number }),
  execute: ({ id }, sql) => sql`
    SELECT GREATEST(e.credential_epoch, COALESCE(MAX(c.epoch), 0)) + 1 AS epoch
    FROM executors e LEFT JOIN credentials c ON c.executor_id = e.id
    WHERE e.id = ${id} GROUP BY e.credential_epoch`
})

/**
 * The epoch a connection or an agent removal tells the address next: past its row's and past
 * every credential minted for it (a connection mints at the epoch it tells, before the address's
 * step mirrors it here). Read under the row lock the caller's FOR UPDATE holds.
 */
const nextEpoch = (id: bigint) => Effect.map(epochAfter({ id }), (row) => row.epoch)

/** The binding's mirror of the address's epoch (never moved back), and a re-pair's new name. */
const recordEpoch = Effect.fnUntraced(function* (
  publicId: string,
  epoch: number,
  displayName: string | undefined,
  now: Date
) {
  const sql = yield* SqlClient
  yield* sql`
    UPDATE executors SET credential_epoch = GREATEST(credential_epoch, ${epoch}),
      display_name = ${displayName === undefined ? sql`display_name` : sql`${displayName}`}, updated_at = ${now}
    WHERE public_id = ${publicId}`
})

const revokeExecutor = Effect.fnUntraced(function* (publicId: string, now: Date) {
  const sql = yield* SqlClient
  yield* sql`
    UPDATE executors SET status = 'revoked', revoked_at = ${now}, updated_at = ${now}
    WHERE public_id = ${publicId} AND status = 'active'`
})

const announce = Rows.maybe("Executors.replaceAnnouncement", {
  Request: Schema.Struct({ publicId: Schema.String, announcement: AnnouncementColumn, now: Schema.Date }),
  Result: ExecutorRow,
  execute: ({ publicId, announcement, now }, sql) => sql`
    UPDATE executors SET announcement = ${JSON.stringify(announcement)}::jsonb, updated_at = ${now}
    WHERE public_id = ${publicId} AND status = 'active' RETURNING *`
})

/** The binding's write of an announcement: the active address's row as it now reads. */
const replaceAnnouncement = (publicId: string, announcement: Announcement, now: Date) =>
  announce({ publicId, announcement, now })

const MachineKind = Schema.Literals(["runner", "tool_provider"])

/** A discoverable machine (a runner or tool provider) with the public id of the agent it serves, if any. */
export const DiscoverableRow = Schema.Struct({
  ...ExecutorRow.fields,
  kind: MachineKind,
  agent_public_id: Schema.NullOr(Schema.String)
})
export type DiscoverableRow = typeof DiscoverableRow.Type

/**
 * Active machines (runners, tool providers) a member may discover: account-wide ones, the
 * user-private ones of `managerId`, and the agent-private ones of the given agents.
 */
const listDiscoverable = Rows.all("Executors.listDiscoverable", {
  Request: Schema.Struct({
    accountId: Schema.BigInt,
    managerId: Schema.BigInt,
    agentIds: Schema.Array(Schema.BigInt),
    kind: Schema.UndefinedOr(MachineKind),
    publicId: Schema.UndefinedOr(Schema.String)
  }),
  Result: DiscoverableRow,
  execute: (filter, sql) => sql`
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

const stewarded = Rows.all("Executors.stewardedAgentIds", {
  Request: ById,
  Result: ById,
  execute: ({ id }, sql) => sql`SELECT id FROM users WHERE kind = 'agent' AND steward_id = ${id}`
})

/** The agents a human stewards. */
const stewardedAgentIds = (stewardId: bigint) =>
  Effect.map(stewarded({ id: stewardId }), (rows) => rows.map((row) => row.id))

/**
 * Presence marks: an inbox subscription opened or closed, or the executor was heard from. Not a
 * step of the address (a cable heartbeat every 10 s per socket): display-only columns. A
 * subscription's close clears `connected_at` only while it still holds the stamp its opening wrote
 * (a newer socket's stays); its pong puts that stamp back when another's close cleared it.
 */
export type PresenceMark =
  | { readonly _tag: "connected" }
  | { readonly _tag: "seen"; readonly connectedAt: Date }
  | { readonly _tag: "disconnected"; readonly connectedAt: Date }

const markPresence = Effect.fnUntraced(function* (id: bigint, mark: PresenceMark, now: Date) {
  const sql = yield* SqlClient
  const connectedAt =
    mark._tag === "connected"
      ? sql`${now}`
      : mark._tag === "seen"
        ? sql`COALESCE(connected_at, ${mark.connectedAt})`
        : sql`CASE WHEN connected_at = ${mark.connectedAt} THEN NULL ELSE connected_at END`
  yield* sql`UPDATE executors SET last_seen_at = ${now}, connected_at = ${connectedAt} WHERE id = ${id}`
})

const managedMachines = Rows.all("Executors.listManagedMachines", {
  Request: ById,
  Result: ExecutorRow,
  execute: ({ id }, sql) => sql`
    SELECT * FROM executors
    WHERE manager_id = ${id} AND kind IN ('runner', 'tool_provider')
    ORDER BY status, display_name, id`
})

/** The machines a human connected (runners and tool providers), live ones first. */
const listManagedMachines = (managerId: bigint) => managedMachines({ id: managerId })

export class ExecutorsRepository extends Context.Service<ExecutorsRepository>()("@troupe/storage/ExecutorsRepository", {
  make: Effect.map(SqlClient, (sql) =>
    Rows.bind(sql, {
      insertExecutor,
      findExecutorById,
      findExecutorByPublicId,
      findLiveRegistration,
      findLiveAgentApplication,
      nextEpoch,
      recordEpoch,
      revokeExecutor,
      replaceAnnouncement,
      listDiscoverable,
      stewardedAgentIds,
      markPresence,
      listManagedMachines
    })
  )
}) {
  static readonly layer = Layer.effect(ExecutorsRepository, ExecutorsRepository.make)
}
