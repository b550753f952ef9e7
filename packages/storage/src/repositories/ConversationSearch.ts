// Reads the conversation kernel tools make over a workspace's conversations (runs supplement "Tool
// catalog"): a keyword search of titles and visible messages over those a principal may read,
// and a run's spawned child by its label. Matching is PostgreSQL full-text search over the
// `simple` configuration (words, lower-cased, no stemming), indexed by migration 0028.
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { levelNotNone } from "./ConversationLevel.ts"
import * as Rows from "./Rows.ts"

/** The characters of a message the index covers (to_tsvector refuses vectors over 1 MB). */
export const searchedCharacters = 100_000

/** Characters an excerpt shows, and how many of them come before the first hit. */
const excerptLength = 200
const excerptLead = 60

export const SearchRequest = Schema.Struct({
  workspaceId: Schema.BigInt,
  /** The reader: conversations whose level for it is not none (creator, answerer, entry, default). */
  readerId: Schema.BigInt,
  states: Schema.Array(Schema.Literals(["active", "archived"])),
  /** Sides and children too (else roots only). */
  auxiliary: Schema.Boolean,
  query: Schema.String,
  /** Newest first: the keyset position after which to read (the last row's `at`, ids, part). */
  after: Schema.NullOr(
    Schema.Struct({ at: Schema.String, conversation: Schema.String, position: Schema.Number, part: Schema.Number })
  ),
  limit: Schema.Number
})
export type SearchRequest = typeof SearchRequest.Type

export const SearchHit = Schema.Struct({
  conversation_public_id: Schema.String,
  title: Schema.NullOr(Schema.String),
  state: Schema.String,
  side: Schema.Boolean,
  parent_public_id: Schema.NullOr(Schema.String),
  label: Schema.NullOr(Schema.String),
  /** null for a title hit. */
  turn_public_id: Schema.NullOr(Schema.String),
  /** 0 for a title hit. */
  position: Schema.Number,
  /** 0 title, 1 a direct reply's prompt, 2 a turn's message (its active candidate's text). */
  part: Schema.Number,
  role: Schema.NullOr(Schema.String),
  /** The ordering instant as text (full precision, for the cursor). */
  at: Schema.String,
  excerpt: Schema.String,
  /** Text precedes or follows the excerpt. */
  clipped_before: Schema.Boolean,
  clipped_after: Schema.Boolean
})
export type SearchHit = typeof SearchHit.Type

/**
 * Hits, newest first: a conversation whose title holds every word, and each visible turn whose
 * message (a direct reply's prompt, or its active candidate's text) holds every word, in the
 * conversations of the workspace the reader may read. The excerpt starts a little before the
 * first occurrence of any of the query's words.
 */
const search = Rows.all("ConversationSearch.search", {
  Request: SearchRequest,
  Result: SearchHit,
  execute: (request, sql) => {
    const scope = request.auxiliary ? sql`TRUE` : sql`c.parent_id IS NULL AND NOT c.side`
    const after =
      request.after === null
        ? sql`TRUE`
        : sql`(h.at, h.public_id, h.position, h.part) < (${request.after.at}::timestamptz,
            ${request.after.conversation}::uuid, ${request.after.position}::integer, ${request.after.part}::integer)`
    // The indexed expressions, written out (a bound parameter would not match the index's constant).
    const words = (column: string) => sql.literal(`to_tsvector('simple', left(${column}, ${searchedCharacters}))`)
    return sql`
      WITH q AS (SELECT plainto_tsquery('simple', ${request.query}) AS q,
          tsvector_to_array(to_tsvector('simple', ${request.query})) AS words),
        readable AS (
          SELECT c.id, c.public_id, c.title, c.state, c.side, c.label, c.created_at, p.public_id AS parent_public_id
          FROM conversations c LEFT JOIN conversations p ON p.id = c.parent_id
          WHERE c.workspace_id = ${request.workspaceId} AND c.state = ANY(${[...request.states]}::text[]) AND ${scope}
            AND ${levelNotNone(sql, request.readerId)}),
        hits AS (
          SELECT r.*, NULL::uuid AS turn_public_id, 0 AS position, 0 AS part, NULL::text AS role, r.created_at AS at,
            r.title AS text
          FROM readable r, q WHERE to_tsvector('simple', coalesce(r.title, '')) @@ q.q
          UNION ALL
          SELECT r.*, t.public_id, t.position, 1, 'user', t.created_at, t.prompt_text
          FROM conversation_turns t JOIN readable r ON r.id = t.conversation_id, q
          WHERE t.kind = 'direct_reply' AND t.visibility <> 'hidden' AND ${words("t.prompt_text")} @@ q.q
          UNION ALL
          SELECT r.*, t.public_id, t.position, 2, t.role, t.created_at, v.content
          FROM conversation_variants v
            JOIN conversation_turns t ON t.id = v.turn_id AND t.active_variant_public_id = v.public_id
            JOIN readable r ON r.id = t.conversation_id, q
          WHERE t.visibility <> 'hidden' AND ${words("v.content")} @@ q.q),
        page AS (
          SELECT h.public_id AS conversation_public_id, h.title, h.state, h.side, h.parent_public_id, h.label,
            h.turn_public_id, h.position, h.part, h.role, h.at, h.text
          FROM hits h WHERE ${after}
          ORDER BY h.at DESC, h.public_id DESC, h.position DESC, h.part DESC
          LIMIT ${request.limit})
      SELECT page.conversation_public_id::text, page.title, page.state, page.side, page.parent_public_id::text,
        page.label, page.turn_public_id::text, page.position, page.part, page.role, page.at::text AS at,
        substr(page.text, start.at, ${excerptLength}) AS excerpt, start.at > 1 AS clipped_before,
        start.at + ${excerptLength} <= length(page.text) AS clipped_after
      FROM page, q, LATERAL (
        SELECT greatest(1, coalesce(min(nullif(strpos(lower(page.text), w), 0)), 1) - ${excerptLead}) AS at
        FROM unnest(q.words) w) start
      ORDER BY page.at DESC, page.conversation_public_id DESC, page.position DESC, page.part DESC`
  }
})

/** Whether a query holds any word the search matches on (the `simple` parser's tokens). */
const hasWords = Rows.one("ConversationSearch.hasWords", {
  Request: Schema.Struct({ query: Schema.String }),
  Result: Schema.Struct({ has_words: Schema.Boolean }),
  execute: ({ query }, sql) => sql`SELECT numnode(plainto_tsquery('simple', ${query})) > 0 AS has_words`
})

/** The newest live child of `parentId` spawned under `label`. */
const childByLabel = Rows.maybe("ConversationSearch.childByLabel", {
  Request: Schema.Struct({ parentId: Schema.BigInt, label: Schema.String }),
  Result: Schema.Struct({ public_id: Schema.String }),
  execute: (request, sql) => sql`
    SELECT public_id::text FROM conversations
    WHERE parent_id = ${request.parentId} AND label = ${request.label} AND state <> 'tombstoned'
    ORDER BY id DESC LIMIT 1`
})

export class ConversationSearchRepository extends Context.Service<ConversationSearchRepository>()(
  "@troupe/storage/ConversationSearchRepository",
  { make: Effect.map(SqlClient, (sql) => Rows.bind(sql, { search, hasWords, childByLabel })) }
) {
  static readonly layer = Layer.effect(ConversationSearchRepository, ConversationSearchRepository.make)
}
