// The run claim scenario: the executor inbox's claim + commit cycle through `troupe serve`
// (scripts/bench/runWorld.ts: runners connected through the device flow, runs of one 32-member
// tool fan each, their members dispatched to the run's runner), against a bare claim/complete
// cycle on a table of its own in the SAME database: `UPDATE … WHERE id = (SELECT id … FOR UPDATE
// SKIP LOCKED LIMIT 1) RETURNING`, then an UPDATE completing the row under its token, through a
// plain pool in this process. N workers (4 and 16; four to a runner) loop: POST
// …/inbox/{run}/{key}/claim on their runner's next dispatched row in inbox order (a fan's members
// one after another, as a runner listing its inbox takes them), then POST …/commit {claim_token,
// content}; the sides alternate in rounds (measure.ts), rows topped up between rounds. Reading:
// cycles/s, ratio = HTTP ÷ bare (goal ≥ 0.7), p50/p99 of a cycle and of its claim and commit
// alone, the server process's CPU µs per cycle. Every committed member is checked completed in
// run_tasks afterwards; runs left with dispatched rows are stopped.
// Long mode (BENCH_CLAIMS_MINUTES=10, not run by default): the HTTP cycle alone at
// BENCH_CLAIMS_WORKERS (16) for that many minutes after a 10 s warm-up, runs created as the
// backlog runs low, an inbox page (GET …/inbox?limit=50) probed each second; the rate of the
// last minute ÷ the first (goal ≥ 0.9: no degradation as settled rows pile up).
import { loadavg } from "node:os"
import { performance } from "node:perf_hooks"
import { PgClient } from "@effect/sql-pg"
import { Console, Effect, Fiber, Redacted } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { expectStatus, type ServedTroupe, servedTroupe } from "./conversationServer.ts"
import { cpuMicros } from "./http.ts"
import { drive, formatTable, type Round, type Sample, summarize, type Timing } from "./measure.ts"
import { connectRunners, type FanRun, fanRun, type Runner, stopRun } from "./runWorld.ts"

const name = "run-claims"
const levels = [4, 16]
const fanWidth = 32
const goal = 0.7
const longGoal = 0.9
/**
 * Workers a runner claims with (its slots). An executor's claim posts are limited to 6,000 a
 * minute (100/s, executor/Inbox.ts), so more workers come as more runners, as they would.
 */
const slots = 4
/** Runs created at once while topping up. */
const creators = 4
/** Rows made ready before a round: this many times what the side did in a round so far, at least. */
const margin = 3
const longMinutes = Number(process.env.BENCH_CLAIMS_MINUTES ?? 0)
const longWorkers = Number(process.env.BENCH_CLAIMS_WORKERS ?? 16)
const longWarmupMillis = 10_000

interface Row {
  readonly runId: string
  readonly key: string
}

/** The claim and commit times of cycles, in ms. */
interface Parts {
  readonly claims: Array<number>
  readonly commits: Array<number>
}

const newParts = (): Parts => ({ claims: [], commits: [] })

/** Where a cycle's claim and commit times go. */
type Recorder = (claimMs: number, commitMs: number) => void

const into =
  (parts: () => Parts | undefined): Recorder =>
  (claimMs, commitMs) => {
    const target = parts()
    target?.claims.push(claimMs)
    target?.commits.push(commitMs)
  }

const percentile = (values: ReadonlyArray<number>, p: number) => {
  const sorted = Float64Array.from(values).sort()
  return sorted.length === 0
    ? Number.NaN
    : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!
}

interface PartFigures {
  readonly claimP50Ms: number
  readonly claimP99Ms: number
  readonly commitP50Ms: number
  readonly commitP99Ms: number
}

const partFigures = (parts: Parts): PartFigures => ({
  claimP50Ms: percentile(parts.claims, 50),
  claimP99Ms: percentile(parts.claims, 99),
  commitP50Ms: percentile(parts.commits, 50),
  commitP99Ms: percentile(parts.commits, 99)
})

