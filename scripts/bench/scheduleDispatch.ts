// The schedule dispatch scenario: 10,000 interval schedules (every hour) of one conversation, all
// due at the same instant T, through `troupe serve` on PostgreSQL (conversationServer.ts). They are
// created through the member door (64 clients at once) with starts_at = T, T far enough ahead that
// every create is answered before it; then nothing is sent, and the server's timer runner dispatches
// each occurrence: the schedule's step opens a child conversation (row and actor), tells it its
// first input, and writes the execution row. The children's answerer (the owner) has no model, so
// each first input blocks unknown_model: the figure is the dispatch, not the replies.
// Reading: the spread (last execution's created_at − first's), the lateness of each dispatch
// (created_at − T: p50, p99, max), dispatches/s over the spread, and ratio = max lateness ÷ 60 s
// (goal ≤ 1: every schedule due in the minute is dispatched within it); executions and landed
// first inputs are checked one per schedule; server CPU µs per dispatch (from /proc).
import { performance } from "node:perf_hooks"
import { PgClient } from "@effect/sql-pg"
import { Console, Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { expectStatus, newConversation, servedTroupe } from "./conversationServer.ts"
import { cpuMicros } from "./http.ts"
import { formatTable } from "./measure.ts"

const scheduleCount = Number(process.env.BENCH_SCHEDULES ?? 10_000)
const clients = 64
const goalSeconds = 60
/** How long after the creates began T is set (every create must be answered before it). */
const leadMillis = Number(process.env.BENCH_SCHEDULE_LEAD_SECONDS ?? 150) * 1000
const settleTimeoutMillis = 180_000

export interface ScheduleDispatchReport {
  readonly schedules: number
  readonly createSeconds: number
  readonly spreadSeconds: number
  readonly latenessMs: { readonly p50: number; readonly p99: number; readonly max: number }
  readonly dispatchesPerSecond: number
  readonly ratio: number
  readonly goal: number
  readonly serverCpuMicrosPerDispatch: number
}

const percentile = (sorted: ReadonlyArray<number>, share: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(share * sorted.length))]!

export const scheduleDispatchScenario = Effect.gen(function* () {
  const served = yield* servedTroupe("schedule-dispatch")
  if (served === undefined) {
    yield* Console.log("Schedule dispatch: skipped (it runs `troupe serve` on PostgreSQL, which did not answer)")
    return undefined
  }
  yield* Console.log(dispatchHeader)
  const conversation = yield* newConversation(served)
  const began = Date.now()
  const dueAt = new Date(Math.ceil((began + leadMillis) / 1000) * 1000)
  const path = `${served.conversations}/${conversation}/schedules`
  let next = 0
  const createOne = (index: number) =>
    Effect.flatMap(
      served.call("POST", path, {
        schedule: {
          name: `bench ${index}`,
          prompt: "Tick",
          rule: { kind: "interval", every_seconds: 3600, starts_at: dueAt.toISOString() }
        }
      }),
      (answer) => Effect.asVoid(expectStatus(answer, 201, "POST schedules"))
    )
  const worker = Effect.whileLoop({
    while: () => next < scheduleCount,
    body: () => createOne(next++),
    step: () => {}
  })
  const createStart = performance.now()
  yield* Effect.all(
    Array.from({ length: clients }, () => worker),
    { concurrency: "unbounded", discard: true }
  )
  const createSeconds = (performance.now() - createStart) / 1000
  if (Date.now() >= dueAt.getTime()) {
    return yield* Effect.die(
      new Error(`creating ${scheduleCount} schedules outlasted the lead; raise BENCH_SCHEDULE_LEAD_SECONDS`)
    )
  }
  const cpuBefore = yield* cpuMicros(served.pid)
  const counts = Effect.gen(function* () {
    const sql = yield* SqlClient
    const [row] = yield* sql<{ executions: number; inputs: number }>`
      SELECT (SELECT count(*)::int FROM schedule_executions) AS executions,
             (SELECT count(*)::int FROM conversation_inputs WHERE origin = 'child') AS inputs`
    return row!
  })
  const settled = yield* Effect.gen(function* () {
    const deadline = dueAt.getTime() + settleTimeoutMillis
    for (;;) {
      const row = yield* counts
      if (row.executions >= scheduleCount && row.inputs >= scheduleCount) return row
      if (Date.now() > deadline) return yield* Effect.die(new Error(`not dispatched in time: ${JSON.stringify(row)}`))
      yield* Effect.sleep(Date.now() < dueAt.getTime() ? "1 second" : "250 millis")
    }
  }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(served.databaseUrl), maxConnections: 2 })), Effect.orDie)
  const serverCpu = (yield* cpuMicros(served.pid)) - cpuBefore
  const lateness = yield* Effect.gen(function* () {
    const sql = yield* SqlClient
    const rows = yield* sql<{ lateness_ms: number; per_schedule: number }>`
      SELECT (extract(epoch FROM (e.created_at - e.scheduled_for)) * 1000)::float8 AS lateness_ms,
             count(*) OVER (PARTITION BY e.schedule_id)::int AS per_schedule
      FROM schedule_executions e`
    if (rows.some((row) => row.per_schedule !== 1)) return yield* Effect.die(new Error("a schedule dispatched twice"))
    return rows.map((row) => row.lateness_ms).toSorted((a, b) => a - b)
  }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(served.databaseUrl), maxConnections: 2 })), Effect.orDie)
  const spreadSeconds = (lateness.at(-1)! - lateness[0]!) / 1000
  const max = lateness.at(-1)!
  return {
    schedules: settled.executions,
    createSeconds,
    spreadSeconds,
    latenessMs: { p50: percentile(lateness, 0.5), p99: percentile(lateness, 0.99), max },
    dispatchesPerSecond: settled.executions / Math.max(spreadSeconds, 0.001),
    ratio: max / 1000 / goalSeconds,
    goal: 1,
    serverCpuMicrosPerDispatch: serverCpu / settled.executions
  } satisfies ScheduleDispatchReport
}).pipe(Effect.scoped)

const dispatchHeader =
  `Schedule dispatch: ${scheduleCount} interval schedules of one conversation due at one instant T, created through ` +
  "troupe serve beforehand; the timer runner dispatches each (child conversation, first input, execution row); " +
  "lateness = execution created_at − T; ratio = max lateness ÷ 60 s (goal ≤ 1: all dispatched within the minute)"

const fixed = (value: number, digits: number) => value.toFixed(digits)

export const scheduleDispatchTable = (report: ScheduleDispatchReport) =>
  formatTable(
    [
      "schedules",
      "create s",
      "spread s",
      "lateness p50/p99/max ms",
      "dispatches/s",
      "ratio",
      "goal",
      "server CPU µs/dispatch"
    ],
    [
      [
        String(report.schedules),
        fixed(report.createSeconds, 1),
        fixed(report.spreadSeconds, 2),
        `${fixed(report.latenessMs.p50, 0)}/${fixed(report.latenessMs.p99, 0)}/${fixed(report.latenessMs.max, 0)}`,
        fixed(report.dispatchesPerSecond, 0),
        fixed(report.ratio, 2),
        `≤ ${report.goal}`,
        fixed(report.serverCpuMicrosPerDispatch, 0)
      ]
    ]
  )
