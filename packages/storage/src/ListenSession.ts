// Every LISTEN of this process on ONE dedicated PostgreSQL session, opened outside the pool (a
// LISTEN per pooled connection drained the pool): a channel is LISTENed while it has subscribers
// and notifications are dispatched to them in process. A lost session is reopened with backoff.
import { PgConnection } from "@effect/sql-pg"
import { Cause, Data, Deferred, Duration, Effect, Exit, Queue, Scope, Stream } from "effect"
import type { SqlError } from "effect/sql/SqlError"

/**
 * Ends the streams that were live on a session when it was lost: what was published until the
 * session was back is gone, so a subscriber that must not miss anything re-reads and subscribes again.
 */
export class ListenSessionLost extends Data.TaggedError("ListenSessionLost")<{ readonly cause: unknown }> {}

/** How the listen session shows in `pg_stat_activity.application_name`. */
export const listenApplicationName = "troupe-bus"

interface Subscriber {
  readonly queue: Queue.Queue<string, Cause.Done>
  /** Completed once the channel is LISTENed on the open session. */
  readonly live: Deferred.Deferred<void>
}

/** The open session: the channels it LISTENs to, each with the scope that UNLISTENs it. */
interface Session {
  readonly listening: Map<string, Scope.Closeable>
}

const channelBytes = new TextEncoder()

/** After the n-th consecutive failure, wait 100 ms · 2^(n-1), at most 5 s. */
const backoff = (failures: number) => Duration.millis(Math.min(5000, 100 * 2 ** (failures - 1)))

/**
 * The subscriptions of one process over one session made from `config` (the pool's). The session
 * opens with the first subscription and lives with `scope`.
 */
export const makeListenSession = Effect.fnUntraced(function* (config: PgConnection.Config) {
  const scope = yield* Effect.scope
  const subscribers = new Map<string, Set<Subscriber>>()
  /** Offered whenever the wanted channels changed; the session reconciles its LISTENs. */
  const wake = yield* Queue.sliding<void>(1)
  let session: Session | undefined
  let started = false

  const dispatch = (channel: string, payloads: ReadonlyArray<string>) => {
    for (const subscriber of subscribers.get(channel) ?? []) Queue.offerAllUnsafe(subscriber.queue, payloads)
  }

  /** Ends the streams live on a closed session: with a defect when it was lost, quietly at shutdown. */
  const settleLive = (lost: Cause.Cause<unknown> | undefined) => {
    for (const [channel, set] of subscribers) {
      for (const subscriber of set) {
        if (!Deferred.isDoneUnsafe(subscriber.live)) continue
        set.delete(subscriber)
        if (lost === undefined) Queue.endUnsafe(subscriber.queue)
        else Queue.failCauseUnsafe(subscriber.queue, Cause.die(new ListenSessionLost({ cause: Cause.squash(lost) })))
      }
      if (set.size === 0) subscribers.delete(channel)
    }
  }

  const serve = (established: () => void) =>
    Effect.scoped(
      Effect.gen(function* () {
        const connection = yield* Effect.flatMap(
          PgConnection.make({ keepAlive: "30 seconds", ...config, applicationName: listenApplicationName }),
          (opened) => opened.pin
        )
        const sessionScope = yield* Effect.scope
        const lost = yield* Deferred.make<never, SqlError>()
        const current: Session = { listening: new Map() }
        yield* Effect.addFinalizer((exit) =>
          Effect.sync(() => {
            session = undefined
            settleLive(Exit.isFailure(exit) && !Cause.hasInterruptsOnly(exit.cause) ? exit.cause : undefined)
          })
        )

        const listen = Effect.fnUntraced(function* (channel: string) {
          const channelScope = yield* Scope.fork(sessionScope)
          const notifications = yield* Scope.provide(connection.listen(channel), channelScope)
          yield* Queue.takeAll(notifications).pipe(
            Effect.map((batch) =>
              dispatch(
                channel,
                batch.map((notification) => notification.payload)
              )
            ),
            Effect.forever,
            Effect.catch((error) => Deferred.fail(lost, error)),
            Effect.forkIn(channelScope)
          )
          current.listening.set(channel, channelScope)
          for (const subscriber of subscribers.get(channel) ?? []) Deferred.doneUnsafe(subscriber.live, Effect.void)
        })
        /** Out of the map before the UNLISTEN is sent, so a new subscriber waits for a fresh LISTEN. */
        const unlisten = (channel: string) =>
          Effect.suspend(() => {
            const channelScope = current.listening.get(channel)
            current.listening.delete(channel)
            return channelScope === undefined ? Effect.void : Scope.close(channelScope, Exit.void)
          })
        const reconcile = Effect.gen(function* () {
          const unwanted = [...current.listening.keys()].filter((channel) => !subscribers.has(channel))
          yield* Effect.forEach(unwanted, unlisten, { discard: true })
          const wanted = [...subscribers.keys()].filter((channel) => !current.listening.has(channel))
          yield* Effect.forEach(wanted, listen, { discard: true })
        })

        yield* reconcile
        session = current
        established()
        return yield* Effect.raceFirst(
          Deferred.await(lost),
          Effect.forever(Effect.andThen(Queue.take(wake), reconcile))
        )
      })
    )

  const run = Effect.gen(function* () {
    let failures = 0
    while (true) {
      yield* serve(() => {
        failures = 0
      }).pipe(
        Effect.catchCause((cause) =>
          Cause.hasInterruptsOnly(cause)
            ? Effect.failCause(cause)
            : Effect.logWarning("event bus: the LISTEN session was lost; reopening it", cause)
        )
      )
      failures += 1
      yield* Effect.sleep(backoff(failures))
    }
  })

  yield* Effect.addFinalizer(() =>
    Effect.sync(() => {
      for (const set of subscribers.values()) {
        for (const subscriber of set) {
          Queue.endUnsafe(subscriber.queue)
          Deferred.doneUnsafe(subscriber.live, Effect.void)
        }
      }
      subscribers.clear()
    })
  )

  const register = (channel: string, subscriber: Subscriber) => {
    const set = subscribers.get(channel) ?? new Set()
    subscribers.set(channel, set)
    set.add(subscriber)
    if (session?.listening.has(channel)) Deferred.doneUnsafe(subscriber.live, Effect.void)
    else Queue.offerUnsafe(wake, undefined)
  }

  const unregister = (channel: string, subscriber: Subscriber) => {
    const set = subscribers.get(channel)
    if (set?.delete(subscriber) && set.size === 0) {
      subscribers.delete(channel)
      Queue.offerUnsafe(wake, undefined)
    }
    return Queue.shutdown(subscriber.queue)
  }

  /** Live once the channel is LISTENed on the open session (waits while it reopens); ends with the scope. */
  const subscribe = (channel: string): Effect.Effect<Stream.Stream<string>, never, Scope.Scope> =>
    Effect.gen(function* () {
      if (channelBytes.encode(channel).byteLength > 63) {
        return yield* Effect.die(new Error(`the channel name ${channel} is longer than 63 bytes`))
      }
      if (!started) {
        started = true
        yield* Effect.forkIn(run, scope)
      }
      const subscriber: Subscriber = {
        queue: yield* Queue.unbounded<string, Cause.Done>(),
        live: yield* Deferred.make<void>()
      }
      yield* Effect.acquireRelease(
        Effect.sync(() => register(channel, subscriber)),
        () => unregister(channel, subscriber)
      )
      yield* Deferred.await(subscriber.live)
      return Stream.fromQueue(subscriber.queue)
    })

  return { subscribe }
})
