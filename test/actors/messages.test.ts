// Durable messages between actors over a real database, with the test machine (worker.ts): a
// message is written in the sending step's transaction, delivered after commit (also after a
// crash), applied once however often it is delivered, recorded when refused, and kept waiting
// (visible to operators) while its receiver is quarantined or not yet created.
import type { ActorHost } from "@troupe/actors/ActorHost"
import { Inspection } from "@troupe/actors/Inspection"
import { type MessageNotice, messageChannel } from "@troupe/actors/MessageRunner"
import { newPublicId } from "@troupe/storage/Ids"
import type * as Messages from "@troupe/storage/repositories/ActorMessages"
import * as Repo from "@troupe/storage/repositories/Actors"
import { Clock, Deferred, Effect, Exit } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { afterNotice } from "../support/actors.ts"
import { makeMovableClock } from "../support/clock.ts"
import { freshDatabase, type TestDatabase } from "../support/database.ts"
import { startRuntime, type TestRuntime } from "./harness.ts"
import { greetingsTable, workerBinding, workerControls, workerTable } from "./worker.ts"

const clock = makeMovableClock(Effect.runSync(Clock.clockWith(Effect.succeed)))
const controls = workerControls()
const binding = workerBinding(controls)
let database: TestDatabase
let runtime: TestRuntime

beforeAll(async () => {
  database = await freshDatabase()
  runtime = await startRuntime(database, clock, [binding])
  for (const table of [workerTable, greetingsTable]) await runtime.sql((sql) => sql.unsafe(table))
})
afterAll(async () => {
  await runtime?.dispose()
  await database?.drop()
})

const host = () => runtime.host()
const newWorker = async (id = newPublicId()) => {
  await (await host()).create("worker", id, { start: 0 }).pipe(runtime.run)
  return id
}
const send = async (id: string, event: Parameters<ActorHost["Service"]["send"]>[2]) =>
  runtime.run((await host()).send("worker", id, event))
const snapshot = (id: string) => runtime.run(Repo.findSnapshot("worker", id)).then((row) => row!)
const messagesTo = (id: string) =>
  runtime.sql<Messages.MessageRow>(
    (sql) => sql`SELECT * FROM actor_messages WHERE to_kind = 'worker' AND to_actor_id = ${id} ORDER BY id`
  )
const greetings = (id: string) =>
  runtime.sql<{ seq: bigint; sender: string | null }>(
    (sql) => sql`SELECT seq, sender FROM worker_greetings WHERE actor_id = ${id} ORDER BY seq`
  )

const afterMessage = <A>(id: string, outcome: MessageNotice["outcome"], act: () => Promise<A>) =>
  afterNotice(runtime.run, messageChannel, id, outcome, act)

