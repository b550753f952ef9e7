// The project's commands as a newcomer runs them: `npm start` (the whole process tree, npm, its
// shell and the server, in a process group of its own, on a free port and the embedded database
// in a given data directory) and `troupe` (node_modules/.bin/troupe, on the pinned Node 24).
import { type ChildProcess, spawn } from "node:child_process"
import { createServer } from "node:net"
import { resolve } from "node:path"

export const repositoryRoot = resolve(import.meta.dirname, "../..")

export const freePort = () =>
  new Promise<number>((done, fail) => {
    const probe = createServer()
    probe.once("error", fail)
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address()
      probe.close(() => (typeof address === "object" && address ? done(address.port) : fail(new Error("no port"))))
    })
  })

/** Rejects after `ms` unless `promise` settles first. */
export const within = <A>(ms: number, what: string | (() => string), promise: Promise<A>) => {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([
    promise,
    new Promise<never>((_, fail) => {
      timer = setTimeout(
        () => fail(new Error(`${typeof what === "string" ? what : what()}: nothing after ${ms} ms`)),
        ms
      )
    })
  ]).finally(() => clearTimeout(timer))
}

export interface Run {
  readonly child: ChildProcess
  readonly baseUrl: string
  /** Everything the process tree wrote to stdout and stderr so far. */
  readonly output: () => string
  /** npm's own exit. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  /** Every process holding the output pipes (npm, its shell, the server) has exited. */
  readonly closed: Promise<void>
}

/** Runs `npm start` on the embedded database in `dataDir`; resolves once the server logs that it listens. */
export const npmStart = async (dataDir: string): Promise<Run> => {
  const port = await freePort()
  const env: NodeJS.ProcessEnv = { ...process.env, TROUPE_DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: "Info" }
  delete env.DATABASE_URL
  delete env.SERVICE_SETUP_SECRET
  const child = spawn("npm", ["start"], { cwd: repositoryRoot, env, detached: true, stdio: ["ignore", "pipe", "pipe"] })
  let output = ""
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
    child.once("exit", (code, signal) => done({ code, signal }))
  )
  const closed = new Promise<void>((done) => child.once("close", () => done()))
  const listening = new Promise<void>((done, fail) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      if (/Troupe listening on http:\/\/127\.0\.0\.1:\d+/.test(output)) done()
    }
    child.stdout!.on("data", onData)
    child.stderr!.on("data", onData)
    child.once("error", fail)
    void exited.then(({ code, signal }) =>
      fail(new Error(`npm start exited (code ${code}, signal ${signal}) before listening:\n${output}`))
    )
  })
  const run: Run = { child, baseUrl: `http://127.0.0.1:${port}`, output: () => output, exited, closed }
  await within(90_000, () => `npm start on port ${port}\n${output}`, listening).catch(async (error) => {
    await stopTree(run)
    throw error
  })
  return run
}

/** Stops every process of a run's group (npm, shell, server) and waits until they are gone. */
export const stopTree = async (run: Run) => {
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-run.child.pid!, signal)
    } catch {
      // The group is already gone.
    }
  }
  signalGroup("SIGTERM")
  try {
    await within(15_000, "the process group to stop", run.closed)
  } catch {
    signalGroup("SIGKILL")
    await within(5_000, "the process group to die", run.closed)
  }
}

export interface CommandResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs `troupe args` with the given environment on top of this one, minus any database settings. */
export const troupe = (args: ReadonlyArray<string>, extraEnv: Record<string, string> = {}) =>
  new Promise<CommandResult>((done, fail) => {
    const bin = resolve(repositoryRoot, "node_modules/.bin")
    const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${bin}:${process.env.PATH ?? ""}` }
    for (const name of ["DATABASE_URL", "TROUPE_DATA_DIR", "TROUPE_PASSWORD", "SERVICE_SETUP_SECRET"]) delete env[name]
    Object.assign(env, extraEnv)
    const child = spawn(resolve(bin, "troupe"), args, { cwd: repositoryRoot, env, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
    child.once("error", fail)
    child.once("close", (code) => done({ code, stdout, stderr }))
  })
