// Event streams: outbox items replayed by cursor in the spec's item envelope
// ({public_id, sequence, cursor, type, resource {type, public_id}, occurred_at, payload}), with
// pagination {next_after, watermark}; and the reaper that keeps 30 days of items.
import * as Outbox from "@troupe/storage/repositories/Outbox"
import { Clock, Context, Duration, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { hourlyReaper } from "./RunnerLoop.ts"

export const retention = Duration.days(30)

export interface StreamItem {
  readonly public_id: string
  readonly sequence: number
  readonly cursor: string
  readonly type: string
  readonly resource: { readonly type: string; readonly public_id: string }
  readonly occurred_at: string
  readonly payload: unknown
}

export interface StreamPage {
  readonly items: ReadonlyArray<StreamItem>
  readonly pagination: {
    /** Where this page stopped (null when it is empty): pass it as `after` to continue. */
    readonly next_after: string | null
    /** The highest committed sequence when served. */
    readonly watermark: number
  }
}

export class InvalidCursor extends Schema.TaggedError<InvalidCursor>()("InvalidCursor", {}) {}

/** A cursor names its stream, so one stream's cursor is refused by another (a request's by another's). */
export const encodeStreamCursor = (stream: string, sequence: bigint) =>
  Buffer.from(`s:${sequence}:${stream}`).toString("base64url")

/** The sequence a cursor of `stream` names; a malformed cursor, or another stream's, is InvalidCursor. */
export const decodeStreamCursor = (stream: string, cursor: string) => {
  const text = Buffer.from(cursor, "base64url").toString("utf8")
  const match = /^s:(\d{1,18}):(.+)$/s.exec(text)
  return match && match[2] === stream ? Effect.succeed(BigInt(match[1]!)) : Effect.fail(new InvalidCursor())
}

export const toItem = (row: Outbox.OutboxRow): StreamItem => ({
  public_id: row.public_id,
  sequence: Number(row.sequence),
  cursor: encodeStreamCursor(row.stream, row.sequence),
  type: row.type,
  resource: { type: row.resource_type, public_id: row.resource_public_id },
  occurred_at: row.occurred_at.toISOString(),
  payload: row.payload
})

export class Streams extends Context.Service<
  Streams,
  {
    readonly read: (
      stream: string,
      after: string | undefined,
      limit: number
    ) => Effect.Effect<StreamPage, InvalidCursor>
    /** Deletes items older than the retention window; answers how many went. */
    readonly reap: Effect.Effect<number>
  }
>()("@troupe/actors/Streams") {
  static readonly layer = Layer.effect(
    Streams,
    Effect.gen(function* () {
      const sql = yield* SqlClient
      const read = (stream: string, after: string | undefined, limit: number) =>
        Effect.gen(function* () {
          const from = after === undefined ? 0n : yield* decodeStreamCursor(stream, after)
          const watermark = yield* Outbox.watermark(stream)
          const rows = yield* Outbox.read(stream, from, limit)
          const items = rows.filter((row) => row.sequence <= watermark).map(toItem)
          const last = items[items.length - 1]
          return { items, pagination: { next_after: last ? last.cursor : null, watermark: Number(watermark) } }
        }).pipe(Effect.catchTag("SqlError", Effect.die), Effect.provideService(SqlClient, sql))
      const reap = Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        return yield* Outbox.reap(new Date(now - Duration.toMillis(retention)))
      }).pipe(Effect.orDie, Effect.provideService(SqlClient, sql))
      yield* hourlyReaper("stream reaper", reap)
      return Streams.of({ read, reap })
    })
  )
}
