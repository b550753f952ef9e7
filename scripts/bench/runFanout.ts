// The run fan-out scenario: a run of 100 tool tasks, end to end, served by the reference runner
// (`troupe runner`, packages/cli/src/runner/, one process and then four) against `troupe serve`
// (conversationServer.ts), each tool a `cat` of its JSON input. The compiler takes at most 64
// leaves an envelope and 32 members a fan, and an all-fan needs a follower, so the run is two
// envelopes, created and appended while pending: a fan of 32 members (31 of two steps in sequence,
// one of one) then a follower (64 tools), and a fan of 32 (3 of two steps, 29 of one) then a
// follower (36): six tools on the critical path. Clock: POST start → the run read `completed`
// (polled every 2 ms once the runners have printed 100 commits, every 250 ms before). Baseline,
// in the same run: the same 100 `cat` invocations with the same inputs spawned by node:child_process
// from a bare loop in the same graph shape (fan members at once, a member's steps in sequence, the
// follower after the fan): the runner answers every listed row at once (Runner.ts, a FiberMap
// without a bound), so the graph is its only bound. One warm-up of each side, then
// BENCH_FANOUT_REPEATS (3) repetitions alternating bare, one runner, four runners; medians.
// Reading: tasks/s, service share = 1 − bare ÷ Troupe wall time; per task, from the runners'
// lines (timestamped on arrival here) and run_tasks (dispatched at started_at): dispatch → claim
// answered, claim → commit answered (the command included; beside a bare `cat`'s spawn → close);
// the run actor's steps (actor_journal rows) and the gap between consecutive ones, since one
// actor takes every claim and commit of the run in turn; server and runner CPU per run.
import { spawn } from "node:child_process"
import { mkdtemp, rm, writeFile } from "node:fs/promises"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import { PgClient } from "@effect/sql-pg"
import { Console, Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { expectStatus, type ServedTroupe, servedTroupe } from "./conversationServer.ts"
import { cliScript, cpuMicros, stopChild } from "./http.ts"
import { formatTable } from "./measure.ts"
import { approveDevice, type OwnerPage, readOnlyProfile, signedInOwner } from "./runWorld.ts"

const name = "run-fanout"
const tool = "cat"
const command = ["cat"]
/** Leaves of each envelope (the compiler's bound is 64), the last one the fan's follower. */
const envelopeLeaves = [64, 36]
const fanWidth = 32
const runnerCounts = [1, 4]
const repeats = Number(process.env.BENCH_FANOUT_REPEATS ?? 3)
const settleTimeoutMillis = 120_000

/** One envelope of the plan: fan members (task numbers in sequence), then the follower. */
interface Envelope {
  readonly members: ReadonlyArray<ReadonlyArray<number>>
  readonly follower: number
}

const plan: ReadonlyArray<Envelope> = (() => {
  let next = 0
  return envelopeLeaves.map((leaves) => {
    const tools = leaves - 1
    const width = Math.min(fanWidth, tools)
    const members = Array.from({ length: width }, (_, j) =>
      Array.from({ length: Math.floor(tools / width) + (j < tools % width ? 1 : 0) }, () => next++)
    )
    return { members, follower: next++ }
  })
})()
const taskCount = envelopeLeaves.reduce((sum, leaves) => sum + leaves, 0)
const criticalPath = plan.reduce((sum, envelope) => sum + Math.max(...envelope.members.map((m) => m.length)) + 1, 0)
const inputOf = (task: number) => ({ task })
const keyOf = (task: number) => `t${task}`

/** A line a runner printed, stamped (epoch ms) when it reached this process. */
interface Line {
  readonly at: number
  readonly text: string
}

/** The runners' lines as they arrive, the commits counted per run, and waits on what they show. */
const lineLog = () => {
  const commits = new Map<string, number>()
  const watchers = new Set<() => void>()
  return {
    /** Adds a line to its runner's `lines`. */
    add: (lines: Array<Line>, text: string) => {
      lines.push({ at: Date.now(), text })
      const committed = /^committed ([0-9a-f-]{36})\//.exec(text)
      if (committed) commits.set(committed[1]!, (commits.get(committed[1]!) ?? 0) + 1)
      for (const watcher of watchers) watcher()
    },
    commits: (runId: string) => commits.get(runId) ?? 0,
    /** Resolves once `holds()` does (checked now and at every line), or after `millis` (answering false). */
    until: (holds: () => boolean, millis: number) =>
      new Promise<boolean>((done) => {
        if (holds()) return done(true)
        const watcher = () => {
          if (!holds()) return
          settle(true)
        }
        const timer = setTimeout(() => settle(false), millis)
        const settle = (held: boolean) => {
          clearTimeout(timer)
          watchers.delete(watcher)
          done(held)
        }
        watchers.add(watcher)
      })
  }
}

type LineLog = ReturnType<typeof lineLog>

/** The first of `lines` matching `pattern`, waiting up to 30 s for it. */
const lineMatching = async (log: LineLog, lines: ReadonlyArray<Line>, pattern: RegExp) => {
  const first = () => lines.map((line) => pattern.exec(line.text)).find((match) => match !== null)
  const match = (await log.until(() => first() !== undefined, 30_000)) ? first() : undefined
  if (match === undefined || match === null) {
    throw new Error(`the runner printed no line matching ${pattern}:\n${lines.map((l) => l.text).join("\n")}`)
  }
  return match
}

interface RunnerProcess {
  readonly publicId: string
  readonly pid: number
  readonly lines: ReadonlyArray<Line>
}

/** `troupe runner` serving `cat`, its device code approved by the owner; stopped (its group) with the scope. */
const startRunner = (served: ServedTroupe, log: LineLog, directory: string, owner: OwnerPage, index: number) =>
  Effect.gen(function* () {
    const config = join(directory, `runner-${index}.json`)
    yield* Effect.promise(() =>
      writeFile(
        config,
        JSON.stringify({
          display_name: `${name} runner ${index}`,
          tools: [
            {
              name: tool,
              command,
              timeout_ms: 60_000,
              effect_profile: readOnlyProfile,
              input_schema: { type: "object" }
            }
          ]
        })
      )
    )
    const lines: Array<Line> = []
    const args = ["runner", "--config", config, "--state", join(directory, `runner-${index}.state.json`)]
    const child = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const child = spawn(process.execPath, [cliScript, ...args, "--base-url", served.baseUrl], {
          detached: true,
          stdio: ["ignore", "pipe", "inherit"]
        })
        let pending = ""
        child.stdout!.on("data", (chunk: Buffer) => {
          const complete = (pending + chunk.toString()).split("\n")
          pending = complete.pop() ?? ""
          for (const text of complete) log.add(lines, text)
        })
        return child
      }),
      (child) =>
        stopChild(
          child,
          () => process.kill(-child.pid!, "SIGTERM"),
          () => process.kill(-child.pid!, "SIGKILL")
        )
    )
    const publicId = yield* Effect.promise(async () => {
      const [, userCode] = await lineMatching(log, lines, /enter the code (\S+)/)
      await approveDevice(owner, userCode!)
      const [, publicId] = await lineMatching(log, lines, /^serving .* \(([0-9a-f-]{36})\)$/)
      await lineMatching(log, lines, /^inbox: subscribed$/)
      return publicId!
    })
    return { publicId, pid: child.pid!, lines } satisfies RunnerProcess
  })

