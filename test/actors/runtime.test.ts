// The actor runtime over a real database: the step's guarantees, timers, jobs, supervision and
// event streams, with a test machine (worker.ts). Restarts dispose one runtime and start another
// over the same database, as a crashed or stopped process would.
import { type ActorHost, type StepNotice, stepChannel } from "@troupe/actors/ActorHost"
import { type JobNotice, jobChannel } from "@troupe/actors/JobRunner"
import { Streams } from "@troupe/actors/Streams"
import { Supervision } from "@troupe/actors/Supervision"
import { EventBus } from "@troupe/storage/EventBus"
import { newPublicId } from "@troupe/storage/Ids"
import * as Repo from "@troupe/storage/repositories/Actors"
import { Clock, Deferred, Effect, Exit, Stream } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { afterNotice } from "../support/actors.ts"
import { makeMovableClock } from "../support/clock.ts"
import { freshDatabase, postgresReachable, type TestDatabase } from "../support/database.ts"
import { startRuntime, type TestRuntime } from "./harness.ts"
import { workerBinding, workerControls, workerTable } from "./worker.ts"

const clock = makeMovableClock(Effect.runSync(Clock.clockWith(Effect.succeed)))
const controls = workerControls()
const binding = workerBinding(controls)
let database: TestDatabase
let runtime: TestRuntime

const restart = async () => {
  await runtime.dispose()
  runtime = await startRuntime(database, clock, [binding])
}

beforeAll(async () => {
  database = await freshDatabase()
  runtime = await startRuntime(database, clock, [binding])
  await runtime.sql((sql) => sql.unsafe(workerTable))
})
afterAll(async () => {
  await runtime?.dispose()
  await database?.drop()
})

const host = () => runtime.host()
const newWorker = async (start = 0) => {
  const id = newPublicId()
  await (await host()).create("worker", id, { start }).pipe(runtime.run)
  return id
}
const send = async (id: string, event: Parameters<ActorHost["Service"]["send"]>[2]) =>
  runtime.run((await host()).send("worker", id, event))
const snapshot = (id: string) => runtime.run(Repo.findSnapshot("worker", id)).then((row) => row!)
const context = async (id: string) => ((await snapshot(id)).snapshot as { context: Record<string, unknown> }).context
const rows = <A extends object>(query: (sql: SqlClient) => Effect.Effect<ReadonlyArray<A>, unknown>) =>
  runtime.sql<A>(query)

/** Resolves when the actor commits a step into `state` (or is already there). */
const waitForState = (id: string, state: string) =>
  runtime.run(
    Effect.scoped(
      Effect.gen(function* () {
        const bus = yield* EventBus
        const notices = yield* bus.subscribe(stepChannel)
        if ((yield* Repo.findSnapshot("worker", id))?.state_value === state) return
        yield* notices.pipe(
          Stream.map((text) => JSON.parse(text) as StepNotice),
          Stream.filter((notice) => notice.actorId === id && notice.state === state),
          Stream.take(1),
          Stream.runDrain
        )
      })
    ).pipe(Effect.timeout("10 seconds"))
  )

const afterJobNotice = <A>(id: string, outcome: JobNotice["outcome"], act: () => Promise<A>) =>
  afterNotice(runtime.run, jobChannel, id, outcome, act)

