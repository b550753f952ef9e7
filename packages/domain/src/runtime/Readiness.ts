// Whether the database serves this server: it answers within a deadline, at the migration level
// the server started with (a database that answers without the migrations table is behind).
import { migrationLevel } from "@troupe/storage/Migrations"
import { Context, Duration, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import * as SqlError from "effect/sql/SqlError"

/** How long a check waits for the database before calling it unreachable. */
const databaseDeadline = Duration.seconds(2)

export type DatabaseState = "ready" | "behind" | "unreachable"

export class Readiness extends Context.Service<Readiness, { readonly database: Effect.Effect<DatabaseState> }>()(
  "@troupe/domain/Readiness"
) {
  static readonly layer = Layer.effect(
    Readiness,
    Effect.gen(function* () {
      const sql = yield* SqlClient
      const level = Effect.provideService(migrationLevel, SqlClient, sql)
      const startedAt = yield* level
      return Readiness.of({
        database: level.pipe(
          Effect.timeout(databaseDeadline),
          Effect.match({
            onFailure: (error): DatabaseState =>
              // An undefined table (42P01) is a syntax-class error: the database answers but is not migrated.
              SqlError.isSqlError(error) && error.reason._tag === "SqlSyntaxError" ? "behind" : "unreachable",
            onSuccess: (current): DatabaseState => (current >= startedAt ? "ready" : "behind")
          })
        )
      })
    })
  )
}
