// What a row handler publishes on commit (EventBus.publishOnCommit) goes with its step: sent once
// the step commits, in the step's own statement on PostgreSQL, and never when the step rolls back;
// alone or beside other committing steps (grouped commit). On both databases.
import { type StepNotice, stepChannel } from "@troupe/actors/ActorHost"
import { defineActor, Veto } from "@troupe/actors/Binding"
import { EventBus, type EventBusService } from "@troupe/storage/EventBus"
import { newPublicId } from "@troupe/storage/Ids"
import * as Repo from "@troupe/storage/repositories/Actors"
import { Clock, Effect, Fiber, Schema, Stream } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { setup } from "xstate"
import { makeMovableClock } from "../support/clock.ts"
import { freshDatabase, type TestDatabase } from "../support/database.ts"
import { startRuntime, type TestRuntime } from "./harness.ts"

const heraldChannel = "troupe_test_herald"
/** The runtime's bus, as a binding is given it when the runtime is assembled (RunWork's). */
let bus: EventBusService | undefined

type HeraldEvent = { type: "announce" } | { type: "announceThenVeto" }

const heraldMachine = setup({
  types: { context: {} as Record<string, never>, events: {} as HeraldEvent, input: {} as Record<string, never> },
  actions: { "herald.announce": (_, _params: { note: string }) => {}, "herald.veto": () => {} }
}).createMachine({
  id: "herald",
  context: {},
  initial: "idle",
  states: {
    idle: {
      on: {
        announce: { actions: { type: "herald.announce", params: { note: "kept" } } },
        announceThenVeto: {
          actions: [{ type: "herald.announce", params: { note: "vetoed" } }, { type: "herald.veto" }]
        }
      }
    }
  }
})

const herald = defineActor({
  kind: "herald",
  entry: {
    machine: heraldMachine,
    version: 1,
    input: Schema.Struct({}),
    events: Schema.Struct({ type: Schema.Literals(["announce", "announceThenVeto"]) }),
    effects: { announce: "herald.announce", veto: "herald.veto" } as const,
    migrations: {}
  },
  resourceType: "herald",
  stream: (actorId) => `herald:${actorId}`,
  rows: {
    "herald.announce": (params, step) =>
      bus!.publishOnCommit([{ channel: heraldChannel, payload: `${step.actorId}/${step.seq}/${params.note}` }]),
    "herald.veto": () => Effect.fail(new Veto({ reason: "no" }))
  },
  jobs: {}
})

const clock = makeMovableClock(Effect.runSync(Clock.clockWith(Effect.succeed)))
let database: TestDatabase
let runtime: TestRuntime
/** Without grouped commit: each step commits on its own fiber, interleaved with the others. */
let ungroupedDatabase: TestDatabase
let ungrouped: TestRuntime

beforeAll(async () => {
  database = await freshDatabase()
  runtime = await startRuntime(database, clock, [herald], {
    maxAttempts: 3,
    retryBackoff: "25 millis",
    idleTimeToLive: "5 minutes",
    groupCommit: { committers: 1, maxGroup: 16 }
  })
  bus = await runtime.run(EventBus)
  ungroupedDatabase = await freshDatabase()
  ungrouped = await startRuntime(ungroupedDatabase, clock, [herald])
})
afterAll(async () => {
  await runtime?.dispose()
  await database?.drop()
  await ungrouped?.dispose()
  await ungroupedDatabase?.drop()
})

/**
 * Runs `act`, collecting the handlers' messages and the step notices until every one of
 * `expected` (`actorId/seq`) arrived on both; answers what arrived, each message (`actorId/seq/note`)
 * with the actor's committed seq when it arrived.
 */
