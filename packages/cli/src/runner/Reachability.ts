// Whether the runner's server answers. Every HTTP request of the runner goes through the client
// `watchReachability` makes: the first one the transport fails (refused, no such host, timed out)
// starts an outage, said in one line with its reason; while it lasts each request waits its turn,
// half a second after the last failure and doubling up to 30 s; the first answer (or a subscribed
// cable) ends it, said in one line.
import { Clock, Deferred, Duration, Effect } from "effect"
import { HttpClient } from "effect/http"

const firstRetryMs = 500
const longestRetryMs = 30_000

/** The schedule in words, for the line that starts an outage and the README. */
export const retryPolicy = "trying again in 0.5 s, then doubling up to every 30 s"

/** A few words for the system's codes a server out of reach fails with. */
const plainReasons: Readonly<Record<string, string>> = {
  ECONNREFUSED: "connection refused",
  ECONNRESET: "connection reset",
  ENOTFOUND: "no such host",
  EAI_AGAIN: "name lookup failed",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  ETIMEDOUT: "timed out",
  UND_ERR_CONNECT_TIMEOUT: "connection timed out",
  UND_ERR_SOCKET: "connection closed"
}

/**
 * Why the transport failed a request, as "connection refused (ECONNREFUSED)": the first system
 * code along the error's causes; undefined when `error` is not a transport failure.
 */
export const transportReason = (error: unknown): string | undefined => {
  const failure = error as {
    readonly _tag?: string
    readonly reason?: { readonly _tag?: string; readonly cause?: unknown; readonly description?: string }
  }
  if (failure?._tag !== "HttpClientError" || failure.reason?._tag !== "TransportError") return undefined
  let innermost: { readonly message?: unknown } | undefined
  for (let cause = failure.reason.cause, depth = 0; typeof cause === "object" && cause !== null && depth < 8; depth++) {
    const link = cause as { readonly code?: unknown; readonly message?: unknown; readonly cause?: unknown }
    if (typeof link.code === "string") {
      const plain = plainReasons[link.code]
      return plain === undefined ? `${String(link.message ?? link.code)} (${link.code})` : `${plain} (${link.code})`
    }
    innermost = link
    cause = link.cause
  }
  return (
    failure.reason.description ?? (typeof innermost?.message === "string" ? innermost.message : "transport failure")
  )
}

interface Outage {
  readonly since: number
  readonly delayMs: number
  /** When the next request may go. */
  readonly retryAt: number
  /** Done when the outage ends (the requests waiting their turn go at once). */
  readonly over: Deferred.Deferred<void>
}

export interface Reachability {
  /** `client` with every request through the outage's turns. */
  readonly client: HttpClient.HttpClient
  /** The server answered another way (the cable subscribed): ends an outage. */
  readonly answered: Effect.Effect<void>
}

export const watchReachability = (options: {
  readonly baseUrl: string
  readonly client: HttpClient.HttpClient
  readonly say: (line: string) => Effect.Effect<void>
}): Reachability => {
  let outage: Outage | undefined
  let reachedBefore = false
  const failed = (reason: string) =>
    Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      if (outage === undefined) {
        outage = { since: now, delayMs: firstRetryMs, retryAt: now + firstRetryMs, over: Deferred.makeUnsafe() }
        return yield* options.say(`cannot reach ${options.baseUrl}: ${reason}; ${retryPolicy}`)
      }
      // Requests that failed together take one turn: the delay doubles once a turn has come.
      if (now < outage.retryAt) return
      const delayMs = Math.min(outage.delayMs * 2, longestRetryMs)
      outage = { ...outage, delayMs, retryAt: now + delayMs }
    })
  const answered = Effect.gen(function* () {
    const ended = outage
    const again = reachedBefore ? " again" : ""
    reachedBefore = true
    if (ended === undefined) return
    outage = undefined
    const now = yield* Clock.currentTimeMillis
    yield* Deferred.succeed(ended.over, undefined)
    yield* options.say(`reached ${options.baseUrl}${again} after ${((now - ended.since) / 1000).toFixed(1)} s`)
  })
  const turn = Effect.suspend(() => {
    const current = outage
    if (current === undefined) return Effect.void
    return Effect.flatMap(Clock.currentTimeMillis, (now) =>
      now >= current.retryAt
        ? Effect.void
        : Effect.raceFirst(Effect.sleep(Duration.millis(current.retryAt - now)), Deferred.await(current.over))
    )
  })
  const client = HttpClient.transform(options.client, (response) =>
    Effect.andThen(turn, response).pipe(
      Effect.tap(() => answered),
      Effect.tapError((error) => {
        const reason = transportReason(error)
        return reason === undefined ? Effect.void : failed(reason)
      })
    )
  )
  return { client, answered }
}