/** The dispatched rows of fan runs made for one runner, taken in inbox order. */
const fanRows = (served: ServedTroupe, runner: Runner) => {
  const rows: Array<Row> = []
  const runs: Array<FanRun> = []
  let next = 0
  return {
    runner,
    runs,
    available: () => rows.length - next,
    taken: () => next,
    take: (): Row | undefined => rows[next++],
    /** Runs made (`creators` at a time) until `count` rows wait. */
    ensure: (count: number) =>
      Effect.gen(function* () {
        while (rows.length - next < count) {
          const missing = Math.ceil((count - (rows.length - next)) / fanWidth)
          const made = yield* Effect.forEach(
            Array.from({ length: Math.min(missing, creators) }),
            () => fanRun(served, runner.publicId, fanWidth),
            { concurrency: creators }
          )
          for (const run of made) {
            runs.push(run)
            for (const key of run.keys) rows.push({ runId: run.runId, key })
          }
        }
      }),
    /** Runs with rows never taken (their members still dispatched). */
    unfinished: () => [...new Set(rows.slice(next).map((row) => row.runId))]
  }
}

/** The rows of as many runners as `workers` need (`slots` workers each); worker i uses runner ⌊i / slots⌋. */
const supplyFor = (served: ServedTroupe, runners: ReadonlyArray<Runner>, workers: number) => {
  const queues = runners.slice(0, Math.ceil(workers / slots)).map((runner) => fanRows(served, runner))
  return {
    queueOf: (worker: string) => queues[Math.floor(Number(worker) / slots)]!,
    runs: () => queues.flatMap((queue) => queue.runs),
    taken: () => queues.reduce((sum, queue) => sum + queue.taken(), 0),
    /** The fewest rows waiting in a runner's queue. */
    available: () => Math.min(...queues.map((queue) => queue.available())),
    /** `count` rows ready in all, spread over the runners. */
    ensure: (count: number) =>
      Effect.forEach(queues, (queue) => queue.ensure(Math.ceil(count / queues.length)), { discard: true }),
    unfinished: () => queues.flatMap((queue) => queue.unfinished())
  }
}

type Supply = ReturnType<typeof supplyFor>

/** One claim + commit of the worker's runner's next row through its executor doors. */
const httpCycle = (supply: Supply, worker: string, record: Recorder) =>
  Effect.gen(function* () {
    const queue = supply.queueOf(worker)
    const row = queue.take()
    if (row === undefined) return yield* Effect.die(new Error(`${name}: no dispatched row left`))
    const path = `/inbox/${row.runId}/${row.key}`
    const t0 = performance.now()
    const claimed = yield* expectStatus(yield* queue.runner.client.call("POST", `${path}/claim`), 200, "claim")
    const t1 = performance.now()
    yield* expectStatus(
      yield* queue.runner.client.call("POST", `${path}/commit`, {
        claim_token: claimed.claim.claim_token,
        content: "3 matches"
      }),
      200,
      "commit"
    )
    record(t1 - t0, performance.now() - t1)
  })

/** The bare side: a table of dispatched rows in the served database, claimed by SKIP LOCKED. */
const bareRows = Effect.gen(function* () {
  const sql = yield* SqlClient
  yield* sql`CREATE TABLE bench_claims (
    id bigserial PRIMARY KEY,
    status text NOT NULL DEFAULT 'dispatched',
    tool_input jsonb NOT NULL,
    claimed_by text,
    claim_token text,
    claimed_at timestamptz,
    result text,
    completed_at timestamptz
  )`
  yield* sql`CREATE INDEX bench_claims_ready ON bench_claims (id) WHERE status = 'dispatched' AND claimed_by IS NULL`
  let inserted = 0
  let taken = 0
  let tokens = 0
  return {
    taken: () => taken,
    ensure: (count: number) =>
      inserted - taken >= count
        ? Effect.void
        : sql`INSERT INTO bench_claims (tool_input)
              SELECT jsonb_build_object('pattern', 'p' || g) FROM generate_series(1, ${count}) g`.pipe(
            Effect.andThen(
              Effect.sync(() => {
                inserted += count
              })
            ),
            Effect.orDie
          ),
    cycle: (worker: string, record: Recorder) =>
      Effect.gen(function* () {
        taken++
        const token = `${worker}-${++tokens}`
        const t0 = performance.now()
        const [row] = yield* sql<{ id: string }>`
          UPDATE bench_claims SET claimed_by = ${worker}, claim_token = ${token}, claimed_at = now()
          WHERE id = (SELECT id FROM bench_claims WHERE status = 'dispatched' AND claimed_by IS NULL
                      ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
          RETURNING id, tool_input, claimed_at`
        if (row === undefined) return yield* Effect.die(new Error(`${name}: no bare row left`))
        const t1 = performance.now()
        const done = yield* sql`
          UPDATE bench_claims SET status = 'completed', result = '3 matches', completed_at = now()
          WHERE id = ${row.id} AND claim_token = ${token} AND status = 'dispatched' RETURNING id`
        if (done.length !== 1) return yield* Effect.die(new Error(`${name}: bare row ${row.id} not completed`))
        record(t1 - t0, performance.now() - t1)
      }).pipe(Effect.orDie)
  }
})

