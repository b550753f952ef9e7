// Rows of `audit_events`: who did which operator action to what, and when.
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

export const append = Effect.fnUntraced(function* (entry: {
  readonly userId: bigint
  readonly action: string
  readonly target: string
  readonly details: unknown
  readonly at: Date
}) {
  const sql = yield* SqlClient
  yield* sql`
    INSERT INTO audit_events (user_id, action, target, details, at)
    VALUES (${entry.userId}, ${entry.action}, ${entry.target}, ${JSON.stringify(entry.details)}::jsonb, ${entry.at})`
})
