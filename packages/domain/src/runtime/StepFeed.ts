// Committed actor steps, fanned out in process to every reader that cares (the cable's sockets
// and subscriptions). The server listens on the bus channel `stepChannel` ONCE (on PostgreSQL
// every bus subscription holds a pooled connection, so one per socket or per subscription would
// drain the pool) and republishes to an in-process hub. The listen is live before the layer is
// built, and the hub keeps order, so "subscribe to the feed, then read the durable rows" misses
// nothing: a step committed before the feed subscription is in the rows; one committed after
// reaches the subscriber.
// If the bus fails, the feed listens again and publishes `Resync`: every subscriber re-reads.
import { type StepNotice, stepChannel } from "@troupe/actors/ActorHost"
import { EventBus } from "@troupe/storage/EventBus"
import { Context, Effect, Layer, PubSub, type Scope, Stream } from "effect"

export type FeedItem = { readonly _tag: "Step"; readonly notice: StepNotice } | { readonly _tag: "Resync" }

export class StepFeed extends Context.Service<
  StepFeed,
  {
    /** Live when the effect completes; ends with the scope. */
    readonly subscribe: Effect.Effect<Stream.Stream<FeedItem>, never, Scope.Scope>
  }
>()("@troupe/domain/StepFeed") {
  static readonly layer = Layer.effect(
    StepFeed,
    Effect.gen(function* () {
      const bus = yield* EventBus
      const hub = yield* Effect.acquireRelease(PubSub.unbounded<FeedItem>(), PubSub.shutdown)
      const forward = (payloads: Stream.Stream<string>) =>
        Stream.runForEach(payloads, (payload) => {
          const notice = parseNotice(payload)
          return notice === undefined ? Effect.void : PubSub.publish(hub, { _tag: "Step", notice })
        })
      const relisten = Effect.scoped(
        Effect.gen(function* () {
          const payloads = yield* bus.subscribe(stepChannel)
          yield* PubSub.publish(hub, { _tag: "Resync" })
          yield* forward(payloads)
        })
      )
      const logged = (effect: Effect.Effect<void>) =>
        Effect.catchCause(effect, (cause) => Effect.logError("cable: the step feed lost the bus", cause))
      const first = yield* bus.subscribe(stepChannel)
      yield* logged(forward(first)).pipe(
        Effect.andThen(logged(relisten).pipe(Effect.andThen(Effect.sleep("1 second")), Effect.forever)),
        Effect.forkScoped
      )
      return StepFeed.of({
        subscribe: Effect.map(PubSub.subscribe(hub), Stream.fromSubscription)
      })
    })
  )
}

const parseNotice = (payload: string): StepNotice | undefined => {
  try {
    const value = JSON.parse(payload) as Partial<StepNotice> | null
    return typeof value?.kind === "string" &&
      typeof value.actorId === "string" &&
      typeof value.seq === "string" &&
      typeof value.state === "string"
      ? (value as StepNotice)
      : undefined
  } catch {
    return undefined
  }
}
