// Rows of `workspaces`, as the WorkspacesRepository service.
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import * as Rows from "./Rows.ts"

export const WorkspaceState = Schema.Literals(["active", "archiving", "archived", "restoring", "tombstoned"])
export type WorkspaceState = typeof WorkspaceState.Type

export const MessagingEntry = Schema.Struct({
  agent_public_id: Schema.String,
  mode: Schema.Literals(["public", "private"]),
  allowed_sender_public_ids: Schema.Array(Schema.String)
})
export type MessagingEntry = typeof MessagingEntry.Type

const AccessMode = Schema.Literals(["account_wide", "private"])
const ToolProviderOverrides = Schema.Record(Schema.String, Schema.String)

export const WorkspaceRow = Schema.Struct({
  id: Schema.BigInt,
  public_id: Schema.String,
  account_id: Schema.BigInt,
  owner_id: Schema.BigInt,
  created_by: Schema.BigInt,
  dedicated_agent_id: Schema.NullOr(Schema.BigInt),
  name: Schema.String,
  access_mode: AccessMode,
  metadata: Schema.Record(Schema.String, Schema.Unknown),
  messaging: Schema.Array(MessagingEntry),
  tool_provider_overrides: ToolProviderOverrides,
  state: WorkspaceState,
  lock_version: Schema.Number,
  /** The instant archival was accepted; null while live. */
  archived_at: Schema.NullOr(Schema.Date),
  created_at: Schema.Date,
  updated_at: Schema.Date,
  tombstoned_at: Schema.NullOr(Schema.Date)
})
export type WorkspaceRow = typeof WorkspaceRow.Type

const insertWorkspace = Rows.one("Workspaces.insertWorkspace", {
  Request: Schema.Struct({
    publicId: Schema.String,
    accountId: Schema.BigInt,
    ownerId: Schema.BigInt,
    createdBy: Schema.BigInt,
    dedicatedAgentId: Schema.NullOr(Schema.BigInt),
    name: Schema.String,
    accessMode: AccessMode,
    metadata: Schema.Unknown,
    now: Schema.Date
  }),
  Result: WorkspaceRow,
  execute: (workspace, sql) => sql`
    INSERT INTO workspaces (public_id, account_id, owner_id, created_by, dedicated_agent_id, name, access_mode, metadata,
                            created_at, updated_at)
    VALUES (${workspace.publicId}, ${workspace.accountId}, ${workspace.ownerId}, ${workspace.createdBy},
            ${workspace.dedicatedAgentId}, ${workspace.name}, ${workspace.accessMode},
            ${JSON.stringify(workspace.metadata)}::jsonb, ${workspace.now}, ${workspace.now})
    RETURNING *`
})

const byPublicId = Rows.maybe("Workspaces.findWorkspace", {
  Request: Schema.Struct({ publicId: Schema.String }),
  Result: WorkspaceRow,
  execute: ({ publicId }, sql) => sql`SELECT * FROM workspaces WHERE public_id = ${publicId}`
})

const findWorkspace = (publicId: string) => byPublicId({ publicId })

export const Changes = Schema.Struct({
  name: Schema.optional(Schema.String),
  metadata: Schema.optional(Schema.Unknown),
  access_mode: Schema.optional(AccessMode),
  owner_id: Schema.optional(Schema.BigInt),
  messaging: Schema.optional(Schema.Array(MessagingEntry)),
  tool_provider_overrides: Schema.optional(ToolProviderOverrides),
  state: Schema.optional(WorkspaceState),
  /** A Date stamps, null clears. */
  archived_at: Schema.optional(Schema.NullOr(Schema.Date))
})
export type Changes = typeof Changes.Type

const update = Rows.maybe("Workspaces.updateWorkspace", {
  Request: Schema.Struct({
    id: Schema.BigInt,
    expected: Schema.UndefinedOr(Schema.Number),
    changes: Changes,
    now: Schema.Date
  }),
  Result: WorkspaceRow,
  execute: ({ id, expected, changes, now }, sql) => {
    const set: Record<string, unknown> = { updated_at: now }
    for (const [column, value] of Object.entries(changes)) {
      if (value === undefined) continue
      set[column] =
        column === "metadata" || column === "messaging" || column === "tool_provider_overrides"
          ? JSON.stringify(value)
          : value
    }
    if (changes.state === "tombstoned") set.tombstoned_at = now
    return sql`
      UPDATE workspaces SET ${sql.update(set)}, lock_version = lock_version + 1
      WHERE id = ${id} AND ${expected === undefined ? sql`true` : sql`lock_version = ${expected}`}
      RETURNING *`
  }
})

