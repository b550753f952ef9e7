// The replay scenario: one stream of 10,000 items shaped like an inference request's text deltas
// (written through the outbox's own append, 500 to a transaction), read from the start to its
// end in pages of 200 through `Streams.read` (actors/src/Streams.ts: the watermark, the keyset
// page, the rows decoded and put in the item envelope with their cursors), against a bare keyset
// SELECT of the same columns of the same rows in pages of 200 through the same pool (no
// watermark, no decoding, no envelope). One step = one whole replay; the sides alternate in
// rounds like the other scenarios. Reading: items/s = replays/s × 10,000; ratio = Streams ÷ bare
// (1.0 = no overhead); p50/p99 per whole replay. Each side's answer is checked once before
// measuring (10,000 items, sequences 1..10,000 in order).
import { Streams } from "@troupe/actors/Streams"
import { newPublicId } from "@troupe/storage/Ids"
import * as Outbox from "@troupe/storage/repositories/Outbox"
import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { alternate, formatTable, type Sample, type Timing } from "./measure.ts"

const itemCount = 10_000
const pageSize = 200
const writeChunk = 500
const readerLevels = [1, 4]

export interface ReplayLevel {
  readonly readers: number
  readonly streams: Sample
  readonly keyset: Sample
  readonly streamsItemsPerSecond: number
  readonly keysetItemsPerSecond: number
  /** Streams items/s ÷ bare keyset items/s. */
  readonly ratio: number
}

/** A stream of `itemCount` text deltas of one request; answers its name. */
const seed = Effect.gen(function* () {
  const sql = yield* SqlClient
  const requestId = newPublicId()
  const stream = `inference_request:${requestId}`
  const at = new Date(yield* Clock.currentTimeMillis)
  for (let from = 0; from < itemCount; from += writeChunk) {
    const items = Array.from({ length: writeChunk }, (_, index) => ({
      publicId: newPublicId(),
      type: "text_delta",
      resourceType: "inference_request",
      resourcePublicId: requestId,
      payload: { text: ` word${from + index + 1}` },
      occurredAt: at
    }))
    yield* Outbox.append(stream, items).pipe(sql.withTransaction)
  }
  return stream
}).pipe(Effect.orDie)

/** Sequences read in one replay, checked to be 1..itemCount in order. */
const check = (side: string, sequences: ReadonlyArray<number | bigint>) =>
  sequences.length === itemCount && sequences.every((sequence, index) => Number(sequence) === index + 1)
    ? Effect.void
    : Effect.die(new Error(`${side}: ${sequences.length} items, not 1..${itemCount} in order`))

/** A whole replay through Streams.read; answers the sequences read. */
const streamsReplay = (streams: Streams["Service"], stream: string) =>
  Effect.gen(function* () {
    const sequences: Array<number> = []
    let after: string | undefined
    for (;;) {
      const page = yield* Effect.orDie(streams.read(stream, after, pageSize))
      for (const item of page.items) sequences.push(item.sequence)
      if (page.items.length < pageSize || page.pagination.next_after === null) return sequences
      after = page.pagination.next_after
    }
  })

/** A whole replay as bare keyset SELECTs of the same columns; answers the sequences read. */
const keysetReplay = (sql: SqlClient, stream: string) =>
  Effect.gen(function* () {
    const sequences: Array<bigint> = []
    let after = 0n
    for (;;) {
      const rows = yield* sql<{ sequence: bigint }>`
        SELECT stream, sequence, public_id, type, resource_type, resource_public_id, payload, occurred_at
        FROM outbox_items WHERE stream = ${stream} AND sequence > ${after}
        ORDER BY sequence LIMIT ${pageSize}`
      for (const row of rows) sequences.push(BigInt(row.sequence))
      if (rows.length < pageSize) return sequences
      after = sequences[sequences.length - 1]!
    }
  }).pipe(Effect.orDie)

/** Seeds the stream and measures each level; needs the migrated database's SqlClient. */
export const replayScenario = (timing: Timing) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient
    const streams = yield* Streams
    const stream = yield* seed
    yield* check("Streams.read", yield* streamsReplay(streams, stream))
    yield* check("keyset SELECT", yield* keysetReplay(sql, stream))
    return yield* Effect.forEach(readerLevels, (readers) =>
      Effect.gen(function* () {
        const names = Array.from({ length: readers }, (_, index) => `reader-${index}`)
        const { subject, baseline } = yield* alternate(
          timing,
          { actors: names, step: () => Effect.asVoid(streamsReplay(streams, stream)) },
          { actors: names, step: () => Effect.asVoid(keysetReplay(sql, stream)) }
        )
        return {
          readers,
          streams: subject,
          keyset: baseline,
          streamsItemsPerSecond: subject.perSecond * itemCount,
          keysetItemsPerSecond: baseline.perSecond * itemCount,
          ratio: subject.perSecond / baseline.perSecond
        } satisfies ReplayLevel
      })
    )
  }).pipe(Effect.provide(Streams.layer))

export const replayHeader =
  `Replay of one ${itemCount.toLocaleString("en")}-item stream from its start, pages of ${pageSize}: ` +
  "Streams.read (watermark, page, decode, envelope) against a bare keyset SELECT of the same rows and columns\n" +
  "ratio = Streams items/s ÷ bare items/s (1.0 = no overhead); p50/p99 per whole replay"

const fixed = (value: number, digits: number) => value.toFixed(digits)

export const replayTable = (levels: ReadonlyArray<ReplayLevel>) =>
  formatTable(
    [
      "readers",
      "Streams items/s",
      "bare items/s",
      "ratio",
      "replay p50/p99 ms Streams | bare",
      "node CPU ms/replay Streams | bare"
    ],
    levels.map((level) => [
      String(level.readers),
      fixed(level.streamsItemsPerSecond, 0),
      fixed(level.keysetItemsPerSecond, 0),
      fixed(level.ratio, 2),
      `${fixed(level.streams.p50Ms, 1)}/${fixed(level.streams.p99Ms, 1)} | ${fixed(level.keyset.p50Ms, 1)}/${fixed(level.keyset.p99Ms, 1)}`,
      `${fixed(level.streams.cpuMicrosPerStep / 1000, 1)} | ${fixed(level.keyset.cpuMicrosPerStep / 1000, 1)}`
    ])
  )
