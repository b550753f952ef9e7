// The timer runner's wake-ups: a step that sets a timer due no sooner than the runner's planned
// wake leaves it asleep (its planned wake finds the timer), one due sooner or at once wakes it,
// and a timer due at once is delivered by the running runner (waited for as its step's notice).
import { ActorHost, type StepNotice, stepChannel } from "@troupe/actors/ActorHost"
import { Bindings, bindingsOf } from "@troupe/actors/Binding"
import { Placement } from "@troupe/actors/Placement"
import { RunnerSignals } from "@troupe/actors/Signals"
import { Supervision } from "@troupe/actors/Supervision"
import { migratedDatabase } from "@troupe/server/Server"
import { EventBus } from "@troupe/storage/EventBus"
import { newPublicId } from "@troupe/storage/Ids"
import * as Repo from "@troupe/storage/repositories/Actors"
import { Clock, Effect, Fiber, Layer, ManagedRuntime, Queue, References, Stream } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeMovableClock } from "../support/clock.ts"
import { freshDatabase, type TestDatabase } from "../support/database.ts"
import { startRuntime, type TestRuntime } from "./harness.ts"
import { workerBinding, workerControls, workerTable } from "./worker.ts"

const clock = makeMovableClock(Effect.runSync(Clock.clockWith(Effect.succeed)))
const binding = workerBinding(workerControls())
let database: TestDatabase
let runtime: TestRuntime

beforeAll(async () => {
  database = await freshDatabase()
  runtime = await startRuntime(database, clock, [binding])
  await runtime.sql((sql) => sql.unsafe(workerTable))
})
afterAll(async () => {
  await runtime?.dispose()
  await database?.drop()
})

describe("timer wakes", () => {
  it("a timer due after the runner's planned wake does not wake it; one due sooner or at once does", async () => {
    // The host alone (no runners) on a database of its own, the runner's planned wake set by the
    // test as a sleeping runner sets it.
    const own = await freshDatabase()
    const hostAlone = ActorHost.layer().pipe(
      Layer.provide(Placement.alone),
      Layer.provideMerge(
        Layer.mergeAll(
          Layer.succeed(Bindings, bindingsOf(binding)),
          RunnerSignals.layer,
          Supervision.layer(["worker"], new Date())
        )
      ),
      Layer.provideMerge(migratedDatabase(own.config)),
      Layer.provideMerge(Layer.succeed(Clock.Clock, clock.clock)),
      Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "None"))
    )
    const alone = ManagedRuntime.make(hostAlone)
    try {
      const woken = await alone.runPromise(
        Effect.gen(function* () {
          const host = yield* ActorHost
          const signals = yield* RunnerSignals
          const id = newPublicId()
          yield* host.create("worker", id, { start: 0 })
          const wokenBy = (delay: number) =>
            Effect.gen(function* () {
              yield* Queue.clear(signals.timers)
              signals.planTimerWake((yield* Clock.currentTimeMillis) + 1000)
              yield* host.send("worker", id, { type: "arm", delay })
              return (yield* Queue.size(signals.timers)) > 0
            })
          const farAhead = yield* wokenBy(10 * 60_000)
          const sooner = yield* wokenBy(500)
          const atOnce = yield* wokenBy(0)
          // A runner in a pass plans no wake yet: any timer set then wakes it again.
          yield* Queue.clear(signals.timers)
          signals.planTimerWake(Number.POSITIVE_INFINITY)
          yield* host.send("worker", id, { type: "arm", delay: 10 * 60_000 })
          const duringPass = (yield* Queue.size(signals.timers)) > 0
          return { farAhead, sooner, atOnce, duringPass }
        })
      )
      expect(woken).toEqual({ farAhead: false, sooner: true, atOnce: true, duringPass: true })
    } finally {
      await alone.dispose()
      await own.drop()
    }
  })

  it("the running timer runner delivers a timer due at once", async () => {
    const host = await runtime.host()
    const id = newPublicId()
    await runtime.run(host.create("worker", id, { start: 0 }))
    await runtime.run(host.send("worker", id, { type: "arm", delay: 10 * 60_000 }))
    await runtime.run(
      Effect.scoped(
        Effect.gen(function* () {
          const notices = yield* (yield* EventBus).subscribe(stepChannel)
          const ping = yield* notices.pipe(
            Stream.map((text) => JSON.parse(text) as StepNotice),
            Stream.filter((notice) => notice.actorId === id && notice.seq === "4"),
            Stream.take(1),
            Stream.runDrain,
            Effect.forkScoped
          )
          yield* host.send("worker", id, { type: "arm", delay: 0 })
          yield* Fiber.join(ping)
        })
      ).pipe(Effect.timeout("10 seconds"))
    )
    const row = await runtime.run(Repo.findSnapshot("worker", id))
    expect((row!.snapshot as { context: { pings: number } }).context.pings).toBe(1)
  })
})