describe("steps", () => {
  it("an actor starts in its machine's initial state at seq 1, journaled as xstate.init", async () => {
    const id = await newWorker(5)
    const row = await snapshot(id)
    expect(row.seq).toBe(1n)
    expect(row.state_value).toBe("idle")
    expect(row.machine).toBe("worker")
    expect(await context(id)).toMatchObject({ count: 5 })
    const journal = await runtime.run(Repo.readJournal("worker", id, 0n, 10))
    expect(journal.map((entry) => [entry.seq, entry.event_type, entry.from_state, entry.to_state])).toEqual([
      [1n, "xstate.init", null, "idle"]
    ])
    const again = await runtime.run(Effect.exit((await host()).create("worker", id, { start: 0 })))
    expect(Exit.isFailure(again)).toBe(true)
  })

  it("processes one event at a time per actor under concurrency", async () => {
    const id = await newWorker()
    const h = await host()
    const outcomes = await runtime.run(
      Effect.forEach(Array.from({ length: 40 }), () => h.send("worker", id, { type: "count" }), {
        concurrency: "unbounded"
      })
    )
    expect(new Set(outcomes.map((outcome) => outcome._tag === "Accepted" && outcome.seq)).size).toBe(40)
    expect(await context(id)).toMatchObject({ count: 40 })
    expect((await snapshot(id)).seq).toBe(41n)
    const journal = await runtime.run(Repo.readJournal("worker", id, 0n, 100))
    expect(journal.map((entry) => Number(entry.seq))).toEqual(Array.from({ length: 41 }, (_, i) => i + 1))
    const records = await rows<{ seq: bigint }>(
      (sql) => sql`SELECT seq FROM worker_records WHERE actor_id = ${id} ORDER BY seq`
    )
    expect(records.map((record) => Number(record.seq))).toEqual(Array.from({ length: 40 }, (_, i) => i + 2))
    const page = await runtime.run(Effect.flatMap(Streams, (streams) => streams.read(`worker:${id}`, undefined, 100)))
    expect(page.items.map((item) => item.sequence)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1))
    expect(page.items.map((item) => (item.payload as { count: number }).count)).toEqual(
      Array.from({ length: 40 }, (_, i) => i + 1)
    )
  })

  it("answers a rejected event with the state and the events it would accept", async () => {
    const id = await newWorker()
    const outcome = await send(id, { type: "fetched", body: "x" })
    expect(outcome).toEqual({
      _tag: "Rejected",
      state: "idle",
      accepts: [
        "arm",
        "count",
        "disarm",
        "explode",
        "fetch",
        "finish",
        "greet",
        "guarded",
        "mint",
        "ping",
        "tell",
        "tellAndFail"
      ]
    })
    expect((await snapshot(id)).seq).toBe(1n)
  })

  it("refuses events and input that do not match the machine's schemas", async () => {
    const id = await newWorker()
    const h = await host()
    const badEvent = await runtime.run(Effect.exit(h.send("worker", id, { type: "fetch" })))
    expect(Exit.isFailure(badEvent) && JSON.stringify(badEvent.cause)).toContain("InvalidMessage")
    const unknownEvent = await runtime.run(Effect.exit(h.send("worker", id, { type: "teleport" })))
    expect(Exit.isFailure(unknownEvent) && JSON.stringify(unknownEvent.cause)).toContain("InvalidMessage")
    const badInput = await runtime.run(Effect.exit(h.create("worker", newPublicId(), { start: "zero" })))
    expect(Exit.isFailure(badInput) && JSON.stringify(badInput.cause)).toContain("InvalidMessage")
    expect((await snapshot(id)).seq).toBe(1n)
  })

  it("hands a row handler's reply to the caller, and never journals it", async () => {
    const id = await newWorker()
    const outcome = await send(id, { type: "mint" })
    expect(outcome).toMatchObject({
      _tag: "Accepted",
      seq: 2n,
      replies: { "worker.mint": { secret: "secret-of-step-2" } }
    })
    const journal = await runtime.run(Repo.readJournal("worker", id, 0n, 10))
    expect(JSON.stringify(journal.map((entry) => entry.event))).not.toContain("secret-of-step")
    expect(JSON.stringify(journal.map((entry) => entry.actions))).not.toContain("secret-of-step")
  })

  it("a row handler's veto rolls the step back and answers Vetoed, without counting a failure", async () => {
    const id = await newWorker()
    const before = await runtime.run(Effect.flatMap(Supervision, (s) => s.get("worker")))
    expect(await send(id, { type: "guarded" })).toEqual({
      _tag: "Vetoed",
      state: "idle",
      reason: "the database says no"
    })
    const row = await snapshot(id)
    expect([row.seq, row.state_value, row.quarantined_at]).toEqual([1n, "idle", null])
    const after = await runtime.run(Effect.flatMap(Supervision, (s) => s.get("worker")))
    expect(after.failures).toBe(before.failures)
  })

  it("detects a seq conflict from a second writer and steps from the newer snapshot", async () => {
    const id = await newWorker()
    await send(id, { type: "count" })
    await rows((sql) => sql`UPDATE actor_snapshots SET seq = seq + 1 WHERE actor_id = ${id}`)
    const outcome = await send(id, { type: "count" })
    expect(outcome).toMatchObject({ _tag: "Accepted", seq: 4n })
    expect(await context(id)).toMatchObject({ count: 2 })
  })

  it("rolls everything back when a transactional handler fails, then quarantines with a dead letter", async () => {
    const id = await newWorker()
    await send(id, { type: "arm", delay: 3_600_000 })
    const before = await snapshot(id)
    const failed = await runtime.run(Effect.exit((await host()).send("worker", id, { type: "explode" })))
    expect(Exit.isFailure(failed) && JSON.stringify(failed.cause)).toContain("ActorQuarantined")
    const after = await snapshot(id)
    expect(after.seq).toBe(before.seq)
    expect(after.quarantined_at).not.toBeNull()
    const exploded = await rows(
      (sql) => sql`SELECT 1 FROM outbox_items WHERE stream = ${`worker:${id}`} AND type = 'exploded'`
    )
    expect(exploded).toHaveLength(0)
    expect(await rows((sql) => sql`SELECT 1 FROM worker_records WHERE seq = -1`)).toHaveLength(0)
    const journal = await runtime.run(Repo.readJournal("worker", id, before.seq, 10))
    expect(journal).toHaveLength(0)
    const timers = await runtime.run(Repo.actorTimers("worker", id))
    expect(timers.map((timer) => [timer.timer_id, timer.set_at_seq])).toEqual([["ping", before.seq]])
    expect(await runtime.run(Repo.actorJobs("worker", id))).toEqual([])
    const letters = await runtime.run(Repo.deadLetters("worker", id))
    expect(letters).toHaveLength(1)
    expect(letters[0]).toMatchObject({ event: { type: "explode" }, attempts: 3 })
    const supervisor = await runtime.run(Effect.flatMap(Supervision, (s) => s.get("worker")))
    expect(supervisor.quarantines).toBeGreaterThanOrEqual(1)
    expect(supervisor.lastFailure?.actorId).toBe(id)
    const refused = await runtime.run(Effect.exit((await host()).send("worker", id, { type: "count" })))
    expect(Exit.isFailure(refused) && JSON.stringify(refused.cause)).toContain("ActorQuarantined")
  })

  it("an operator restart lifts the quarantine and the actor continues from its last snapshot", async () => {
    const id = await newWorker()
    await runtime.run(Effect.exit((await host()).send("worker", id, { type: "explode" })))
    expect(await runtime.run((await host()).restartActor("worker", id))).toBe(true)
    expect((await snapshot(id)).quarantined_at).toBeNull()
    expect(await send(id, { type: "count" })).toMatchObject({ _tag: "Accepted", seq: 2n })
  })

  it("a supervisor restart drops the kind's live actors and counts the restart", async () => {
    await newWorker()
    const h = await host()
    const before = await runtime.run(Effect.flatMap(Supervision, (s) => s.get("worker")))
    await runtime.run(h.restartKind("worker"))
    expect(await runtime.run(h.liveCount("worker"))).toBe(0)
    const after = await runtime.run(Effect.flatMap(Supervision, (s) => s.get("worker")))
    expect(after.restarts).toBe(before.restarts + 1)
    expect(after.failures).toBe(0)
  })
})

