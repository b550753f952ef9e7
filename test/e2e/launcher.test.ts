// End to end: the `troupe` launcher started by an older Node (the machine's, not the pinned 24)
// re-runs itself on Node 24 as a child, and that child dies with it: on SIGKILL (the launcher
// cannot forward anything; the child sees its IPC channel close), SIGTERM and SIGINT. The
// child exits and the port closes.
import { execFileSync } from "node:child_process"
import { accessSync, constants } from "node:fs"
import { delimiter, join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freshDatabase, type TestDatabase } from "../support/database.ts"
import { accepting, eventually, isAlive } from "../support/processes.ts"
import { killAll, troupeServe } from "../support/troupe-process.ts"

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
beforeAll(async () => {
  database = await freshDatabase()
})
afterAll(async () => {
  await killAll()
  await database?.drop()
})

describe.skipIf(olderNode === undefined)("the troupe launcher on an older Node", { timeout: 60_000 }, () => {
  it.each(["SIGKILL", "SIGTERM", "SIGINT"] as const)("%s to the launcher ends its Node 24 child", async (signal) => {
    const { child: parent, serverPid: child, port } = await troupeServe(database.config, olderNode!)
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