/**
 * Applies the changes where the lock_version is still `expected` (any when undefined) and bumps
 * it; answers the new row, or undefined when the version moved on.
 */
const updateWorkspace = (id: bigint, expected: number | undefined, changes: Changes, now: Date) =>
  update({ id, expected, changes, now })

export const ListFilter = Schema.Struct({
  accountId: Schema.BigInt,
  /** The human whose access is judged (an agent sees as its steward). */
  viewerId: Schema.BigInt,
  states: Schema.Array(WorkspaceState),
  dedication: Schema.Union([
    Schema.TaggedStruct("Any", {}),
    Schema.TaggedStruct("Undedicated", {}),
    Schema.TaggedStruct("DedicatedTo", { agentId: Schema.BigInt })
  ]),
  after: Schema.UndefinedOr(Schema.String),
  order: Schema.Literals(["asc", "desc"]),
  limit: Schema.Number
})
export type ListFilter = typeof ListFilter.Type

const listVisible = Rows.all("Workspaces.listVisible", {
  Request: ListFilter,
  Result: WorkspaceRow,
  execute: (filter, sql) => {
    const dedication =
      filter.dedication._tag === "Any"
        ? sql`true`
        : filter.dedication._tag === "Undedicated"
          ? sql`dedicated_agent_id IS NULL`
          : sql`dedicated_agent_id = ${filter.dedication.agentId}`
    const after =
      filter.after === undefined
        ? sql`true`
        : filter.order === "desc"
          ? sql`public_id < ${filter.after}`
          : sql`public_id > ${filter.after}`
    return sql`
      SELECT * FROM workspaces
      WHERE account_id = ${filter.accountId} AND state = ANY(${[...filter.states]}::text[])
        AND (owner_id = ${filter.viewerId} OR access_mode = 'account_wide')
        AND ${dedication} AND ${after}
      ORDER BY public_id ${filter.order === "desc" ? sql`DESC` : sql`ASC`}
      LIMIT ${filter.limit}`
  }
})

/** An owner or creator as workspace answers name them. */
export const PersonRow = Schema.Struct({
  id: Schema.BigInt,
  public_id: Schema.String,
  display_name: Schema.String,
  kind: Schema.Literals(["human", "agent"])
})
export type PersonRow = typeof PersonRow.Type

const peopleOf = Rows.all("Workspaces.people", {
  Request: Schema.Struct({ ids: Schema.Array(Schema.BigInt) }),
  Result: PersonRow,
  execute: ({ ids }, sql) => sql`
    SELECT id, public_id, display_name, kind FROM users WHERE id = ANY(${[...new Set(ids)]}::bigint[])`
})

/** The users named by `ids`, in one query. */
const people = (ids: ReadonlyArray<bigint>) => peopleOf({ ids })

export const PrincipalRow = Schema.Struct({
  public_id: Schema.String,
  handle: Schema.String,
  kind: Schema.Literals(["human", "agent"]),
  display_name: Schema.String,
  agent_identifier: Schema.NullOr(Schema.String),
  steward_public_id: Schema.NullOr(Schema.String)
})
export type PrincipalRow = typeof PrincipalRow.Type

const principalsOf = Rows.all("Workspaces.principals", {
  Request: Schema.Struct({ account_id: Schema.BigInt, owner_id: Schema.BigInt, access_mode: AccessMode }),
  Result: PrincipalRow,
  execute: (workspace, sql) => sql`
    WITH humans AS (
      SELECT u.* FROM users u
      WHERE u.account_id = ${workspace.account_id} AND u.kind = 'human' AND u.status = 'active'
        AND (u.id = ${workspace.owner_id} OR ${workspace.access_mode} = 'account_wide')
    )
    SELECT h.public_id, h.handle, 'human' AS kind, h.display_name, NULL AS agent_identifier, NULL AS steward_public_id
    FROM humans h
    UNION ALL
    SELECT a.public_id, a.handle, 'agent' AS kind, a.display_name, a.agent_identifier, h.public_id AS steward_public_id
    FROM users a JOIN humans h ON h.id = a.steward_id
    WHERE a.kind = 'agent' AND a.status = 'active'
    ORDER BY display_name, public_id`
})

/** Who can reach the workspace: humans with access and the active agents they steward. */
const principals = (workspace: WorkspaceRow) => principalsOf(workspace)

export class WorkspacesRepository extends Context.Service<WorkspacesRepository>()(
  "@troupe/storage/WorkspacesRepository",
  {
    make: Effect.map(SqlClient, (sql) =>
      Rows.bind(sql, { insertWorkspace, findWorkspace, updateWorkspace, listVisible, people, principals })
    )
  }
) {
  static readonly layer = Layer.effect(WorkspacesRepository, WorkspacesRepository.make)
}
