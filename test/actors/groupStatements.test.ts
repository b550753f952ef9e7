// Grouped commit of one-statement steps (no row handler, no delivery): steps of different actors
// ready together are written by one statement, each behind its own seq fence; a fence that fails
// leaves the others written, and a statement that fails as a whole (two steps appending to one
// stream) is written step by step.
import { defaultHostOptions } from "@troupe/actors/ActorHost"
import * as Repo from "@troupe/storage/repositories/Actors"
import { Clock, Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeMovableClock } from "../support/clock.ts"
import { freshDatabase, type TestDatabase } from "../support/database.ts"
import { startRuntime, type TestRuntime } from "./harness.ts"
import { workerBinding, workerControls, workerTable } from "./worker.ts"

const clock = makeMovableClock(Effect.runSync(Clock.clockWith(Effect.succeed)))
const worker = workerBinding(workerControls())
/** The same actor kind under another name, every actor narrating into one stream. */
const sharing = { ...workerBinding(workerControls()), kind: "sharing_worker", stream: () => "sharing:all" }
let database: TestDatabase
let runtime: TestRuntime

beforeAll(async () => {
  database = await freshDatabase()
  runtime = await startRuntime(database, clock, [worker, sharing], {
    ...defaultHostOptions,
    groupCommit: { committers: 1, maxGroup: 16 }
  })
  await runtime.sql((sql) => sql.unsafe(workerTable))
})
afterAll(async () => {
  await runtime?.dispose()
  await database?.drop()
})

const newWorkers = (kind: string, count: number) => runtime.newWorkers(kind, count)

const pingAll = async (kind: string, ids: ReadonlyArray<string>) => {
  const host = await runtime.host()
  return runtime.run(Effect.forEach(ids, (id) => host.send(kind, id, { type: "ping" }), { concurrency: "unbounded" }))
}

const seqOf = async (kind: string, id: string) => (await runtime.run(Repo.findSnapshot(kind, id)))!.seq

describe("grouped one-statement steps", () => {
  it("share one statement, each fenced by its seq, and write everything a step writes", async () => {
    const ids = await newWorkers("worker", 8)
    const outcomes = await pingAll("worker", ids)
    expect(outcomes.map((outcome) => outcome._tag === "Accepted" && outcome.seq)).toEqual(ids.map(() => 2n))
    const transactions = await runtime.sql<{ xid: string }>(
      (sql) => sql`SELECT DISTINCT xmin::text AS xid FROM actor_snapshots WHERE actor_id IN ${sql.in(ids)}`
    )
    expect(transactions.length).toBeLessThan(ids.length)
    for (const id of ids) {
      const journal = await runtime.run(Repo.readJournal("worker", id, 0n, 10))
      expect(journal.map((entry) => [Number(entry.seq), entry.event_type])).toEqual([
        [1, "xstate.init"],
        [2, "ping"]
      ])
      const items = await runtime.sql<{ sequence: bigint; type: string }>(
        (sql) => sql`SELECT sequence, type FROM outbox_items WHERE stream = ${`worker:${id}`} ORDER BY sequence`
      )
      expect(items).toEqual([{ sequence: 1n, type: "pinged" }])
    }
  })

  it("a step whose fence fails in a shared statement steps again from the newer snapshot; the others are written", async () => {
    const ids = await newWorkers("worker", 8)
    // Another writer moved the first actor on behind this node's cached snapshot.
    await runtime.sql((sql) => sql`UPDATE actor_snapshots SET seq = 2 WHERE kind = 'worker' AND actor_id = ${ids[0]!}`)
    const outcomes = await pingAll("worker", ids)
    expect(outcomes.map((outcome) => outcome._tag === "Accepted" && outcome.seq)).toEqual(
      ids.map((_, index) => (index === 0 ? 3n : 2n))
    )
    expect(await Promise.all(ids.map((id) => seqOf("worker", id)))).toEqual(
      ids.map((_, index) => (index === 0 ? 3n : 2n))
    )
    const journal = await runtime.run(Repo.readJournal("worker", ids[0]!, 0n, 10))
    expect(journal.map((entry) => Number(entry.seq))).toEqual([1, 3])
  })

  it("steps appending to one stream, whose shared statement fails, are written one by one", async () => {
    const ids = await newWorkers("sharing_worker", 6)
    const outcomes = await pingAll("sharing_worker", ids)
    expect(outcomes.map((outcome) => outcome._tag === "Accepted" && outcome.seq)).toEqual(ids.map(() => 2n))
    const items = await runtime.sql<{ sequence: bigint; resource_public_id: string }>(
      (sql) => sql`SELECT sequence, resource_public_id FROM outbox_items WHERE stream = 'sharing:all' ORDER BY sequence`
    )
    expect(items.map((item) => Number(item.sequence))).toEqual([1, 2, 3, 4, 5, 6])
    expect(new Set(items.map((item) => item.resource_public_id))).toEqual(new Set(ids))
    const transactions = await runtime.sql<{ xid: string }>(
      (sql) => sql`SELECT DISTINCT xmin::text AS xid FROM actor_snapshots WHERE actor_id IN ${sql.in(ids)}`
    )
    expect(transactions.length).toBe(ids.length)
  })
})
