// Troupe as a child process of a test: a server (`npm start`, or `troupe serve` on this Node or an
// older one) in a process group of its own on a free port, started once it logs that it listens;
// and a `troupe` command run to its end. Each starts without Troupe's variables from this process.
import { type ChildProcess, spawn } from "node:child_process"
import { dirname, resolve } from "node:path"
import type { DatabaseConfig } from "@troupe/storage/Database"
import { Redacted } from "effect"
import { type CommandResult, freePort, runToEnd, within } from "./processes.ts"

const repositoryRoot = resolve(import.meta.dirname, "../..")
const bin = resolve(repositoryRoot, "node_modules/.bin")
const launcher = resolve(repositoryRoot, "packages/cli/bin/troupe.js")

/** This process's environment without the variables of the README's Configuration table, plus `extra`. */
const troupeEnv = (extra: Record<string, string>): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = { ...process.env }
  for (const name of Object.keys(env)) {
    if (/^(PORT|HOST|PUBLIC_BASE_URL|DATABASE_|TROUPE_|SERVICE_|LOG_LEVEL|OTEL_)/.test(name)) delete env[name]
  }
  return Object.assign(env, extra)
}

/** The environment that points Troupe at `database` (embedded: its data directory's parent, as `<dir>/pg`). */
export const databaseEnv = (database: DatabaseConfig): Record<string, string> =>
  database._tag === "postgres"
    ? { DATABASE_URL: Redacted.value(database.url) }
    : { TROUPE_DATA_DIR: dirname(database.dataDir) }

/** Runs node_modules/.bin/troupe (on the pinned Node 24) with `env` and no other Troupe variable. */
export const troupe = (args: ReadonlyArray<string>, env: Record<string, string> = {}): Promise<CommandResult> =>
  runToEnd(resolve(bin, "troupe"), args, {
    cwd: repositoryRoot,
    env: { ...troupeEnv(env), PATH: `${bin}:${process.env.PATH ?? ""}` }
  })

export interface ServerChild {
  /** The process spawned: npm, or the Node running troupe.js. */
  readonly child: ChildProcess
  readonly port: number
  readonly baseUrl: string
  /** The pid the server logged as its own (below npm or a launcher, or the child itself). */
  readonly serverPid: number
  /** Everything the process tree wrote to stdout and stderr so far. */
  readonly output: () => string
  /** The spawned process's own exit. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  /** Every process holding the output pipes (npm, its shell, the server) has exited. */
  readonly closed: Promise<void>
  /** SIGTERM to the process group, SIGKILL if it lingers; resolves once every process is gone. */
  readonly stop: () => Promise<void>
  /** SIGKILL to the process group (no finalizer runs); resolves once every process is gone. */
  readonly kill9: () => Promise<void>
}

/** The servers this test file started that have not closed yet. */
const running = new Set<Pick<ServerChild, "kill9">>()

/** SIGKILL to every server this test file started that is still running. */
export const killAll = async () => {
  for (const server of running) await server.kill9()
}

const startServer = async (
  what: string,
  command: string,
  args: ReadonlyArray<string>,
  env: Record<string, string>,
  port: number
): Promise<ServerChild> => {
  const child = spawn(command, args, {
    cwd: repositoryRoot,
    env: troupeEnv({ LOG_LEVEL: "Info", ...env, PORT: String(port) }),
    detached: true,
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
    child.once("exit", (code, signal) => done({ code, signal }))
  )
  const closed = new Promise<void>((done) => child.once("close", () => done()))
  const serverPid = new Promise<number>((done, fail) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      const listening = /Troupe listening on http:\/\/127\.0\.0\.1:\d+ \(pid (\d+)\)/.exec(output)
      if (listening) done(Number(listening[1]))
    }
    child.stdout!.on("data", onData)
    child.stderr!.on("data", onData)
    child.once("error", fail)
    void exited.then(({ code, signal }) =>
      fail(new Error(`${what} exited (code ${code}, signal ${signal}) before listening:\n${output}`))
    )
  })
  let gone = child.pid === undefined
  const group = {
    signal: (signal: NodeJS.Signals) => {
      if (gone) return
      try {
        process.kill(-child.pid!, signal)
      } catch {
        // The group is gone; its close is on the way.
      }
    },
    stop: async () => {
      group.signal("SIGTERM")
      try {
        await within(15_000, `${what} to stop`, closed)
      } catch {
        group.signal("SIGKILL")
        await within(5_000, `${what} to die`, closed)
      }
    },
    kill9: async () => {
      group.signal("SIGKILL")
      await within(15_000, `${what} to die on SIGKILL`, closed)
    }
  }
  running.add(group)
  void closed.then(() => {
    gone = true
    running.delete(group)
  })
  const pid = await within(90_000, () => `${what} on port ${port}\n${output}`, serverPid).catch(async (error) => {
    await group.kill9()
    throw error
  })
  return {
    child,
    port,
    baseUrl: `http://127.0.0.1:${port}`,
    serverPid: pid,
    output: () => output,
    exited,
    closed,
    stop: group.stop,
    kill9: group.kill9
  }
}

/** `npm start` (npm, its shell and the server) on the embedded database in `dataDir`. */
export const npmStart = async (dataDir: string, port?: number) =>
  startServer("npm start", "npm", ["start"], { TROUPE_DATA_DIR: dataDir }, port ?? (await freePort()))

/**
 * `<node> packages/cli/bin/troupe.js serve` over `database`: on this Node, or through the launcher on
 * another; `env` adds variables (it may not move the database, host or port).
 */
export const troupeServe = async (
  database: DatabaseConfig,
  node = process.execPath,
  env: Record<string, string> = {}
) =>
  startServer(
    "troupe serve",
    node,
    [launcher, "serve"],
    { ...env, ...databaseEnv(database), HOST: "127.0.0.1" },
    await freePort()
  )