/** The plan's envelopes as steps; member j (and envelope i's follower) routed to runner j (i) mod count. */
const envelopeSteps = (runners: ReadonlyArray<RunnerProcess>) =>
  plan.map((envelope, i) => {
    const step = (task: number, runner: number) => ({
      tool: {
        key: keyOf(task),
        name: tool,
        input: inputOf(task),
        route: { kind: "runner", runner_executor_public_id: runners[runner % runners.length]!.publicId }
      }
    })
    return [
      {
        parallel: envelope.members.map((member, j) =>
          member.length === 1 ? step(member[0]!, j) : member.map((task) => step(task, j))
        )
      },
      step(envelope.follower, i)
    ]
  })

/** One `cat` with the task's input on stdin, until it closes; answers its time in ms. */
const bareCat = (task: number) =>
  new Promise<number>((done, fail) => {
    const started = performance.now()
    const child = spawn(command[0]!, command.slice(1), { stdio: ["pipe", "pipe", "pipe"] })
    const chunks: Array<Buffer> = []
    child.stdout.on("data", (chunk: Buffer) => chunks.push(chunk))
    child.stderr.resume()
    child.once("error", fail)
    child.once("close", (code) => {
      if (code !== 0 || Buffer.concat(chunks).toString() !== JSON.stringify(inputOf(task))) {
        fail(new Error(`cat of task ${task} exited ${code} with other bytes than its input`))
      } else done(performance.now() - started)
    })
    child.stdin.end(JSON.stringify(inputOf(task)))
  })

