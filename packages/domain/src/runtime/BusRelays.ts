// The ephemeral messages the cable relays from the bus as they were published: an executor's inbox
// notices and a run's (or a conversation's hosted runs') progress frames (never stored: the inbox
// read and the run's feed are the durable paths). One bus subscription per channel on this node,
// shared by every subscription that follows it, started by the first follower and stopped with
// the last. A channel the bus stops delivering fails its followers (the cable then
// disconnects them to reconnect, and the next follower listens afresh): nothing is lost silently.
import { conversationProgressChannel, inboxChannel, runProgressChannel } from "@troupe/actors/bindings/run"
import { EventBus } from "@troupe/storage/EventBus"
import { Cause, Context, Deferred, Effect, Layer, PubSub, RcMap, type Scope, Stream } from "effect"

interface Relay {
  readonly hub: PubSub.PubSub<string>
  /** Completed when the bus stopped delivering the channel. */
  readonly lost: Deferred.Deferred<void>
}

export class BusRelays extends Context.Service<
  BusRelays,
  {
    /** The messages published on an executor's inbox channel from now on (live when this completes). */
    readonly inbox: (executorPublicId: string) => Effect.Effect<Stream.Stream<string>, never, Scope.Scope>
    /** The progress frames published for a run from now on (live when this completes). */
    readonly runProgress: (runPublicId: string) => Effect.Effect<Stream.Stream<string>, never, Scope.Scope>
    /** The progress frames of a conversation's hosted runs from now on (live when this completes). */
    readonly conversationProgress: (
      conversationPublicId: string
    ) => Effect.Effect<Stream.Stream<string>, never, Scope.Scope>
  }
>()("@troupe/domain/runtime/BusRelays") {
  static readonly layer = Layer.effect(
    BusRelays,
    Effect.gen(function* () {
      const bus = yield* EventBus
      const relays: RcMap.RcMap<string, Relay> = yield* RcMap.make({
        lookup: (channel: string) =>
          Effect.gen(function* () {
            const hub = yield* Effect.acquireRelease(PubSub.unbounded<string>(), PubSub.shutdown)
            const lost = yield* Deferred.make<void>()
            const payloads = yield* bus.subscribe(channel)
            yield* Stream.runForEach(payloads, (payload) => PubSub.publish(hub, payload)).pipe(
              Effect.catchCause((cause) =>
                Cause.hasInterruptsOnly(cause)
                  ? Effect.failCause(cause)
                  : Effect.logError(`cable: the bus stopped relaying ${channel}`, cause)
              ),
              // Followers from here on listen afresh; the current ones fail.
              Effect.andThen(RcMap.invalidate(relays, channel)),
              Effect.andThen(Deferred.succeed(lost, undefined)),
              Effect.forkScoped
            )
            return { hub, lost }
          })
      })
      const follow = Effect.fnUntraced(function* (channel: string) {
        const relay = yield* RcMap.get(relays, channel)
        const subscription = yield* PubSub.subscribe(relay.hub)
        return Stream.fromSubscription(subscription).pipe(
          Stream.interruptWhen(
            Effect.andThen(Deferred.await(relay.lost), Effect.die(new Error(`the bus stopped relaying ${channel}`)))
          )
        )
      })
      return BusRelays.of({
        inbox: (executorPublicId) => follow(inboxChannel(executorPublicId)),
        runProgress: (runPublicId) => follow(runProgressChannel(runPublicId)),
        conversationProgress: (conversationPublicId) => follow(conversationProgressChannel(conversationPublicId))
      })
    })
  )
}
