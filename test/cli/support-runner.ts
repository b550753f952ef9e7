// `troupe runner` as a child process of a test (in its own process group): its stdout lines
// arrive in order and a test waits for the one it expects, never sleeping.
import { type ChildProcess, spawn } from "node:child_process"
import { writeFile } from "node:fs/promises"
import { join, resolve } from "node:path"
import { Inbox } from "../http/cable/support-cable.ts"
import { within } from "../support/processes.ts"

const launcher = resolve(import.meta.dirname, "../../packages/cli/bin/troupe.js")

/** A node -e script as an argv command. */
export const node = (script: string) => [process.execPath, "-e", script]

/** Upper-cases `text` from the JSON input. */
export const shout = node(
  "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>process.stdout.write(JSON.parse(s).text.toUpperCase()))"
)

export const writeConfig = async (directory: string, name: string, tools: ReadonlyArray<Record<string, unknown>>) => {
  const path = join(directory, `${name}.json`)
  await writeFile(path, JSON.stringify({ display_name: `Runner ${name}`, tools }))
  return path
}

export interface RunnerProcess {
  readonly child: ChildProcess
  readonly lines: Inbox
  /** The next line matching `pattern` (waits up to 20 s). */
  readonly line: (pattern: RegExp) => Promise<RegExpMatchArray>
  readonly output: () => string
  /** Its exit code, once it exits. */
  readonly exited: Promise<number | null>
  /** SIGTERM to its process group; answers the exit code. */
  readonly stop: () => Promise<number | null>
}

export const startRunner = (configPath: string, baseUrl: string): RunnerProcess => {
  const child = spawn(process.execPath, [launcher, "runner", "--config", configPath, "--base-url", baseUrl], {
    detached: true,
    stdio: ["ignore", "pipe", "pipe"]
  })
  const lines = new Inbox()
  let output = ""
  let pending = ""
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk
    pending += chunk
    const complete = pending.split("\n")
    pending = complete.pop() ?? ""
    for (const line of complete) lines.push(line)
  })
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk
  })
  const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)))
  return {
    child,
    lines,
    exited,
    output: () => output,
    line: (pattern) =>
      within(
        20_000,
        () => `a line matching ${pattern}; the runner said:\n${output}`,
        lines.take((line: string) => pattern.test(line))
      ).then((line: string) => line.match(pattern) as RegExpMatchArray),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, "SIGTERM")
      return exited
    }
  }
}
