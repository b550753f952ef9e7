// The HTTP scenario: Troupe as a new user runs it (`troupe serve` in its own process on a fresh
// PostgreSQL database, default pool and log level, its log going to a file) against a bare
// `node:http` twin in another process (scripts/bench/httpTwin.ts) answering the same bytes:
// the static `/.well-known/oauth-authorization-server`, and `GET /api/v1/profile` with an API
// session bearer (the twin does the same credential lookup through a pool of the same size).
// Before measuring, both answers of each route are compared (status, header names in order,
// header values but date and x-request-id, body bytes) and the run stops if they differ.
// Load: wrk at 50 connections (or the Node client), 2 s warm-up of each side (the JIT needs it), then 1 s rounds
// alternating twin and Troupe until each has BENCH_SECONDS measured; every answer must be 200.
// Reading: req/s over the measured rounds, ratio = Troupe / twin (goal: static ≥ 0.75, profile
// ≥ 0.6), p50/p99 the median of the rounds' percentiles, server CPU µs/req the server
// process's user + system time per answered request (from /proc; the share of a core it costs).
// Both processes run with --trace-gc-nvp; the young-generation columns sum each measured round's
// scavenges from the process's log: pause ms per second of load, and bytes promoted per request
// (a request's garbage should die young; docs/decisions.md, "No allocation-site pretenuring").
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtemp, open, readFile, rm, stat } from "node:fs/promises"
import { get } from "node:http"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Accounts } from "@troupe/domain/accounts/Accounts"
import { migratedDatabase } from "@troupe/server/Server"
import { repositoriesLayer } from "@troupe/storage/Repositories"
import { Console, Effect, Layer, Redacted, References } from "effect"
import { benchDatabase } from "./database.ts"
import { type LoadGenerator, type LoadResult, loadGenerator } from "./httpLoad.ts"
import type { Answer, TwinAnswers } from "./httpTwin.ts"
import { formatTable } from "./measure.ts"

export const connections = 50
const warmupMillis = 2000
const roundMillis = 1000
const poolSize = process.env.DATABASE_POOL_SIZE ?? "10"
const email = "http-bench@example.com"
const password = "http-bench-password"
export const cliScript = new URL("../../packages/cli/bin/troupe.js", import.meta.url).pathname
const twinScript = new URL("./httpTwin.ts", import.meta.url).pathname

interface Route {
  readonly name: "static" | "profile"
  readonly path: string
  readonly goal: number
}

const routes: ReadonlyArray<Route> = [
  { name: "static", path: "/.well-known/oauth-authorization-server", goal: 0.75 },
  { name: "profile", path: "/api/v1/profile", goal: 0.6 }
]

export interface HttpSide {
  readonly requests: number
  readonly seconds: number
  readonly perSecond: number
  readonly p50Ms: number
  readonly p99Ms: number
  /** The server process's CPU time (user + system) per answered request. */
  readonly serverCpuMicrosPerRequest: number
  /** Scavenge pause per second of measured load, in ms. */
  readonly scavengeMillisPerSecond: number
  /** Bytes the scavenges promoted to the old generation, per answered request. */
  readonly promotedBytesPerRequest: number
}

export interface HttpFigures {
  readonly route: string
  readonly troupe: HttpSide
  readonly twin: HttpSide
  /** troupe / twin requests per second. */
  readonly ratio: number
  readonly goal: number
}

export const freePort = () =>
  new Promise<number>((done, fail) => {
    const probe = createServer()
    probe.once("error", fail)
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address()
      probe.close(() => (typeof address === "object" && address ? done(address.port) : fail(new Error("no port"))))
    })
  })

/** One GET with Node's client, answering the headers in the order they came. */
const fetchRaw = (url: string, headers: Record<string, string> = {}) =>
  Effect.promise(
    () =>
      new Promise<Answer>((done, fail) => {
        get(url, { headers }, (response) => {
          const chunks: Array<Buffer> = []
          response.on("data", (chunk: Buffer) => chunks.push(chunk))
          response.on("end", () => {
            const raw = response.rawHeaders
            const pairs: Array<readonly [string, string]> = []
            for (let index = 0; index < raw.length; index += 2) {
              const name = raw[index]!.toLowerCase()
              if (!["date", "connection", "keep-alive"].includes(name)) pairs.push([name, raw[index + 1]!])
            }
            done({ status: response.statusCode!, headers: pairs, body: Buffer.concat(chunks).toString() })
          })
        }).once("error", fail)
      })
  )