describe("jobs", () => {
  it("run after commit and report back as an event; a repeated report is harmless", async () => {
    const id = await newWorker()
    const fetchesBefore = controls.fetches
    expect(await send(id, { type: "fetch", url: "https://example.test/a" })).toMatchObject({ state: "fetching" })
    await waitForState(id, "idle")
    expect(controls.fetches).toBe(fetchesBefore + 1)
    expect(await context(id)).toMatchObject({ body: "body of https://example.test/a" })
    const [job] = await runtime.run(Repo.actorJobs("worker", id))
    expect(job).toMatchObject({ name: "worker.fetch", state: "done", action_index: 0 })
    const seq = (await snapshot(id)).seq
    await runtime.run((await host()).deliver({ _tag: "Job", job: job! }, { type: "fetched", body: "again" }))
    expect((await snapshot(id)).seq).toBe(seq)
    expect(await context(id)).toMatchObject({ body: "body of https://example.test/a" })
  })

  it("a failed job is retried with backoff until it succeeds", async () => {
    const id = await newWorker()
    controls.failFetch = true
    await afterJobNotice(id, "retrying", () => send(id, { type: "fetch", url: "https://example.test/b" }))
    const [failing] = await runtime.run(Repo.actorJobs("worker", id))
    expect(failing).toMatchObject({ state: "pending", last_error: expect.stringContaining("fetch failed") })
    expect(failing!.attempts).toBeGreaterThanOrEqual(1)
    expect(failing!.next_attempt_at.getTime()).toBeGreaterThan(Date.now())
    controls.failFetch = false
    clock.advance("10 minutes")
    await afterJobNotice(id, "done", () => runtime.runReadyJobs())
    expect((await snapshot(id)).state_value).toBe("idle")
    expect(await context(id)).toMatchObject({ body: "body of https://example.test/b" })
  })

  it("a crash between commit and the job's run loses nothing: the job runs after restart", async () => {
    const id = await newWorker()
    controls.gate = await Effect.runPromise(Deferred.make<void>())
    controls.started = await Effect.runPromise(Deferred.make<void>())
    await send(id, { type: "fetch", url: "https://example.test/c" })
    await Effect.runPromise(Deferred.await(controls.started))
    await runtime.dispose()
    controls.gate = undefined
    controls.started = undefined
    runtime = await startRuntime(database, clock, [binding])
    expect((await snapshot(id)).state_value).toBe("fetching")
    clock.advance("3 minutes")
    await afterJobNotice(id, "done", () => runtime.runReadyJobs())
    expect(await context(id)).toMatchObject({ body: "body of https://example.test/c" })
  })
  it("a job whose report meets a quarantine is held, not run again, and runs once after the restart", async () => {
    const id = await newWorker()
    const gate = await Effect.runPromise(Deferred.make<void>())
    controls.gate = gate
    controls.started = await Effect.runPromise(Deferred.make<void>())
    await send(id, { type: "fetch", url: "https://example.test/q" })
    await Effect.runPromise(Deferred.await(controls.started))
    await rows((sql) => sql`UPDATE actor_snapshots SET quarantined_at = now() WHERE actor_id = ${id}`)
    await runtime.run((await host()).restartKind("worker"))
    controls.gate = undefined
    controls.started = undefined
    const fetches = controls.fetches
    await afterJobNotice(id, "held", () => Effect.runPromise(Deferred.succeed(gate, undefined)))
    const [held] = await runtime.run(Repo.actorJobs("worker", id))
    expect(held).toMatchObject({ state: "pending", lease_until: null })
    // Quarantined, the actor could only refuse the report: its job is not run again for nothing.
    clock.advance("3 minutes")
    expect(await runtime.runReadyJobs()).toBe(0)
    expect(controls.fetches).toBe(fetches)
    const h = await host()
    await afterJobNotice(id, "done", () => runtime.run(h.restartActor("worker", id)))
    expect(controls.fetches).toBe(fetches + 1)
    expect((await snapshot(id)).state_value).toBe("idle")
    expect(await context(id)).toMatchObject({ body: "body of https://example.test/q" })
    const journal = await runtime.run(Repo.readJournal("worker", id, 0n, 10))
    expect(journal.filter((entry) => entry.event_type === "fetched")).toHaveLength(1)
  })
})

