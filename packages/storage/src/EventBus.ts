// The event-bus port: publish a string payload on a channel after commit; subscribe to a channel
// as a stream. Two adapters: PostgreSQL LISTEN/NOTIFY (crosses processes) and an in-process
// PubSub (the embedded database delivers no notifications).
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, PubSub, type Scope, Stream } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { makeListenSession } from "./ListenSession.ts"

export interface EventBusService {
  /** Deliver `payload` to every current subscriber of `channel`. Call after the data is committed. */
  readonly publish: (channel: string, payload: string) => Effect.Effect<void>
  /**
   * Whether a statement of the transaction may carry the NOTIFYs itself (PostgreSQL), so a
   * writer can send them with a statement it issues anyway (a step's, ActorSteps.ts) instead of alone.
   */
  readonly notifiesInTransaction: boolean
  /**
   * Deliver the messages when the current transaction commits, and never if it rolls back.
   * PostgreSQL holds a NOTIFY until commit; the in-process bus publishes after commit.
   */
  readonly publishOnCommit: (
    messages: ReadonlyArray<{ readonly channel: string; readonly payload: string }>
  ) => Effect.Effect<void, never, SqlClient>
  /**
   * Subscribes to `channel`. The subscription is live when the effect completes (so nothing
   * published afterwards is missed) and ends with the scope. On PostgreSQL every subscription
   * shares one LISTEN session; when it is lost, the live streams die (`ListenSessionLost`) and a
   * new subscription waits for the session to be back.
   */
  readonly subscribe: (channel: string) => Effect.Effect<Stream.Stream<string>, never, Scope.Scope>
}

export class EventBus extends Context.Service<EventBus, EventBusService>()("@troupe/storage/EventBus") {
  static readonly inProcess = Layer.effect(
    EventBus,
    Effect.gen(function* () {
      const hub = yield* PubSub.unbounded<{ readonly channel: string; readonly payload: string }>()
      const publish = (channel: string, payload: string) =>
        PubSub.publish(hub, { channel, payload }).pipe(Effect.asVoid)
      return EventBus.of({
        publish,
        notifiesInTransaction: false,
        publishOnCommit: (messages) =>
          Effect.flatMap(SqlClient, (sql) =>
            sql.afterCommit(
              Effect.forEach(messages, (message) => publish(message.channel, message.payload), { discard: true })
            )
          ),
        subscribe: (channel) =>
          PubSub.subscribe(hub).pipe(
            Effect.map((subscription) =>
              Stream.fromSubscription(subscription).pipe(
                Stream.filter((message) => message.channel === channel),
                Stream.map((message) => message.payload)
              )
            )
          )
      })
    })
  )

  static readonly postgres = Layer.effect(
    EventBus,
    Effect.gen(function* () {
      const pg = yield* PgClient.PgClient
      const listens = yield* makeListenSession(pg.config)
      return EventBus.of({
        publish: (channel, payload) => pg.notify(channel, payload).pipe(Effect.orDie),
        notifiesInTransaction: true,
        publishOnCommit: (messages) =>
          messages.length === 0
            ? Effect.void
            : Effect.flatMap(SqlClient, (sql) =>
                sql`SELECT pg_notify(m.channel, m.payload)
                    FROM unnest(${messages.map((m) => m.channel)}::text[], ${messages.map((m) => m.payload)}::text[])
                      AS m(channel, payload)`.pipe(Effect.asVoid, Effect.orDie)
              ),
        subscribe: listens.subscribe
      })
    })
  )
}
