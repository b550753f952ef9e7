// The event-bus port: publish a string payload on a channel after commit; subscribe to a channel
// as a stream. Two adapters: PostgreSQL LISTEN/NOTIFY (crosses processes) and an in-process
// PubSub (the embedded database delivers no notifications). Inside an actor's step, what its row
// handlers publish on commit goes with the step's own notices (`StepMessages`).
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Option, PubSub, type Scope, Stream } from "effect"
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
   * PostgreSQL holds a NOTIFY until commit; the in-process bus publishes after commit. Within an
   * actor's step the messages join the step's own (`StepMessages`).
   */
  readonly publishOnCommit: (messages: ReadonlyArray<BusMessage>) => Effect.Effect<void, never, SqlClient>
  /**
   * Subscribes to `channel`. The subscription is live when the effect completes (so nothing
   * published afterwards is missed) and ends with the scope. On PostgreSQL every subscription
   * shares one LISTEN session; when it is lost, the live streams die (`ListenSessionLost`) and a
   * new subscription waits for the session to be back.
   */
  readonly subscribe: (channel: string) => Effect.Effect<Stream.Stream<string>, never, Scope.Scope>
}

export interface BusMessage {
  readonly channel: string
  readonly payload: string
}

/**
 * The messages an actor's step publishes on commit, collected while `open` (its row handlers
 * run): the step's host sends them with the step's notices, in the step's own statement on
 * PostgreSQL (ActorSteps.ts) or after its commit on the in-process bus, so they go if and only if
 * the step commits. Once closed, `publishOnCommit` publishes on its own again.
 */
export class StepMessages extends Context.Service<
  StepMessages,
  { readonly messages: Array<BusMessage>; open: boolean }
>()("@troupe/storage/EventBus/StepMessages") {}

/** An adapter's `publishOnCommit`, joining the current step's messages while it collects them. */
const joiningStep =
  (publish: EventBusService["publishOnCommit"]): EventBusService["publishOnCommit"] =>
  (messages) =>
    Effect.flatMap(Effect.serviceOption(StepMessages), (step) => {
      if (Option.isNone(step) || !step.value.open) return publish(messages)
      step.value.messages.push(...messages)
      return Effect.void
    })

export class EventBus extends Context.Service<EventBus, EventBusService>()("@troupe/storage/EventBus") {
  static readonly inProcess = Layer.effect(
    EventBus,
    Effect.gen(function* () {
      const hub = yield* PubSub.unbounded<BusMessage>()
      const publish = (channel: string, payload: string) =>
        PubSub.publish(hub, { channel, payload }).pipe(Effect.asVoid)
      return EventBus.of({
        publish,
        notifiesInTransaction: false,
        publishOnCommit: joiningStep((messages) =>
          Effect.flatMap(SqlClient, (sql) =>
            sql.afterCommit(
              Effect.forEach(messages, (message) => publish(message.channel, message.payload), { discard: true })
            )
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
        publishOnCommit: joiningStep((messages) =>
          messages.length === 0
            ? Effect.void
            : Effect.flatMap(SqlClient, (sql) =>
                sql`SELECT pg_notify(m.channel, m.payload)
                    FROM unnest(${messages.map((m) => m.channel)}::text[], ${messages.map((m) => m.payload)}::text[])
                      AS m(channel, payload)`.pipe(Effect.asVoid, Effect.orDie)
              )
        ),
        subscribe: listens.subscribe
      })
    })
  )
}
