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

export class RateLimitWindowsRepository extends Context.Service<RateLimitWindowsRepository>()(
  "@troupe/storage/RateLimitWindowsRepository",
  {
    make: Effect.map(SqlClient, (sql) =>
      Rows.bind(sql, {
        hit
      })
    )
  }
) {
  static readonly layer = Layer.effect(RateLimitWindowsRepository, RateLimitWindowsRepository.make)
}
