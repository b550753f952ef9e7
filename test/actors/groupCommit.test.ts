// Grouped commit (HostOptions.groupCommit): steps of different actors ready together commit in
// one transaction, each under its own seq fence, and a step that fails sinks no other.
import { defaultHostOptions } from "@troupe/actors/ActorHost"
import * as Repo from "@troupe/storage/repositories/Actors"
import { Clock, Effect } from "effect"
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
  runtime = await startRuntime(database, clock, [binding], {
    ...defaultHostOptions,
    groupCommit: { committers: 1, maxGroup: 16 }
  })
  await runtime.sql((sql) => sql.unsafe(workerTable))
})
afterAll(async () => {
  await runtime?.dispose()
  await database?.drop()
})

const newWorkers = (count: number) => runtime.newWorkers("worker", count)

describe("grouped commit", () => {
  it("commits steps of several actors waiting together in one transaction, each fenced by its seq", async () => {
    const ids = await newWorkers(8)
    const host = await runtime.host()
    const outcomes = await runtime.run(
      Effect.forEach(ids, (id) => host.send("worker", id, { type: "count" }), { concurrency: "unbounded" })
    )
    expect(outcomes.map((outcome) => outcome._tag === "Accepted" && outcome.seq)).toEqual(ids.map(() => 2n))
    const transactions = await runtime.sql<{ xid: string }>(
      (sql) => sql`SELECT DISTINCT xmin::text AS xid FROM actor_snapshots WHERE actor_id IN ${sql.in(ids)}`
    )
    expect(transactions.length).toBeLessThan(ids.length)
    for (const id of ids) {
      const journal = await runtime.run(Repo.readJournal("worker", id, 0n, 10))
      expect(journal.map((entry) => Number(entry.seq))).toEqual([1, 2])
    }
  })

  it("a vetoed step in a group rolls back alone; the others commit", async () => {
    const ids = await newWorkers(8)
    const host = await runtime.host()
    const outcomes = await runtime.run(
      Effect.forEach(ids, (id, index) => host.send("worker", id, { type: index % 2 === 0 ? "guarded" : "count" }), {
        concurrency: "unbounded"
      })
    )
    expect(outcomes.map((outcome) => outcome._tag)).toEqual(
      ids.map((_, index) => (index % 2 === 0 ? "Vetoed" : "Accepted"))
    )
    const seqs = await Promise.all(ids.map((id) => runtime.run(Repo.findSnapshot("worker", id))))
    expect(seqs.map((row) => row!.seq)).toEqual(ids.map((_, index) => (index % 2 === 0 ? 1n : 2n)))
  })
})
