// `troupe serve` as a process of its own (on the Node running the tests), for tests that kill
// it: started on a free port over a given database, listening once it logs so.
import { type ChildProcess, spawn } from "node:child_process"
import { dirname, resolve } from "node:path"
import type { DatabaseConfig } from "@troupe/storage/Database"
import { Redacted } from "effect"
import { freePort } from "./server.ts"

const root = resolve(import.meta.dirname, "../..")
const troupe = resolve(root, "packages/cli/bin/troupe.js")

/** Rejects after `ms` unless `promise` settles first. */
export const within = <A>(ms: number, what: () => string, promise: Promise<A>) => {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([
    promise,
    new Promise<never>((_, fail) => {
      timer = setTimeout(() => fail(new Error(`${what()}: nothing after ${ms} ms`)), ms)
    })
  ]).finally(() => clearTimeout(timer))
}

export interface ServerProcess {
  readonly child: ChildProcess
  readonly baseUrl: string
  readonly output: () => string
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  /** SIGKILL: no finalizer runs. Resolves once the process is gone. */
  readonly kill9: () => Promise<void>
  /** SIGTERM, and resolves once the process is gone. */
  readonly stop: () => Promise<void>
}

/** The environment that points `troupe serve` at `database` (embedded: its data directory's parent). */
const databaseEnv = (database: DatabaseConfig): Record<string, string> =>
  database._tag === "postgres"
    ? { DATABASE_URL: Redacted.value(database.url) }
    : { TROUPE_DATA_DIR: dirname(database.dataDir) }

export const startServerProcess = async (database: DatabaseConfig): Promise<ServerProcess> => {
  const port = await freePort()
  const env: NodeJS.ProcessEnv = { ...process.env }
  for (const name of ["DATABASE_URL", "TROUPE_DATA_DIR", "SERVICE_SETUP_SECRET", "PUBLIC_BASE_URL"]) delete env[name]
  Object.assign(env, databaseEnv(database), { PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "Info" })
  const child = spawn(process.execPath, [troupe, "serve"], { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] })
  let output = ""
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
    child.once("exit", (code, signal) => done({ code, signal }))
  )
  const listening = new Promise<void>((done, fail) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      if (/Troupe listening on http:\/\/127\.0\.0\.1:\d+/.test(output)) done()
    }
    child.stdout!.on("data", onData)
    child.stderr!.on("data", onData)
    child.once("error", fail)
    void exited.then(({ code, signal }) => fail(new Error(`troupe serve exited (${code ?? signal}):\n${output}`)))
  })
  const signal = (name: NodeJS.Signals) => () => {
    child.kill(name)
    return within(15_000, () => `troupe serve to exit on ${name}`, exited).then(() => undefined)
  }
  const server: ServerProcess = {
    child,
    baseUrl: `http://127.0.0.1:${port}`,
    output: () => output,
    exited,
    kill9: signal("SIGKILL"),
    stop: signal("SIGTERM")
  }
  await within(90_000, () => `troupe serve on port ${port}\n${output}`, listening).catch(async (error) => {
    await server.kill9()
    throw error
  })
  return server
}
