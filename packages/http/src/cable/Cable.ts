// The cable: GET /agent_api/v1/cable on the HTTP port, upgraded with Effect's own WebSocket
// support (HttpServerRequest.upgrade over the ws server NodeHttpServer embeds), speaking the
// Action Cable JSON protocol so the stock `@rails/actioncable` client works unchanged.
//
// Authentication happens once, at the upgrade: `Authorization: Bearer` with an API session token,
// a member credential (an agent's access token or a human's member-plane token, for the member
// channels) or an executor's transport credential (for its inbox); when the header is present it
// is authoritative, as on /api/v1. Else the browser session cookie from a same-origin page. Each
// channel admits the identities it serves. An unauthenticated WebSocket handshake is still
// upgraded, then hears `disconnect {reason: "unauthorized", reconnect: false}` and is closed, as
// Rails does: the stock client turns that into "stop, do not reconnect" (it stops its connection
// monitor and tells every subscription `disconnected({willAttemptReconnect: false})`), whereas a
// refused handshake (HTTP 401) looks to it like a network failure it keeps retrying with backoff,
// forever. A plain GET without an upgrade answers the 401 envelope (or 426 when signed in).
import { Credentials } from "@troupe/domain/accounts/Credentials"
import { accessTokenFormat } from "@troupe/domain/accounts/OpaqueTokens"
import { Sessions } from "@troupe/domain/accounts/Sessions"
import { BusRelays } from "@troupe/domain/runtime/BusRelays"
import { StepFeed } from "@troupe/domain/runtime/StepFeed"
import { Context, Effect, Layer } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { bearerToken } from "../conventions/Bearer.ts"
import { envelope } from "../conventions/ErrorEnvelope.ts"
import { memberCallerOf } from "../member/Authentication.ts"
import { platformCallerOf } from "../platform/Authentication.ts"
import { Stopping } from "../Stopping.ts"
import { sessionCookie } from "../web/Cookies.ts"
import { ActorChannelLive } from "./ActorChannel.ts"
import { CableChannels, type CableIdentity } from "./Channels.ts"
import { type ConnectionTiming, defaultTiming, serveConnection } from "./Connection.ts"
import { ConversationChannelLive } from "./ConversationChannel.ts"
import { ExecutorInboxChannelLive } from "./ExecutorInboxChannel.ts"
import { FeedReaders } from "./FeedReaders.ts"
import { InferenceRequestChannelLive } from "./InferenceRequestChannel.ts"
import { negotiateProtocol, offeredProtocols } from "./Protocol.ts"
import { RunChannelLive } from "./RunChannel.ts"

export const cablePath = "/agent_api/v1/cable"

/** Ping and recheck intervals; tests shorten the recheck. */
export const CableTiming = Context.Reference<ConnectionTiming>("@troupe/http/cable/CableTiming", {
  defaultValue: () => defaultTiming
})

interface Credential {
  readonly token: string
  readonly kind: "api" | "browser"
}

/**
 * A cookie rides along on any handshake the browser makes, including one a foreign page opens
 * (cross-site WebSocket hijacking): the cookie only counts from a same-origin page.
 */
const sameOrigin = (request: HttpServerRequest.HttpServerRequest) => {
  const site = request.headers["sec-fetch-site"]
  if (site !== undefined) return site === "same-origin"
  const origin = request.headers.origin
  if (origin === undefined) return true
  try {
    return new URL(origin).host === request.headers.host
  } catch {
    return false
  }
}

const presented = (request: HttpServerRequest.HttpServerRequest): Credential | undefined => {
  const authorization = request.headers.authorization
  if (authorization !== undefined) {
    const token = bearerToken(authorization)
    return token === undefined ? undefined : { token, kind: "api" }
  }
  const token = request.cookies[sessionCookie]
  return token === undefined || !sameOrigin(request) ? undefined : { token, kind: "browser" }
}

const isWebSocketUpgrade = (request: HttpServerRequest.HttpServerRequest) =>
  request.headers.upgrade?.toLowerCase() === "websocket"

const webSocketKey = /^[+/0-9A-Za-z]{22}==$/

/**
 * The handshake's own headers (RFC 6455 §4.2.1), judged before the socket library sees them so a
 * bad one answers the envelope (the library answers text/plain): 400 parameter_invalid naming the
 * header, with `Sec-WebSocket-Version: 13` when the version is the fault.
 */
