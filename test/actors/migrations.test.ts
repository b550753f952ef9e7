// Snapshot versions over a real database: a snapshot written by the previous version of a machine
// is restored through the registry's migration hook and stepped by the new version (which then
// writes its own version); a server older than a snapshot refuses it.
import { defineActor } from "@troupe/actors/Binding"
import { Inspection } from "@troupe/actors/Inspection"
import { newPublicId } from "@troupe/storage/Ids"
import * as Repo from "@troupe/storage/repositories/Actors"
import { Clock, Effect, Exit, Schema } from "effect"
import { afterAll, beforeAll, expect, it } from "vitest"
import { assign, setup } from "xstate"
import { makeMovableClock } from "../support/clock.ts"
import { freshDatabase, type TestDatabase } from "../support/database.ts"
import { startRuntime, type TestRuntime } from "./harness.ts"

const clock = makeMovableClock(Effect.runSync(Clock.clockWith(Effect.succeed)))
let database: TestDatabase
let runtime: TestRuntime | undefined

beforeAll(async () => {
  database = await freshDatabase()
})
afterAll(async () => {
  await runtime?.dispose()
  await database?.drop()
})

const Add = Schema.Struct({ type: Schema.Literal("tally.add") })
const Close = Schema.Struct({ type: Schema.Literal("tally.close") })

/** Version 1: a count in state "counting". */
const tallyV1 = defineActor({
  kind: "tally",
  entry: {
    machine: setup({ types: { context: {} as { count: number }, events: {} as typeof Add.Type } }).createMachine({
      id: "tally",
      context: { count: 0 },
      initial: "counting",
      states: { counting: { on: { "tally.add": { actions: assign({ count: ({ context }) => context.count + 1 }) } } } }
    }),
    version: 1,
    input: Schema.Struct({}),
    events: Add,
    effects: {},
    migrations: {}
  },
  resourceType: "tally",
  stream: (actorId) => `tally:${actorId}`,
  rows: {},
  jobs: {}
})

const V1Context = Schema.Struct({ count: Schema.Number })

/** Version 2: the count is a total with the number of adds since, in state "open", and it closes. */
const tallyV2 = defineActor({
  ...tallyV1,
  entry: {
    machine: setup({
      types: {
        context: {} as { total: number; addsSinceMigration: number },
        events: {} as typeof Add.Type | typeof Close.Type
      }
    }).createMachine({
      id: "tally",
      context: { total: 0, addsSinceMigration: 0 },
      initial: "open",
      states: {
        open: {
          meta: { waitsOn: "its counter" },
          on: {
            "tally.add": {
              actions: assign({
                total: ({ context }) => context.total + 1,
                addsSinceMigration: ({ context }) => context.addsSinceMigration + 1
              })
            },
            "tally.close": "closed"
          }
        },
        closed: { type: "final" }
      }
    }),
    version: 2,
    input: Schema.Struct({}),
    events: Schema.Union([Add, Close]),
    effects: {},
    migrations: {
      2: (snapshot) => ({
        ...snapshot,
        value: snapshot.value === "counting" ? "open" : snapshot.value,
        context: { total: Schema.decodeUnknownSync(V1Context)(snapshot.context).count, addsSinceMigration: 0 }
      })
    }
  }
})

const start = async (definition: typeof tallyV1 | typeof tallyV2) => {
  await runtime?.dispose()
  runtime = await startRuntime(database, clock, [definition])
  return runtime
}

it("a snapshot of the previous version is migrated on load and stepped by the new one", async () => {
  const id = newPublicId()
  const old = await start(tallyV1)
  const v1 = await old.host().then((host) => host.ref(tallyV1))
  await old.run(v1.create(id, {}))
  await old.run(v1.send(id, { type: "tally.add" }))
  await old.run(v1.send(id, { type: "tally.add" }))
  const written = await old.run(Repo.findSnapshot("tally", id))
  expect([written?.version, written?.state_value, written?.snapshot]).toMatchObject([
    1,
    "counting",
    { context: { count: 2 } }
  ])

  const upgraded = await start(tallyV2)
  const detail = await upgraded.run(Effect.flatMap(Inspection, (inspection) => inspection.detail("tally", id)))
  expect(detail?.waitsOn).toEqual(["its counter"])
  const v2 = await upgraded.host().then((host) => host.ref(tallyV2))
  expect(await upgraded.run(v2.send(id, { type: "tally.add" }))).toMatchObject({ _tag: "Accepted", state: "open" })
  const stepped = await upgraded.run(Repo.findSnapshot("tally", id))
  expect([stepped?.version, stepped?.seq, stepped?.state_value, stepped?.snapshot]).toMatchObject([
    2,
    4n,
    "open",
    { context: { total: 3, addsSinceMigration: 1 } }
  ])
  expect(await upgraded.run(v2.send(id, { type: "tally.close" }))).toMatchObject({ state: "closed", status: "done" })
})

it("a server older than the snapshot refuses to step it", async () => {
  const id = newPublicId()
  const current = await start(tallyV2)
  await current.run((await current.host()).ref(tallyV2).create(id, {}))
  const older = await start(tallyV1)
  const refused = await older.run(Effect.exit((await older.host()).ref(tallyV1).send(id, { type: "tally.add" })))
  expect(Exit.isFailure(refused)).toBe(true)
  const row = await older.run(Repo.findSnapshot("tally", id))
  expect([row?.version, row?.seq]).toEqual([2, 1n])
})