/** The plan run bare: fan members at once, each member's tasks in sequence, then the follower. */
const bareRun = Effect.promise(async () => {
  const cpu = process.cpuUsage()
  const started = performance.now()
  const commandMs: Array<number> = []
  for (const envelope of plan) {
    await Promise.all(
      envelope.members.map(async (member) => {
        for (const task of member) commandMs.push(await bareCat(task))
      })
    )
    commandMs.push(await bareCat(envelope.follower))
  }
  const seconds = (performance.now() - started) / 1000
  const used = process.cpuUsage(cpu)
  return { seconds, cpuMillis: (used.user + used.system) / 1000, commandMs }
})

interface TaskTimes {
  readonly dispatchToClaimMs: ReadonlyArray<number>
  readonly claimToCommitMs: ReadonlyArray<number>
  /** The run actor's steps (its journal rows) from start to completion, and the gaps between them. */
  readonly actorSteps: number
  readonly stepGapsMs: ReadonlyArray<number>
}

interface TroupeRun {
  readonly seconds: number
  /** runs.started_at → runs.completed_at, as the server stamped them. */
  readonly serverSeconds: number
  readonly serverCpuMillis: number
  readonly runnerCpuMillis: number
  readonly times: TaskTimes
}

/** Per task: run_tasks.started_at (dispatch) → the `claimed` line → the `committed` line. */
const taskTimes = (runId: string, runners: ReadonlyArray<RunnerProcess>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient
    const rows = yield* sql<{ key: string; status: string; dispatched: number }>`
      SELECT t.key, t.status, (extract(epoch FROM t.started_at) * 1000)::float8 AS dispatched
      FROM run_tasks t JOIN runs r ON r.id = t.run_id
      WHERE r.public_id = ${runId}::uuid AND t.kind = 'tool_task'`.pipe(Effect.orDie)
    const unfinished = rows.filter((row) => row.status !== "completed")
    if (rows.length !== taskCount || unfinished.length > 0) {
      return yield* Effect.die(
        new Error(`${name}: run ${runId} has ${rows.length} tool tasks, ${unfinished.length} not completed`)
      )
    }
    const lineAt = (verb: string) => {
      const at = new Map<string, number>()
      const pattern = new RegExp(`^${verb} ${runId}/(\\S+) `)
      for (const runner of runners)
        for (const line of runner.lines) {
          const match = pattern.exec(line.text)
          if (match) at.set(match[1]!, line.at)
        }
      return at
    }
    const claimed = lineAt("claimed")
    const committed = lineAt("committed")
    const steps = yield* sql<{ at: number }>`
      SELECT (extract(epoch FROM j.at) * 1000)::float8 AS at FROM actor_journal j
      WHERE j.kind = 'run' AND j.actor_id = ${runId}::uuid
        AND j.at >= (SELECT started_at FROM runs WHERE public_id = ${runId}::uuid)
      ORDER BY j.seq`.pipe(Effect.orDie)
    return {
      dispatchToClaimMs: rows.map((row) => claimed.get(row.key)! - row.dispatched),
      claimToCommitMs: rows.map((row) => committed.get(row.key)! - claimed.get(row.key)!),
      actorSteps: steps.length,
      stepGapsMs: steps.slice(1).map((step, i) => step.at - steps[i]!.at)
    } satisfies TaskTimes
  })

/** Creates the run (pending), appends the second envelope, starts it and waits until it completes. */
const troupeRun = (served: ServedTroupe, log: LineLog, runners: ReadonlyArray<RunnerProcess>) =>
  Effect.gen(function* () {
    const runs = `/workspaces/${served.workspaceId}/runs`
    const [first, ...rest] = envelopeSteps(runners)
    const created = yield* expectStatus(
      yield* served.call("POST", runs, {
        run: {
          approval_mode: "bypass",
          default_runner_executor_public_id: runners[0]!.publicId,
          steps: first
        }
      }),
      201,
      "POST runs"
    )
    const runId = created.run.public_id as string
    for (const steps of rest) {
      yield* expectStatus(yield* served.call("POST", `${runs}/${runId}/tasks`, { steps }), 201, "POST run tasks")
    }
    const committed = () => log.commits(runId) >= taskCount
    const cpu = Effect.all([cpuMicros(served.pid), Effect.forEach(runners, (runner) => cpuMicros(runner.pid))])
    const [serverBefore, runnersBefore] = yield* cpu
    const started = performance.now()
    yield* expectStatus(yield* served.call("POST", `${runs}/${runId}/start`, {}), 200, "start")
    let run: { status: string; started_at: string; completed_at: string | null }
    while (true) {
      if (!committed()) yield* Effect.promise(() => log.until(committed, 250))
      run = (yield* expectStatus(yield* served.call("GET", `${runs}/${runId}`), 200, "GET run")).run
      if (run.status !== "running" || performance.now() - started > settleTimeoutMillis) break
      if (committed()) yield* Effect.sleep("2 millis")
    }
    const seconds = (performance.now() - started) / 1000
    const [serverAfter, runnersAfter] = yield* cpu
    if (run.status !== "completed") {
      return yield* Effect.die(
        new Error(`${name}: run ${runId} ended ${run.status} after ${log.commits(runId)} commits`)
      )
    }
    return {
      seconds,
      serverSeconds: (Date.parse(run.completed_at!) - Date.parse(run.started_at)) / 1000,
      serverCpuMillis: (serverAfter - serverBefore) / 1000,
      runnerCpuMillis: runnersAfter.reduce((sum, after, i) => sum + after - runnersBefore[i]!, 0) / 1000,
      times: yield* taskTimes(runId, runners)
    } satisfies TroupeRun
  })

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

