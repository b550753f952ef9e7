// The executor's side of ExecutorInboxChannel over the cable: an Action Cable client
// (subprotocol actioncable-v1-json) on Node's WebSocket that subscribes, answers the channel's
// pings with the action `pong`, hands the channel's messages on, and reconnects with backoff.
import { ExecutorInboxMessage, executorInboxChannelNames, pong } from "@troupe/contracts/cable/ExecutorInboxChannel"
import { Cause, Data, Duration, Effect, Queue, Redacted, Schema } from "effect"
import type { Bearer } from "./Bearer.ts"

const identifier = JSON.stringify({ channel: executorInboxChannelNames[1] })
/** The server pings every 3 s: a socket silent this long is taken as gone. */
const staleAfter = Duration.seconds(10)
const firstRetry = Duration.millis(500)
const longestRetry = Duration.seconds(30)

/** Why a subscription ended (a closed or stale socket, a rejection, a server's disconnect). */
export class CableClosed extends Data.TaggedError("CableClosed")<{
  readonly reason: string
  /** A `disconnect {reason: "unauthorized"}`: the credential was fenced or expired. */
  readonly unauthorized: boolean
}> {}

/** The cable's WebSocket address under `baseUrl` (ws: for http:, wss: for https:). */
export const cableUrl = (baseUrl: string | URL) => {
  const url = new URL(`${String(baseUrl).replace(/\/+$/, "")}/agent_api/v1/cable`)
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:"
  return url
}

type Frame = Readonly<Record<string, unknown>>

const parseFrame = (data: unknown): Frame | undefined => {
  try {
    const value: unknown = JSON.parse(String(data))
    return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Frame) : undefined
  } catch {
    return undefined
  }
}

const decodeMessage = Schema.decodeUnknownOption(ExecutorInboxMessage)

export interface WatchInboxOptions {
  readonly baseUrl: string | URL
  readonly bearer: Bearer
  /** The subscription was confirmed (true) or ended (false). */
  readonly onSubscribed: (up: boolean) => Effect.Effect<void>
  /** A channel message (pings are answered before they are handed on). */
  readonly onMessage: (message: ExecutorInboxMessage) => Effect.Effect<void>
}

/** One socket, one subscription, until it ends: always fails with CableClosed. */
const session = (options: WatchInboxOptions) =>
  Effect.scoped(
    Effect.gen(function* () {
      const token = yield* options.bearer.token
      const frames = yield* Queue.unbounded<Frame, CableClosed>()
      const socket = yield* Effect.acquireRelease(
        Effect.sync(() => {
          const socket = new WebSocket(cableUrl(options.baseUrl), {
            protocols: ["actioncable-v1-json"],
            headers: { authorization: `Bearer ${Redacted.value(token)}` }
          })
          socket.addEventListener("message", (event) => {
            const frame = parseFrame(event.data)
            if (frame !== undefined) Queue.offerUnsafe(frames, frame)
          })
          socket.addEventListener("close", (event) => {
            const reason = event.reason === "" ? `socket closed (${event.code})` : event.reason
            Queue.failCauseUnsafe(frames, Cause.fail(new CableClosed({ reason, unauthorized: false })))
          })
          return socket
        }),
        (socket) => Effect.sync(() => socket.close())
      )
      const send = (command: Frame) =>
        Effect.sync(() => {
          if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(command))
        })
      const next = Effect.flatMap(
        Queue.take(frames).pipe(
          Effect.timeoutOrElse({
            duration: staleAfter,
            orElse: () => Effect.fail(new CableClosed({ reason: "no ping from the server", unauthorized: false }))
          })
        ),
        (frame) =>
          frame.type === "disconnect"
            ? Effect.fail(
                new CableClosed({
                  reason: `disconnected: ${String(frame.reason)}`,
                  unauthorized: frame.reason === "unauthorized"
                })
              )
            : Effect.succeed(frame)
      )
      while ((yield* next).type !== "welcome") {}
      yield* send({ command: "subscribe", identifier })
      while (true) {
        const frame = yield* next
        if (frame.identifier !== identifier) continue
        if (frame.type === "reject_subscription") {
          return yield* new CableClosed({ reason: "subscription rejected", unauthorized: true })
        }
        if (frame.type === "confirm_subscription") break
      }
      yield* Effect.acquireRelease(options.onSubscribed(true), () => options.onSubscribed(false))
      while (true) {
        const frame = yield* next
        if (frame.identifier !== identifier || !("message" in frame)) continue
        const message = decodeMessage(frame.message)
        if (message._tag === "None") continue
        if (message.value.type === "ping") {
          yield* send({ command: "message", identifier, data: JSON.stringify(pong) })
        }
        yield* options.onMessage(message.value)
      }
    })
  )

/**
 * Keeps the inbox subscription up for as long as it runs: after a drop it waits (0.5 s, doubling
 * to 30 s; back to 0.5 s once a subscription was confirmed) and connects again. A refusal of the
 * credential asks the bearer to renew it first.
 */
export const watchInbox = (options: WatchInboxOptions): Effect.Effect<never> =>
  Effect.gen(function* () {
    let delay = firstRetry
    while (true) {
      let confirmed = false
      const closed = yield* session({
        ...options,
        onSubscribed: (up) =>
          Effect.andThen(
            Effect.sync(() => {
              if (up) confirmed = true
            }),
            options.onSubscribed(up)
          )
      }).pipe(Effect.flip)
      if (closed.unauthorized) yield* Effect.flatMap(options.bearer.token, options.bearer.renew)
      if (confirmed) delay = firstRetry
      yield* Effect.logDebug(`inbox cable: ${closed.reason}; connecting again in ${Duration.format(delay)}`)
      yield* Effect.sleep(delay)
      delay = Duration.min(Duration.times(delay, 2), longestRetry)
    }
  })