describe("messages between actors", () => {
  it("are written in the sending step and applied by the receiver, which knows the sender", async () => {
    const [a, b] = [await newWorker(), await newWorker()]
    await afterMessage(b, "applied", () => send(a, { type: "tell", to: b, say: "greet" }))
    expect(await greetings(b)).toEqual([{ seq: 2n, sender: a }])
    const [message] = await messagesTo(b)
    expect(message).toMatchObject({
      from_kind: "worker",
      from_actor_id: a,
      from_seq: 2n,
      event: { type: "greet" },
      state: "delivered",
      settled_seq: 2n,
      // The telling step's span, which the receiving step's trace links to.
      traceparent: expect.stringMatching(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/)
    })
  })

  it("a message told by a step that rolls back is never sent", async () => {
    const [a, b] = [await newWorker(), await newWorker()]
    const failed = await runtime.run(
      Effect.exit((await host()).send("worker", a, { type: "tellAndFail", to: b, say: "greet" }))
    )
    expect(Exit.isFailure(failed)).toBe(true)
    expect(await messagesTo(b)).toEqual([])
    const outside = await runtime.run(
      Effect.exit(
        Effect.gen(function* () {
          const sql = yield* SqlClient
          const h = yield* Effect.promise(host)
          yield* sql.withTransaction(
            Effect.andThen(h.ref(binding).tell(b, { type: "greet" }), Effect.fail("the command failed"))
          )
        })
      )
    )
    expect(Exit.isFailure(outside)).toBe(true)
    expect(await messagesTo(b)).toEqual([])
  })

  it("a crash between the sender's commit and the delivery loses nothing: delivered after restart", async () => {
    const [a, b] = [await newWorker(), await newWorker()]
    controls.greetGate = await Effect.runPromise(Deferred.make<void>())
    controls.greetStarted = await Effect.runPromise(Deferred.make<void>())
    await send(a, { type: "tell", to: b, say: "greet" })
    // The delivery is inside the receiver's step, not yet committed, when the process dies.
    await Effect.runPromise(Deferred.await(controls.greetStarted))
    await runtime.dispose()
    controls.greetGate = undefined
    controls.greetStarted = undefined
    runtime = await startRuntime(database, clock, [binding])
    expect(await greetings(b)).toEqual([])
    expect((await messagesTo(b)).map((message) => message.state)).toEqual(["pending"])
    expect((await snapshot(b)).seq).toBe(1n)
    await afterMessage(b, "applied", async () => {
      clock.advance("3 minutes")
      await runtime.runReadyMessages()
    })
    expect(await greetings(b)).toEqual([{ seq: 2n, sender: a }])
    expect((await messagesTo(b)).map((message) => message.state)).toEqual(["delivered"])
  })

  it("a duplicate delivery changes nothing", async () => {
    const [a, b] = [await newWorker(), await newWorker()]
    await afterMessage(b, "applied", () => send(a, { type: "tell", to: b, say: "count" }))
    const [message] = await messagesTo(b)
    const before = await snapshot(b)
    const pending = { ...message!, state: "pending" as const }
    const h = await host()
    const again = await runtime.run(
      Effect.all(
        [
          h.deliver({ _tag: "Message", message: pending }, pending.event),
          h.deliver({ _tag: "Message", message: pending }, pending.event)
        ],
        {
          concurrency: "unbounded"
        }
      )
    )
    expect(again).toEqual(["stale", "stale"])
    expect((await snapshot(b)).seq).toBe(before.seq)
    expect((await snapshot(b)).snapshot).toEqual(before.snapshot)
    expect(await runtime.run(Repo.readJournal("worker", b, before.seq, 10))).toEqual([])
  })

  it("concurrent deliveries of one message apply it once", async () => {
    const b = await newWorker()
    const h = await host()
    // Told outside any step, and delivered here twice at once (the runner may join in).
    await runtime.run(h.ref(binding).tell(b, { type: "greet" }))
    const [message] = await messagesTo(b)
    await runtime.run(
      Effect.all(
        [
          h.deliver({ _tag: "Message", message: message! }, message!.event),
          h.deliver({ _tag: "Message", message: message! }, message!.event)
        ],
        {
          concurrency: "unbounded"
        }
      )
    )
    expect(await greetings(b)).toEqual([{ seq: 2n, sender: null }])
    expect((await snapshot(b)).seq).toBe(2n)
  })

  it("a message the receiver does not accept in its state is recorded as rejected, never retried", async () => {
    const [a, b] = [await newWorker(), await newWorker()]
    await afterMessage(b, "rejected", () => send(a, { type: "tell", to: b, say: "fetched" }))
    const [message] = await messagesTo(b)
    expect(message).toMatchObject({ state: "rejected", attempts: 1, settled_seq: null })
    expect(message!.last_error).toContain("fetched is not accepted in state idle")
    clock.advance("1 hour")
    await runtime.runReadyMessages()
    expect((await messagesTo(b))[0]).toMatchObject({ state: "rejected", attempts: 1 })
    expect((await snapshot(b)).seq).toBe(1n)
  })

  it("a message to a quarantined actor waits, visible to operators, and is applied after its restart", async () => {
    const [a, b] = [await newWorker(), await newWorker()]
    await runtime.run(Effect.exit((await host()).send("worker", b, { type: "explode" })))
    expect((await snapshot(b)).quarantined_at).not.toBeNull()
    await afterMessage(b, "quarantined", () => send(a, { type: "tell", to: b, say: "greet" }))
    const detail = await runtime.run(Effect.flatMap(Inspection, (inspection) => inspection.detail("worker", b)))
    expect(detail!.pendingMessages).toHaveLength(1)
    expect(detail!.pendingMessages[0]).toMatchObject({
      from_actor_id: a,
      event: { type: "greet" },
      state: "pending",
      last_error: "waiting: the receiver is quarantined"
    })
    await afterMessage(b, "quarantined", async () => {
      clock.advance("10 minutes")
      await runtime.runReadyMessages()
    })
    expect(await greetings(b)).toEqual([])
    await afterMessage(b, "applied", () =>
      runtime.run(Effect.flatMap(Effect.promise(host), (h) => h.restartActor("worker", b)))
    )
    expect(await greetings(b)).toEqual([{ seq: 2n, sender: a }])
    const after = await runtime.run(Effect.flatMap(Inspection, (inspection) => inspection.detail("worker", b)))
    expect(after!.pendingMessages).toEqual([])
  })

  it("a message to an actor not yet created waits until it is, and is rejected if it never is", async () => {
    const a = await newWorker()
    const later = newPublicId()
    await afterMessage(later, "absent", () => send(a, { type: "tell", to: later, say: "greet" }))
    expect((await messagesTo(later))[0]).toMatchObject({ state: "pending" })
    await afterMessage(later, "applied", () => newWorker(later))
    expect(await greetings(later)).toEqual([{ seq: 2n, sender: a }])

    const never = newPublicId()
    await afterMessage(never, "absent", () => send(a, { type: "tell", to: never, say: "greet" }))
    await afterMessage(never, "rejected", async () => {
      clock.advance("25 hours")
      await runtime.runReadyMessages()
    })
    expect((await messagesTo(never))[0]).toMatchObject({ state: "rejected", last_error: `no actor worker ${never}` })
  })

  it("one receiver hears one sender's messages in the order they were told", async () => {
    const [a, b] = [await newWorker(), await newWorker()]
    await runtime.run(Effect.exit((await host()).send("worker", b, { type: "explode" })))
    await send(a, { type: "tell", to: b, say: "count" })
    await send(a, { type: "tell", to: b, say: "greet" })
    await send(a, { type: "tell", to: b, say: "fetched" })
    await afterMessage(b, "rejected", () =>
      runtime.run(Effect.flatMap(Effect.promise(host), (h) => h.restartActor("worker", b)))
    )
    const settled = await messagesTo(b)
    expect(settled.map((message) => [message.event.type, message.state, message.settled_seq])).toEqual([
      ["count", "delivered", 2n],
      ["greet", "delivered", 3n],
      ["fetched", "rejected", null]
    ])
  })
})