const handshakeRefusal = (request: HttpServerRequest.HttpServerRequest) => {
  const connection = (request.headers.connection ?? "").split(",").map((token) => token.trim().toLowerCase())
  if (!connection.includes("upgrade")) {
    return envelope(400, "parameter_invalid", "A WebSocket handshake needs Connection: Upgrade")
  }
  if (!webSocketKey.test(request.headers["sec-websocket-key"] ?? "")) {
    return envelope(400, "parameter_invalid", "Sec-WebSocket-Key must be 16 bytes in base64")
  }
  if (request.headers["sec-websocket-version"]?.trim() !== "13") {
    return envelope(400, "parameter_invalid", "Sec-WebSocket-Version must be 13", { "sec-websocket-version": "13" })
  }
  return undefined
}

/**
 * The ws server NodeHttpServer embeds answers with the FIRST offered subprotocol; rewrite the
 * offer on the incoming message to the one Action Cable settles on (or none), so the
 * handshake answers like Rails does.
 */
const settleProtocol = (request: HttpServerRequest.HttpServerRequest) => {
  const incoming = request.source as { headers?: Record<string, string | Array<string> | undefined> }
  if (incoming.headers === undefined) return
  const chosen = negotiateProtocol(offeredProtocols(request.headers["sec-websocket-protocol"]))
  if (chosen === undefined) delete incoming.headers["sec-websocket-protocol"]
  else incoming.headers["sec-websocket-protocol"] = chosen
}

const CableEndpoint = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const sessions = yield* Sessions
    const credentials = yield* Credentials
    const channels = yield* CableChannels
    const feed = yield* StepFeed
    const timing = yield* CableTiming
    const stopping = yield* Stopping

    const authenticate = (credential: Credential | undefined): Effect.Effect<CableIdentity | undefined> => {
      if (credential === undefined) return Effect.succeed(undefined)
      if (credential.kind === "api" && credential.token.startsWith(accessTokenFormat.prefix)) {
        return credentials.authenticate(credential.token).pipe(
          Effect.map((grant): CableIdentity | undefined => {
            if (grant.plane === "executor_transport" && grant.executor) {
              return {
                _tag: "Executor",
                executor: { id: grant.executor.id, publicId: grant.executor.public_id, kind: grant.executor.kind },
                credentialPublicId: grant.credential.public_id
              }
            }
            const caller = memberCallerOf(grant)
            return caller && { _tag: "Member", caller, addressPublicId: grant.executor?.public_id }
          }),
          Effect.catchTag("Unauthenticated", () => Effect.succeed(undefined))
        )
      }
      return sessions.authenticate(credential.token).pipe(
        Effect.map((authenticated): CableIdentity | undefined =>
          authenticated.session.kind !== credential.kind
            ? undefined
            : { _tag: "Human", caller: platformCallerOf(authenticated) }
        ),
        Effect.catchTag("Unauthenticated", () => Effect.succeed(undefined))
      )
    }

    yield* router.add("GET", cablePath, (request) =>
      Effect.gen(function* () {
        const credential = presented(request)
        const identity = yield* authenticate(credential)
        if (!isWebSocketUpgrade(request)) {
          return identity === undefined
            ? envelope(401, "unauthorized", "Authentication is required")
            : envelope(426, "upgrade_required", "Connect with a WebSocket", { upgrade: "websocket" })
        }
        const refusal = handshakeRefusal(request)
        if (refusal !== undefined) return refusal
        settleProtocol(request)
        const socket = yield* request.upgrade
        yield* serveConnection(socket, identity, {
          timing,
          channels,
          feed,
          reauthenticate: authenticate(credential),
          stopping: stopping.begun
        })
        return HttpServerResponse.empty()
      })
    )
  })
)

/** Every channel the cable serves. A new channel adds its registration layer here. */
export const CableChannelsLive = Layer.mergeAll(
  ActorChannelLive,
  ExecutorInboxChannelLive,
  InferenceRequestChannelLive,
  ConversationChannelLive,
  RunChannelLive
)

/** The cable route with its channels, for Routes.ts to merge. */
export const CableRoute = Layer.mergeAll(CableEndpoint, CableChannelsLive).pipe(
  Layer.provide(CableChannels.layer),
  Layer.provide(FeedReaders.layer),
  Layer.provide(BusRelays.layer),
  Layer.provide(StepFeed.layer)
)
