// A fresh database for one test file: a new database on the machine's PostgreSQL when
// TEST_DATABASE_URL (or the default 127.0.0.1:5432) answers, else the embedded database in a
// temporary directory. TEST_DATABASE=embedded forces the embedded one.
import { randomBytes } from "node:crypto"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { PgClient } from "@effect/sql-pg"
import type { DatabaseConfig } from "@troupe/storage/Database"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

export const adminUrl = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres"

const withAdmin = <A, E>(use: (sql: SqlClient) => Effect.Effect<A, E>) =>
  Effect.runPromise(
    Effect.flatMap(SqlClient, use).pipe(
      Effect.provide(PgClient.layer({ url: Redacted.make(adminUrl), maxConnections: 1, connectTimeout: "2 seconds" }))
    ) as Effect.Effect<A, never>
  )

let reachable: Promise<boolean> | undefined

/** Whether the machine's PostgreSQL answers (asked once per test file). */
export const postgresReachable = () => {
  if (process.env.TEST_DATABASE === "embedded") return Promise.resolve(false)
  reachable ??= withAdmin((sql) => sql`SELECT 1`).then(
    () => true,
    () => false
  )
  return reachable
}

export interface TestDatabase {
  readonly config: DatabaseConfig
  readonly drop: () => Promise<void>
}

const withUrlDatabase = (url: string, name: string) => {
  const parsed = new URL(url)
  parsed.pathname = `/${name}`
  return parsed.toString()
}

export const freshPostgres = async (): Promise<TestDatabase> => {
  const name = `troupe_test_${randomBytes(6).toString("hex")}`
  await withAdmin((sql) => sql`CREATE DATABASE ${sql(name)}`)
  return {
    config: { _tag: "postgres", url: Redacted.make(withUrlDatabase(adminUrl, name)), maxConnections: 10 },
    drop: () => withAdmin((sql) => sql`DROP DATABASE IF EXISTS ${sql(name)} WITH (FORCE)`).then(() => undefined)
  }
}

export const freshEmbedded = async (): Promise<TestDatabase> => {
  const dir = await mkdtemp(join(tmpdir(), "troupe-test-"))
  return {
    config: { _tag: "embedded", dataDir: join(dir, "pg") },
    drop: () => rm(dir, { recursive: true, force: true })
  }
}

export const freshDatabase = async (): Promise<TestDatabase> =>
  (await postgresReachable()) ? freshPostgres() : freshEmbedded()
