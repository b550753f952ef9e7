// Liveness and readiness for load balancers and orchestrators: GET /health answers 200 while the
// process serves; GET /ready answers 200 only when the database answers at the migration level
// this server started with (its runtime and supervisors exist once these routes do).
import { Supervision } from "@troupe/actors/Supervision"
import { Duration, Effect, Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql/SqlClient"
import * as SqlError from "effect/sql/SqlError"
import { envelope } from "./conventions/ErrorEnvelope.ts"

export const healthBody = { status: "ok" } as const
export const readyBody = { status: "ready" } as const
/** The code of every 503 a client may get while Troupe is not ready (start-up, shut-down, no database). */
export const notReadyCode = "not_ready"
export const retryAfterSeconds = 1

/** How long /ready waits for the database before calling it unreachable. */
const databaseDeadline = Duration.seconds(2)

const behind = "The database lacks migrations this server needs; run troupe migrate"
const noStore = { "cache-control": "no-store" }

const notReady = (message: string) =>
  envelope(503, notReadyCode, message, { ...noStore, "retry-after": String(retryAfterSeconds) })

/** The highest migration the database records (0 when none). */
const migrationLevel = (sql: SqlClient) =>
  Effect.map(
    sql<{ readonly level: number | null }>`SELECT max(migration_id) AS level FROM effect_sql_migrations`,
    (rows) => Number(rows[0]?.level ?? 0)
  )

const HealthRoute = HttpRouter.add(
  "GET",
  "/health",
  Effect.succeed(HttpServerResponse.jsonUnsafe(healthBody, { headers: noStore }))
)

const ReadyRoute = Layer.unwrap(
  Effect.gen(function* () {
    yield* Supervision
    const sql = yield* SqlClient
    const startedAt = yield* migrationLevel(sql)
    const check = migrationLevel(sql).pipe(
      Effect.timeout(databaseDeadline),
      Effect.match({
        onFailure: (error) =>
          // An undefined table (42P01) is a syntax-class error: the database answers but is not migrated.
          SqlError.isSqlError(error) && error.reason._tag === "SqlSyntaxError"
            ? notReady(behind)
            : notReady("The database does not answer"),
        onSuccess: (level) =>
          level >= startedAt ? HttpServerResponse.jsonUnsafe(readyBody, { headers: noStore }) : notReady(behind)
      })
    )
    return HttpRouter.add("GET", "/ready", check)
  })
)

export const HealthRoutes = Layer.mergeAll(HealthRoute, ReadyRoute)
