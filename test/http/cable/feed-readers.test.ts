// The cable's shared stream readers (packages/http/src/cable/FeedReaders.ts) under durable feeds
// (DurableFeed.ts), on an in-memory stream and step feed: feeds of one stream share one reader
// that reads once a step however many follow it; a feed from a cursor catches up by itself while
// items keep coming, then goes on live with no gap and no repeat; the last item ends a feed; and
// when the last feed of a stream goes, so does its reader (and its step feed subscription).
import { decodeStreamCursor, encodeStreamCursor, type StreamItem, Streams } from "@troupe/actors/Streams"
import { type FeedItem, StepFeed } from "@troupe/domain/runtime/StepFeed"
import { openDurableFeed } from "@troupe/http/cable/DurableFeed"
import { FeedReaders, type FeedSource } from "@troupe/http/cable/FeedReaders"
import { Effect, Exit, Fiber, Layer, PubSub, Scope, Stream } from "effect"
import { describe, expect, it } from "vitest"

const source: FeedSource = { stream: "conversation:c1", actor: { kind: "conversation", id: "c1" } }

/** One stream in memory, its step notices, and how often it was read. */
const world = Effect.gen(function* () {
  const items: Array<StreamItem> = []
  const counts = { reads: 0, stepSubscribers: 0 }
  const hub = yield* PubSub.unbounded<FeedItem>()
  const streams = Streams.of({
    read: (stream, after, limit) =>
      Effect.gen(function* () {
        counts.reads++
        // Other fibers (steps, other feeds) run between a read's start and its answer.
        yield* Effect.yieldNow
        const from = after === undefined ? 0n : yield* decodeStreamCursor(stream, after)
        const page = items.filter((item) => BigInt(item.sequence) > from).slice(0, limit)
        const last = page.at(-1)
        return { items: page, pagination: { next_after: last ? last.cursor : null, watermark: items.length } }
      }),
    reap: Effect.succeed(0)
  })
  // One actor's steps are the only ones published here: an address subscription reads the same hub.
  const subscribe = Effect.acquireRelease(
    Effect.sync(() => counts.stepSubscribers++),
    () => Effect.sync(() => counts.stepSubscribers--)
  ).pipe(Effect.andThen(Effect.map(PubSub.subscribe(hub), Stream.fromSubscription)))
  const steps = StepFeed.of({ subscribe, subscribeTo: () => subscribe })
  /** Commits `count` items in one step, `type` the last one's. */
  const append = (count: number, type = "item") =>
    Effect.gen(function* () {
      for (let index = 0; index < count; index++) {
        const sequence = items.length + 1
        items.push({
          public_id: `i${sequence}`,
          sequence,
          cursor: encodeStreamCursor(source.stream, BigInt(sequence)),
          type: index === count - 1 ? type : "item",
          resource: { type: "conversation", public_id: "c1" },
          occurred_at: new Date(0).toISOString(),
          payload: {}
        })
      }
      yield* PubSub.publish(hub, {
        _tag: "Step",
        notice: { kind: "conversation", actorId: "c1", seq: String(items.length), state: "active" }
      } as FeedItem)
    })
  const readers = Layer.build(FeedReaders.layer).pipe(
    Effect.provideService(Streams, streams),
    Effect.provideService(StepFeed, steps)
  )
  return { counts, append, streams, context: yield* readers }
})

/** Opens a feed in a scope of its own; answers its collecting fiber and the scope. */
const follow = (
  w: Effect.Success<typeof world>,
  after: bigint | "live",
  count: number,
  isLast: (item: StreamItem) => boolean = () => false
) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const feed = yield* openDurableFeed(source, after, isLast).pipe(
      Effect.provideService(Streams, w.streams),
      Effect.provide(w.context),
      Scope.provide(scope)
    )
    const fiber = yield* feed.pipe(Stream.take(count), Stream.runCollect, Effect.forkChild)
    return {
      fiber,
      scope,
      sequences: Effect.map(Fiber.join(fiber), (entries) => entries.map((entry) => entry.sequence))
    }
  })

const run = <A>(effect: Effect.Effect<A, never, Scope.Scope>) => Effect.runPromise(Effect.scoped(effect))

describe("shared feed readers", () => {
  it("feeds of one stream share a reader that reads once a step, and each item's message is encoded once", () =>
    run(
      Effect.gen(function* () {
        const w = yield* world
        yield* w.append(2)
        const feeds = yield* Effect.forEach([1, 2, 3], () => follow(w, "live", 4))
        expect(w.counts.stepSubscribers).toBe(1)
        const before = w.counts.reads
        yield* w.append(2)
        yield* w.append(2)
        const heard = yield* Effect.forEach(feeds, ({ fiber }) => Fiber.join(fiber))
        // One read a step at most (notices that arrive together need one), not one a feed.
        expect(w.counts.reads - before).toBeGreaterThan(0)
        expect(w.counts.reads - before).toBeLessThanOrEqual(2)
        for (const entries of heard) expect(entries.map((entry) => entry.item.sequence)).toEqual([3, 4, 5, 6])
        const [first, ...others] = heard.map((entries) => entries.map((entry) => entry.event))
        for (const events of others) expect(events.every((event, index) => event === first?.[index])).toBe(true)
        expect(JSON.parse(first?.[0]?.json ?? "")).toEqual({ event: heard[0]?.[0]?.item })
      })
    ))

  it("a feed from a cursor catches up page by page while items keep coming, then goes on live: no gap, no repeat", () =>
    run(
      Effect.gen(function* () {
        const w = yield* world
        yield* w.append(250)
        const early = yield* follow(w, "live", 60)
        const appending = yield* Effect.forEach(
          Array.from({ length: 30 }),
          () => w.append(2).pipe(Effect.andThen(Effect.yieldNow)),
          {
            discard: true
          }
        ).pipe(Effect.forkChild)
        const late = yield* follow(w, 10n, 300)
        yield* Fiber.join(appending)
        yield* w.append(50)
        const expected = Array.from({ length: 300 }, (_, index) => index + 11)
        expect(yield* late.sequences).toEqual(expected.map(BigInt))
        expect(yield* early.sequences).toEqual(expected.slice(240, 300).map(BigInt))
      })
    ))

  it("the last item ends a feed, and the reader goes with the last feed of its stream", () =>
    run(
      Effect.gen(function* () {
        const w = yield* world
        const ending = yield* follow(w, 0n, 100, (item) => item.type === "end")
        const other = yield* follow(w, "live", 100)
        yield* w.append(3, "end")
        expect(yield* ending.sequences).toEqual([1n, 2n, 3n])
        yield* Scope.close(ending.scope, Exit.void)
        expect(w.counts.stepSubscribers).toBe(1)
        yield* Fiber.interrupt(other.fiber)
        yield* Scope.close(other.scope, Exit.void)
        expect(w.counts.stepSubscribers).toBe(0)
        // A new feed starts a new reader.
        const again = yield* follow(w, "live", 1)
        expect(w.counts.stepSubscribers).toBe(1)
        yield* w.append(1)
        expect(yield* again.sequences).toEqual([4n])
      })
    ))
})