const percentile = (values: ReadonlyArray<number>, p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
}

export interface FanoutConfiguration {
  readonly runners: number
  /** Each repetition's wall time, POST start → the run read completed. */
  readonly seconds: ReadonlyArray<number>
  readonly medianSeconds: number
  readonly tasksPerSecond: number
  /** The bare loop's median seconds over the same repetitions. */
  readonly bareSeconds: number
  readonly bareTasksPerSecond: number
  /** 1 − bare ÷ Troupe (median wall times). */
  readonly serviceShare: number
  readonly serverSeconds: number
  /** Median wall time ÷ tools on the critical path. */
  readonly msPerCriticalStep: number
  /** Over every task of every measured repetition. */
  readonly dispatchToClaimP50Ms: number
  readonly dispatchToClaimP99Ms: number
  readonly claimToCommitP50Ms: number
  readonly claimToCommitP99Ms: number
  /** The run actor's steps per run (median), and the p50 gap between consecutive steps. */
  readonly actorSteps: number
  readonly actorStepGapP50Ms: number
  readonly serverCpuMillisPerRun: number
  readonly runnerCpuMillisPerRun: number
}

export interface FanoutRunReport {
  readonly tasks: number
  readonly envelopes: ReadonlyArray<{ readonly members: ReadonlyArray<number>; readonly follower: number }>
  readonly criticalPath: number
  readonly repeats: number
  /** The machine's 1-minute load average before the first run and after the last (other work shares its cores). */
  readonly loadAverage: { readonly before: number; readonly after: number }
  readonly bare: {
    readonly seconds: ReadonlyArray<number>
    readonly cpuMillisPerRun: number
    /** One `cat`, spawn → close, over every command of the measured repetitions. */
    readonly commandP50Ms: number
    readonly commandP99Ms: number
  }
  readonly configurations: ReadonlyArray<FanoutConfiguration>
}

