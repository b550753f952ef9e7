// A durable feed on the cable: the items of one event stream (the outbox items one actor's steps
// append) after a cursor, then live as that actor commits steps, with no gap and no repeat. The
// step feed is subscribed BEFORE anything is read, and every read continues from the last
// sequence read, so an item is sent once whether the backfill or a step notice finds it. Channels
// carrying a resource's durable items authorize first (the domain names the stream), then open one.
import { encodeStreamCursor, type StreamItem, Streams } from "@troupe/actors/Streams"
import { StepFeed } from "@troupe/domain/runtime/StepFeed"
import { Effect, Exit, Option, Scope, Stream } from "effect"

const pageSize = 100

/** The stream to follow and the actor whose committed steps append to it. */
export interface FeedSource {
  readonly stream: string
  readonly actor: { readonly kind: string; readonly id: string }
}

/**
 * Opens the feed in the subscription's scope: `after` is the last sequence the client holds (0
 * for everything from item 1), or "live" for the items committed from now on. The stream ends
 * with the item `isLast` matches (nothing follows a request's result), releasing its step feed
 * subscription; otherwise that goes with the scope.
 */
export const openDurableFeed = Effect.fnUntraced(function* (
  source: FeedSource,
  after: bigint | "live",
  isLast: (item: StreamItem) => boolean
) {
  const streams = yield* Streams
  const feed = yield* StepFeed
  const feedScope = yield* Scope.fork(yield* Scope.Scope, "sequential")
  // Live first: a step committed from here on reaches `steps`, one committed before is in the rows.
  const steps = yield* feed.subscribe.pipe(Scope.provide(feedScope))
  const read = (from: bigint) =>
    Effect.orDie(streams.read(source.stream, from === 0n ? undefined : encodeStreamCursor(from), pageSize))
  let cursor = after === "live" ? BigInt((yield* read(0n)).pagination.watermark) : after

  /** Every committed item after the cursor, page by page, advancing the cursor. */
  const catchUp = Stream.paginate(undefined, () =>
    Effect.map(read(cursor), ({ items }) => {
      const last = items.at(-1)
      if (last !== undefined) cursor = BigInt(last.sequence)
      return [items, items.length === pageSize ? Option.some(undefined) : Option.none()] as const
    })
  )
  const { kind, id } = source.actor
  const newer = steps.pipe(
    Stream.filter((item) => item._tag === "Resync" || (item.notice.kind === kind && item.notice.actorId === id)),
    // Notices that arrived together need one read.
    Stream.chunks,
    Stream.flatMap(() => catchUp)
  )
  return Stream.concat(catchUp, newer).pipe(
    Stream.takeUntil(isLast),
    Stream.ensuring(Scope.close(feedScope, Exit.void))
  )
})
