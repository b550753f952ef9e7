// Rows of `prompt_documents`: a host's (a user's or a workspace's) document per slot. A deleted
// document keeps its row with no content, so its version goes on counting writes. Slots, roles,
// macros and limits are the domain's rules.
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import * as Rows from "./Rows.ts"

export const HostKind = Schema.Literals(["user", "workspace"])
export type HostKind = typeof HostKind.Type

/** Whose documents: a user's (the profile door) or a workspace's, by internal id. */
export const Host = Schema.Struct({ kind: HostKind, id: Schema.BigInt })
export type Host = typeof Host.Type

export const Role = Schema.Literals(["system", "developer", "user"])
export type Role = typeof Role.Type

/** A row without its content, for lists. */
export const PromptDocumentSummaryRow = Schema.Struct({
  slot: Schema.String,
  role: Role,
  bytesize: Schema.Number,
  version: Schema.Number,
  written_at: Schema.Date
})
export type PromptDocumentSummaryRow = typeof PromptDocumentSummaryRow.Type

export const PromptDocumentRow = Schema.Struct({ ...PromptDocumentSummaryRow.fields, content: Schema.String })
export type PromptDocumentRow = typeof PromptDocumentRow.Type

const hostColumn = (sql: SqlClient, host: Host) => (host.kind === "user" ? sql`user_id` : sql`workspace_id`)

const summaries = Rows.all("PromptDocuments.listDocuments", {
  Request: Host,
  Result: PromptDocumentSummaryRow,
  execute: (host, sql) => sql`
    SELECT slot, role, bytesize, version, written_at FROM prompt_documents
    WHERE ${hostColumn(sql, host)} = ${host.id} AND content IS NOT NULL
    ORDER BY slot COLLATE "C"`
})

const listDocuments = (host: Host) => summaries(host)

const inSlot = Rows.maybe("PromptDocuments.findDocument", {
  Request: Schema.Struct({ host: Host, slot: Schema.String }),
  Result: PromptDocumentRow,
  execute: ({ host, slot }, sql) => sql`
    SELECT slot, role, content, bytesize, version, written_at FROM prompt_documents
    WHERE ${hostColumn(sql, host)} = ${host.id} AND slot = ${slot} AND content IS NOT NULL`
})

const findDocument = (host: Host, slot: string) => inSlot({ host, slot })

const write = Rows.one("PromptDocuments.writeDocument", {
  Request: Schema.Struct({
    host: Host,
    document: Schema.Struct({ slot: Schema.String, role: Role, content: Schema.String, bytesize: Schema.Number }),
    now: Schema.Date
  }),
  Result: PromptDocumentRow,
  execute: ({ host, document, now }, sql) => {
    const column = hostColumn(sql, host)
    return sql`
      INSERT INTO prompt_documents (${column}, slot, role, content, bytesize, version, written_at)
      VALUES (${host.id}, ${document.slot}, ${document.role}, ${document.content}, ${document.bytesize}, 1, ${now})
      ON CONFLICT (${column}, slot) WHERE ${column} IS NOT NULL DO UPDATE
      SET role = EXCLUDED.role, content = EXCLUDED.content, bytesize = EXCLUDED.bytesize,
          version = prompt_documents.version + 1, written_at = EXCLUDED.written_at
      RETURNING slot, role, content, bytesize, version, written_at`
  }
})

/** Writes the slot's document whole (one more write on its version); answers the new row. */
const writeDocument = (
  host: Host,
  document: { readonly slot: string; readonly role: Role; readonly content: string; readonly bytesize: number },
  now: Date
) => write({ host, document, now })

/** Empties the slot; answers whether it held a document. */
const deleteDocument = Effect.fnUntraced(function* (host: Host, slot: string) {
  const sql = yield* SqlClient
  const rows = yield* sql`
    UPDATE prompt_documents SET content = NULL
    WHERE ${hostColumn(sql, host)} = ${host.id} AND slot = ${slot} AND content IS NOT NULL
    RETURNING id`
  return rows.length > 0
})

export class PromptDocumentsRepository extends Context.Service<PromptDocumentsRepository>()(
  "@troupe/storage/PromptDocumentsRepository",
  {
    make: Effect.map(SqlClient, (sql) =>
      Rows.bind(sql, {
        listDocuments,
        findDocument,
        writeDocument,
        deleteDocument
      })
    )
  }
) {
  static readonly layer = Layer.effect(PromptDocumentsRepository, PromptDocumentsRepository.make)
}
