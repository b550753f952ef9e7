// The database: PostgreSQL at DATABASE_URL, or the embedded PGlite when it is unset. Provides
// the SQL client and the event bus that fits it (LISTEN/NOTIFY, or in-process when embedded).
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { startEmbedded } from "./Embedded.ts"
import { EventBus } from "./EventBus.ts"

export type DatabaseConfig =
  | { readonly _tag: "postgres"; readonly url: Redacted.Redacted<string>; readonly maxConnections?: number }
  | { readonly _tag: "embedded"; readonly dataDir: string }

const client = (url: Redacted.Redacted<string>, maxConnections: number) =>
  PgClient.layer({ url, maxConnections, idleTimeout: "60 seconds", applicationName: "troupe" })

export const layer = (config: DatabaseConfig) =>
  config._tag === "postgres"
    ? EventBus.postgres.pipe(Layer.provideMerge(client(config.url, config.maxConnections ?? 10)))
    : EventBus.inProcess.pipe(
        Layer.merge(Layer.unwrap(Effect.map(startEmbedded(config.dataDir), (url) => client(Redacted.make(url), 1))))
      )
