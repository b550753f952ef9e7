// Rows of `audit_events`: who did which operator action to what, and when.
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import * as Rows from "./Rows.ts"

const append = Effect.fnUntraced(function* (entry: {
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

export class AuditRepository extends Context.Service<AuditRepository>()("@troupe/storage/AuditRepository", {
  make: Effect.map(SqlClient, (sql) =>
    Rows.bind(sql, {
      append
    })
  )
}) {
  static readonly layer = Layer.effect(AuditRepository, AuditRepository.make)
}
