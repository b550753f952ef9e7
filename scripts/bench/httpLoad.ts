// The HTTP scenario's load generator: wrk (one thread, so the server keeps the other core) when
// it is on PATH, else scripts/bench/loadClient.ts in a child process. Either answers the same
// LoadResult for one round: requests answered, errors (not 200, or socket errors), seconds, and
// p50/p99 latency in ms.
import { execFile, spawnSync } from "node:child_process"
import { Effect } from "effect"
import type { LoadRequest, LoadResult } from "./loadClient.ts"

export type { LoadRequest, LoadResult }

const clientScript = new URL("./loadClient.ts", import.meta.url).pathname

const run = (command: string, args: ReadonlyArray<string>) =>
  Effect.callback<string, Error>((resume) => {
    const child = execFile(command, args, { maxBuffer: 1 << 20 }, (error, stdout, stderr) =>
      resume(error ? Effect.fail(new Error(`${command}: ${error.message} ${stderr}`)) : Effect.succeed(stdout))
    )
    return Effect.sync(() => child.kill())
  })

const millisOf = (value: string, unit: string) =>
  Number(value) * ({ us: 0.001, ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as Record<string, number>)[unit]!

/** Reads wrk's `--latency` report. */
export const parseWrk = (output: string): LoadResult => {
  const total = /(\d+) requests in ([\d.]+)(us|ms|s|m|h)/.exec(output)
  const latency = (p: number) => {
    const found = new RegExp(`^\\s+${p}%\\s+([\\d.]+)(us|ms|s|m|h)`, "m").exec(output)
    return found ? millisOf(found[1]!, found[2]!) : Number.NaN
  }
  if (!total) throw new Error(`wrk: no request count in ${output}`)
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(output)?.[1] ?? 0)
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(output)
  const socketErrors = socket ? socket.slice(1).reduce((sum, count) => sum + Number(count), 0) : 0
  return {
    requests: Number(total[1]),
    errors: non2xx + socketErrors,
    seconds: millisOf(total[2]!, total[3]!) / 1000,
    p50Ms: latency(50),
    p99Ms: latency(99)
  }
}

const wrk = (request: LoadRequest) =>
  run("wrk", [
    "-t1",
    `-c${request.connections}`,
    `-d${Math.max(1, Math.round(request.millis / 1000))}s`,
    "--latency",
    ...Object.entries(request.headers).flatMap(([name, value]) => ["-H", `${name}: ${value}`]),
    request.url
  ]).pipe(Effect.map(parseWrk))

const nodeClient = (request: LoadRequest) =>
  run(process.execPath, [clientScript, JSON.stringify(request)]).pipe(
    Effect.map((stdout) => JSON.parse(stdout) as LoadResult)
  )

export interface LoadGenerator {
  /** "wrk 4.2.0, 1 thread" or "node client (child process)", for the report. */
  readonly description: string
  readonly round: (request: LoadRequest) => Effect.Effect<LoadResult, Error>
}

/** wrk when installed, else the Node client. */
export const loadGenerator = (): LoadGenerator => {
  const probe = spawnSync("wrk", ["--version"], { encoding: "utf8" })
  const version = /wrk (\S+)/.exec(`${probe.stdout ?? ""}${probe.stderr ?? ""}`)?.[1]
  return probe.error === undefined && version !== undefined
    ? { description: `wrk ${version}, 1 thread`, round: wrk }
    : { description: "node load client (scripts/bench/loadClient.ts, child process)", round: nodeClient }
}
