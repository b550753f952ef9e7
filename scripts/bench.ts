// `npm run bench`: two scenarios, each beside its own baseline measured in the same run on the
// same fresh database (`troupe_bench_<random>` on BENCH_DATABASE_URL or 127.0.0.1:5432, dropped
// at the end; the embedded database, with one connection, when PostgreSQL does not answer):
// actor steps per second through the runtime against the same writes as plain SQL transactions
// (below), then memory grep at the limits against fetching and scanning the same bytes once
// (scripts/bench/grep.ts, on the migrated database without the actor runtime).
//
// One step = `ActorHost.send` of one event to a counter actor (scripts/bench/machine.ts): the
// transition, then ONE transaction writing the seq-fenced snapshot, the stream head and an
// outbox item, and a journal row whose statement also carries the two NOTIFYs on PostgreSQL
// (held until commit), then the reply. The baseline (scripts/bench/baseline.ts) issues the same
// four statements in one transaction through the same PgClient pool (six socket writes a step
// on both sides), with no machine, mailbox, plan or notification.
// Then the same levels again with the host's grouped commit (`groupCommit` below, see
// actors/src/GroupCommit.ts) against a baseline measured beside it the same way.
//
// Each level (1, 4, 16 actors) gets fresh actors on both sides, one fiber per actor sending its
// steps back to back; after a 0.5 s warm-up of each side, the two sides alternate in 0.5 s
// rounds until each has 3 s measured (BENCH_SECONDS), so disk hiccups hit both alike.
//
// Reading the output: `steps/s` and `tx/s` are completed steps over the measured time; `ratio`
// is runtime/baseline, the share of the bare transaction rate the runtime keeps (1.0 = no
// overhead); p50/p99 are per-step latencies in ms as an actor's sender sees them; node CPU
// µs/step is this process's CPU time (user + system) per step, the client side's cost of a step
// (PostgreSQL's is not in it). Absolute figures vary with the machine and its disk; compare
// ratios. The grep table's ratio runs the other way (grep time / baseline time, lower is better).
// The same figures go to bench/results/<timestamp>.json (gitignored).
//
// Third, the HTTP scenario (scripts/bench/http.ts): `troupe serve` against a bare node:http twin
// answering the same bytes, for the static OAuth metadata and an authenticated profile read,
// under wrk (or a Node load client) on a database of its own.
// `npm run bench -- http` (or `steps`, `grep`, several) runs only the scenarios named.
import { mkdir, writeFile } from "node:fs/promises"
import { NodeRuntime } from "@effect/platform-node"
import { ActorHost, defaultHostOptions, type HostOptions } from "@troupe/actors/ActorHost"
import { runtimeLayer } from "@troupe/actors/Runtime"
import { migratedDatabase } from "@troupe/server/Server"
import { newPublicId } from "@troupe/storage/Ids"
import { Console, Effect, Layer, References } from "effect"
import { baselineStepper, seedBaseline } from "./bench/baseline.ts"
import { benchDatabase, poolSize } from "./bench/database.ts"
import { type GrepFigures, grepHeader, grepTable, memoryGrep } from "./bench/grep.ts"
import { type HttpReport, httpScenario, httpTable } from "./bench/http.ts"
import { benchBinding, benchKind, countEvent } from "./bench/machine.ts"
import { alternate, formatTable, type Sample, type Timing } from "./bench/measure.ts"

const levels = [1, 4, 16]
/** The grouped-commit variant's host option (actors/src/GroupCommit.ts). */
const groupCommit = { committers: 8, maxGroup: 16 }
const warmupMillis = 500
const roundMillis = 500
const measureMillis = Math.round(Number(process.env.BENCH_SECONDS ?? 3) * 1000)
const timing: Timing = { warmupMillis, roundMillis, measureMillis }
const resultsDir = new URL("../bench/results/", import.meta.url)
const named = new Set(process.argv.slice(2))
const runs = (scenario: "steps" | "grep" | "http") => named.size === 0 || named.has(scenario)

interface Level {
  readonly concurrency: number
  readonly runtime: Sample
  readonly baseline: Sample
  readonly ratio: number
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
    const baselineActors = yield* seedBaseline(concurrency)
    const baselineStep = yield* baselineStepper
    const { subject: runtime, baseline } = yield* alternate(
      timing,
      { actors: runtimeActors, step: runtimeStep },
      { actors: baselineActors, step: baselineStep }
    )
    return { concurrency, runtime, baseline, ratio: runtime.perSecond / baseline.perSecond } satisfies Level
  })

const fixed = (value: number, digits: number) => value.toFixed(digits)

const table = (results: ReadonlyArray<Level>) => {
  const header = [
    "actors",
    "runtime steps/s",
    "baseline tx/s",
    "ratio",
    "runtime p50/p99 ms",
    "baseline p50/p99 ms",
    "node CPU µs/step runtime/baseline"
  ]
  const rows = results.map((level) => [
    String(level.concurrency),
    fixed(level.runtime.perSecond, 0),
    fixed(level.baseline.perSecond, 0),
    fixed(level.ratio, 2),
    `${fixed(level.runtime.p50Ms, 2)} / ${fixed(level.runtime.p99Ms, 2)}`,
    `${fixed(level.baseline.p50Ms, 2)} / ${fixed(level.baseline.p99Ms, 2)}`,
    `${fixed(level.runtime.cpuMicrosPerStep, 0)} / ${fixed(level.baseline.cpuMicrosPerStep, 0)}`
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

  const http: HttpReport | undefined = runs("http") ? yield* httpScenario(measureMillis) : undefined
  if (http) yield* Console.log(httpTable(http))

  const report = {
    startedAt: startedAt.toISOString(),
    database: database.description,
    node: process.version,
    poolSize: database.config._tag === "postgres" ? poolSize : 1,
    warmupMillis,
    measureMillis,
    roundMillis,
    step: "snapshot (seq-fenced UPDATE) + stream head upsert + outbox item + journal row, one transaction",
    levels: results,
    groupedCommit: { ...groupCommit, levels: grouped },
    memoryGrep: {
      anchor: "64 documents × 65,536 bytes of prose (scripts/bench/prose.ts), one caller",
      baseline: "the same SELECT of the anchor's documents + one String.prototype.includes pass",
      ratio: "grep p50 / baseline p50, lower is better",
      patterns: grep
    },
    http
  }
  yield* Effect.promise(async () => {
    await mkdir(resultsDir, { recursive: true })
    const file = new URL(`${startedAt.toISOString().replaceAll(":", "-")}.json`, resultsDir)
    await writeFile(file, JSON.stringify(report, null, 2) + "\n")
    return file
  }).pipe(Effect.flatMap((file) => Console.log(`Wrote ${file.pathname}`)))
})

program.pipe(Effect.scoped, NodeRuntime.runMain)
