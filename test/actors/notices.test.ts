// Step notices on the bus: every committed step is announced once its transaction has committed,
// whether it NOTIFYed in its own statement (alone) or queued its notice beside other committing
// steps (PostgreSQL, actors/src/Notices.ts); what a dead node left queued goes out within a second.
import { type StepNotice, stepChannel } from "@troupe/actors/ActorHost"
import { EventBus } from "@troupe/storage/EventBus"
import { newPublicId } from "@troupe/storage/Ids"
import { Clock, Effect, Fiber, Stream } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeMovableClock } from "../support/clock.ts"
import { freshDatabase, postgresReachable, type TestDatabase } from "../support/database.ts"
import { startRuntime, type TestRuntime } from "./harness.ts"
import { workerBinding, workerControls, workerTable } from "./worker.ts"

const onPostgres = await postgresReachable()
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

/** Collects the step notices published while `act` runs, until `done` says enough. */
const noticesDuring = (act: Effect.Effect<unknown, unknown>, done: (notices: ReadonlyArray<StepNotice>) => boolean) =>
  runtime.run(
    Effect.scoped(
      Effect.gen(function* () {
        const bus = yield* EventBus
        const payloads = yield* bus.subscribe(stepChannel)
        const seen: Array<StepNotice> = []
        const collecting = yield* payloads.pipe(
          Stream.map((text) => JSON.parse(text) as StepNotice),
          Stream.takeUntil((notice) => {
            seen.push(notice)
            return done(seen)
          }),
          Stream.runDrain,
          Effect.forkScoped
        )
        yield* act
        yield* Fiber.join(collecting)
        return seen
      })
    ).pipe(Effect.timeout("10 seconds"))
  )

describe("step notices", () => {
  it("announces every step of actors stepping at once, each after its commit", async () => {
    const host = await runtime.host()
    const ids = Array.from({ length: 8 }, () => newPublicId())
    for (const id of ids) await runtime.run(host.create("worker", id, { start: 0 }))
    const expected = new Set(ids.flatMap((id) => [2, 3, 4, 5].map((seq) => `${id}/${seq}`)))
    const steps = Effect.forEach(
      ids.flatMap((id) => [id, id, id, id]),
      (id) => host.send("worker", id, { type: "count" }),
      { concurrency: "unbounded" }
    )
    const notices = await noticesDuring(steps, (seen) =>
      [...expected].every((key) => seen.some((notice) => `${notice.actorId}/${notice.seq}` === key))
    )
    const announced = notices.filter((notice) => ids.includes(notice.actorId))
    expect(new Set(announced.map((notice) => `${notice.actorId}/${notice.seq}`))).toEqual(expected)
  })

  it.runIf(onPostgres)(
    "on PostgreSQL, sends what a dead node left queued within a second, and leaves nothing queued",
    async () => {
      const notice: StepNotice = { kind: "worker", actorId: newPublicId(), seq: "7", state: "idle" }
      const notices = await noticesDuring(
        Effect.promise(() =>
          runtime.sql(
            (sql) =>
              sql`INSERT INTO actor_notices (channel, payload) VALUES (${stepChannel}, ${JSON.stringify(notice)})`
          )
        ),
        (seen) => seen.some((seenNotice) => seenNotice.actorId === notice.actorId)
      )
      expect(notices.find((seenNotice) => seenNotice.actorId === notice.actorId)).toEqual(notice)
      const left = await runtime.sql<{ n: bigint }>((sql) => sql`SELECT count(*) AS n FROM actor_notices`)
      expect(left[0]!.n).toBe(0n)
    }
  )
})
