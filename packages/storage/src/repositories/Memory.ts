// Rows of `memory_documents` (text under a path on an anchor) and `memory_anchors` (the
// per-anchor row writes lock). Rules (scopes, grammar, limits, fencing) live in the domain.
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import * as Rows from "./Rows.ts"

export const AnchorKind = Schema.Literals(["conversation", "workspace", "user", "agent", "speaker"])
export type AnchorKind = typeof AnchorKind.Type

/** Where documents live: the anchor's kind, the internal id of its row, and (speaker) the speaker. */
export const Anchor = Schema.Struct({
  kind: AnchorKind,
  id: Schema.BigInt,
  /** users.id of the remembered speaker of a speaker anchor; 0 otherwise. */
  speakerId: Schema.optional(Schema.BigInt)
})
export type Anchor = typeof Anchor.Type

/** A row without its content, for lists. */
export const MemorySummaryRow = Schema.Struct({
  id: Schema.BigInt,
  public_id: Schema.String,
  path: Schema.String,
  description: Schema.NullOr(Schema.String),
  bytesize: Schema.Number,
  lock_version: Schema.Number,
  written_at: Schema.Date
})
export type MemorySummaryRow = typeof MemorySummaryRow.Type

export const MemoryDocumentRow = Schema.Struct({ ...MemorySummaryRow.fields, content: Schema.String })
export type MemoryDocumentRow = typeof MemoryDocumentRow.Type

const summaryColumns = "id, public_id, path, description, bytesize, lock_version, written_at"

const speakerOf = (anchor: Anchor) => anchor.speakerId ?? 0n

/** `(anchor_kind, anchor_id, speaker_id) IN (...)` over the given anchors (FALSE for none). */
const anchorsClause = (sql: SqlClient, anchors: ReadonlyArray<Anchor>) =>
  anchors.length === 0
    ? sql`FALSE`
    : sql.or(
        anchors.map(
          (anchor) =>
            sql`(anchor_kind = ${anchor.kind} AND anchor_id = ${anchor.id} AND speaker_id = ${speakerOf(anchor)})`
        )
      )

/** `path` is the path itself or anything under it as a directory; no filter when undefined. */
const pathClause = (sql: SqlClient, under: string | undefined) => {
  if (under === undefined) return sql`TRUE`
  // Byte-order range instead of LIKE, so `%` and `_` in a path are plain characters.
  return sql`(path = ${under} OR (path > ${`${under}/`} AND path < ${`${under}0`}))`
}

/** Takes the anchor's row lock for the rest of the transaction (creating the row the first time). */
const lockAnchor = Effect.fnUntraced(function* (anchor: Anchor) {
  const sql = yield* SqlClient
  yield* sql`
    INSERT INTO memory_anchors (anchor_kind, anchor_id, speaker_id) VALUES (${anchor.kind}, ${anchor.id}, ${speakerOf(anchor)})
    ON CONFLICT (anchor_kind, anchor_id, speaker_id) DO NOTHING`
  yield* sql`
    SELECT 1 FROM memory_anchors
    WHERE anchor_kind = ${anchor.kind} AND anchor_id = ${anchor.id} AND speaker_id = ${speakerOf(anchor)}
    FOR UPDATE`
})

const count = Rows.one("Memory.countDocuments", {
  Request: Anchor,
  Result: Schema.Struct({ count: Schema.Number }),
  execute: (anchor, sql) => sql`
    SELECT count(*)::int AS count FROM memory_documents
    WHERE anchor_kind = ${anchor.kind} AND anchor_id = ${anchor.id} AND speaker_id = ${speakerOf(anchor)}`
})

const countDocuments = (anchor: Anchor) => Effect.map(count(anchor), (row) => row.count)

const documentAt = Rows.maybe("Memory.findDocument", {
  Request: Schema.Struct({ anchor: Anchor, path: Schema.String, lock: Schema.Boolean }),
  Result: MemoryDocumentRow,
  execute: ({ anchor, path, lock }, sql) => sql`
    SELECT id, public_id, path, content, description, bytesize, lock_version, written_at FROM memory_documents
    WHERE anchor_kind = ${anchor.kind} AND anchor_id = ${anchor.id} AND speaker_id = ${speakerOf(anchor)}
      AND path = ${path}
    ${lock ? sql`FOR UPDATE` : sql``}`
})

