// The cable's bus relays (packages/domain/src/runtime/BusRelays.ts) over an in-memory bus that
// counts its listens: followers of one channel share one bus subscription, the last to go releases
// it, other channels are not heard; a channel the bus stops delivering fails its followers, and
// the next follower listens afresh.
import { BusRelays } from "@troupe/domain/runtime/BusRelays"
import { EventBus } from "@troupe/storage/EventBus"
import { Effect, Exit, Fiber, Layer, Queue, Scope, Stream } from "effect"
import { describe, expect, it } from "vitest"

const runner = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
const run = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c"

/** A bus whose listens are queues the test can publish to or break; `listens` counts the open ones. */
const world = Effect.gen(function* () {
  const open = new Set<{ readonly channel: string; readonly queue: Queue.Queue<string, Error> }>()
  const counts = { listens: 0, opened: 0 }
  const bus = EventBus.of({
    publish: (channel, payload) =>
      Effect.forEach(
        [...open].filter((each) => each.channel === channel),
        (each) => Queue.offer(each.queue, payload),
        {
          discard: true
        }
      ),
    notifiesInTransaction: false,
    publishOnCommit: () => Effect.void,
    subscribe: (channel) =>
      Effect.acquireRelease(
        Effect.map(Queue.unbounded<string, Error>(), (queue) => {
          const entry = { channel, queue }
          open.add(entry)
          counts.listens++
          counts.opened++
          return entry
        }),
        (entry) =>
          Effect.sync(() => {
            open.delete(entry)
            counts.listens--
          })
      ).pipe(Effect.map((entry) => Stream.orDie(Stream.fromQueue(entry.queue))))
  })
  const breakChannel = (channel: string) =>
    Effect.forEach(
      [...open].filter((each) => each.channel === channel),
      (each) => Queue.fail(each.queue, new Error("connection lost"))
    )
  const relays = yield* Layer.build(BusRelays.layer).pipe(Effect.provideService(EventBus, bus))
  return { bus, counts, breakChannel, relays }
})

/** Follows a channel in a scope of its own; answers the collecting fiber and the scope. */
const follow = (
  w: Effect.Success<typeof world>,
  open: (relays: BusRelays["Service"]) => Effect.Effect<Stream.Stream<string>, never, Scope.Scope>,
  count: number
) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const stream = yield* Effect.flatMap(BusRelays, open).pipe(Effect.provide(w.relays), Scope.provide(scope))
    const fiber = yield* stream.pipe(Stream.take(count), Stream.runCollect, Effect.forkChild)
    return { fiber, scope }
  })

describe("BusRelays", () => {
  it("shares one bus subscription per channel, hears only its own channel, and releases it with the last follower", () =>
    Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const w = yield* world
          const first = yield* follow(w, (relays) => relays.inbox(runner), 2)
          const second = yield* follow(w, (relays) => relays.inbox(runner), 2)
          const progress = yield* follow(w, (relays) => relays.runProgress(run), 1)
          expect(w.counts.listens).toBe(2)
          yield* w.bus.publish(`executor_inbox:${runner}`, '{"type":"work_available"}')
          yield* w.bus.publish(`run_progress:${run}`, '{"type":"step_started"}')
          yield* w.bus.publish("executor_inbox:someone-else", '{"type":"work_available","other":true}')
          yield* w.bus.publish(`executor_inbox:${runner}`, '{"type":"work_canceled"}')
          const heard = ['{"type":"work_available"}', '{"type":"work_canceled"}']
          expect(yield* Fiber.join(first.fiber)).toEqual(heard)
          expect(yield* Fiber.join(second.fiber)).toEqual(heard)
          expect(yield* Fiber.join(progress.fiber)).toEqual(['{"type":"step_started"}'])
          yield* Scope.close(first.scope, Exit.void)
          expect(w.counts.listens).toBe(2)
          yield* Scope.close(second.scope, Exit.void)
          yield* Scope.close(progress.scope, Exit.void)
          expect(w.counts.listens).toBe(0)
        })
      )
    ))

  it("a channel the bus stops delivering fails its followers; the next follower listens afresh", () =>
    Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const w = yield* world
          const broken = yield* follow(w, (relays) => relays.runProgress(run), 2)
          yield* w.breakChannel(`run_progress:${run}`)
          const exit = yield* Fiber.await(broken.fiber)
          expect(Exit.isFailure(exit)).toBe(true)
          yield* Scope.close(broken.scope, Exit.void)
          const again = yield* follow(w, (relays) => relays.runProgress(run), 1)
          expect(w.counts.opened).toBe(2)
          yield* w.bus.publish(`run_progress:${run}`, '{"type":"step_claimed"}')
          expect(yield* Fiber.join(again.fiber)).toEqual(['{"type":"step_claimed"}'])
        })
      )
    ))
})
