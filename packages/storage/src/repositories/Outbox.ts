// Rows of `outbox_items` and `stream_heads`: events narrated by steps, numbered contiguously per
// stream from 1, read back by cursor.
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import * as Rows from "./Rows.ts"

export interface OutboxWrite {
  readonly publicId: string
  readonly type: string
  readonly resourceType: string
  readonly resourcePublicId: string
  readonly payload: unknown
  readonly occurredAt: Date
}

export const OutboxRow = Schema.Struct({
  stream: Schema.String,
  sequence: Schema.BigInt,
  public_id: Schema.String,
  type: Schema.String,
  resource_type: Schema.String,
  resource_public_id: Schema.String,
  payload: Schema.Unknown,
  occurred_at: Schema.Date
})
export type OutboxRow = typeof OutboxRow.Type

/** A stream's head: the highest sequence handed out. */
const Head = Schema.Struct({ last_sequence: Schema.BigInt })

const advanceHead = Rows.one("Outbox.append", {
  Request: Schema.Struct({ stream: Schema.String, count: Schema.Number }),
  Result: Head,
  execute: ({ stream, count }, sql) => sql`
    INSERT INTO stream_heads (stream, last_sequence) VALUES (${stream}, ${count})
    ON CONFLICT (stream) DO UPDATE SET last_sequence = stream_heads.last_sequence + ${count}
    RETURNING last_sequence`
})

/** Appends items to a stream in this transaction; the stream's head row serializes writers. */
export const append = Effect.fnUntraced(function* (stream: string, items: ReadonlyArray<OutboxWrite>) {
  if (items.length === 0) return [] as ReadonlyArray<bigint>
  const sql = yield* SqlClient
  const head = yield* advanceHead({ stream, count: items.length })
  const first = head.last_sequence - BigInt(items.length) + 1n
  const sequences: Array<bigint> = []
  for (const [index, item] of items.entries()) {
    const sequence = first + BigInt(index)
    sequences.push(sequence)
    yield* sql`
      INSERT INTO outbox_items (stream, sequence, public_id, type, resource_type, resource_public_id, payload, occurred_at)
      VALUES (${stream}, ${sequence}, ${item.publicId}, ${item.type}, ${item.resourceType}, ${item.resourcePublicId},
              ${JSON.stringify(item.payload)}::jsonb, ${item.occurredAt})`
  }
  return sequences
})

const page = Rows.all("Outbox.read", {
  Request: Schema.Struct({ stream: Schema.String, afterSequence: Schema.BigInt, limit: Schema.Number }),
  Result: OutboxRow,
  execute: ({ stream, afterSequence, limit }, sql) => sql`
    SELECT stream, sequence, public_id, type, resource_type, resource_public_id, payload, occurred_at
    FROM outbox_items WHERE stream = ${stream} AND sequence > ${afterSequence}
    ORDER BY sequence LIMIT ${limit}`
})

export const read = (stream: string, afterSequence: bigint, limit: number) => page({ stream, afterSequence, limit })

const headOf = Rows.maybe("Outbox.watermark", {
  Request: Schema.Struct({ stream: Schema.String }),
  Result: Head,
  execute: ({ stream }, sql) => sql`SELECT last_sequence FROM stream_heads WHERE stream = ${stream}`
})

/** The highest committed sequence of the stream (0 when it has none). */
export const watermark = (stream: string) => Effect.map(headOf({ stream }), (head) => head?.last_sequence ?? 0n)

/** Deletes items that occurred before `before` (the retention window). */
export const reap = Effect.fnUntraced(function* (before: Date) {
  const sql = yield* SqlClient
  const rows = yield* sql`DELETE FROM outbox_items WHERE occurred_at < ${before} RETURNING id`
  return rows.length
})
