// A real Troupe server for one test file: in this process, on a free loopback port, over a
// fresh database, with a clock the test can move. Tests talk to it over HTTP with fetch.
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { ModelCatalogFile } from "@troupe/domain/models/Catalog"
import { CableTiming } from "@troupe/http/cable/Cable"
import { type ConnectionTiming, defaultTiming } from "@troupe/http/cable/Connection"
import type { ServerConfig } from "@troupe/server/Config"
import { serverLayer } from "@troupe/server/Server"
import { Clock, Effect, Layer, Logger, type LogLevel, ManagedRuntime, Redacted } from "effect"
import { type MovableClock, makeMovableClock } from "./clock.ts"
import { freshDatabase, type TestDatabase } from "./database.ts"
import { freePort } from "./processes.ts"

export interface TestServerOptions {
  readonly setupSecret?: string
  readonly extraRoutes?: Layer.Layer<never, never, any>
  readonly database?: TestDatabase
  readonly trustedProxies?: ReadonlyArray<string>
  readonly redirectUris?: ReadonlyArray<string>
  readonly allowHttpRedirects?: boolean
  /** Shorter cable ping and recheck intervals, so tests need not wait 30 s. */
  readonly cableTiming?: Partial<ConnectionTiming>
  /** Replaces the console logger (and LOG_LEVEL, default Warn), so a test can read what is logged. */
  readonly logger?: { readonly logger: Logger.Logger<unknown, unknown>; readonly level: LogLevel.LogLevel }
  /** Providers and models beside the local ones, as TROUPE_MODEL_CATALOG would add them. */
  readonly modelCatalog?: ModelCatalogFile
  /** TROUPE_DATA_DIR (the blob store); default: a fresh temporary directory, removed on close. */
  readonly dataDir?: string
  /** SERVICE_DEPLOYMENT_SOCKET: the updater's socket (test/support/updater.ts); unset: unsupported. */
  readonly deploymentSocket?: string
  /** A path under the server's address in PUBLIC_BASE_URL, as behind a proxy stripping that prefix. */
  readonly publicBasePath?: `/${string}`
}

export const startTestServer = async (options: TestServerOptions = {}) => {
  const database = options.database ?? (await freshDatabase())
  const port = await freePort()
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), "troupe-data-")))
  const movable: MovableClock = makeMovableClock(Effect.runSync(Clock.clockWith(Effect.succeed)))
  const config: ServerConfig = {
    port,
    host: "127.0.0.1",
    publicBaseUrl: new URL(`http://127.0.0.1:${port}${options.publicBasePath ?? ""}`),
    database: database.config,
    dataDir,
    setupSecret: options.setupSecret === undefined ? undefined : Redacted.make(options.setupSecret),
    trustedProxies: options.trustedProxies ?? [],
    logLevel:
      options.logger?.level ?? (process.env.LOG_LEVEL === undefined ? "Warn" : (process.env.LOG_LEVEL as "Info")),
    redirectUris: options.redirectUris,
    allowHttpRedirects: options.allowHttpRedirects ?? false,
    modelCatalog: options.modelCatalog,
    deploymentSocket: options.deploymentSocket
  }
  const layer = serverLayer(config, options.extraRoutes).pipe(
    Layer.provide(Layer.succeed(CableTiming, { ...defaultTiming, ...options.cableTiming })),
    Layer.provideMerge(Layer.succeed(Clock.Clock, movable.clock)),
    Layer.provide(options.logger === undefined ? Layer.empty : Logger.layer([options.logger.logger]))
  )
  const runtime = ManagedRuntime.make(layer as Layer.Layer<any, never, never>)
  await runtime.runPromise(Effect.void)
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    database,
    dataDir,
    clock: movable,
    /** Runs an effect against the server's services (domain, database). */
    run: <A, E>(effect: Effect.Effect<A, E, any>): Promise<A> =>
      runtime.runPromise(effect as Effect.Effect<A, E, never>),
    close: async () => {
      await runtime.dispose()
      await database.drop()
      if (options.dataDir === undefined) await rm(dataDir, { recursive: true, force: true })
    }
  }
}

export type TestServer = Awaited<ReturnType<typeof startTestServer>>
