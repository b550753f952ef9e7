// Rows of `prompt_documents`: a host's (a user's or a workspace's) document per slot. A deleted
// document keeps its row with no content, so its version goes on counting writes. Slots, roles,
// macros and limits are the domain's rules.
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

export type HostKind = "user" | "workspace"

/** Whose documents: a user's (the profile door) or a workspace's, by internal id. */
export interface Host {
  readonly kind: HostKind
  readonly id: bigint
}

export type Role = "system" | "developer" | "user"

export interface PromptDocumentRow {
  readonly slot: string
  readonly role: Role
  readonly content: string
  readonly bytesize: number
  readonly version: number
  readonly written_at: Date
}

/** A row without its content, for lists. */
export type PromptDocumentSummaryRow = Omit<PromptDocumentRow, "content">

const hostColumn = (sql: SqlClient, host: Host) => (host.kind === "user" ? sql`user_id` : sql`workspace_id`)

export const listDocuments = Effect.fnUntraced(function* (host: Host) {
  const sql = yield* SqlClient
  return yield* sql<PromptDocumentSummaryRow>`
    SELECT slot, role, bytesize, version, written_at FROM prompt_documents
    WHERE ${hostColumn(sql, host)} = ${host.id} AND content IS NOT NULL
    ORDER BY slot COLLATE "C"`
})

export const findDocument = Effect.fnUntraced(function* (host: Host, slot: string) {
  const sql = yield* SqlClient
  const rows = yield* sql<PromptDocumentRow>`
    SELECT slot, role, content, bytesize, version, written_at FROM prompt_documents
    WHERE ${hostColumn(sql, host)} = ${host.id} AND slot = ${slot} AND content IS NOT NULL`
  return rows[0]
})

/** Writes the slot's document whole (one more write on its version); answers the new row. */
export const writeDocument = Effect.fnUntraced(function* (
  host: Host,
  document: { readonly slot: string; readonly role: Role; readonly content: string; readonly bytesize: number },
  now: Date
) {
  const sql = yield* SqlClient
  const column = hostColumn(sql, host)
  const rows = yield* sql<PromptDocumentRow>`
    INSERT INTO prompt_documents (${column}, slot, role, content, bytesize, version, written_at)
    VALUES (${host.id}, ${document.slot}, ${document.role}, ${document.content}, ${document.bytesize}, 1, ${now})
    ON CONFLICT (${column}, slot) WHERE ${column} IS NOT NULL DO UPDATE
    SET role = EXCLUDED.role, content = EXCLUDED.content, bytesize = EXCLUDED.bytesize,
        version = prompt_documents.version + 1, written_at = EXCLUDED.written_at
    RETURNING slot, role, content, bytesize, version, written_at`
  return rows[0]!
})

/** Empties the slot; answers whether it held a document. */
export const deleteDocument = Effect.fnUntraced(function* (host: Host, slot: string) {
  const sql = yield* SqlClient
  const rows = yield* sql`
    UPDATE prompt_documents SET content = NULL
    WHERE ${hostColumn(sql, host)} = ${host.id} AND slot = ${slot} AND content IS NOT NULL
    RETURNING id`
  return rows.length > 0
})