/** The scenario; undefined when PostgreSQL is absent. */
export const runFanoutScenario = Effect.gen(function* () {
  const served = yield* servedTroupe(name)
  if (served === undefined) {
    yield* Console.log("Run fan-out: skipped (it runs `troupe serve` on PostgreSQL, which did not answer)")
    return undefined
  }
  yield* Console.log(fanoutHeader)
  const directory = yield* Effect.acquireRelease(
    Effect.promise(() => mkdtemp(join(tmpdir(), `troupe-${name}-bench-`))),
    (path) => Effect.promise(() => rm(path, { recursive: true, force: true }))
  )
  const owner = yield* Effect.promise(() => signedInOwner(served.baseUrl, name))
  const log = lineLog()
  const started = yield* Effect.forEach(Array.from({ length: Math.max(...runnerCounts) }), (_, index) =>
    startRunner(served, log, directory, owner, index)
  )
  const sides = runnerCounts.map((count) => ({ runners: started.slice(0, count), runs: [] as Array<TroupeRun> }))
  const bare: Array<Effect.Success<typeof bareRun>> = []
  const loadBefore = loadavg()[0]!
  yield* Effect.gen(function* () {
    yield* bareRun
    for (const side of sides) yield* troupeRun(served, log, side.runners)
    for (let repeat = 0; repeat < repeats; repeat++) {
      bare.push(yield* bareRun)
      for (const side of sides) side.runs.push(yield* troupeRun(served, log, side.runners))
    }
  }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(served.databaseUrl), maxConnections: 2 })))
  const bareSeconds = median(bare.map((run) => run.seconds))
  const configurations = sides.map((side): FanoutConfiguration => {
    const medianSeconds = median(side.runs.map((run) => run.seconds))
    const dispatchToClaim = side.runs.flatMap((run) => run.times.dispatchToClaimMs)
    const claimToCommit = side.runs.flatMap((run) => run.times.claimToCommitMs)
    return {
      runners: side.runners.length,
      seconds: side.runs.map((run) => run.seconds),
      medianSeconds,
      tasksPerSecond: taskCount / medianSeconds,
      bareSeconds,
      bareTasksPerSecond: taskCount / bareSeconds,
      serviceShare: 1 - bareSeconds / medianSeconds,
      serverSeconds: median(side.runs.map((run) => run.serverSeconds)),
      msPerCriticalStep: (medianSeconds * 1000) / criticalPath,
      dispatchToClaimP50Ms: percentile(dispatchToClaim, 50),
      dispatchToClaimP99Ms: percentile(dispatchToClaim, 99),
      claimToCommitP50Ms: percentile(claimToCommit, 50),
      claimToCommitP99Ms: percentile(claimToCommit, 99),
      actorSteps: median(side.runs.map((run) => run.times.actorSteps)),
      actorStepGapP50Ms: percentile(
        side.runs.flatMap((run) => run.times.stepGapsMs),
        50
      ),
      serverCpuMillisPerRun: median(side.runs.map((run) => run.serverCpuMillis)),
      runnerCpuMillisPerRun: median(side.runs.map((run) => run.runnerCpuMillis))
    }
  })
  return {
    tasks: taskCount,
    envelopes: plan.map((envelope) => ({
      members: envelope.members.map((member) => member.length),
      follower: envelope.follower
    })),
    criticalPath,
    repeats,
    loadAverage: { before: loadBefore, after: loadavg()[0]! },
    bare: {
      seconds: bare.map((run) => run.seconds),
      cpuMillisPerRun: median(bare.map((run) => run.cpuMillis)),
      commandP50Ms: percentile(
        bare.flatMap((run) => run.commandMs),
        50
      ),
      commandP99Ms: percentile(
        bare.flatMap((run) => run.commandMs),
        99
      )
    },
    configurations
  } satisfies FanoutRunReport
}).pipe(Effect.scoped)

const fanoutHeader =
  `Run fan-out: a run of ${taskCount} \`${tool}\` tool tasks (envelopes of ${envelopeLeaves.join(" and ")} leaves, ` +
  `fans of ${fanWidth}, ${criticalPath} on the critical path) through troupe serve and the reference runner, ` +
  "POST start → completed; beside the same commands spawned by a bare node loop in the same graph shape; " +
  `one warm-up each, then medians of ${repeats}; service share = 1 − bare ÷ Troupe`

const fixed = (value: number, digits: number) => value.toFixed(digits)

export const runFanoutTable = (report: FanoutRunReport) =>
  `${formatTable(
    [
      "runners",
      "Troupe s (runs)",
      "tasks/s",
      "bare s",
      "bare tasks/s",
      "service share",
      "ms / critical step",
      "dispatch→claim p50/p99 ms",
      "claim→commit p50/p99 ms",
      "bare cat p50/p99 ms",
      "run actor steps (gap p50 ms)",
      "CPU ms/run server | runners | bare"
    ],
    report.configurations.map((level) => [
      String(level.runners),
      `${fixed(level.medianSeconds, 3)} (${level.seconds.map((s) => fixed(s, 3)).join(", ")})`,
      fixed(level.tasksPerSecond, 1),
      fixed(level.bareSeconds, 3),
      fixed(level.bareTasksPerSecond, 0),
      fixed(level.serviceShare, 3),
      fixed(level.msPerCriticalStep, 1),
      `${fixed(level.dispatchToClaimP50Ms, 1)}/${fixed(level.dispatchToClaimP99Ms, 1)}`,
      `${fixed(level.claimToCommitP50Ms, 1)}/${fixed(level.claimToCommitP99Ms, 1)}`,
      `${fixed(report.bare.commandP50Ms, 1)}/${fixed(report.bare.commandP99Ms, 1)}`,
      `${level.actorSteps} (${fixed(level.actorStepGapP50Ms, 2)})`,
      `${fixed(level.serverCpuMillisPerRun, 0)} | ${fixed(level.runnerCpuMillisPerRun, 0)} | ${fixed(report.bare.cpuMillisPerRun, 0)}`
    ])
  )}\nload average ${fixed(report.loadAverage.before, 2)} before, ${fixed(report.loadAverage.after, 2)} after`