export interface ClaimLevel {
  readonly workers: number
  readonly runners: number
  readonly http: Sample & PartFigures
  readonly bare: Sample & PartFigures
  /** HTTP cycles/s ÷ bare cycles/s. */
  readonly ratio: number
  readonly goal: number
  /** The server process's CPU time per HTTP cycle over the measured rounds. */
  readonly serverCpuMicrosPerCycle: number
  /** Fan runs made for the level and rows committed through the doors (warm-up included). */
  readonly runs: number
  readonly committed: number
}

/** Every taken row committed and completed in run_tasks; answers the count. */
const checkCommitted = (runs: ReadonlyArray<FanRun>, taken: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient
    const [row] = yield* sql<{ completed: number }>`
      SELECT count(*)::int AS completed FROM run_tasks t JOIN runs r ON r.id = t.run_id
      WHERE r.public_id = ANY(${runs.map((run) => run.runId)}::uuid[])
        AND t.kind = 'tool_task' AND t.status = 'completed'`
    if (row!.completed !== taken) {
      return yield* Effect.die(new Error(`${name}: ${taken} rows committed, ${row!.completed} completed in run_tasks`))
    }
    return taken
  }).pipe(Effect.orDie)

/** One side of a level: its cycle, its row supply, its rounds and its best rate so far (cycles/s). */
interface Side {
  readonly step: (worker: string) => Effect.Effect<void>
  readonly ensure: (rows: number) => Effect.Effect<void>
  readonly rounds: Array<Round>
  best: number
}

const runLevel = (timing: Timing, served: ServedTroupe, runners: ReadonlyArray<Runner>, workers: number) =>
  Effect.gen(function* () {
    const supply = supplyFor(served, runners, workers)
    const bare = yield* bareRows
    const ids = Array.from({ length: workers }, (_, index) => String(index))
    const scratch = newParts()
    const httpParts = newParts()
    const bareParts = newParts()
    let phase = { http: scratch, bare: scratch }
    const sides: ReadonlyArray<Side> = [
      {
        step: (worker) =>
          httpCycle(
            supply,
            worker,
            into(() => phase.http)
          ),
        ensure: supply.ensure,
        rounds: [],
        best: 200
      },
      {
        step: (worker) =>
          bare.cycle(
            worker,
            into(() => phase.bare)
          ),
        ensure: bare.ensure,
        rounds: [],
        best: 5000
      }
    ]
    const ready = (side: Side, millis: number) => side.ensure(Math.ceil((side.best * millis * margin) / 1000))
    for (const side of sides) {
      yield* ready(side, timing.warmupMillis)
      const round = yield* drive(ids, side.step, timing.warmupMillis)
      side.best = round.latencies.length / round.seconds
    }
    phase = { http: httpParts, bare: bareParts }
    let serverCpu = 0
    for (let round = 0; round < timing.measureMillis / timing.roundMillis; round++) {
      for (const [index, side] of sides.entries()) {
        yield* ready(side, timing.roundMillis)
        const before = index === 0 ? yield* cpuMicros(served.pid) : 0
        const measured = yield* drive(ids, side.step, timing.roundMillis)
        if (index === 0) serverCpu += (yield* cpuMicros(served.pid)) - before
        side.rounds.push(measured)
        side.best = Math.max(side.best, measured.latencies.length / measured.seconds)
      }
    }
    const [http, baseline] = sides.map((side) => summarize(side.rounds))
    const committed = yield* checkCommitted(supply.runs(), supply.taken())
    yield* Effect.forEach(supply.unfinished(), (runId) => stopRun(served, runId), { concurrency: creators })
    return {
      workers,
      runners: Math.ceil(workers / slots),
      http: { ...http!, ...partFigures(httpParts) },
      bare: { ...baseline!, ...partFigures(bareParts) },
      ratio: http!.perSecond / baseline!.perSecond,
      goal,
      serverCpuMicrosPerCycle: serverCpu / http!.steps,
      runs: supply.runs().length,
      committed
    } satisfies ClaimLevel
  }).pipe(Effect.ensuring(Effect.flatMap(SqlClient, (sql) => Effect.ignore(sql`DROP TABLE IF EXISTS bench_claims`))))