describe("timers", () => {
  it("a delayed event becomes a timer row and fires as an event when due", async () => {
    const id = await newWorker()
    await send(id, { type: "arm", delay: 60_000 })
    const [timer] = await runtime.run(Repo.actorTimers("worker", id))
    expect(timer).toMatchObject({ timer_id: "ping", event: { type: "ping" } })
    await runtime.runDueTimers()
    expect(await context(id)).toMatchObject({ pings: 0 })
    clock.advance("61 seconds")
    await runtime.runDueTimers()
    expect(await context(id)).toMatchObject({ pings: 1 })
    expect(await runtime.run(Repo.actorTimers("worker", id))).toEqual([])
  })

  it("a cancelled timer never fires, and a stale delivery of a replaced timer is ignored", async () => {
    const id = await newWorker()
    await send(id, { type: "arm", delay: 60_000 })
    await send(id, { type: "disarm" })
    expect(await runtime.run(Repo.actorTimers("worker", id))).toEqual([])
    await send(id, { type: "arm", delay: 60_000 })
    const [old] = await runtime.run(Repo.actorTimers("worker", id))
    await send(id, { type: "arm", delay: 600_000 })
    const seq = (await snapshot(id)).seq
    await runtime.run((await host()).deliver({ _tag: "Timer", timer: old! }, { type: "ping" }))
    expect((await snapshot(id)).seq).toBe(seq)
    expect(await context(id)).toMatchObject({ pings: 0 })
    expect(await runtime.run(Repo.actorTimers("worker", id))).toHaveLength(1)
  })

  it("a timer survives a restart and fires after it", async () => {
    const id = await newWorker()
    await send(id, { type: "arm", delay: 10 * 60_000 })
    await restart()
    clock.advance("11 minutes")
    await runtime.runDueTimers()
    expect(await context(id)).toMatchObject({ pings: 1 })
  })

  it("reaching a final state removes the actor's timers", async () => {
    const id = await newWorker()
    await send(id, { type: "arm", delay: 60_000 })
    expect(await send(id, { type: "finish" })).toMatchObject({ state: "finished", status: "done" })
    expect(await runtime.run(Repo.actorTimers("worker", id))).toEqual([])
  })
})

