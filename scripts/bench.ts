// `npm run bench`: ten scenarios, each beside its own baseline measured in the same run on the
// same fresh database (`troupe_bench_<random>` on BENCH_DATABASE_URL or 127.0.0.1:5432, dropped
// at the end; the embedded database, with one connection, when PostgreSQL does not answer):
// actor steps per second through the runtime against the same writes as bare SQL (below), then memory grep at the limits against fetching and scanning the same bytes once
// (scripts/bench/grep.ts, on the migrated database without the actor runtime).
//
// One step = `ActorHost.send` of one event to a counter actor (scripts/bench/machine.ts): the
// transition, then ONE statement (actors/src/ActorHost.ts, ActorSteps.ts) writing the seq-fenced
// snapshot, the stream head, an outbox item and a journal row, with the step's notice (NOTIFYed at
// commit, or queued beside other committing steps, actors/src/Notices.ts), then the reply. Two baselines (scripts/bench/baseline.ts) write the same rows
// through the same PgClient pool, with no machine, mailbox, plan or notification: `tx`, the four
// statements in a transaction as a program writes them by hand (six round trips), and `stmt`, the
// same writes as one statement of the runtime's shape (one round trip), so its ratio is the
// runtime's own cost alone. After each level every side's rows are checked: one journal row, one
// outbox item and one stream head step per step.
// Then the same levels again with the host's grouped commit (`groupCommit` below, see
// actors/src/GroupCommit.ts: steps ready together share one statement) against baselines measured
// beside it the same way.
//
// Each level (1, 4, 16 actors) gets fresh actors on every side, one fiber per actor sending its
// steps back to back; after a 0.5 s warm-up of each side, the sides alternate in 0.5 s rounds
// until each has 3 s measured (BENCH_SECONDS), so disk hiccups hit them alike.
//
// Reading the output: `steps/s` and `tx/s` are completed steps over the measured time; each
// `ratio` is runtime / the baseline left of it, the share of the bare rate the runtime keeps (1.0
// = no overhead); p50/p99 are per-step latencies in ms as an actor's sender sees them; node CPU
// µs/step is this process's CPU time (user + system) per step, the client side's cost of a step
// (PostgreSQL's is not in it). Absolute figures vary with the machine and its disk; compare
// ratios. The grep table's ratio runs the other way (grep time / baseline time, lower is better).
// The same figures go to bench/results/<timestamp>.json (gitignored).
//
// Third, the HTTP scenario (scripts/bench/http.ts): `troupe serve` against a bare node:http twin
// answering the same bytes, for the static OAuth metadata and an authenticated profile read,
// under wrk (or a Node load client) on a database of its own.
// Fourth, replay (scripts/bench/replay.ts): a 10,000-item stream read through Streams.read in pages
// of 200 against a bare keyset SELECT of the same rows, on the migrated database. Fifth, inference
// (scripts/bench/inference.ts): local/echo inference requests created and followed to completed
// against the bare actor step in the same runtime, on a database of its own.
// Sixth, uploads (scripts/bench/uploads.ts): a 50 MiB upload through `troupe serve` against writing
// the same bytes with fs, and the server's resident set during 20 concurrent 50 MiB uploads.
// Then the conversation scenarios, each on `troupe serve` over a database of its own
// (scripts/bench/conversationServer.ts): conversation-inputs (message inputs accepted per second at
// 1 and 16 conversations against the bare actor step, scripts/bench/conversationInputs.ts),
// conversation-reply ("hello" to a completed local/echo reply and its breakdown,
// conversationReply.ts), conversation-timeline (windows of a 10,000-turn timeline against a bare
// keyset SELECT, conversationTimeline.ts) and conversation-fanout (one conversation's feed on the
// cable to 100 and 1,000 subscribers against a bare `ws` broadcast, conversationFanout.ts).
// Then run-claims (scripts/bench/runClaims.ts): the executor inbox's claim + commit cycle at 4 and
// 16 workers against a bare SKIP LOCKED claim/complete cycle in the same database; its long mode
// (BENCH_CLAIMS_MINUTES=10) checks the rate does not degrade as settled rows pile up.
// Then run-fanout (scripts/bench/runFanout.ts): a run of 100 `cat` tool tasks end to end through the
// reference runner (one process, then four) against the same commands spawned by a bare node loop.
// Then schedule-dispatch (scripts/bench/scheduleDispatch.ts): 10,000 interval schedules due at one
// instant, dispatched by the timer runner of `troupe serve`; the spread and lateness against 60 s.
// `npm run bench -- http` (or `steps`, `grep`, `replay`, `inference`, `uploads`, `conversation-inputs`,
// `conversation-reply`, `conversation-timeline`, `conversation-fanout`, `run-claims`, `run-fanout`,
// `schedule-dispatch`, several) runs only the scenarios named.
import { mkdir, writeFile } from "node:fs/promises"
import { NodeRuntime } from "@effect/platform-node"
import { ActorHost, defaultHostOptions, type HostOptions } from "@troupe/actors/ActorHost"
import { runtimeLayer } from "@troupe/actors/Runtime"
import { migratedDatabase } from "@troupe/server/Server"
import { newPublicId } from "@troupe/storage/Ids"
import { Console, Effect, Layer, References } from "effect"
import { baselineStepper, checkWrites, seedBaseline } from "./bench/baseline.ts"
import { conversationFanoutScenario, type FanoutLevel, fanoutTable } from "./bench/conversationFanout.ts"
import { conversationInputsScenario, type InputLevel, inputsTable } from "./bench/conversationInputs.ts"
import { conversationReplyScenario, type ReplyReport, replyTable } from "./bench/conversationReply.ts"
import { conversationTimelineScenario, type TimelineLevel, timelineTable } from "./bench/conversationTimeline.ts"
import { benchDatabase, poolSize } from "./bench/database.ts"
import { type GrepFigures, grepHeader, grepTable, memoryGrep } from "./bench/grep.ts"
import { type HttpReport, httpScenario, httpTable } from "./bench/http.ts"
import { type InferenceReport, inferenceHeader, inferenceScenario, inferenceTable } from "./bench/inference.ts"
import { benchBinding, benchKind, countEvent } from "./bench/machine.ts"
import { alternateSides, formatTable, type Sample, type Timing } from "./bench/measure.ts"
import { type ReplayLevel, replayHeader, replayScenario, replayTable } from "./bench/replay.ts"
import { type ClaimReport, claimsTable, runClaimsScenario } from "./bench/runClaims.ts"
import { type FanoutRunReport, runFanoutScenario, runFanoutTable } from "./bench/runFanout.ts"
import {
  type ScheduleDispatchReport,
  scheduleDispatchScenario,
  scheduleDispatchTable
} from "./bench/scheduleDispatch.ts"
import { type UploadReport, uploadScenario, uploadTable } from "./bench/uploads.ts"

