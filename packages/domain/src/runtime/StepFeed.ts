// Committed actor steps, fanned out in process to every reader that cares (the cable's sockets
// and subscriptions). The server listens on the bus channel `stepChannel` ONCE (every socket's
// interest is served from one listen) and republishes to an in-process hub. The listen is live before the layer is
// built, and the hub keeps order, so "subscribe to the feed, then read the durable rows" misses
// nothing: a step committed before the feed subscription is in the rows; one committed after
// reaches the subscriber.
// If the bus fails, the feed listens again and publishes `Resync`: every subscriber re-reads.
// A reader of one actor's steps subscribes by its address (`subscribeTo`): it is woken by that
// actor's steps (and resyncs) only, not by every step of every actor (a thousand sockets each
// checking every step was a third of the cable's CPU under fan-out).
import { type StepNotice, stepChannel } from "@troupe/actors/ActorHost"
import { EventBus } from "@troupe/storage/EventBus"
import { Context, Effect, Layer, PubSub, type Scope, Stream } from "effect"

export type FeedItem = { readonly _tag: "Step"; readonly notice: StepNotice } | { readonly _tag: "Resync" }

export class StepFeed extends Context.Service<
  StepFeed,
  {
    /** Live when the effect completes; ends with the scope. */
    readonly subscribe: Effect.Effect<Stream.Stream<FeedItem>, never, Scope.Scope>
    /**
     * The steps of one actor (and every `Resync`); with no actor, the resyncs alone. Live when the
     * effect completes; ends with the scope.
     */
    readonly subscribeTo: (
      actor: { readonly kind: string; readonly id: string } | undefined
    ) => Effect.Effect<Stream.Stream<FeedItem>, never, Scope.Scope>
  }
>()("@troupe/domain/StepFeed") {
  static readonly layer = Layer.effect(
    StepFeed,
    Effect.gen(function* () {
      const bus = yield* EventBus
      const hub = yield* Effect.acquireRelease(PubSub.unbounded<FeedItem>(), PubSub.shutdown)
      /** A hub per actor address with readers, with how many readers hold it. */
      const keyed = new Map<string, { readonly hub: PubSub.PubSub<FeedItem>; readers: number }>()
      const keyOf = (kind: string, id: string) => `${kind}\u0000${id}`
      const resync: FeedItem = { _tag: "Resync" }
      const forward = (payloads: Stream.Stream<string>) =>
        Stream.runForEach(payloads, (payload) => {
          const notice = parseNotice(payload)
          if (notice === undefined) return Effect.void
          const item: FeedItem = { _tag: "Step", notice }
          const own = keyed.get(keyOf(notice.kind, notice.actorId))
          return Effect.andThen(
            PubSub.publish(hub, item),
            own === undefined ? Effect.void : PubSub.publish(own.hub, item)
          )
        })
      const publishResync = Effect.andThen(
        PubSub.publish(hub, resync),
        Effect.forEach([...keyed.values()], (entry) => PubSub.publish(entry.hub, resync), { discard: true })
      )
      const relisten = Effect.scoped(
        Effect.gen(function* () {
          const payloads = yield* bus.subscribe(stepChannel)
          yield* publishResync
          yield* forward(payloads)
        })
      )
      /** The hub of one address, made by its first reader and shut when its last one goes. */
      const hubOf = (key: string) =>
        Effect.acquireRelease(
          Effect.gen(function* () {
            const found = keyed.get(key)
            if (found !== undefined) {
              found.readers += 1
              return found.hub
            }
            const made = { hub: yield* PubSub.unbounded<FeedItem>(), readers: 1 }
            keyed.set(key, made)
            return made.hub
          }),
          () =>
            Effect.suspend(() => {
              const found = keyed.get(key)
              if (found === undefined) return Effect.void
              found.readers -= 1
              if (found.readers > 0) return Effect.void
              keyed.delete(key)
              return PubSub.shutdown(found.hub)
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
        subscribe: Effect.map(PubSub.subscribe(hub), Stream.fromSubscription),
        subscribeTo: (actor) =>
          Effect.gen(function* () {
            const own = yield* hubOf(actor === undefined ? "" : keyOf(actor.kind, actor.id))
            return Stream.fromSubscription(yield* PubSub.subscribe(own))
          })
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
