// Context parts (Binding.parts; decisions "Run task standing as actor parts"), against PostgreSQL
// and the embedded database: a ledger actor keeps its items as rows of `actor_parts`, not in its
// snapshot; a step writes only the items it changed (by reference) in its one statement, behind
// the seq fence; restoring reads them back (before the migrations), an older row with its items
// inline moves them to rows at its next step, and deleting the snapshot row deletes them.
import { defaultHostOptions } from "@troupe/actors/ActorHost"
import { type Binding, defineActor } from "@troupe/actors/Binding"
import { Inspection } from "@troupe/actors/Inspection"
import { newPublicId } from "@troupe/storage/Ids"
import * as Steps from "@troupe/storage/repositories/ActorSteps"
import * as Repo from "@troupe/storage/repositories/Actors"
import { Clock, Effect, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { assign, setup } from "xstate"
import { makeMovableClock } from "../support/clock.ts"
import { freshEmbedded, freshPostgres, postgresReachable, type TestDatabase } from "../support/database.ts"
import { startRuntime, type TestRuntime } from "./harness.ts"

interface Item {
  readonly key: string
  readonly n: number
}

const LedgerEvent = Schema.Struct({
  type: Schema.Literals(["ledger.add", "ledger.bump", "ledger.drop", "ledger.tick"]),
  key: Schema.String
})
type LedgerEvent = typeof LedgerEvent.Type

/** Items added, bumped (a new object for that item only) and dropped; `steps` moves on every step. */
const ledgerMachine = setup({
  types: {
    context: {} as { items: ReadonlyArray<Item>; steps: number },
    events: {} as LedgerEvent,
    input: {} as { keys: ReadonlyArray<string> }
  }
}).createMachine({
  id: "ledger",
  context: ({ input }) => ({ items: input.keys.map((key) => ({ key, n: 0 })), steps: 0 }),
  initial: "open",
  states: {
    open: {
      on: {
        "ledger.add": {
          actions: assign(({ context, event }) => ({
            items: [...context.items, { key: event.key, n: 0 }],
            steps: context.steps + 1
          }))
        },
        "ledger.bump": {
          actions: assign(({ context, event }) => ({
            items: context.items.map((item) => (item.key === event.key ? { ...item, n: item.n + 1 } : item)),
            steps: context.steps + 1
          }))
        },
        "ledger.drop": {
          actions: assign(({ context, event }) => ({
            items: context.items.filter((item) => item.key !== event.key),
            steps: context.steps + 1
          }))
        },
        "ledger.tick": { actions: assign(({ context }) => ({ steps: context.steps + 1 })) }
      }
    }
  }
})

const ledgerEntry = {
  machine: ledgerMachine,
  version: 1,
  input: Schema.Struct({ keys: Schema.Array(Schema.String) }),
  events: LedgerEvent,
  effects: {},
  migrations: {}
}

/** The ledger as it was before parts: its items inline in its snapshot. */
const inline = defineActor({
  kind: "ledger",
  entry: ledgerEntry,
  resourceType: "ledger",
  stream: (actorId) => `ledger:${actorId}`,
  rows: {},
  jobs: {}
})

const ledger = defineActor({ ...inline, parts: { items: (item) => item.key } })

/** Version 2: every item gains a label (a new object each), its migration reading the restored items. */
const ledgerV2 = defineActor({
  ...ledger,
  entry: {
    ...ledgerEntry,
    version: 2,
    migrations: {
      2: (snapshot) => {
        const context = snapshot.context as { items: ReadonlyArray<Item>; steps: number }
        return {
          ...snapshot,
          context: { ...context, items: context.items.map((item) => ({ ...item, label: item.key })) }
        }
      }
    }
  }
})

interface PartRow {
  readonly part: string
  readonly key: string
  readonly position: number
  readonly value: unknown
  readonly xid: string
}

const clock = makeMovableClock(Effect.runSync(Clock.clockWith(Effect.succeed)))

const suite = (name: string, fresh: () => Promise<TestDatabase>) =>
  describe(name, { timeout: 60_000 }, () => {
    let database: TestDatabase
    let runtime: TestRuntime | undefined

    beforeAll(async () => {
      database = await fresh()
    }, 60_000)
    afterAll(async () => {
      await runtime?.dispose()
      await database?.drop()
    })

    const start = async (definition: Binding, groupCommit = false) => {
      await runtime?.dispose()
      runtime = await startRuntime(
        database,
        clock,
        [definition],
        groupCommit ? { ...defaultHostOptions, groupCommit: { committers: 1, maxGroup: 16 } } : undefined
      )
      return runtime
    }
    const on = () => runtime!
    const create = async (keys: ReadonlyArray<string>) => {
      const id = newPublicId()
      await on().run((await on().host()).create("ledger", id, { keys }))
      return id
    }
    const send = async (id: string, type: LedgerEvent["type"], key = "") =>
      on().run((await on().host()).send("ledger", id, { type, key }))
    /** The context as the snapshot row keeps it. */
    const stored = async (id: string) =>
      ((await on().run(Repo.findSnapshot("ledger", id)))!.snapshot as { context: Record<string, unknown> }).context
    /** The context with its parts read back. */
    const whole = async (id: string) =>
      ((await on().run(Repo.findSnapshotWithParts("ledger", id)))!.snapshot as { context: Record<string, unknown> })
        .context
    const parts = (id: string) =>
      on().sql<PartRow>(
        (sql) => sql`
          SELECT part, key, position, value, xmin::text AS xid FROM actor_parts
          WHERE kind = 'ledger' AND actor_id = ${id} ORDER BY position`
      )
    const xids = async (id: string) => Object.fromEntries((await parts(id)).map((row) => [row.key, row.xid]))
    const elements = async (id: string) =>
      (await parts(id)).map((row) => [row.part, row.key, row.position, row.value] as const)

    it("the snapshot row keeps no part; a step writes only the elements it changed", async () => {
      await start(ledger)
      const id = await create(["a", "b", "c"])
      expect(await stored(id)).toEqual({ steps: 0 })
      expect(await elements(id)).toEqual([
        ["items", "a", 0, { key: "a", n: 0 }],
        ["items", "b", 1, { key: "b", n: 0 }],
        ["items", "c", 2, { key: "c", n: 0 }]
      ])

      const created = await xids(id)
      expect(await send(id, "ledger.add", "d")).toMatchObject({ _tag: "Accepted", seq: 2n })
      const added = await xids(id)
      expect([added.a, added.b, added.c]).toEqual([created.a, created.b, created.c])
      expect(Object.keys(added)).toEqual(["a", "b", "c", "d"])

      await send(id, "ledger.bump", "b")
      const bumped = await xids(id)
      expect(bumped).toEqual({ ...added, b: bumped.b })
      expect(bumped.b).not.toBe(added.b)
      expect((await parts(id)).find((row) => row.key === "b")?.value).toEqual({ key: "b", n: 1 })

      await send(id, "ledger.tick")
      expect(await xids(id)).toEqual(bumped)

      await send(id, "ledger.drop", "b")
      expect(await elements(id)).toEqual([
        ["items", "a", 0, { key: "a", n: 0 }],
        ["items", "c", 1, { key: "c", n: 0 }],
        ["items", "d", 2, { key: "d", n: 0 }]
      ])
      expect((await xids(id)).a).toBe(created.a)
      expect(await stored(id)).toEqual({ steps: 4 })
      expect(await whole(id)).toEqual({
        items: [
          { key: "a", n: 0 },
          { key: "c", n: 0 },
          { key: "d", n: 0 }
        ],
        steps: 4
      })
      const detail = await on().run(Effect.flatMap(Inspection, (inspection) => inspection.detail("ledger", id)))
      expect(detail?.context).toEqual(await whole(id))
    })

    it("a restarted actor, and a new host, restore the identical context from the rows", async () => {
      await start(ledger)
      const id = await create(["a", "b"])
      await send(id, "ledger.add", "c")
      await send(id, "ledger.bump", "c")
      const before = await whole(id)
      expect(before).toEqual({
        items: [
          { key: "a", n: 0 },
          { key: "b", n: 0 },
          { key: "c", n: 1 }
        ],
        steps: 2
      })

      expect(await on().run((await on().host()).restartActor("ledger", id))).toBe(true)
      const kept = await xids(id)
      await send(id, "ledger.bump", "a")
      const afterRestart = await xids(id)
      expect(afterRestart).toEqual({ ...kept, a: afterRestart.a })
      expect(afterRestart.a).not.toBe(kept.a)

      await start(ledger)
      await send(id, "ledger.bump", "b")
      expect(await whole(id)).toEqual({
        items: [
          { key: "a", n: 1 },
          { key: "b", n: 1 },
          { key: "c", n: 1 }
        ],
        steps: 4
      })
      expect(await stored(id)).toEqual({ steps: 4 })
    })

    it("a step behind another seq writes no part; the host's retry writes from the rows", async () => {
      await start(ledger)
      const id = await create(["a", "b"])
      const before = await elements(id)
      const write = (expectedSeq: bigint): Steps.StepWrite => ({
        kind: "ledger",
        actorId: id,
        seq: expectedSeq + 1n,
        snapshot: {
          expectedSeq,
          version: 1,
          status: "active",
          stateValue: "open",
          snapshot: { status: "active", value: "open", context: { steps: 1 } }
        },
        at: new Date(),
        parts: {
          upserts: [{ part: "items", key: "c", position: 1, value: { key: "c", n: 9 } }],
          removed: [{ part: "items", key: "b" }]
        },
        setTimers: [],
        cancelTimers: [],
        clearTimers: false,
        jobs: [],
        outbox: { stream: `ledger:${id}`, resourceType: "ledger", items: [] },
        journal: { event: { type: "ledger.tick" }, fromState: "open", toState: "open", actions: [] },
        notify: [],
        queue: []
      })
      expect(await on().run(Steps.writeStep(write(7n)))).toBe(false)
      expect(await elements(id)).toEqual(before)

      // Another writer moved the actor: the cached step meets the fence, reloads and applies.
      await on().sql((sql) => sql`UPDATE actor_snapshots SET seq = seq + 1 WHERE kind = 'ledger' AND actor_id = ${id}`)
      expect(await send(id, "ledger.bump", "b")).toMatchObject({ _tag: "Accepted", seq: 3n })
      expect(await elements(id)).toEqual([
        ["items", "a", 0, { key: "a", n: 0 }],
        ["items", "b", 1, { key: "b", n: 1 }]
      ])
    })

    it("an older row with its part inline restores from it; its next step moves every element to rows", async () => {
      await start(inline)
      const id = await create(["a", "b", "c"])
      await send(id, "ledger.bump", "c")
      expect(await stored(id)).toEqual({
        items: [
          { key: "a", n: 0 },
          { key: "b", n: 0 },
          { key: "c", n: 1 }
        ],
        steps: 1
      })
      expect(await parts(id)).toEqual([])

      await start(ledger)
      const detail = await on().run(Effect.flatMap(Inspection, (inspection) => inspection.detail("ledger", id)))
      expect(detail?.context).toEqual(await stored(id))
      await send(id, "ledger.bump", "a")
      expect(await stored(id)).toEqual({ steps: 2 })
      expect(await elements(id)).toEqual([
        ["items", "a", 0, { key: "a", n: 1 }],
        ["items", "b", 1, { key: "b", n: 0 }],
        ["items", "c", 2, { key: "c", n: 1 }]
      ])
    })

    it("restoring puts the parts back before the migrations, whose new elements are written again", async () => {
      await start(ledger)
      const id = await create(["a", "b"])
      await send(id, "ledger.bump", "a")
      await start(ledgerV2)
      await send(id, "ledger.add", "c")
      expect(await elements(id)).toEqual([
        ["items", "a", 0, { key: "a", n: 1, label: "a" }],
        ["items", "b", 1, { key: "b", n: 0, label: "b" }],
        ["items", "c", 2, { key: "c", n: 0 }]
      ])
      const row = await on().run(Repo.findSnapshot("ledger", id))
      expect([row?.version, row?.snapshot]).toEqual([2, { status: "active", value: "open", context: { steps: 2 } }])
    })

    it("grouped steps of several actors write each one's parts in one statement", async () => {
      await start(ledger, true)
      const ids: Array<string> = []
      for (let i = 0; i < 8; i++) ids.push(await create(["a", "b"]))
      const host = await on().host()
      await on().run(
        Effect.forEach(ids, (id) => host.send("ledger", id, { type: "ledger.bump", key: "b" }), {
          concurrency: "unbounded"
        })
      )
      const transactions = await on().sql<{ xid: string }>(
        (sql) => sql`SELECT DISTINCT xmin::text AS xid FROM actor_parts WHERE key = 'b' AND actor_id IN ${sql.in(ids)}`
      )
      expect(transactions.length).toBeLessThan(ids.length)
      for (const id of ids) {
        expect(await elements(id)).toEqual([
          ["items", "a", 0, { key: "a", n: 0 }],
          ["items", "b", 1, { key: "b", n: 1 }]
        ])
      }
    })

    it("deleting the snapshot row deletes its parts", async () => {
      await start(ledger)
      const id = await create(["a", "b"])
      expect((await parts(id)).length).toBe(2)
      await on().sql((sql) => sql`DELETE FROM actor_snapshots WHERE kind = 'ledger' AND actor_id = ${id}`)
      expect(await parts(id)).toEqual([])
    })
  })

suite("context parts on the embedded database (PGlite)", freshEmbedded)
if (await postgresReachable()) suite("context parts on PostgreSQL", freshPostgres)
