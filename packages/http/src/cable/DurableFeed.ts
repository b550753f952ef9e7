// A durable feed on the cable: the items of one event stream (the outbox items one actor's steps
// append) after a cursor, then live as that actor commits steps, with no gap and no repeat. The
// live items come from the node's shared reader of the stream (FeedReaders.ts), subscribed BEFORE
// anything is read: the feed catches up from its own cursor with its own reads until a page comes
// back short, then takes the reader's entries after the last sequence it sent, so an item is sent
// once whether its own read or the reader found it. Channels carrying a resource's durable items
// authorize first (the domain names the stream), then open one.
import { decodeStreamCursor, type StreamItem, Streams } from "@troupe/actors/Streams"
import { Effect, Exit, Option, Scope, Stream } from "effect"
import { SubscriptionRejected } from "./Channels.ts"
import { FeedEntry, FeedReaders, type FeedSource, pageSize, readStream } from "./FeedReaders.ts"

/**
 * Where a subscription's `after` starts the source's feed: absent, live items only; `""`, from
 * item 1; else a cursor of that stream (a malformed one, or another stream's, is the rejection).
 */
export const startingAfter = (source: FeedSource, after: string | undefined) =>
  after === undefined
    ? Effect.succeed("live" as const)
    : after === ""
      ? Effect.succeed(0n)
      : Effect.mapError(decodeStreamCursor(source.stream, after), () => new SubscriptionRejected())

/**
 * Opens the feed in the subscription's scope: `after` is the last sequence the client holds (0
 * for everything from item 1), or "live" for the items committed from now on. The stream ends
 * with the item `isLast` matches (nothing follows a request's result), releasing its hold on the
 * reader; otherwise that goes with the scope.
 */
export const openDurableFeed = Effect.fnUntraced(function* (
  source: FeedSource,
  after: bigint | "live",
  isLast: (item: StreamItem) => boolean
) {
  const streams = yield* Streams
  const readers = yield* FeedReaders
  const feedScope = yield* Scope.fork(yield* Scope.Scope, "sequential")
  // Live first: an item the reader publishes from here on reaches `shared`; one it published
  // before is committed, so the reads below find it.
  const shared = yield* readers.subscribe(source).pipe(Scope.provide(feedScope))
  let cursor =
    after === "live" ? BigInt((yield* readStream(streams, source.stream, 0n, 0)).pagination.watermark) : after

  /** Every committed item after the cursor, page by page, advancing the cursor. */
  const catchUp = Stream.paginate(undefined, () =>
    Effect.map(readStream(streams, source.stream, cursor), ({ items }) => {
      const last = items.at(-1)
      if (last !== undefined) cursor = BigInt(last.sequence)
      return [
        items.map((item) => new FeedEntry(item)),
        items.length === pageSize ? Option.some(undefined) : Option.none()
      ] as const
    })
  )
  const newer = Stream.filter(Stream.fromSubscription(shared), (entry) => {
    if (entry.sequence <= cursor) return false
    cursor = entry.sequence
    return true
  })
  // Live: everything after the watermark is the reader's to publish. From a cursor: catch up first.
  return (after === "live" ? newer : Stream.concat(catchUp, newer)).pipe(
    Stream.takeUntil((entry: FeedEntry) => isLast(entry.item)),
    Stream.ensuring(Scope.close(feedScope, Exit.void))
  )
})
