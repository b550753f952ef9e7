// The benchmark's database: a fresh `troupe_bench_<random>` on the machine's PostgreSQL
// (BENCH_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/postgres), dropped at the
// end; the embedded database in a temporary directory when PostgreSQL does not answer.
import { randomBytes } from "node:crypto"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { PgClient } from "@effect/sql-pg"
import type { DatabaseConfig } from "@troupe/storage/Database"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

export const adminUrl = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres"

/** Connections in the pool: 16 concurrent transactions plus the after-commit notifications. */
export const poolSize = 20

const withAdmin = <A, E>(use: (sql: SqlClient) => Effect.Effect<A, E>) =>
  Effect.flatMap(SqlClient, use).pipe(
    Effect.provide(PgClient.layer({ url: Redacted.make(adminUrl), maxConnections: 1, connectTimeout: "2 seconds" }))
  )

const withDatabase = (url: string, name: string) => {
  const parsed = new URL(url)
  parsed.pathname = `/${name}`
  return parsed.toString()
}

export interface BenchDatabase {
  readonly config: DatabaseConfig
  /** "postgres (troupe_bench_…)" or "embedded (…)", for the report. */
  readonly description: string
}

const postgres = Effect.gen(function* () {
  const name = `troupe_bench_${randomBytes(6).toString("hex")}`
  yield* withAdmin((sql) => sql`CREATE DATABASE ${sql(name)}`)
  const database: BenchDatabase = {
    config: { _tag: "postgres", url: Redacted.make(withDatabase(adminUrl, name)), maxConnections: poolSize },
    description: `postgres (${name}, pool ${poolSize})`
  }
  return [database, withAdmin((sql) => sql`DROP DATABASE IF EXISTS ${sql(name)} WITH (FORCE)`)] as const
})

const embedded = Effect.gen(function* () {
  const dir = yield* Effect.promise(() => mkdtemp(join(tmpdir(), "troupe-bench-")))
  const database: BenchDatabase = {
    config: { _tag: "embedded", dataDir: join(dir, "pg") },
    description: `embedded (${dir}, one connection)`
  }
  return [database, Effect.promise(() => rm(dir, { recursive: true, force: true }))] as const
})

/** A fresh database for this run, removed when the scope closes. */
export const benchDatabase = Effect.acquireRelease(
  withAdmin((sql) => sql`SELECT 1`).pipe(
    Effect.matchEffect({
      onSuccess: () => postgres,
      onFailure: (error) =>
        Effect.andThen(
          Effect.logWarning(
            `PostgreSQL at ${new URL(adminUrl).host} is not reachable (${error.message}); using the embedded database`
          ),
          embedded
        )
    })
  ),
  ([, drop]) => Effect.ignore(drop)
).pipe(Effect.map(([database]) => database))