/** A child process on Node 24 whose output goes to `log`; killed (and awaited) when the scope closes. */
export const startProcess = (script: ReadonlyArray<string>, env: Record<string, string>, log: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const file = await open(log, "a")
      const child = spawn(process.execPath, script, {
        env: { ...process.env, ...env },
        stdio: ["ignore", file.fd, file.fd]
      })
      await file.close()
      return child
    }),
    (child) =>
      stopChild(
        child,
        () => child.kill("SIGTERM"),
        () => child.kill("SIGKILL")
      )
  )

/** Stops a child process (`stop`, then `kill` after 10 s) and resolves once it exited. */
export const stopChild = (child: ChildProcess, stop: () => void, kill: () => void) =>
  Effect.promise(
    () =>
      new Promise<void>((done) => {
        if (child.exitCode !== null || child.signalCode !== null) return done()
        const timer = setTimeout(kill, 10_000)
        child.once("exit", () => {
          clearTimeout(timer)
          done()
        })
        stop()
      })
  )

/** Polls `url` until it answers 200; dies with the process log after 60 s. */
export const awaitAnswer = (url: string, log: string) =>
  Effect.promise(async () => {
    const deadline = Date.now() + 60_000
    while (Date.now() < deadline) {
      const status = await fetch(url).then(
        (response) => response.body?.cancel().then(() => response.status),
        () => 0
      )
      if (status === 200) return
      await new Promise((done) => setTimeout(done, 100))
    }
    throw new Error(`${url} did not answer 200 within 60 s; log:\n${(await readFile(log, "utf8")).slice(-4000)}`)
  })

/** User + system CPU time of a process in µs (Linux /proc, in USER_HZ = 100 ticks; NaN elsewhere). */
export const cpuMicros = (pid: number) =>
  Effect.promise(() =>
    readFile(`/proc/${pid}/stat`, "utf8").then(
      (stat) => {
        const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
        return ((Number(fields[11]) + Number(fields[12])) * 1_000_000) / 100
      },
      () => Number.NaN
    )
  )

const signIn = (baseUrl: string) =>
  Effect.promise(async () => {
    const response = await fetch(`${baseUrl}/api/v1/session`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email, password })
    })
    const body = (await response.json()) as { token?: string }
    if (!body.token) throw new Error(`sign-in answered ${response.status}: ${JSON.stringify(body)}`)
    return body.token
  })

/** Stops the run unless the twin answers what Troupe answers (request ids aside). */
const sameAnswer = (route: string, troupe: Answer, twin: Answer) => {
  const shown = (answer: Answer) =>
    JSON.stringify({
      status: answer.status,
      headers: answer.headers.map(([name, value]) => (name === "x-request-id" ? [name] : [name, value])),
      body: answer.body
    })
  return shown(troupe) === shown(twin) && troupe.status === 200
    ? Effect.void
    : Effect.die(new Error(`${route}: the twin's answer differs from Troupe's\n${shown(troupe)}\n${shown(twin)}`))
}

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor((sorted.length - 1) / 2)]!
}

/** What the scavenges of one round cost: summed from the `--trace-gc-nvp` lines a log gained. */
interface Scavenges {
  readonly pauseMillis: number
  readonly promotedBytes: number
}

const logSize = (log: string) => Effect.promise(() => stat(log).then((found) => found.size))

/** The scavenges a process logged after byte `from` of its log. */
const scavengesSince = (log: string, from: number) =>
  Effect.promise(async () => {
    const file = await open(log, "r")
    try {
      const { size } = await file.stat()
      const buffer = Buffer.alloc(size - from)
      await file.read(buffer, 0, buffer.length, from)
      let pauseMillis = 0
      let promotedBytes = 0
      for (const line of buffer.toString().split("\n")) {
        if (!line.includes(" gc=s ")) continue
        pauseMillis += Number(/ pause=([\d.]+)/.exec(line)?.[1] ?? 0)
        promotedBytes += Number(/ promoted=(\d+)/.exec(line)?.[1] ?? 0)
      }
      return { pauseMillis, promotedBytes } satisfies Scavenges
    } finally {
      await file.close()
    }
  })

