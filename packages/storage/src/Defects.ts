// Database failures as defects: a service's rules fail with their own errors, which callers
// answer; a failing database is nothing a caller caused or can handle, so it dies instead.
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { isSqlError, type SqlError } from "effect/sql/SqlError"

/** Runs repository effects on `sql`, turning SqlError into a defect and passing every other failure through. */
export const withDatabase =
  (sql: SqlClient) =>
  <A, E>(effect: Effect.Effect<A, E, SqlClient>): Effect.Effect<A, Exclude<E, SqlError>> =>
    effect.pipe(
      Effect.catchIf(isSqlError, (error) => Effect.die(error)),
      Effect.provideService(SqlClient, sql)
    ) as Effect.Effect<A, Exclude<E, SqlError>>
