// One cable socket, from welcome to close: pings, the periodic and bus-triggered recheck of the
// credential and of each subscription's standing (one its subscriber lost is rejected, as absence
// is), and the client's subscribe / unsubscribe / message commands. Channels come from
// the registry; this module knows only the wire protocol.
import type { StepFeed } from "@troupe/domain/runtime/StepFeed"
import { Array as Arr, Cause, Clock, Deferred, Duration, Effect, Exit, Scope, Stream } from "effect"
import * as Socket from "effect/socket/Socket"
import {
  asSubscription,
  authorityActor,
  type CableChannels,
  type CableConnection,
  type CableIdentity,
  type ChannelSubscription,
  sameAuthority
} from "./Channels.ts"
import * as Protocol from "./Protocol.ts"

export interface ConnectionTiming {
  /** How often the server pings (Action Cable clients call a socket stale after two missed). */
  readonly pingInterval: Duration.Input
  /** How often the credential is checked again even when nothing announced a change. */
  readonly recheckInterval: Duration.Input
}

export interface ConnectionContext {
  readonly timing: ConnectionTiming
  readonly channels: CableChannels["Service"]
  readonly feed: StepFeed["Service"]
  /** Who the socket's credential authenticates as now; undefined once it no longer does. */
  readonly reauthenticate: Effect.Effect<CableIdentity | undefined>
  /** Completes when the server begins to stop. */
  readonly stopping: Effect.Effect<void>
}

/**
 * The WebSocket close code under the `disconnect` frame: 1012 (Service Restart, IANA's registry)
 * for a stop, which also says to come back; 1000 otherwise, as Rails closes every socket.
 */
const closeCode = (reason: Protocol.DisconnectReason) => (reason === "server_restart" ? 1012 : 1000)

type Ending = { readonly _tag: "Disconnect"; readonly reason: Protocol.DisconnectReason; readonly reconnect: boolean }
type Outcome = Ending | { readonly _tag: "ClientGone" }

interface Subscribed {
  readonly scope: Scope.Closeable
  subscription?: ChannelSubscription
}

/**
 * Serves an upgraded socket. Without an identity the socket only hears
 * `disconnect {reason: "unauthorized", reconnect: false}` and is closed.
 */