const levels = [1, 4, 16]
/** The grouped-commit variant's host option (actors/src/GroupCommit.ts). */
const groupCommit = { committers: 8, maxGroup: 16 }
const warmupMillis = 500
const roundMillis = 500
const measureMillis = Math.round(Number(process.env.BENCH_SECONDS ?? 3) * 1000)
const timing: Timing = { warmupMillis, roundMillis, measureMillis }
const resultsDir = new URL("../bench/results/", import.meta.url)
const named = new Set(process.argv.slice(2))
const runs = (
  scenario:
    | "steps"
    | "grep"
    | "replay"
    | "inference"
    | "http"
    | "uploads"
    | "conversation-inputs"
    | "conversation-reply"
    | "conversation-timeline"
    | "conversation-fanout"
    | "run-claims"
    | "run-fanout"
    | "schedule-dispatch"
) => named.size === 0 || named.has(scenario)

interface Level {
  readonly concurrency: number
  readonly runtime: Sample
  /** The same writes as a bare SQL transaction of four statements. */
  readonly baseline: Sample
  readonly ratio: number
  /** The same writes as one bare statement (the shape of the runtime's own). */
  readonly statement: Sample
  readonly statementRatio: number
}

const runLevel = (concurrency: number) =>
  Effect.gen(function* () {
    const host = yield* ActorHost
    const runtimeActors = Array.from({ length: concurrency }, () => newPublicId())
    for (const actor of runtimeActors) yield* host.create(benchKind, actor, {})
    const runtimeStep = (actor: string) =>
      Effect.flatMap(host.send(benchKind, actor, countEvent), (outcome) =>
        outcome._tag === "Accepted" ? Effect.void : Effect.die(new Error(`${actor}: event rejected`))
      )
    const transactionActors = yield* seedBaseline("transaction", concurrency)
    const statementActors = yield* seedBaseline("statement", concurrency)
    const [baseline, runtime, statement] = yield* alternateSides<unknown, never>(timing, [
      { actors: transactionActors, step: yield* baselineStepper("transaction") },
      { actors: runtimeActors, step: runtimeStep },
      { actors: statementActors, step: yield* baselineStepper("statement") }
    ])
    const problems = [
      ...(yield* checkWrites(runtimeActors, benchBinding.stream)),
      ...(yield* checkWrites(transactionActors, (id) => `bench_baseline_transaction:${id}`)),
      ...(yield* checkWrites(statementActors, (id) => `bench_baseline_statement:${id}`))
    ]
    if (problems.length > 0)
      return yield* Effect.die(new Error(`the sides wrote different rows: ${problems.join("; ")}`))
    return {
      concurrency,
      runtime: runtime!,
      baseline: baseline!,
      ratio: runtime!.perSecond / baseline!.perSecond,
      statement: statement!,
      statementRatio: runtime!.perSecond / statement!.perSecond
    } satisfies Level
  })

