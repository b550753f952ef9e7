// A test subject for the runtime: counts (a row write and an emit per count), fails on demand
// in its transactional handler, fetches through a job, and keeps a ping timer.
import { type Binding, Veto } from "@troupe/actors/Binding"
import { Deferred, Effect, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { assign, cancel, emit, raise, setup } from "xstate"

export const WorkerInput = Schema.Struct({ start: Schema.Number })

export const WorkerEventSchema = Schema.Union([
  Schema.Struct({ type: Schema.Literals(["count", "explode", "disarm", "ping", "finish", "mint", "guarded"]) }),
  Schema.Struct({ type: Schema.Literal("fetch"), url: Schema.String }),
  Schema.Struct({ type: Schema.Literal("fetched"), body: Schema.String }),
  Schema.Struct({ type: Schema.Literal("arm"), delay: Schema.Number })
])

export type WorkerEvent =
  | { type: "count" }
  | { type: "explode" }
  | { type: "fetch"; url: string }
  | { type: "fetched"; body: string }
  | { type: "arm"; delay: number }
  | { type: "disarm" }
  | { type: "ping" }
  | { type: "finish" }
  | { type: "mint" }
  | { type: "guarded" }

export const workerMachine = setup({
  types: {
    context: {} as { count: number; pings: number; body: string | null },
    events: {} as WorkerEvent,
    input: {} as { start: number }
  },
  actions: {
    "worker.record": () => {},
    "worker.explode": () => {},
    "worker.fetch": (_, _params: { url: string }) => {},
    "worker.mint": () => {},
    "worker.guard": () => {}
  }
}).createMachine({
  id: "worker",
  context: ({ input }) => ({ count: input.start, pings: 0, body: null }),
  initial: "idle",
  states: {
    idle: {
      meta: { waitsOn: "a test" },
      on: {
        count: {
          actions: [
            assign({ count: ({ context }) => context.count + 1 }),
            { type: "worker.record" },
            emit(({ context }) => ({ type: "counted", count: context.count }))
          ]
        },
        explode: {
          actions: [
            { type: "worker.fetch", params: { url: "https://example.test/never" } },
            raise({ type: "ping" }, { id: "boom", delay: 1000 }),
            { type: "worker.explode" },
            emit({ type: "exploded" })
          ]
        },
        fetch: {
          target: "fetching",
          actions: [{ type: "worker.fetch", params: ({ event }) => ({ url: event.url }) }]
        },
        arm: { actions: raise({ type: "ping" }, { id: "ping", delay: ({ event }) => event.delay }) },
        disarm: { actions: cancel("ping") },
        ping: { actions: [assign({ pings: ({ context }) => context.pings + 1 }), emit({ type: "pinged" })] },
        finish: "finished",
        mint: { actions: { type: "worker.mint" } },
        guarded: { target: "stuck", actions: { type: "worker.guard" } }
      }
    },
    fetching: {
      on: { fetched: { target: "idle", actions: assign({ body: ({ event }) => event.body }) } }
    },
    stuck: {},
    finished: { type: "final" }
  }
})

export interface WorkerControls {
  /** How many times the fetch job ran. */
  fetches: number
  /** When set, the fetch job waits for it before answering. */
  gate: Deferred.Deferred<void> | undefined
  /** Completed when a fetch job starts. */
  started: Deferred.Deferred<void> | undefined
  /** When true, the fetch job fails. */
  failFetch: boolean
}

export const workerControls = (): WorkerControls => ({
  fetches: 0,
  gate: undefined,
  started: undefined,
  failFetch: false
})

export const workerBinding = (controls: WorkerControls): Binding => ({
  kind: "worker",
  entry: { machine: workerMachine, version: 1, input: WorkerInput, events: WorkerEventSchema },
  resourceType: "worker",
  stream: (actorId) => `worker:${actorId}`,
  rows: {
    "worker.record": (_params, step) =>
      Effect.flatMap(
        SqlClient,
        (sql) => sql`INSERT INTO worker_records (actor_id, seq) VALUES (${step.actorId}, ${step.seq})`
      ),
    "worker.mint": (_params, step) => Effect.succeed({ secret: `secret-of-step-${step.seq}` }),
    "worker.guard": () => Effect.fail(new Veto({ reason: "the database says no" })),
    "worker.explode": () =>
      Effect.flatMap(SqlClient, (sql) => sql`INSERT INTO worker_records (actor_id, seq) VALUES (NULL, -1)`)
  },
  jobs: {
    "worker.fetch": (params: { url: string }) =>
      Effect.gen(function* () {
        controls.fetches++
        if (controls.started) yield* Deferred.succeed(controls.started, undefined)
        const gate = controls.gate
        if (gate) yield* Deferred.await(gate)
        if (controls.failFetch) return yield* Effect.fail(new Error("fetch failed"))
        return { type: "fetched", body: `body of ${params.url}` }
      })
  }
})

export const workerTable = `CREATE TABLE IF NOT EXISTS worker_records (actor_id uuid NOT NULL, seq bigint NOT NULL)`