export interface ClaimMinute {
  readonly minute: number
  readonly cycles: number
  readonly perSecond: number
  readonly claimP50Ms: number
  readonly commitP50Ms: number
  /** GET …/inbox?limit=50, probed once a second. */
  readonly listP50Ms: number
  /** Completed tool tasks in the database at the minute's end. */
  readonly settledRows: number
  readonly loadAverage: number
}

export interface ClaimLong {
  readonly workers: number
  readonly minutes: ReadonlyArray<ClaimMinute>
  /** The last minute's cycles/s ÷ the first's. */
  readonly ratio: number
  readonly goal: number
}

/** The long mode: the HTTP cycle alone for `longMinutes`, binned by minute. */
const runLong = (served: ServedTroupe, runners: ReadonlyArray<Runner>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient
    const supply = supplyFor(served, runners, longWorkers)
    const queues = Math.ceil(longWorkers / slots)
    const bins = Array.from({ length: longMinutes }, () => ({ ...newParts(), lists: [] as Array<number> }))
    const settled: Array<number> = []
    const loads: Array<number> = []
    const warmupEnd = performance.now() + longWarmupMillis
    const end = warmupEnd + longMinutes * 60_000
    const binOf = (at: number) =>
      at < warmupEnd || at >= end ? undefined : bins[Math.floor((at - warmupEnd) / 60_000)]
    let done = false
    let rate = 200
    /** Three seconds' worth of rows, and a fan for every worker at least. */
    const backlog = () => Math.max(rate * 3, fanWidth * longWorkers)
    const producer = Effect.whileLoop({
      while: () => !done,
      body: () => (supply.available() * queues < backlog() ? supply.ensure(backlog()) : Effect.sleep("50 millis")),
      step: () => {}
    })
    const probe = Effect.whileLoop({
      while: () => !done,
      body: () =>
        Effect.gen(function* () {
          const t0 = performance.now()
          yield* expectStatus(yield* runners[0]!.client.call("GET", "/inbox?limit=50"), 200, "GET inbox")
          binOf(t0)?.lists.push(performance.now() - t0)
          yield* Effect.sleep("1 second")
        }),
      step: () => {}
    })
    const minuteMarks = Effect.forEach(
      bins,
      (_, minute) =>
        Effect.gen(function* () {
          yield* Effect.sleep(Math.max(0, warmupEnd + (minute + 1) * 60_000 - performance.now()))
          const [row] = yield* sql<{ settled: number }>`
            SELECT count(*)::int AS settled FROM run_tasks WHERE kind = 'tool_task' AND status = 'completed'`
          settled.push(row!.settled)
          loads.push(loadavg()[0]!)
          rate = bins[minute]!.claims.length / 60
          yield* Console.log(`  minute ${minute + 1}: ${rate.toFixed(0)} cycles/s, ${row!.settled} settled rows`)
        }),
      { discard: true }
    ).pipe(Effect.orDie)
    yield* supply.ensure(fanWidth * longWorkers * 4)
    yield* Effect.forkScoped(producer)
    yield* Effect.forkScoped(probe)
    const marks = yield* Effect.forkScoped(minuteMarks)
    yield* Effect.forEach(
      Array.from({ length: longWorkers }, (_, index) => String(index)),
      (worker) =>
        Effect.whileLoop({
          while: () => performance.now() < end,
          body: () =>
            httpCycle(
              supply,
              worker,
              into(() => binOf(performance.now()))
            ),
          step: () => {}
        }),
      { concurrency: "unbounded", discard: true }
    )
    done = true
    yield* Fiber.join(marks)
    yield* checkCommitted(supply.runs(), supply.taken())
    yield* Effect.forEach(supply.unfinished(), (runId) => stopRun(served, runId), { concurrency: creators })
    const minutes = bins.map(
      (bin, minute): ClaimMinute => ({
        minute: minute + 1,
        cycles: bin.claims.length,
        perSecond: bin.claims.length / 60,
        claimP50Ms: percentile(bin.claims, 50),
        commitP50Ms: percentile(bin.commits, 50),
        listP50Ms: percentile(bin.lists, 50),
        settledRows: settled[minute] ?? Number.NaN,
        loadAverage: loads[minute] ?? Number.NaN
      })
    )
    return {
      workers: longWorkers,
      minutes,
      ratio: minutes.at(-1)!.perSecond / minutes[0]!.perSecond,
      goal: longGoal
    } satisfies ClaimLong
  }).pipe(Effect.orDie, Effect.scoped)

