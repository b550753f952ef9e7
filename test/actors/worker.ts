// A test subject for the runtime: counts (a row write and an emit per count), fails on demand
// in its transactional handler, fetches through a job, keeps a ping timer, and tells other
// workers events (a greeting records who sent it, and can be held at a gate).
import { defineActor, TransactionalActors, Veto } from "@troupe/actors/Binding"
import { Deferred, Effect, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { assign, cancel, emit, raise, setup } from "xstate"

export const WorkerInput = Schema.Struct({ start: Schema.Number })

/** What one worker may tell another: a greeting, a count, or a job report it does not expect. */
const Told = Schema.Literals(["greet", "count", "fetched"])
type Told = typeof Told.Type

export const WorkerEventSchema = Schema.Union([
  Schema.Struct({
    type: Schema.Literals(["count", "explode", "disarm", "ping", "finish", "mint", "guarded", "greet"])
  }),
  Schema.Struct({ type: Schema.Literals(["tell", "tellAndFail"]), to: Schema.String, say: Told }),
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
  | { type: "greet" }
  | { type: "tell" | "tellAndFail"; to: string; say: Told }

export const workerEffects = {
  record: "worker.record",
  explode: "worker.explode",
  fetch: "worker.fetch",
  mint: "worker.mint",
  guard: "worker.guard",
  tell: "worker.tell",
  greet: "worker.greet"
} as const

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
    "worker.guard": () => {},
    "worker.tell": (_, _params: { to: string; say: Told }) => {},
    "worker.greet": () => {}
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
        guarded: { target: "stuck", actions: { type: "worker.guard" } },
        tell: { actions: { type: "worker.tell", params: ({ event }) => ({ to: event.to, say: event.say }) } },
        tellAndFail: {
          actions: [
            { type: "worker.tell", params: ({ event }) => ({ to: event.to, say: event.say }) },
            { type: "worker.explode" }
          ]
        },
        greet: { actions: { type: "worker.greet" } }
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
  /** When set, a greeting's row handler waits for it (inside the receiving step's transaction). */
  greetGate: Deferred.Deferred<void> | undefined
  /** Completed when a greeting's row handler starts. */
  greetStarted: Deferred.Deferred<void> | undefined
}

export const workerControls = (): WorkerControls => ({
  fetches: 0,
  gate: undefined,
  started: undefined,
  failFetch: false,
  greetGate: undefined,
  greetStarted: undefined
})

const workerEntry = {
  machine: workerMachine,
  version: 1,
  input: WorkerInput,
  events: WorkerEventSchema,
  effects: workerEffects,
  migrations: {}
}

export const workerBinding = (controls: WorkerControls) => {
  const worker = defineActor({
    kind: "worker",
    entry: workerEntry,
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
      "worker.tell": (params): Effect.Effect<void, never, TransactionalActors> =>
        Effect.flatMap(TransactionalActors, (actors) =>
          actors.tell(
            worker,
            params.to,
            params.say === "fetched" ? { type: "fetched", body: "told" } : { type: params.say }
          )
        ),
      "worker.greet": (_params, step) =>
        Effect.gen(function* () {
          if (controls.greetStarted) yield* Deferred.succeed(controls.greetStarted, undefined)
          const gate = controls.greetGate
          if (gate) yield* Deferred.await(gate)
          const sql = yield* SqlClient
          yield* sql`INSERT INTO worker_greetings (actor_id, seq, sender)
                   VALUES (${step.actorId}, ${step.seq}, ${step.sender?.actorId ?? null})`
        }),
      "worker.explode": () =>
        Effect.flatMap(SqlClient, (sql) => sql`INSERT INTO worker_records (actor_id, seq) VALUES (NULL, -1)`)
    },
    jobs: {
      "worker.fetch": (params) =>
        Effect.gen(function* () {
          controls.fetches++
          if (controls.started) yield* Deferred.succeed(controls.started, undefined)
          const gate = controls.gate
          if (gate) yield* Deferred.await(gate)
          if (controls.failFetch) return yield* Effect.fail(new Error("fetch failed"))
          return { type: "fetched" as const, body: `body of ${params.url}` }
        })
    }
  })
  return worker
}

export const workerTable = `CREATE TABLE IF NOT EXISTS worker_records (actor_id uuid NOT NULL, seq bigint NOT NULL)`

export const greetingsTable = `CREATE TABLE IF NOT EXISTS worker_greetings (actor_id uuid NOT NULL, seq bigint NOT NULL, sender uuid)`