export const serveConnection = (
  socket: Socket.Socket,
  identity: CableIdentity | undefined,
  context: ConnectionContext
) =>
  Effect.scoped(
    Effect.gen(function* () {
      // The reader first: writes wait for it, and acquiring it completes the handshake.
      const pull = yield* Socket.readerString(socket)
      const writer = yield* socket.writer
      const send = (frame: Protocol.ServerFrame) => writer.write(JSON.stringify(frame)).pipe(Effect.ignore)
      const close = (ending: Ending) =>
        send(Protocol.disconnect(ending.reason, ending.reconnect)).pipe(
          Effect.andThen(
            writer.write(new Socket.CloseEvent(closeCode(ending.reason), ending.reason)).pipe(Effect.ignore)
          )
        )

      if (identity === undefined) {
        return yield* close({ _tag: "Disconnect", reason: "unauthorized", reconnect: false })
      }

      const connectionScope = yield* Effect.scope
      const outcome = yield* Deferred.make<Outcome>()
      const finish = (value: Outcome) => Deferred.succeed(outcome, value).pipe(Effect.asVoid)
      const connection: CableConnection = {
        identity,
        disconnect: (reason, reconnect) => finish({ _tag: "Disconnect", reason, reconnect })
      }

      const subscriptions = new Map<string, Subscribed>()

      const unsubscribe = (identifier: string) =>
        Effect.suspend(() => {
          const entry = subscriptions.get(identifier)
          if (entry === undefined) return Effect.void
          subscriptions.delete(identifier)
          return Scope.close(entry.scope, Exit.void)
        })

      /** Subscriptions their subscriber may no longer follow are rejected, as absence would be. */
      const rejudge = Effect.suspend(() =>
        Effect.forEach(
          [...subscriptions],
          ([identifier, entry]) =>
            (entry.subscription?.standing ?? Effect.void).pipe(
              Effect.catchTag("SubscriptionRejected", () =>
                subscriptions.get(identifier) === entry
                  ? Effect.andThen(unsubscribe(identifier), send(Protocol.reject(identifier)))
                  : Effect.void
              )
            ),
          { discard: true }
        )
      )

      // Authority: rechecked on a timer, and at once when the bus reports a step of the actor
      // that holds it (the socket's session, or the address that fences the credential) or the
      // feed resyncs.
      const authority = authorityActor(identity)
      const recheck = Effect.gen(function* () {
        const current = yield* context.reauthenticate
        if (current === undefined) {
          yield* finish({ _tag: "Disconnect", reason: "unauthorized", reconnect: false })
        } else if (!sameAuthority(current, identity)) {
          // Subscriptions were authorized under the old role: reconnecting re-authorizes them.
          yield* finish({ _tag: "Disconnect", reason: "unauthorized", reconnect: true })
        } else {
          yield* rejudge
        }
      }).pipe(
        // Authority that cannot be checked is not assumed: the client reconnects, and the
        // upgrade checks again.
        Effect.catchCause((cause) =>
          Cause.hasInterruptsOnly(cause)
            ? Effect.failCause(cause)
            : Effect.logError("cable: the recheck failed", cause).pipe(
                Effect.andThen(finish({ _tag: "Disconnect", reason: "server_error", reconnect: true }))
              )
        )
      )
      // The credential's own actor's steps (a revocation, a fence) and resyncs: nothing else wakes it.
      const ownSteps = yield* context.feed.subscribeTo(authority)
      yield* Stream.runForEach(ownSteps, () => recheck).pipe(Effect.forkScoped)
      yield* recheck.pipe(Effect.delay(context.timing.recheckInterval), Effect.forever, Effect.forkScoped)

      // A stop ends the socket at once rather than after the HTTP server's grace: the client hears
      // server_restart and reconnects to whichever server answers next.
      yield* context.stopping.pipe(
        Effect.andThen(finish({ _tag: "Disconnect", reason: "server_restart", reconnect: true })),
        Effect.forkScoped
      )

      const subscribe = Effect.fnUntraced(function* (
        command: Extract<Protocol.ClientCommand, { command: "subscribe" }>
      ) {
        const { identifier } = command
        // The client resends a subscribe until it hears back; one is enough.
        if (subscriptions.has(identifier)) return
        const channel = command.channel === undefined ? undefined : context.channels.lookup(command.channel)
        if (channel === undefined || command.params === undefined) return yield* send(Protocol.reject(identifier))
        const scope = yield* Scope.fork(connectionScope, "sequential")
        const entry: Subscribed = { scope }
        subscriptions.set(identifier, entry)
        const answer = yield* channel(command.params, connection).pipe(Scope.provide(scope), Effect.exit)
        if (Exit.isFailure(answer)) {
          subscriptions.delete(identifier)
          yield* Scope.close(scope, Exit.void)
          if (Cause.hasInterruptsOnly(answer.cause)) return
          // A defect is logged, and answered like any rejection.
          if (!Cause.hasFails(answer.cause)) {
            yield* Effect.logError(`cable: subscribing to ${command.channel} failed`, answer.cause)
          }
          return yield* send(Protocol.reject(identifier))
        }
        const subscription = asSubscription(answer.value)
        entry.subscription = subscription
        yield* send(Protocol.confirm(identifier))
        // The messages at hand go out together: one write effect for a chunk, not one a message.
        yield* Stream.runForEachArray(subscription.messages, (messages) =>
          writer
            .writeAll(Arr.map(messages, (message) => Protocol.broadcastText(identifier, message)))
            .pipe(Effect.ignore)
        ).pipe(
          Effect.catchCause((cause) =>
            Cause.hasInterruptsOnly(cause)
              ? Effect.void
              : Effect.logError(`cable: a ${command.channel} subscription failed`, cause).pipe(
                  // The client cannot be told one subscription broke; reconnecting resubscribes it.
                  Effect.andThen(finish({ _tag: "Disconnect", reason: "server_error", reconnect: true }))
                )
          ),
          Effect.forkIn(scope)
        )
      })

      const perform = (identifier: string, data: Readonly<Record<string, unknown>> | undefined) =>
        Effect.suspend(() => {
          const perform = subscriptions.get(identifier)?.subscription?.perform
          if (perform === undefined || data === undefined) return Effect.logDebug("cable: ignored a message")
          return perform(data).pipe(
            Effect.catchCause((cause) => Effect.logError("cable: a channel action failed", cause))
          )
        })

      const handle = (frame: string) => {
        const command = Protocol.parseCommand(frame)
        if (command === undefined) return Effect.logDebug("cable: ignored a frame that is not a command")
        switch (command.command) {
          case "subscribe":
            return subscribe(command)
          case "unsubscribe":
            return unsubscribe(command.identifier)
          case "message":
            return perform(command.identifier, command.data)
        }
      }

      yield* send(Protocol.welcome)
      yield* Clock.currentTimeMillis.pipe(
        Effect.flatMap((millis) => send(Protocol.ping(Math.floor(millis / 1000)))),
        Effect.delay(context.timing.pingInterval),
        Effect.forever,
        Effect.forkScoped
      )
      // Commands are handled one at a time, in order (a subscribe completes before the
      // unsubscribe that follows it); the reader ends when the client goes away.
      yield* Effect.gen(function* () {
        while (true) {
          for (const frame of yield* pull) yield* handle(frame)
        }
      }).pipe(
        Effect.catchCause(() => finish({ _tag: "ClientGone" })),
        Effect.forkScoped
      )

      const result = yield* Deferred.await(outcome).pipe(
        Effect.onInterrupt(() => close({ _tag: "Disconnect", reason: "server_restart", reconnect: true }))
      )
      if (result._tag === "Disconnect") yield* close(result)
    })
  ).pipe(Effect.catchTag("SocketError", () => Effect.void))

export const defaultTiming: ConnectionTiming = {
  pingInterval: Duration.seconds(3),
  recheckInterval: Duration.seconds(30)
}