/** The document at `path` on the anchor; `lock` takes its row for update. */
const findDocument = (anchor: Anchor, path: string, lock = false) => documentAt({ anchor, path, lock })

const summaries = Rows.all("Memory.listDocuments", {
  Request: Schema.Struct({ anchors: Schema.Array(Anchor) }),
  Result: MemorySummaryRow,
  execute: ({ anchors }, sql) => sql`
    SELECT ${sql.literal(summaryColumns)} FROM memory_documents
    WHERE ${anchorsClause(sql, anchors)}
    ORDER BY path`
})

/** Every document of the anchors (without content), in byte order of path. */
const listDocuments = (anchors: ReadonlyArray<Anchor>) => summaries({ anchors })

const texts = Rows.all("Memory.documentTexts", {
  Request: Schema.Struct({ anchors: Schema.Array(Anchor), under: Schema.UndefinedOr(Schema.String) }),
  Result: Schema.Struct({ path: Schema.String, content: Schema.String }),
  execute: ({ anchors, under }, sql) => sql`
    SELECT path, content FROM memory_documents
    WHERE ${anchorsClause(sql, anchors)} AND ${pathClause(sql, under)}
    ORDER BY path`
})

/** Path and content of the anchors' documents (optionally only `under` a path), in path order. */
const documentTexts = (anchors: ReadonlyArray<Anchor>, under: string | undefined) => texts({ anchors, under })

export const DocumentWrite = Schema.Struct({
  content: Schema.String,
  description: Schema.NullOr(Schema.String),
  bytesize: Schema.Number,
  now: Schema.Date
})
export type DocumentWrite = typeof DocumentWrite.Type

const insert = Rows.one("Memory.insertDocument", {
  Request: Schema.Struct({
    anchor: Anchor,
    document: Schema.Struct({ ...DocumentWrite.fields, publicId: Schema.String, path: Schema.String })
  }),
  Result: MemoryDocumentRow,
  execute: ({ anchor, document }, sql) => sql`
    INSERT INTO memory_documents (public_id, anchor_kind, anchor_id, speaker_id, path, content, description, bytesize,
                                  written_at, created_at)
    VALUES (${document.publicId}, ${anchor.kind}, ${anchor.id}, ${speakerOf(anchor)}, ${document.path},
            ${document.content}, ${document.description}, ${document.bytesize}, ${document.now}, ${document.now})
    RETURNING id, public_id, path, content, description, bytesize, lock_version, written_at`
})

const insertDocument = (
  anchor: Anchor,
  document: DocumentWrite & { readonly publicId: string; readonly path: string }
) => insert({ anchor, document })

const replace = Rows.one("Memory.replaceDocument", {
  Request: Schema.Struct({ id: Schema.BigInt, document: DocumentWrite }),
  Result: MemoryDocumentRow,
  execute: ({ id, document }, sql) => sql`
    UPDATE memory_documents
    SET content = ${document.content}, description = ${document.description}, bytesize = ${document.bytesize},
        written_at = ${document.now},
        lock_version = CASE WHEN lock_version = 2147483647 THEN 0 ELSE lock_version + 1 END
    WHERE id = ${id}
    RETURNING id, public_id, path, content, description, bytesize, lock_version, written_at`
})

/**
 * Replaces content and description of the document with this internal id; lock_version advances
 * (after 2147483647 it starts again at 0) and written_at is now.
 */
const replaceDocument = (id: bigint, document: DocumentWrite) => replace({ id, document })

const deleteDocument = Effect.fnUntraced(function* (id: bigint) {
  const sql = yield* SqlClient
  yield* sql`DELETE FROM memory_documents WHERE id = ${id}`
})

export class MemoryRepository extends Context.Service<MemoryRepository>()("@troupe/storage/MemoryRepository", {
  make: Effect.map(SqlClient, (sql) =>
    Rows.bind(sql, {
      lockAnchor,
      countDocuments,
      findDocument,
      listDocuments,
      documentTexts,
      insertDocument,
      replaceDocument,
      deleteDocument
    })
  )
}) {
  static readonly layer = Layer.effect(MemoryRepository, MemoryRepository.make)
}
