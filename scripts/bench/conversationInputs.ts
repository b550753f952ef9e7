// The conversation input scenario: durable input acceptance through `troupe serve`
// (scripts/bench/conversationServer.ts): POST .../conversations/{id}/inputs {kind: message,
// text: "hello"} until its 202, one client per conversation sending back to back, at 1 and 16
// conversations. A message input is accepted and drained in one step (input_accepted, then the
// message becomes a completed user turn: its row, the turn and variant rows, four feed items), so
// the queue never holds more than the row in flight and its bound (16) is never reached. Beside
// it, alternating in the same rounds, the bare actor step: `ActorHost.send` of one event to a
// counter actor (scripts/bench/machine.ts) in this process, on a fresh database of its own on the
// same PostgreSQL, one actor per fiber at the same concurrency. Reading: inputs/s (202s over the
// measured time) and their p50/p99 as the client sees them; ratio = inputs/s ÷ bare steps/s (goal
// ≥ 0.7); journal rows per input (every input of the level, warm-up included, checked consumed into
// a completed turn); the server process's CPU µs per input over the whole level (from /proc).
import { ActorHost, defaultHostOptions } from "@troupe/actors/ActorHost"
import { runtimeLayer } from "@troupe/actors/Runtime"
import { migratedDatabase } from "@troupe/server/Server"
import * as Database from "@troupe/storage/Database"
import { newPublicId } from "@troupe/storage/Ids"
import { Console, Effect, Layer, References } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { expectStatus, newConversation, type ServedTroupe, servedTroupe } from "./conversationServer.ts"
import { benchDatabase } from "./database.ts"
import { cpuMicros } from "./http.ts"
import { benchBinding, benchKind, countEvent } from "./machine.ts"
import { alternateSides, formatTable, type Sample, type Timing } from "./measure.ts"

const levels = [1, 16]
const goal = 0.7

export interface InputLevel {
  readonly conversations: number
  readonly inputs: Sample
  readonly steps: Sample
  /** inputs/s ÷ bare steps/s. */
  readonly ratio: number
  readonly goal: number
  /** Conversation journal rows per accepted input (the conversation's creation included). */
  readonly stepsPerInput: number
  /** The server process's CPU time per accepted input, warm-up included. */
  readonly serverCpuMicrosPerInput: number
}

/** The bare step's runtime: the counter alone, on a fresh database of its own. */
const bareStepLayer = Layer.unwrap(
  Effect.map(benchDatabase, (database) =>
    runtimeLayer([benchBinding], defaultHostOptions).pipe(
      Layer.provideMerge(migratedDatabase(database.config)),
      Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Warn"))
    )
  )
)

/** Every input of the conversations consumed into a completed message turn; answers counts. */
const checkInputs = (served: ServedTroupe, ids: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient
    const [row] = yield* sql<{ inputs: number; unconsumed: number; turns: number; unsettled: number; steps: number }>`
      WITH c AS (SELECT id, public_id FROM conversations WHERE public_id = ANY(${[...ids]}::uuid[]))
      SELECT (SELECT count(*)::int FROM conversation_inputs i JOIN c ON c.id = i.conversation_id) AS inputs,
             (SELECT count(*)::int FROM conversation_inputs i JOIN c ON c.id = i.conversation_id
              WHERE i.state <> 'consumed') AS unconsumed,
             (SELECT count(*)::int FROM conversation_turns t JOIN c ON c.id = t.conversation_id) AS turns,
             (SELECT count(*)::int FROM conversation_turns t JOIN c ON c.id = t.conversation_id
              WHERE t.status <> 'completed' OR t.kind <> 'message') AS unsettled,
             (SELECT count(*)::int FROM actor_journal j JOIN c ON c.public_id = j.actor_id
              WHERE j.kind = 'conversation') AS steps`
    if (row!.unconsumed > 0 || row!.unsettled > 0 || row!.turns !== row!.inputs) {
      return yield* Effect.die(new Error(`inputs not drained into completed turns: ${JSON.stringify(row)}`))
    }
    return row!
  }).pipe(Effect.orDie, Effect.provide(Database.layer(served.database)))