interface Measured {
  readonly load: LoadResult
  readonly cpuMicros: number
  readonly scavenges: Scavenges
}

const summarize = (rounds: ReadonlyArray<Measured>): HttpSide => {
  const requests = rounds.reduce((sum, round) => sum + round.load.requests, 0)
  const seconds = rounds.reduce((sum, round) => sum + round.load.seconds, 0)
  return {
    requests,
    seconds,
    perSecond: requests / seconds,
    p50Ms: median(rounds.map((round) => round.load.p50Ms)),
    p99Ms: median(rounds.map((round) => round.load.p99Ms)),
    serverCpuMicrosPerRequest: rounds.reduce((sum, round) => sum + round.cpuMicros, 0) / requests,
    scavengeMillisPerSecond: rounds.reduce((sum, round) => sum + round.scavenges.pauseMillis, 0) / seconds,
    promotedBytesPerRequest: rounds.reduce((sum, round) => sum + round.scavenges.promotedBytes, 0) / requests
  }
}

interface Target {
  readonly baseUrl: string
  readonly pid: number
  readonly log: string
}

const measureRoute = (
  generator: LoadGenerator,
  route: Route,
  headers: Record<string, string>,
  troupe: Target,
  twin: Target,
  measureMillis: number
) =>
  Effect.gen(function* () {
    const round = (target: Target, millis: number) =>
      Effect.gen(function* () {
        const logged = yield* logSize(target.log)
        const before = yield* cpuMicros(target.pid)
        const load = yield* generator.round({ url: `${target.baseUrl}${route.path}`, headers, connections, millis })
        const used = (yield* cpuMicros(target.pid)) - before
        if (load.errors > 0) {
          return yield* Effect.die(new Error(`${route.path} at ${target.baseUrl}: ${load.errors} answers not 200`))
        }
        return { load, cpuMicros: used, scavenges: yield* scavengesSince(target.log, logged) } satisfies Measured
      })
    yield* round(twin, warmupMillis)
    yield* round(troupe, warmupMillis)
    const twinRounds: Array<Measured> = []
    const troupeRounds: Array<Measured> = []
    for (let index = 0; index < Math.max(1, Math.round(measureMillis / roundMillis)); index++) {
      twinRounds.push(yield* round(twin, roundMillis))
      troupeRounds.push(yield* round(troupe, roundMillis))
    }
    const summary = { troupe: summarize(troupeRounds), twin: summarize(twinRounds) }
    return {
      route: `GET ${route.path}`,
      ...summary,
      ratio: summary.troupe.perSecond / summary.twin.perSecond,
      goal: route.goal
    } satisfies HttpFigures
  })

export interface HttpReport {
  readonly loadGenerator: string
  readonly connections: number
  readonly poolSize: number
  readonly routes: ReadonlyArray<HttpFigures>
}

