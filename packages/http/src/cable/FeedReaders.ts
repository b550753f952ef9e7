// The node's one reader per durable stream: the first live subscription of a stream starts it, the
// last to go stops it (reference-counted). After each committed step of the stream's actor (and
// on a step feed resync) it reads the new items once and publishes them, as entries shared by
// every subscription of the stream: N subscribers cost one read a step, not N, and an item's
// message is encoded once. Each subscription catches up to it by itself (DurableFeed.ts).
import { encodeStreamCursor, type StreamItem, Streams } from "@troupe/actors/Streams"
import { StepFeed } from "@troupe/domain/runtime/StepFeed"
import { Cause, Context, Effect, Layer, PubSub, RcMap, type Scope, Stream } from "effect"
import { EncodedMessage } from "./Protocol.ts"

export const pageSize = 100

/** The stream to follow and the actor whose committed steps append to it. */
export interface FeedSource {
  readonly stream: string
  readonly actor: { readonly kind: string; readonly id: string }
}

/** One item of a feed, and its messages, each encoded once however many subscriptions send it. */
export class FeedEntry {
  readonly item: StreamItem
  readonly sequence: bigint
  #event: EncodedMessage | undefined
  #messages: Map<string, EncodedMessage | undefined> | undefined

  constructor(item: StreamItem) {
    this.item = item
    this.sequence = BigInt(item.sequence)
  }

  /** `{event: item}`, the message of the durable channels. */
  get event(): EncodedMessage {
    this.#event ??= new EncodedMessage(JSON.stringify({ event: this.item }))
    return this.#event
  }

  /** The message `make` answers for the item (undefined: none), made once per `key`. */
  message(key: string, make: (item: StreamItem) => unknown): EncodedMessage | undefined {
    this.#messages ??= new Map()
    if (!this.#messages.has(key)) {
      const message = make(this.item)
      this.#messages.set(key, message === undefined ? undefined : new EncodedMessage(JSON.stringify(message)))
    }
    return this.#messages.get(key)
  }
}

/** The committed items of `stream` after `from` (0: from item 1), `limit` at most, and its watermark. */
export const readStream = (streams: Streams["Service"], stream: string, from: bigint, limit = pageSize) =>
  Effect.orDie(streams.read(stream, from === 0n ? undefined : encodeStreamCursor(stream, from), limit))

/** Reads the source's new items after each of its actor's steps, publishing them from its start on. */
const startReader = Effect.fnUntraced(function* (
  streams: Streams["Service"],
  feed: StepFeed["Service"],
  source: FeedSource
) {
  const hub = yield* Effect.acquireRelease(PubSub.unbounded<FeedEntry>(), PubSub.shutdown)
  // Live first: a step committed from here on is noticed, one committed before is under the watermark.
  const steps = yield* feed.subscribeTo(source.actor)
  let position = BigInt((yield* readStream(streams, source.stream, 0n, 0)).pagination.watermark)
  const catchUp = Effect.gen(function* () {
    for (;;) {
      const { items } = yield* readStream(streams, source.stream, position)
      const last = items.at(-1)
      if (last !== undefined) {
        position = BigInt(last.sequence)
        yield* PubSub.publishAll(
          hub,
          items.map((item) => new FeedEntry(item))
        )
      }
      if (items.length < pageSize) return
    }
  })
  // A failed read is read again from the same position: every subscription waits, none misses.
  const reading: Effect.Effect<void> = catchUp.pipe(
    Effect.catchCause((cause) =>
      Cause.hasInterruptsOnly(cause)
        ? Effect.failCause(cause)
        : Effect.logError(`cable: reading ${source.stream} failed; reading again`, cause).pipe(
            Effect.andThen(Effect.sleep("1 second")),
            Effect.andThen(Effect.suspend(() => reading))
          )
    )
  )
  yield* steps.pipe(
    // Notices that arrived together need one read.
    Stream.chunks,
    Stream.runForEach(() => reading),
    Effect.forkScoped
  )
  return PubSub.subscribe(hub)
})

export class FeedReaders extends Context.Service<
  FeedReaders,
  {
    /**
     * Every item of the source committed after the reader's position when this is subscribed, in
     * order, once; the subscription (and the hold on the reader) ends with the scope.
     */
    readonly subscribe: (source: FeedSource) => Effect.Effect<PubSub.Subscription<FeedEntry>, never, Scope.Scope>
  }
>()("@troupe/http/cable/FeedReaders") {
  static readonly layer = Layer.effect(
    FeedReaders,
    Effect.gen(function* () {
      const streams = yield* Streams
      const feed = yield* StepFeed
      const readers = yield* RcMap.make({ lookup: (source: FeedSource) => startReader(streams, feed, source) })
      return FeedReaders.of({
        subscribe: (source) =>
          Effect.flatten(
            // A plain key: equal sources share one reader.
            RcMap.get(readers, { stream: source.stream, actor: { kind: source.actor.kind, id: source.actor.id } })
          )
      })
    })
  )
}
