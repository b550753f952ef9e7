// Rows of `workspaces`.
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

export type WorkspaceState = "active" | "archiving" | "archived" | "restoring" | "tombstoned"

export interface MessagingEntry {
  readonly agent_public_id: string
  readonly mode: "public" | "private"
  readonly allowed_sender_public_ids: ReadonlyArray<string>
}

export interface WorkspaceRow {
  readonly id: bigint
  readonly public_id: string
  readonly account_id: bigint
  readonly owner_id: bigint
  readonly created_by: bigint
  readonly dedicated_agent_id: bigint | null
  readonly name: string
  readonly access_mode: "account_wide" | "private"
  readonly metadata: Record<string, unknown>
  readonly messaging: ReadonlyArray<MessagingEntry>
  readonly tool_provider_overrides: Record<string, string>
  readonly state: WorkspaceState
  readonly lock_version: number
  /** The instant archival was accepted; null while live. */
  readonly archived_at: Date | null
  readonly created_at: Date
  readonly updated_at: Date
  readonly tombstoned_at: Date | null
}

export const insertWorkspace = Effect.fnUntraced(function* (workspace: {
  readonly publicId: string
  readonly accountId: bigint
  readonly ownerId: bigint
  readonly createdBy: bigint
  readonly dedicatedAgentId: bigint | null
  readonly name: string
  readonly accessMode: WorkspaceRow["access_mode"]
  readonly metadata: unknown
  readonly now: Date
}) {
  const sql = yield* SqlClient
  const rows = yield* sql<WorkspaceRow>`
    INSERT INTO workspaces (public_id, account_id, owner_id, created_by, dedicated_agent_id, name, access_mode, metadata,
                            created_at, updated_at)
    VALUES (${workspace.publicId}, ${workspace.accountId}, ${workspace.ownerId}, ${workspace.createdBy},
            ${workspace.dedicatedAgentId}, ${workspace.name}, ${workspace.accessMode},
            ${JSON.stringify(workspace.metadata)}::jsonb, ${workspace.now}, ${workspace.now})
    RETURNING *`
  return rows[0]!
})

export const findWorkspace = Effect.fnUntraced(function* (publicId: string) {
  const sql = yield* SqlClient
  const rows = yield* sql<WorkspaceRow>`SELECT * FROM workspaces WHERE public_id = ${publicId}`
  return rows[0]
})

export interface Changes {
  readonly name?: string
  readonly metadata?: unknown
  readonly access_mode?: WorkspaceRow["access_mode"]
  readonly owner_id?: bigint
  readonly messaging?: ReadonlyArray<MessagingEntry>
  readonly tool_provider_overrides?: Record<string, string>
  readonly state?: WorkspaceState
  /** A Date stamps, null clears. */
  readonly archived_at?: Date | null
}

/**
 * Applies the changes where the lock_version is still `expected` (any when undefined) and bumps
 * it; answers the new row, or undefined when the version moved on.
 */
export const updateWorkspace = Effect.fnUntraced(function* (
  id: bigint,
  expected: number | undefined,
  changes: Changes,
  now: Date
) {
  const sql = yield* SqlClient
  const set: Record<string, unknown> = { updated_at: now }
  for (const [column, value] of Object.entries(changes)) {
    if (value === undefined) continue
    set[column] =
      column === "metadata" || column === "messaging" || column === "tool_provider_overrides"
        ? JSON.stringify(value)
        : value
  }
  if (changes.state === "tombstoned") set.tombstoned_at = now
  const rows = yield* sql<WorkspaceRow>`
    UPDATE workspaces SET ${sql.update(set)}, lock_version = lock_version + 1
    WHERE id = ${id} AND ${expected === undefined ? sql`true` : sql`lock_version = ${expected}`}
    RETURNING *`
  return rows[0]
})

export interface ListFilter {
  readonly accountId: bigint
  /** The human whose access is judged (an agent sees as its steward). */
  readonly viewerId: bigint
  readonly states: ReadonlyArray<WorkspaceState>
  readonly dedication:
    | { readonly _tag: "Any" }
    | { readonly _tag: "Undedicated" }
    | { readonly _tag: "DedicatedTo"; readonly agentId: bigint }
  readonly after: string | undefined
  readonly order: "asc" | "desc"
  readonly limit: number
}

export const listVisible = Effect.fnUntraced(function* (filter: ListFilter) {
  const sql = yield* SqlClient
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
  return yield* sql<WorkspaceRow>`
    SELECT * FROM workspaces
    WHERE account_id = ${filter.accountId} AND state = ANY(${[...filter.states]}::text[])
      AND (owner_id = ${filter.viewerId} OR access_mode = 'account_wide')
      AND ${dedication} AND ${after}
    ORDER BY public_id ${filter.order === "desc" ? sql`DESC` : sql`ASC`}
    LIMIT ${filter.limit}`
})

/** An owner or creator as workspace answers name them. */
export interface PersonRow {
  readonly id: bigint
  readonly public_id: string
  readonly display_name: string
  readonly kind: "human" | "agent"
}

/** The users named by `ids`, in one query. */
export const people = Effect.fnUntraced(function* (ids: ReadonlyArray<bigint>) {
  const sql = yield* SqlClient
  return yield* sql<PersonRow>`
    SELECT id, public_id, display_name, kind FROM users WHERE id = ANY(${[...new Set(ids)]}::bigint[])`
})

export interface PrincipalRow {
  readonly public_id: string
  readonly handle: string
  readonly kind: "human" | "agent"
  readonly display_name: string
  readonly agent_identifier: string | null
  readonly steward_public_id: string | null
}

/** Who can reach the workspace: humans with access and the active agents they steward. */
export const principals = Effect.fnUntraced(function* (workspace: WorkspaceRow) {
  const sql = yield* SqlClient
  return yield* sql<PrincipalRow>`
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