describe("event streams", () => {
  it("replay by cursor with contiguous sequences, next_after and watermark", async () => {
    const id = await newWorker()
    for (let i = 0; i < 5; i++) await send(id, { type: "count" })
    const streams = <A>(f: (s: Streams["Service"]) => Effect.Effect<A, unknown>) =>
      runtime.run(Effect.flatMap(Streams, f))
    const first = await streams((s) => s.read(`worker:${id}`, undefined, 2))
    expect(first.items.map((item) => item.sequence)).toEqual([1, 2])
    expect(first.pagination.watermark).toBe(5)
    expect(first.items[0]).toMatchObject({
      type: "counted",
      resource: { type: "worker", public_id: id },
      payload: { count: 1 }
    })
    const rest = await streams((s) => s.read(`worker:${id}`, first.pagination.next_after ?? undefined, 10))
    expect(rest.items.map((item) => item.sequence)).toEqual([3, 4, 5])
    const empty = await streams((s) => s.read(`worker:${id}`, rest.pagination.next_after ?? undefined, 10))
    expect(empty).toEqual({ items: [], pagination: { next_after: null, watermark: 5 } })
    const invalid = await runtime.run(
      Effect.exit(Effect.flatMap(Streams, (s) => s.read(`worker:${id}`, "nonsense", 10)))
    )
    expect(Exit.isFailure(invalid)).toBe(true)
  })

  it("items older than 30 days are reaped", async () => {
    const id = await newWorker()
    await send(id, { type: "count" })
    clock.advance("31 days")
    const reaped = await runtime.run(Effect.flatMap(Streams, (s) => s.reap))
    expect(reaped).toBeGreaterThanOrEqual(1)
    const page = await runtime.run(Effect.flatMap(Streams, (s) => s.read(`worker:${id}`, undefined, 10)))
    expect(page.items).toEqual([])
    expect(page.pagination.watermark).toBe(1)
  })
})

describe.runIf(await postgresReachable())("two nodes on one PostgreSQL", () => {
  it("alternating writers never corrupt an actor: each detects the other's step by seq", async () => {
    if (database.config._tag !== "postgres") return
    const other = await startRuntime(database, clock, [binding])
    try {
      const id = await newWorker()
      const a = await host()
      const b = await other.host()
      for (let i = 0; i < 6; i++) {
        const node = i % 2 === 0 ? runtime : other
        await node.run((i % 2 === 0 ? a : b).send("worker", id, { type: "count" }))
      }
      await Promise.all([
        runtime.run(
          Effect.forEach(Array.from({ length: 10 }), () => a.send("worker", id, { type: "count" }), { concurrency: 5 })
        ),
        other.run(
          Effect.forEach(Array.from({ length: 10 }), () => b.send("worker", id, { type: "count" }), { concurrency: 5 })
        )
      ])
      expect(await context(id)).toMatchObject({ count: 26 })
      expect((await snapshot(id)).seq).toBe(27n)
    } finally {
      await other.dispose()
    }
  })

  it("a quarantine lifted by an operator on another node lets the actor go on where it was quarantined", async () => {
    if (database.config._tag !== "postgres") return
    const other = await startRuntime(database, clock, [binding])
    try {
      const id = await newWorker()
      await runtime.run(Effect.exit((await host()).send("worker", id, { type: "explode" })))
      // This node now holds the quarantined snapshot in memory.
      const refused = await runtime.run(Effect.exit((await host()).send("worker", id, { type: "count" })))
      expect(Exit.isFailure(refused) && JSON.stringify(refused.cause)).toContain("ActorQuarantined")
      expect(await other.run((await other.host()).restartActor("worker", id))).toBe(true)
      expect(await send(id, { type: "count" })).toMatchObject({ _tag: "Accepted", seq: 2n })
    } finally {
      await other.dispose()
    }
  })
})
