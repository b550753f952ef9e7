// The lines `troupe serve` logs about its own life: where it listens, when a stop begins (and the
// signal that asked for it), and when it has stopped, all through the console logger.
import type { ServerConfig } from "@troupe/server/Config"
import { requestGrace } from "@troupe/server/Server"
import { Clock, Duration, Effect, Layer } from "effect"
import { HttpServer } from "effect/http"

const signals = ["SIGTERM", "SIGINT"] as const

export const serveLog = (config: ServerConfig) => {
  let signal: string | undefined
  let stopBegan: number | undefined
  const noted = (name: string) => () => {
    signal ??= name
  }
  const listeners = signals.map((name) => [name, noted(name)] as const)

  /**
   * Built last, so it is closed first: logs where the server listens, and the stop's beginning
   * before any of the server closes.
   */
  const listening = Layer.effectDiscard(
    Effect.gen(function* () {
      const server = yield* HttpServer.HttpServer
      // Ahead of the runtime's own listeners, which begin the stop.
      yield* Effect.acquireRelease(
        Effect.sync(() => {
          for (const [name, listener] of listeners) process.prependListener(name, listener)
        }),
        () =>
          Effect.sync(() => {
            for (const [name, listener] of listeners) process.off(name, listener)
          })
      )
      const database =
        config.database._tag === "postgres" ? "PostgreSQL (DATABASE_URL)" : `embedded (${config.database.dataDir})`
      yield* Effect.logInfo(
        `Troupe listening on ${HttpServer.formatAddress(server.address)} (pid ${process.pid}); database: ${database}`
      )
      yield* Effect.addFinalizer(() =>
        Effect.gen(function* () {
          stopBegan = yield* Clock.currentTimeMillis
          yield* Effect.logInfo(
            `Troupe stopping${signal === undefined ? "" : ` (${signal})`}: cable sockets and event streams end now; requests in flight have up to ${Duration.format(requestGrace)}`
          )
        })
      )
    })
  )

  /** Built first, so it is closed last: logs that the stop has ended, once all of the server is closed. */
  const stopped = Layer.effectDiscard(
    Effect.addFinalizer(() =>
      Effect.gen(function* () {
        if (stopBegan === undefined) return
        const took = (yield* Clock.currentTimeMillis) - stopBegan
        yield* Effect.logInfo(`Troupe stopped (${took} ms)`)
      })
    )
  )

  return { listening, stopped }
}
