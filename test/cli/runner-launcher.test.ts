// `troupe runner` started the way npx starts it (npm → sh → node, npm's variables set): npm hands
// a SIGTERM to the shell only, which dies of it; the runner must not live on as an orphan, still
// claiming work, but stop as if signaled itself (bin/troupe.js).
import { spawn } from "node:child_process"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Inbox } from "../http/cable/support-cable.ts"
import { freePort, isAlive, within } from "../support/processes.ts"
import { writeConfig } from "./support-runner.ts"

const launcher = resolve(import.meta.dirname, "../../packages/cli/bin/troupe.js")
let directory: string

beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), "troupe-runner-launcher-"))
})
afterAll(async () => {
  if (directory) await rm(directory, { recursive: true, force: true })
})

describe("the runner under npx", () => {
  it("stops, saying so last, when the shell npm started it through dies of npm's SIGTERM", async () => {
    const configPath = await writeConfig(directory, "npx", [{ name: "noop", command: "true" }])
    const baseUrl = `http://127.0.0.1:${await freePort()}`
    // `; exit $?` keeps the shell from handing its process over to node, as npm's shell does.
    const shell = spawn(
      "/bin/sh",
      ["-c", '"$0" "$@"; exit $?', process.execPath, launcher, "runner", "--config", configPath, "--base-url", baseUrl],
      { detached: true, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, npm_command: "exec" } }
    )
    const lines = new Inbox()
    let output = ""
    shell.stdout.on("data", (chunk: Buffer) => {
      output += chunk
      for (const line of chunk.toString().split("\n")) lines.push(line)
    })
    // The pipe closes once its last holder, the runner, has exited.
    const closed = new Promise<void>((done) => shell.stdout.once("close", () => done()))
    try {
      await within(
        20_000,
        () => `the runner to say it cannot reach ${baseUrl}; it said:\n${output}`,
        lines.take((line: string) => line.startsWith(`cannot reach ${baseUrl}`))
      )
      process.kill(shell.pid!, "SIGTERM")
      await within(10_000, () => `the runner to stop after its shell died; it said:\n${output}`, closed)
      expect(output.trimEnd().split("\n").at(-1)).toBe("stopped; no calls were in flight")
    } finally {
      if (isAlive(shell.pid!) || output.indexOf("stopped;") === -1) {
        try {
          process.kill(-shell.pid!, "SIGKILL")
        } catch {}
      }
    }
  })
})