const fixed = (value: number, digits: number) => value.toFixed(digits)

const table = (results: ReadonlyArray<Level>) => {
  const header = [
    "actors",
    "runtime steps/s",
    "bare tx/s",
    "ratio",
    "bare stmt/s",
    "ratio",
    "p50/p99 ms runtime | tx | stmt",
    "node CPU µs/step runtime | tx | stmt"
  ]
  const latency = (sample: Sample) => `${fixed(sample.p50Ms, 2)}/${fixed(sample.p99Ms, 1)}`
  const rows = results.map((level) => [
    String(level.concurrency),
    fixed(level.runtime.perSecond, 0),
    fixed(level.baseline.perSecond, 0),
    fixed(level.ratio, 2),
    fixed(level.statement.perSecond, 0),
    fixed(level.statementRatio, 2),
    [level.runtime, level.baseline, level.statement].map(latency).join(" | "),
    [level.runtime, level.baseline, level.statement].map((sample) => fixed(sample.cpuMicrosPerStep, 0)).join(" | ")
  ])
  return formatTable(header, rows)
}

const program = Effect.gen(function* () {
  const startedAt = new Date()
  const database = yield* benchDatabase
  yield* Console.log(
    `Troupe bench: ${database.description}; levels ${levels.join(", ")} actors; ` +
      `${warmupMillis} ms warm-up + ${measureMillis} ms measured per level and side, alternating in ${roundMillis} ms rounds`
  )
  const layer = (options: HostOptions) =>
    runtimeLayer([benchBinding], options).pipe(
      Layer.provideMerge(migratedDatabase(database.config)),
      Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Warn"))
    )
  const stepLevels = (options: HostOptions) =>
    runs("steps") ? Effect.forEach(levels, runLevel).pipe(Effect.provide(layer(options))) : Effect.succeed([])
  const results = yield* stepLevels(defaultHostOptions)
  if (runs("steps")) yield* Console.log(table(results))
  const grouped = yield* stepLevels({ ...defaultHostOptions, groupCommit })
  if (runs("steps")) {
    yield* Console.log(
      `Grouped commit (${groupCommit.committers} committers, up to ${groupCommit.maxGroup} steps each):`
    )
    yield* Console.log(table(grouped))
  }

  if (runs("grep")) yield* Console.log(grepHeader)
  const grep: ReadonlyArray<GrepFigures> = runs("grep")
    ? yield* memoryGrep(timing).pipe(
        Effect.provide(
          migratedDatabase(database.config).pipe(Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Warn")))
        )
      )
    : []
  if (runs("grep")) yield* Console.log(grepTable(grep))

  if (runs("replay")) yield* Console.log(replayHeader)
  const replay: ReadonlyArray<ReplayLevel> = runs("replay")
    ? yield* replayScenario(timing).pipe(
        Effect.provide(
          migratedDatabase(database.config).pipe(Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Warn")))
        )
      )
    : []
  if (runs("replay")) yield* Console.log(replayTable(replay))

  if (runs("inference")) yield* Console.log(inferenceHeader)
  const inference: InferenceReport | undefined = runs("inference") ? yield* inferenceScenario(timing) : undefined
  if (inference) yield* Console.log(inferenceTable(inference))

  const http: HttpReport | undefined = runs("http") ? yield* httpScenario(measureMillis) : undefined
  if (http) yield* Console.log(httpTable(http))

  const uploads: UploadReport | undefined = runs("uploads") ? yield* uploadScenario : undefined
  if (uploads) yield* Console.log(uploadTable(uploads))

  const conversationInputs: ReadonlyArray<InputLevel> | undefined = runs("conversation-inputs")
    ? yield* conversationInputsScenario(timing)
    : undefined
  if (conversationInputs) yield* Console.log(inputsTable(conversationInputs))

  const conversationReply: ReplyReport | undefined = runs("conversation-reply")
    ? yield* conversationReplyScenario
    : undefined
  if (conversationReply) yield* Console.log(replyTable(conversationReply))

  const conversationTimeline: ReadonlyArray<TimelineLevel> | undefined = runs("conversation-timeline")
    ? yield* conversationTimelineScenario(timing)
    : undefined
  if (conversationTimeline) yield* Console.log(timelineTable(conversationTimeline))

  const conversationFanout: ReadonlyArray<FanoutLevel> | undefined = runs("conversation-fanout")
    ? yield* conversationFanoutScenario
    : undefined
  if (conversationFanout) yield* Console.log(fanoutTable(conversationFanout))

  const runClaims: ClaimReport | undefined = runs("run-claims") ? yield* runClaimsScenario(timing) : undefined
  if (runClaims) yield* Console.log(claimsTable(runClaims))

  const runFanout: FanoutRunReport | undefined = runs("run-fanout") ? yield* runFanoutScenario : undefined
  if (runFanout) yield* Console.log(runFanoutTable(runFanout))

  const scheduleDispatch: ScheduleDispatchReport | undefined = runs("schedule-dispatch")
    ? yield* scheduleDispatchScenario
    : undefined
  if (scheduleDispatch) yield* Console.log(scheduleDispatchTable(scheduleDispatch))

  const report = {
    startedAt: startedAt.toISOString(),
    database: database.description,
    node: process.version,
    poolSize: database.config._tag === "postgres" ? poolSize : 1,
    warmupMillis,
    measureMillis,
    roundMillis,
    step: "snapshot (seq-fenced UPDATE) + stream head upsert + outbox item + journal row",
    baselines: {
      transaction: "the four writes as a bare transaction of four statements (six round trips)",
      statement: "the four writes as one bare statement (data-modifying CTEs gated on the fence)"
    },
    levels: results,
    groupedCommit: { ...groupCommit, levels: grouped },
    memoryGrep: {
      anchor: "64 documents × 65,536 bytes of prose (scripts/bench/prose.ts), one caller",
      baseline: "the same SELECT of the anchor's documents + one String.prototype.includes pass",
      ratio: "grep p50 / baseline p50, lower is better",
      patterns: grep
    },
    replay: {
      stream: "10,000 text_delta items of one inference request, read from the start in pages of 200",
      baseline: "the same columns of the same rows as bare keyset SELECTs in pages of 200",
      ratio: "Streams items/s ÷ bare items/s",
      levels: replay
    },
    inference: inference && {
      request: 'local/echo, input "hello there", created through InferenceRequests.create, awaited to completed',
      baseline: "ActorHost.send of one event to a counter actor, one actor per fiber at the same concurrency",
      ratio: "requests/s ÷ bare steps/s; stepRatio = ratio × stepsPerRequest",
      ...inference
    },
    http,
    uploads: uploads && {
      upload: "POST /agent_api/v1/uploads to troupe serve, one upload[file] part streamed by node:http, until the 201",
      baseline: "writeFile of the same bytes to a file in the same data directory, then fsync",
      twin: "a bare node:http server streaming the same request's body to a file with fs, fsynced",
      ...uploads
    },
    conversationInputs: conversationInputs && {
      input:
        'POST .../inputs {kind: message, text: "hello"} through troupe serve until its 202 (accepted and drained in one step)',
      baseline: "ActorHost.send of one event to a counter actor, this process, a database of its own, same concurrency",
      ratio: "inputs/s ÷ bare steps/s",
      levels: conversationInputs
    },
    conversationReply: conversationReply && {
      reply: 'POST .../inputs {kind: direct_reply, text: "hello", model: local/echo}, one at a time, 10 a conversation',
      parts:
        "accept = POST to 202; drain = 202 to the step narrating turn_status running; inference = to the request's " +
        "step into completed; settle = to the conversation's step narrating turn_status completed (step notices)",
      ...conversationReply
    },
    conversationTimeline: conversationTimeline && {
      timeline: "10,000 turns (a message and an echo reply made through the doors, copied with SQL), windows of 25",
      door: "GET .../turns?limit=25 (tail) and &before_position=5013 (middle) through troupe serve",
      baseline: "the same 25 turns and their variants as one bare keyset SELECT through this process's pool",
      ratio: "door reads/s ÷ bare reads/s",
      levels: conversationTimeline
    },
    conversationFanout: conversationFanout && {
      subscribers:
        "one WebSocket each on the cable, ConversationChannel (live), Action Cable protocol; a message input a trigger",
      baseline: "a bare ws server in its own process sending the same frames to as many clients on a NOTIFY",
      latency:
        "frame arrival at each subscriber − the step's notice (the twin's notification) as this process hears it",
      ratio: "Troupe p99 ÷ bare p99",
      levels: conversationFanout
    },
    runClaims: runClaims && {
      cycle:
        "POST …/executor/inbox/{run}/{key}/claim then …/commit {claim_token, content} through troupe serve, one " +
        "runner, the dispatched members of 32-member tool fans in inbox order",
      baseline:
        "UPDATE … WHERE id = (SELECT id … FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING, then a completing UPDATE, " +
        "on a table in the same database through a plain pool in this process",
      ratio: "HTTP cycles/s ÷ bare cycles/s; long: the last minute's cycles/s ÷ the first's",
      ...runClaims
    },
    runFanout: runFanout && {
      run:
        "100 `cat` tool tasks in two envelopes (a 32-member fan and a follower each), created and appended while " +
        "pending, served by `troupe runner` processes; wall = POST start → the run read completed",
      baseline:
        "the same 100 `cat` commands spawned by node:child_process in the same graph shape (unbounded, as the runner)",
      serviceShare: "1 − bare seconds ÷ Troupe seconds (medians)",
      ...runFanout
    },
    scheduleDispatch: scheduleDispatch && {
      shape: "interval schedules (every 3600 s) of one conversation, starts_at = one instant T, created beforehand",
      dispatch: "the timer runner's step of each: a child conversation, its first input told, the execution row",
      lateness: "execution created_at − T",
      reading: "ratio = max lateness ÷ 60 s (goal ≤ 1)",
      ...scheduleDispatch
    }
  }
  yield* Effect.promise(async () => {
    await mkdir(resultsDir, { recursive: true })
    const file = new URL(`${startedAt.toISOString().replaceAll(":", "-")}.json`, resultsDir)
    await writeFile(file, JSON.stringify(report, null, 2) + "\n")
    return file
  }).pipe(Effect.flatMap((file) => Console.log(`Wrote ${file.pathname}`)))
})

program.pipe(Effect.scoped, NodeRuntime.runMain)
