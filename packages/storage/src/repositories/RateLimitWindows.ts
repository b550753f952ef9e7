// Rows of `rate_limit_windows`: fixed-window hit counters keyed by (scope, subject, window start).
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/** Counts one hit in the window and answers the window's total; older windows of the subject go. */
export const hit = Effect.fnUntraced(function* (scope: string, subject: string, windowStart: Date) {
  const sql = yield* SqlClient
  const rows = yield* sql<{ hits: number }>`
    WITH pruned AS (
      DELETE FROM rate_limit_windows
      WHERE scope = ${scope} AND subject = ${subject} AND window_start < ${windowStart}
    )
    INSERT INTO rate_limit_windows (scope, subject, window_start, hits)
    VALUES (${scope}, ${subject}, ${windowStart}, 1)
    ON CONFLICT (scope, subject, window_start) DO UPDATE SET hits = rate_limit_windows.hits + 1
    RETURNING hits`
  return rows[0]!.hits
})