export interface ClaimReport {
  readonly levels: ReadonlyArray<ClaimLevel>
  readonly long: ClaimLong | undefined
}

/** The levels (or, with BENCH_CLAIMS_MINUTES, the long mode); undefined when PostgreSQL is absent. */
export const runClaimsScenario = (timing: Timing) =>
  Effect.gen(function* () {
    const served = yield* servedTroupe(name)
    if (served === undefined) {
      yield* Console.log("Run claims: skipped (it runs `troupe serve` on PostgreSQL, which did not answer)")
      return undefined
    }
    const runners = yield* connectRunners(
      served,
      name,
      Math.ceil((longMinutes > 0 ? longWorkers : Math.max(...levels)) / slots)
    )
    const pool = PgClient.layer({ url: Redacted.make(served.databaseUrl), maxConnections: Math.max(...levels) })
    if (longMinutes > 0) {
      yield* Console.log(longHeader)
      return { levels: [], long: yield* runLong(served, runners).pipe(Effect.provide(pool)) } satisfies ClaimReport
    }
    yield* Console.log(claimsHeader)
    const measured = yield* Effect.forEach(levels, (workers) => runLevel(timing, served, runners, workers)).pipe(
      Effect.provide(pool)
    )
    return { levels: measured, long: undefined } satisfies ClaimReport
  }).pipe(Effect.scoped)

const claimsHeader =
  `Run claims: POST …/executor/inbox/{run}/{key}/claim then …/commit through troupe serve, rows of ${fanWidth}-member ` +
  "tool fans in inbox order, four workers to a runner; beside a bare SKIP LOCKED claim + completing UPDATE on a table in the " +
  "same database through a plain pool, same workers, alternating in the same rounds; ratio = HTTP ÷ bare cycles/s"

const longHeader =
  `Run claims, long: the HTTP cycle at ${longWorkers} workers for ${longMinutes} minutes after a ` +
  `${longWarmupMillis / 1000} s warm-up; ratio = last minute's cycles/s ÷ the first's (goal ≥ ${longGoal})`

const fixed = (value: number, digits: number) => value.toFixed(digits)

export const claimsTable = (report: ClaimReport) =>
  report.long === undefined
    ? formatTable(
        [
          "workers (runners)",
          "HTTP cycles/s",
          "bare cycles/s",
          "ratio",
          "goal",
          "p50/p99 ms HTTP | bare",
          "claim p50/p99 ms",
          "commit p50/p99 ms",
          "bare claim | complete p50",
          "server CPU µs/cycle"
        ],
        report.levels.map((level) => [
          `${level.workers} (${level.runners})`,
          fixed(level.http.perSecond, 0),
          fixed(level.bare.perSecond, 0),
          fixed(level.ratio, 3),
          `≥ ${level.goal}`,
          `${fixed(level.http.p50Ms, 2)}/${fixed(level.http.p99Ms, 1)} | ${fixed(level.bare.p50Ms, 2)}/${fixed(level.bare.p99Ms, 1)}`,
          `${fixed(level.http.claimP50Ms, 2)}/${fixed(level.http.claimP99Ms, 1)}`,
          `${fixed(level.http.commitP50Ms, 2)}/${fixed(level.http.commitP99Ms, 1)}`,
          `${fixed(level.bare.claimP50Ms, 2)} | ${fixed(level.bare.commitP50Ms, 2)}`,
          fixed(level.serverCpuMicrosPerCycle, 0)
        ])
      )
    : [
        formatTable(
          ["minute", "cycles/s", "claim p50 ms", "commit p50 ms", "inbox page p50 ms", "settled rows", "load"],
          report.long.minutes.map((minute) => [
            String(minute.minute),
            fixed(minute.perSecond, 1),
            fixed(minute.claimP50Ms, 2),
            fixed(minute.commitP50Ms, 2),
            fixed(minute.listP50Ms, 2),
            String(minute.settledRows),
            fixed(minute.loadAverage, 2)
          ])
        ),
        `last ÷ first minute: ${fixed(report.long.ratio, 3)} (goal ≥ ${report.long.goal})`
      ].join("\n")