const runLevel = (timing: Timing, served: ServedTroupe, concurrency: number) =>
  Effect.gen(function* () {
    const host = yield* ActorHost
    const conversations = yield* Effect.forEach(Array.from({ length: concurrency }), () => newConversation(served))
    const counters = Array.from({ length: concurrency }, () => newPublicId())
    for (const actor of counters) yield* host.create(benchKind, actor, {})
    const step = (actor: string) =>
      Effect.flatMap(host.send(benchKind, actor, countEvent), (outcome) =>
        outcome._tag === "Accepted" ? Effect.void : Effect.die(new Error(`${actor}: event rejected`))
      )
    const accept = (conversationId: string) =>
      Effect.flatMap(
        served.call("POST", `${served.conversations}/${conversationId}/inputs`, {
          input: { kind: "message", text: "hello" }
        }),
        (answer) => Effect.asVoid(expectStatus(answer, 202, "POST inputs"))
      )
    const cpuBefore = yield* cpuMicros(served.pid)
    const [steps, inputs] = yield* alternateSides<unknown, never>(timing, [
      { actors: counters, step },
      { actors: conversations, step: accept }
    ])
    const serverCpu = (yield* cpuMicros(served.pid)) - cpuBefore
    const counted = yield* checkInputs(served, conversations)
    return {
      conversations: concurrency,
      inputs: inputs!,
      steps: steps!,
      ratio: inputs!.perSecond / steps!.perSecond,
      goal,
      stepsPerInput: counted.steps / counted.inputs,
      serverCpuMicrosPerInput: serverCpu / counted.inputs
    } satisfies InputLevel
  })

/** Both levels on one served instance; undefined (with a note) when PostgreSQL is absent. */
export const conversationInputsScenario = (timing: Timing) =>
  Effect.gen(function* () {
    const served = yield* servedTroupe("conversation-inputs")
    if (served === undefined) {
      yield* Console.log("Conversation inputs: skipped (it runs `troupe serve` on PostgreSQL, which did not answer)")
      return undefined
    }
    yield* Console.log(inputsHeader)
    return yield* Effect.forEach(levels, (concurrency) => runLevel(timing, served, concurrency)).pipe(
      Effect.provide(bareStepLayer)
    )
  }).pipe(Effect.scoped)

const inputsHeader =
  'Conversation inputs: POST .../inputs {kind: message, text: "hello"} through troupe serve until its 202, one ' +
  "client per conversation back to back; beside the bare actor step (ActorHost.send to a counter, this process, " +
  "a database of its own) at the same concurrency, alternating in the same rounds; ratio = inputs/s ÷ steps/s"

const fixed = (value: number, digits: number) => value.toFixed(digits)

export const inputsTable = (levels: ReadonlyArray<InputLevel>) =>
  formatTable(
    [
      "conversations",
      "inputs/s",
      "bare steps/s",
      "ratio",
      "goal",
      "p50/p99 ms input | step",
      "journal rows/input",
      "server CPU µs/input",
      "node CPU µs input | step"
    ],
    levels.map((level) => [
      String(level.conversations),
      fixed(level.inputs.perSecond, 0),
      fixed(level.steps.perSecond, 0),
      fixed(level.ratio, 2),
      `≥ ${level.goal}`,
      `${fixed(level.inputs.p50Ms, 2)}/${fixed(level.inputs.p99Ms, 1)} | ${fixed(level.steps.p50Ms, 2)}/${fixed(level.steps.p99Ms, 1)}`,
      fixed(level.stepsPerInput, 2),
      fixed(level.serverCpuMicrosPerInput, 0),
      `${fixed(level.inputs.cpuMicrosPerStep, 0)} | ${fixed(level.steps.cpuMicrosPerStep, 0)}`
    ])
  )
