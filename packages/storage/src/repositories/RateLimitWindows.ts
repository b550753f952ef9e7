// Rows of `rate_limit_windows`: fixed-window hit counters keyed by (scope, subject, window start).
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import * as Rows from "./Rows.ts"

const count = Rows.one("RateLimitWindows.hit", {
  Request: Schema.Struct({ scope: Schema.String, subject: Schema.String, windowStart: Schema.Date }),
  Result: Schema.Struct({ hits: Schema.Number }),
  execute: ({ scope, subject, windowStart }, sql) => sql`
    WITH pruned AS (
      DELETE FROM rate_limit_windows
      WHERE scope = ${scope} AND subject = ${subject} AND window_start < ${windowStart}
    )
    INSERT INTO rate_limit_windows (scope, subject, window_start, hits)
    VALUES (${scope}, ${subject}, ${windowStart}, 1)
    ON CONFLICT (scope, subject, window_start) DO UPDATE SET hits = rate_limit_windows.hits + 1
    RETURNING hits`
})

/** Counts one hit in the window and answers the window's total; older windows of the subject go. */
const hit = (scope: string, subject: string, windowStart: Date) =>
  Effect.map(count({ scope, subject, windowStart }), (row) => row.hits)

/** One hit to count: a subject's window of a budget, and the budget's limit. */
export interface Hit {
  readonly scope: string
  readonly subject: string
  readonly windowStart: Date
  readonly limit: number
}

/**
 * Counts hits in one statement, in order, each only while every earlier one stays within its
 * limit (as separate hits stopping at the first refused would); answers each window's total, or
 * null where none was counted. Older windows of each subject go.
 */
const hitInOrder = Effect.fnUntraced(function* (hits: ReadonlyArray<Hit>) {
  const sql = yield* SqlClient
  const steps = hits.map((each, index) => {
    const name = sql.literal(`hit${index}`)
    const previous = index === 0 ? undefined : hits[index - 1]!
    const within =
      previous === undefined
        ? sql``
        : sql`FROM ${sql.literal(`hit${index - 1}`)} WHERE ${sql.literal(`hit${index - 1}`)}.hits <= ${previous.limit}`
    return sql`
      ${sql.literal(`pruned${index}`)} AS (
        DELETE FROM rate_limit_windows
        WHERE scope = ${each.scope} AND subject = ${each.subject} AND window_start < ${each.windowStart}
      ),
      ${name} AS (
        INSERT INTO rate_limit_windows (scope, subject, window_start, hits)
        SELECT ${each.scope}::text, ${each.subject}::text, ${each.windowStart}::timestamptz, 1 ${within}
        ON CONFLICT (scope, subject, window_start) DO UPDATE SET hits = rate_limit_windows.hits + 1
        RETURNING hits
      )`
  })
  const totals = hits.map((_, index) => sql`(SELECT hits FROM ${sql.literal(`hit${index}`)})`)
  const rows = yield* sql<{ readonly totals: ReadonlyArray<number | null> }>`
    WITH ${sql.csv(steps)} SELECT ARRAY[${sql.csv(totals)}]::integer[] AS totals`
  return rows[0]!.totals
})

export class RateLimitWindowsRepository extends Context.Service<RateLimitWindowsRepository>()(
  "@troupe/storage/RateLimitWindowsRepository",
  {
    make: Effect.map(SqlClient, (sql) =>
      Rows.bind(sql, {
        hit,
        hitInOrder
      })
    )
  }
) {
  static readonly layer = Layer.effect(RateLimitWindowsRepository, RateLimitWindowsRepository.make)
}
