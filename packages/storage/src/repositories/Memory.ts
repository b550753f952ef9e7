// Rows of `memory_documents` (text under a path on an anchor) and `memory_anchors` (the
// per-anchor row writes lock). Rules (scopes, grammar, limits, fencing) live in the domain.
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

export type AnchorKind = "conversation" | "workspace" | "user" | "agent" | "speaker"

/** Where documents live: the anchor's kind, the internal id of its row, and (speaker) the speaker. */
export interface Anchor {
  readonly kind: AnchorKind
  readonly id: bigint
  /** users.id of the remembered speaker of a speaker anchor; 0 otherwise. */
  readonly speakerId?: bigint
}

export interface MemoryDocumentRow {
  readonly id: bigint
  readonly public_id: string
  readonly path: string
  readonly content: string
  readonly description: string | null
  readonly bytesize: number
  readonly lock_version: number
  readonly written_at: Date
}

/** A row without its content, for lists. */
export type MemorySummaryRow = Omit<MemoryDocumentRow, "content">

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
export const lockAnchor = Effect.fnUntraced(function* (anchor: Anchor) {
  const sql = yield* SqlClient
  yield* sql`
    INSERT INTO memory_anchors (anchor_kind, anchor_id, speaker_id) VALUES (${anchor.kind}, ${anchor.id}, ${speakerOf(anchor)})
    ON CONFLICT (anchor_kind, anchor_id, speaker_id) DO NOTHING`
  yield* sql`
    SELECT 1 FROM memory_anchors
    WHERE anchor_kind = ${anchor.kind} AND anchor_id = ${anchor.id} AND speaker_id = ${speakerOf(anchor)}
    FOR UPDATE`
})

export const countDocuments = Effect.fnUntraced(function* (anchor: Anchor) {
  const sql = yield* SqlClient
  const rows = yield* sql<{ count: number }>`
    SELECT count(*)::int AS count FROM memory_documents
    WHERE anchor_kind = ${anchor.kind} AND anchor_id = ${anchor.id} AND speaker_id = ${speakerOf(anchor)}`
  return rows[0]!.count
})

/** The document at `path` on the anchor; `lock` takes its row for update. */
export const findDocument = Effect.fnUntraced(function* (anchor: Anchor, path: string, lock = false) {
  const sql = yield* SqlClient
  const rows = yield* sql<MemoryDocumentRow>`
    SELECT id, public_id, path, content, description, bytesize, lock_version, written_at FROM memory_documents
    WHERE anchor_kind = ${anchor.kind} AND anchor_id = ${anchor.id} AND speaker_id = ${speakerOf(anchor)}
      AND path = ${path}
    ${lock ? sql`FOR UPDATE` : sql``}`
  return rows[0]
})

/** Every document of the anchors (without content), in byte order of path. */
export const listDocuments = Effect.fnUntraced(function* (anchors: ReadonlyArray<Anchor>) {
  const sql = yield* SqlClient
  return yield* sql<MemorySummaryRow>`
    SELECT ${sql.literal(summaryColumns)} FROM memory_documents
    WHERE ${anchorsClause(sql, anchors)}
    ORDER BY path`
})

/** Path and content of the anchors' documents (optionally only `under` a path), in path order. */
export const documentTexts = Effect.fnUntraced(function* (anchors: ReadonlyArray<Anchor>, under: string | undefined) {
  const sql = yield* SqlClient
  return yield* sql<{ readonly path: string; readonly content: string }>`
    SELECT path, content FROM memory_documents
    WHERE ${anchorsClause(sql, anchors)} AND ${pathClause(sql, under)}
    ORDER BY path`
})

export interface DocumentWrite {
  readonly content: string
  readonly description: string | null
  readonly bytesize: number
  readonly now: Date
}

export const insertDocument = Effect.fnUntraced(function* (
  anchor: Anchor,
  document: DocumentWrite & { readonly publicId: string; readonly path: string }
) {
  const sql = yield* SqlClient
  const rows = yield* sql<MemoryDocumentRow>`
    INSERT INTO memory_documents (public_id, anchor_kind, anchor_id, speaker_id, path, content, description, bytesize,
                                  written_at, created_at)
    VALUES (${document.publicId}, ${anchor.kind}, ${anchor.id}, ${speakerOf(anchor)}, ${document.path},
            ${document.content}, ${document.description}, ${document.bytesize}, ${document.now}, ${document.now})
    RETURNING id, public_id, path, content, description, bytesize, lock_version, written_at`
  return rows[0]!
})

/**
 * Replaces content and description of the document with this internal id; lock_version advances
 * (after 2147483647 it starts again at 0) and written_at is now.
 */
export const replaceDocument = Effect.fnUntraced(function* (id: bigint, document: DocumentWrite) {
  const sql = yield* SqlClient
  const rows = yield* sql<MemoryDocumentRow>`
    UPDATE memory_documents
    SET content = ${document.content}, description = ${document.description}, bytesize = ${document.bytesize},
        written_at = ${document.now},
        lock_version = CASE WHEN lock_version = 2147483647 THEN 0 ELSE lock_version + 1 END
    WHERE id = ${id}
    RETURNING id, public_id, path, content, description, bytesize, lock_version, written_at`
  return rows[0]!
})

export const deleteDocument = Effect.fnUntraced(function* (id: bigint) {
  const sql = yield* SqlClient
  yield* sql`DELETE FROM memory_documents WHERE id = ${id}`
})
