// The database: PostgreSQL at DATABASE_URL, or the embedded PGlite when it is unset. Provides
// the SQL client and the event bus that fits it (LISTEN/NOTIFY, or in-process when embedded).
import { PgClient } from "@effect/sql-pg"
import { Data, Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type * as SqlError from "effect/sql/SqlError"
import { startEmbedded } from "./Embedded.ts"
import { EventBus } from "./EventBus.ts"

export type DatabaseConfig =
  | { readonly _tag: "postgres"; readonly url: Redacted.Redacted<string>; readonly maxConnections?: number }
  | { readonly _tag: "embedded"; readonly dataDir: string }

export interface DatabaseTarget {
  readonly host: string
  readonly port: number
  readonly database: string
  readonly user: string
}

/** The PostgreSQL at a URL could not be reached or used; the message never holds the password. */
export class DatabaseUnreachable extends Data.TaggedError("DatabaseUnreachable")<{
  readonly reason: "missing_database" | "authentication" | "refused" | "unknown_host" | "timeout" | "other"
  readonly target: DatabaseTarget
  readonly message: string
}> {}

/** Where a connection URL leads (the parts a person needs to fix it; never the password). */
const targetOf = (url: Redacted.Redacted<string>): DatabaseTarget => {
  const parsed = URL.parse(Redacted.value(url))
  const query = (name: string) => parsed?.searchParams.get(name) || undefined
  const user = query("user") ?? (decodeURIComponent(parsed?.username ?? "") || process.env.USER || "postgres")
  return {
    host: query("host") ?? (parsed?.hostname.replace(/^\[|\]$/g, "") || "localhost"),
    port: Number(query("port") ?? (parsed?.port || 5432)),
    database: query("dbname") ?? (decodeURIComponent(parsed?.pathname.slice(1) ?? "") || user),
    user
  }
}

const classify = (
  target: DatabaseTarget,
  error: SqlError.SqlError
): readonly [DatabaseUnreachable["reason"], string] => {
  const at = `${target.host}:${target.port}`
  const cause = error.reason.cause as { readonly code?: string; readonly message?: string } | undefined
  const detail = cause?.message ?? error.message
  if (cause?.code === "3D000") return ["missing_database", `the database "${target.database}" does not exist on ${at}`]
  if (error.reason._tag === "AuthenticationError") {
    return ["authentication", `PostgreSQL at ${at} refused user "${target.user}" (${detail})`]
  }
  if (cause?.code === "ECONNREFUSED") return ["refused", `nothing answers at ${at} (connection refused)`]
  if (cause?.code === "ENOTFOUND" || cause?.code === "EAI_AGAIN") {
    return ["unknown_host", `the host ${target.host} does not resolve`]
  }
  if (detail === "Connection timed out" || cause?.code === "ETIMEDOUT") {
    return ["timeout", `PostgreSQL at ${at} did not answer in time`]
  }
  return ["other", `could not use PostgreSQL at ${at} (${detail})`]
}

const unreachable = (url: Redacted.Redacted<string>, error: SqlError.SqlError) => {
  const target = targetOf(url)
  const [reason, message] = classify(target, error)
  return new DatabaseUnreachable({ reason, target, message })
}

/** Fails the start with the reason when the database does not answer (the pool connects lazily). */
const answering = (url: Redacted.Redacted<string>) =>
  Layer.effectDiscard(
    Effect.flatMap(SqlClient, (sql) => sql`SELECT 1`).pipe(Effect.mapError((error) => unreachable(url, error)))
  )

const client = (url: Redacted.Redacted<string>, maxConnections: number) =>
  PgClient.layer({ url, maxConnections, idleTimeout: "60 seconds", applicationName: "troupe" })

/** The embedded database's one connection, over its private Unix socket. */
const embeddedClient = (path: string) =>
  PgClient.layer({ path, username: "postgres", database: "postgres", maxConnections: 1, applicationName: "troupe" })

export const layer = (config: DatabaseConfig) =>
  config._tag === "postgres"
    ? EventBus.postgres.pipe(
        Layer.provideMerge(answering(config.url)),
        Layer.provideMerge(client(config.url, config.maxConnections ?? 10))
      )
    : EventBus.inProcess.pipe(Layer.merge(Layer.unwrap(Effect.map(startEmbedded(config.dataDir), embeddedClient))))