/** Runs the scenario on its own fresh database; undefined (with a note) when PostgreSQL is absent. */
export const httpScenario = (measureMillis: number) =>
  Effect.gen(function* () {
    const database = yield* benchDatabase
    if (database.config._tag !== "postgres") {
      yield* Console.log("HTTP: skipped (it runs `troupe serve` and its twin on PostgreSQL, which did not answer)")
      return undefined
    }
    const databaseUrl = Redacted.value(database.config.url)
    yield* Effect.gen(function* () {
      const accounts = yield* Accounts
      yield* accounts.createOwner({ email, password, displayName: "HTTP bench" })
    }).pipe(
      Effect.orDie,
      Effect.provide(
        Accounts.layer.pipe(
          Layer.provide(repositoriesLayer),
          Layer.provideMerge(migratedDatabase(database.config)),
          Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Warn"))
        )
      )
    )
    const dir = yield* Effect.acquireRelease(
      Effect.promise(() => mkdtemp(join(tmpdir(), "troupe-http-bench-"))),
      (path) => Effect.promise(() => rm(path, { recursive: true, force: true }))
    )
    const [troupePort, twinPort] = [yield* Effect.promise(freePort), yield* Effect.promise(freePort)]
    const troupeLog = join(dir, "troupe.log")
    const twinLog = join(dir, "twin.log")
    const troupeUrl = `http://127.0.0.1:${troupePort}`
    const twinUrl = `http://127.0.0.1:${twinPort}`
    const env = { DATABASE_URL: databaseUrl, DATABASE_POOL_SIZE: poolSize, HOST: "127.0.0.1" }

    const server = yield* startProcess(
      ["--trace-gc-nvp", cliScript, "serve"],
      { ...env, PORT: String(troupePort) },
      troupeLog
    )
    yield* awaitAnswer(`${troupeUrl}/ready`, troupeLog)
    const token = yield* signIn(troupeUrl)
    const headers = { authorization: `Bearer ${token}` }
    const answers: TwinAnswers = {
      static: yield* fetchRaw(`${troupeUrl}${routes[0]!.path}`),
      profile: yield* fetchRaw(`${troupeUrl}${routes[1]!.path}`, headers)
    }
    const twin = yield* startProcess(
      ["--trace-gc-nvp", twinScript],
      { ...env, PORT: String(twinPort), BENCH_TWIN_ANSWERS: JSON.stringify(answers) },
      twinLog
    )
    yield* awaitAnswer(`${twinUrl}${routes[0]!.path}`, twinLog)
    yield* sameAnswer(routes[0]!.path, answers.static, yield* fetchRaw(`${twinUrl}${routes[0]!.path}`))
    yield* sameAnswer(routes[1]!.path, answers.profile, yield* fetchRaw(`${twinUrl}${routes[1]!.path}`, headers))

    const generator = loadGenerator()
    yield* Console.log(
      `HTTP: troupe serve vs bare node:http twin, ${generator.description}, ${connections} connections, ` +
        `pool ${poolSize}; ${warmupMillis} ms warm-up + ${measureMillis} ms measured per side, alternating in ${roundMillis} ms rounds`
    )
    const figures = yield* Effect.forEach(routes, (route) =>
      measureRoute(
        generator,
        route,
        route.name === "profile" ? headers : {},
        { baseUrl: troupeUrl, pid: server.pid!, log: troupeLog },
        { baseUrl: twinUrl, pid: twin.pid!, log: twinLog },
        measureMillis
      )
    )
    return {
      loadGenerator: generator.description,
      connections,
      poolSize: Number(poolSize),
      routes: figures
    } satisfies HttpReport
  }).pipe(Effect.scoped)

const fixed = (value: number, digits: number) => value.toFixed(digits)

export const httpTable = (report: HttpReport) =>
  formatTable(
    [
      "route",
      "troupe req/s",
      "twin req/s",
      "ratio",
      "goal",
      "troupe p50/p99 ms",
      "twin p50/p99 ms",
      "server CPU µs/req troupe/twin",
      "scavenge ms/s troupe/twin",
      "promoted B/req troupe/twin"
    ],
    report.routes.map((figures) => [
      figures.route,
      fixed(figures.troupe.perSecond, 0),
      fixed(figures.twin.perSecond, 0),
      fixed(figures.ratio, 2),
      `≥ ${figures.goal}`,
      `${fixed(figures.troupe.p50Ms, 2)} / ${fixed(figures.troupe.p99Ms, 2)}`,
      `${fixed(figures.twin.p50Ms, 2)} / ${fixed(figures.twin.p99Ms, 2)}`,
      `${fixed(figures.troupe.serverCpuMicrosPerRequest, 0)} / ${fixed(figures.twin.serverCpuMicrosPerRequest, 0)}`,
      `${fixed(figures.troupe.scavengeMillisPerSecond, 1)} / ${fixed(figures.twin.scavengeMillisPerSecond, 1)}`,
      `${fixed(figures.troupe.promotedBytesPerRequest, 0)} / ${fixed(figures.twin.promotedBytesPerRequest, 0)}`
    ])
  )
