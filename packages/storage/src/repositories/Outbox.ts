// Rows of `outbox_items` and `stream_heads`: events narrated by steps, numbered contiguously per
// stream from 1, read back by cursor.
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

export interface OutboxWrite {
  readonly publicId: string
  readonly type: string
  readonly resourceType: string
  readonly resourcePublicId: string
  readonly payload: unknown
  readonly occurredAt: Date
}

export interface OutboxRow {
  readonly stream: string
  readonly sequence: bigint
  readonly public_id: string
  readonly type: string
  readonly resource_type: string
  readonly resource_public_id: string
  readonly payload: unknown
  readonly occurred_at: Date
}

/** Appends items to a stream in this transaction; the stream's head row serializes writers. */
export const append = Effect.fnUntraced(function* (stream: string, items: ReadonlyArray<OutboxWrite>) {
  if (items.length === 0) return [] as ReadonlyArray<bigint>
  const sql = yield* SqlClient
  const head = yield* sql<{ last_sequence: bigint }>`
    INSERT INTO stream_heads (stream, last_sequence) VALUES (${stream}, ${items.length})
    ON CONFLICT (stream) DO UPDATE SET last_sequence = stream_heads.last_sequence + ${items.length}
    RETURNING last_sequence`
  const first = head[0]!.last_sequence - BigInt(items.length) + 1n
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

export const read = Effect.fnUntraced(function* (stream: string, afterSequence: bigint, limit: number) {
  const sql = yield* SqlClient
  return yield* sql<OutboxRow>`
    SELECT stream, sequence, public_id, type, resource_type, resource_public_id, payload, occurred_at
    FROM outbox_items WHERE stream = ${stream} AND sequence > ${afterSequence}
    ORDER BY sequence LIMIT ${limit}`
})

/** The highest committed sequence of the stream (0 when it has none). */
export const watermark = Effect.fnUntraced(function* (stream: string) {
  const sql = yield* SqlClient
  const rows = yield* sql<{ last_sequence: bigint }>`SELECT last_sequence FROM stream_heads WHERE stream = ${stream}`
  return rows[0]?.last_sequence ?? 0n
})

/** Deletes items that occurred before `before` (the retention window). */
export const reap = Effect.fnUntraced(function* (before: Date) {
  const sql = yield* SqlClient
  const rows = yield* sql`DELETE FROM outbox_items WHERE occurred_at < ${before} RETURNING id`
  return rows.length
})