const arrivalsDuring = (act: Effect.Effect<unknown, unknown>, expected: ReadonlyArray<string>, on = runtime) =>
  on.run(
    Effect.scoped(
      Effect.gen(function* () {
        const bus = yield* EventBus
        const awaitAll = <A, R>(stream: Stream.Stream<A, never, R>, key: (a: A) => string) =>
          Effect.suspend(() => {
            const seen: Array<A> = []
            return stream.pipe(
              Stream.takeUntil((each) => {
                seen.push(each)
                return expected.every((wanted) => seen.some((one) => key(one) === wanted))
              }),
              Stream.runDrain,
              Effect.as(seen)
            )
          })
        const messages = yield* bus.subscribe(heraldChannel)
        const notices = yield* bus.subscribe(stepChannel)
        const gotMessages = yield* awaitAll(
          messages.pipe(
            Stream.mapEffect((payload) =>
              Effect.map(Repo.findSnapshot("herald", payload.split("/")[0]!), (row) => ({
                payload,
                committed: `${row?.seq}`
              }))
            ),
            Stream.orDie
          ),
          (message) => message.payload.split("/").slice(0, 2).join("/")
        ).pipe(Effect.forkScoped)
        const gotNotices = yield* awaitAll(
          notices.pipe(Stream.map((text) => JSON.parse(text) as StepNotice)),
          (notice) => `${notice.actorId}/${notice.seq}`
        ).pipe(Effect.forkScoped)
        yield* act
        return { messages: yield* Fiber.join(gotMessages), notices: yield* Fiber.join(gotNotices) }
      })
    ).pipe(Effect.timeout("10 seconds"))
  )

describe("a row handler's messages", () => {
  it("arrive once their step has committed, and never from a step rolled back", async () => {
    const host = await runtime.host()
    const id = newPublicId()
    await runtime.run(host.create("herald", id, {}))
    const arrived = await arrivalsDuring(
      Effect.gen(function* () {
        expect(yield* host.send("herald", id, { type: "announceThenVeto" })).toMatchObject({ _tag: "Vetoed" })
        expect(yield* host.send("herald", id, { type: "announce" })).toMatchObject({ _tag: "Accepted", seq: 2n })
      }),
      [`${id}/2`]
    )
    // The vetoed step (it would have been seq 2 too) sent nothing: the first message is the commit's.
    expect(arrived.messages).toEqual([{ payload: `${id}/2/kept`, committed: "2" }])
  })

  it("arrive with their steps' notices when steps of several actors commit at once", async () => {
    const host = await runtime.host()
    const ids = Array.from({ length: 8 }, () => newPublicId())
    for (const id of ids) await runtime.run(host.create("herald", id, {}))
    const expected = ids.flatMap((id) => [`${id}/2`, `${id}/3`])
    const arrived = await arrivalsDuring(
      Effect.forEach(
        ids.flatMap((id) => [id, id]),
        (id) => host.send("herald", id, { type: "announce" }),
        { concurrency: "unbounded" }
      ),
      expected
    )
    const payloads = arrived.messages.map((message) => message.payload)
    expect(new Set(payloads)).toEqual(new Set(expected.map((each) => `${each}/kept`)))
    expect(payloads).toHaveLength(expected.length)
    for (const message of arrived.messages) {
      expect(Number(message.committed)).toBeGreaterThanOrEqual(Number(message.payload.split("/")[1]))
    }
  })

  it("of one actor's step never join another's, whose steps run meanwhile, nor a group's retry", async () => {
    for (const on of [runtime, ungrouped]) {
      bus = await on.run(EventBus)
      const host = await on.host()
      const kept = Array.from({ length: 6 }, () => newPublicId())
      const vetoed = Array.from({ length: 6 }, () => newPublicId())
      for (const id of [...kept, ...vetoed]) await on.run(host.create("herald", id, {}))
      const arrived = await arrivalsDuring(
        Effect.gen(function* () {
          yield* Effect.forEach(
            kept.flatMap((id, index) => [
              host.send("herald", id, { type: "announce" }),
              host.send("herald", vetoed[index]!, { type: "announceThenVeto" })
            ]),
            (send) => send,
            { concurrency: "unbounded" }
          )
          // Each vetoed actor's first message on the channel must be this commit's.
          yield* Effect.forEach(vetoed, (id) => host.send("herald", id, { type: "announce" }), { discard: true })
        }),
        [...kept, ...vetoed].map((id) => `${id}/2`),
        on
      )
      const payloads = arrived.messages.map((message) => message.payload)
      expect(payloads.toSorted()).toEqual([...kept, ...vetoed].map((id) => `${id}/2/kept`).toSorted())
    }
    bus = await runtime.run(EventBus)
  })
})
