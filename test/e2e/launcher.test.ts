// End to end: the `troupe` launcher started by an older Node (the machine's, not the pinned 24)
// re-runs itself on Node 24 as a child, and that child dies with it: on SIGKILL (the launcher
// cannot forward anything; the child sees its IPC channel close), SIGTERM and SIGINT. The
// child exits and the port closes.
import { execFileSync, spawn } from "node:child_process"
import { accessSync, constants } from "node:fs"
import { delimiter, join, resolve } from "node:path"
import { Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort, within } from "../support/commands.ts"
import { freshDatabase, type TestDatabase } from "../support/database.ts"
import { accepting, eventually, isAlive } from "../support/processes.ts"

const root = resolve(import.meta.dirname, "../..")
const launcher = resolve(root, "packages/cli/bin/troupe.js")

/** The first `node` on PATH older than 24 (the system's), if the machine has one. */
const olderNode = (() => {
  for (const directory of (process.env.PATH ?? "").split(delimiter)) {
    const candidate = join(directory, "node")
    try {
      accessSync(candidate, constants.X_OK)
      const major = Number(execFileSync(candidate, ["-p", "process.versions.node"]).toString().split(".")[0])
      if (major < 24) return candidate
    } catch {
      // Not there, or not a Node.
    }
  }
  return undefined
})()

let database: TestDatabase
/** Every process a test started, killed at the end should one outlive its test. */
const started = new Set<number>()
beforeAll(async () => {
  database = await freshDatabase()
})
afterAll(async () => {
  for (const pid of started) if (isAlive(pid)) process.kill(pid, "SIGKILL")
  await database?.drop()
})

const databaseEnv = () =>
  database.config._tag === "postgres"
    ? { DATABASE_URL: Redacted.value(database.config.url) }
    : { TROUPE_DATA_DIR: resolve(database.config.dataDir, "..") }

/** `<older node> troupe.js serve`; resolves with both pids once the Node 24 child listens. */
const startLauncher = async () => {
  const port = await freePort()
  const env: NodeJS.ProcessEnv = { ...process.env }
  for (const name of ["DATABASE_URL", "TROUPE_DATA_DIR", "SERVICE_SETUP_SECRET", "PUBLIC_BASE_URL"]) delete env[name]
  Object.assign(env, databaseEnv(), { PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "Info" })
  const parent = spawn(olderNode!, [launcher, "serve"], { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] })
  let output = ""
  const childPid = new Promise<number>((done, fail) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      const listening = /Troupe listening on http:\/\/127\.0\.0\.1:\d+ \(pid (\d+)\)/.exec(output)
      if (listening) done(Number(listening[1]))
    }
    parent.stdout.on("data", onData)
    parent.stderr.on("data", onData)
    parent.once("exit", (code, signal) => fail(new Error(`the launcher exited (${code ?? signal}):\n${output}`)))
  })
  started.add(parent.pid!)
  const child = await within(60_000, () => `the launcher to serve on port ${port}\n${output}`, childPid)
  started.add(child)
  return { parent, child, port }
}

describe.skipIf(olderNode === undefined)("the troupe launcher on an older Node", { timeout: 60_000 }, () => {
  it.each(["SIGKILL", "SIGTERM", "SIGINT"] as const)("%s to the launcher ends its Node 24 child", async (signal) => {
    const { parent, child, port } = await startLauncher()
    expect(child).not.toBe(parent.pid)
    expect(await accepting(port)).toBe(true)
    parent.kill(signal)
    await eventually(
      `the Node 24 child ${child} to exit after ${signal} to the launcher`,
      15_000,
      () => !isAlive(child)
    )
    expect(await accepting(port)).toBe(false)
  })
})
