// Deployment configuration from the environment (README, "Configuration").
import { resolve } from "node:path"
import type { DatabaseConfig } from "@troupe/storage/Database"
import { Config, Effect, type LogLevel, Option, Redacted } from "effect"

export interface ServerConfig {
  readonly port: number
  readonly host: string
  readonly publicBaseUrl: URL
  readonly database: DatabaseConfig
  readonly dataDir: string
  readonly setupSecret: Redacted.Redacted<string> | undefined
  readonly trustedProxies: ReadonlyArray<string>
  readonly logLevel: LogLevel.LogLevel
  /** Exact allowed application callbacks (SERVICE_OAUTH_REDIRECT_URIS), or the default policy. */
  readonly redirectUris: ReadonlyArray<string> | undefined
  readonly allowHttpRedirects: boolean
}

export const loadServerConfig = Effect.gen(function* () {
  const port = yield* Config.Port("PORT").pipe(Config.withDefault(4000))
  const host = yield* Config.String("HOST").pipe(Config.withDefault("127.0.0.1"))
  const publicBaseUrl = yield* Config.URL("PUBLIC_BASE_URL").pipe(
    Config.withDefault(new URL(`http://localhost:${port}`))
  )
  const dataDir = resolve(yield* Config.String("TROUPE_DATA_DIR").pipe(Config.withDefault("./.troupe/data")))
  const databaseUrl = yield* Config.Redacted("DATABASE_URL").pipe(Config.option)
  const poolSize = yield* Config.Int("DATABASE_POOL_SIZE").pipe(Config.withDefault(10))
  const setupSecret = yield* Config.Redacted("SERVICE_SETUP_SECRET").pipe(Config.option)
  const trustedProxies = yield* Config.String("TROUPE_TRUSTED_PROXIES").pipe(Config.withDefault(""))
  const logLevel = yield* Config.LogLevel("LOG_LEVEL").pipe(Config.withDefault("Info"))
  const redirectUris = yield* Config.String("SERVICE_OAUTH_REDIRECT_URIS").pipe(Config.option)
  const allowHttpRedirects = yield* Config.Boolean("SERVICE_OAUTH_ALLOW_HTTP").pipe(Config.withDefault(false))
  const parsedRedirects = yield* Option.match(redirectUris, {
    onNone: () => Effect.succeed(undefined),
    onSome: (text) =>
      Effect.try({
        try: () => {
          const list: unknown = JSON.parse(text)
          if (!Array.isArray(list) || !list.every((item) => typeof item === "string")) throw new Error("not a list")
          return list as ReadonlyArray<string>
        },
        catch: () => new Error("SERVICE_OAUTH_REDIRECT_URIS must be a JSON array of callback URLs")
      })
  })
  const database: DatabaseConfig = Option.match(databaseUrl, {
    onNone: () => ({ _tag: "embedded", dataDir: resolve(dataDir, "pg") }),
    onSome: (url) => ({ _tag: "postgres", url, maxConnections: poolSize })
  })
  return {
    port,
    host,
    publicBaseUrl,
    database,
    dataDir,
    setupSecret: Option.getOrUndefined(Option.filter(setupSecret, (secret) => Redacted.value(secret) !== "")),
    trustedProxies: trustedProxies
      .split(",")
      .map((entry) => entry.trim())
      .filter((entry) => entry !== ""),
    logLevel,
    redirectUris: parsedRedirects,
    allowHttpRedirects
  } satisfies ServerConfig
})
