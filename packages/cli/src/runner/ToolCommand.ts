// What the reference runner does with one tool call: runs the tool's command with the call's
// JSON input on stdin, collects stdout and stderr, kills the command (its whole process group)
// at its timeout, and turns what happened into the members of a commit.
import type { Commit } from "@troupe/contracts/executor/Inbox"
import { Duration, Effect, Fiber, Stream } from "effect"
import { ChildProcess, ChildProcessSpawner } from "effect/process"

/** A tool's command: an argv array (no shell) or one line of shell text run by /bin/sh. */
export type ToolCommandLine = string | ReadonlyArray<string>

/** Output beyond this many bytes is dropped, and what is kept is cut to fit the server's bound on a result (1 MB of JSON). */
export const outputLimitBytes = 1_000_000
const stderrLimitBytes = 16 * 1024
/** A command that ignores SIGTERM this long gets SIGKILL. */
const graceBeforeKill = Duration.seconds(2)

export type ToolRun =
  | {
      readonly _tag: "Exited"
      readonly exitCode: number
      readonly stdout: string
      readonly stderr: string
      readonly truncated: boolean
    }
  | { readonly _tag: "TimedOut"; readonly stdout: string; readonly stderr: string; readonly truncated: boolean }

const commandOf = (line: ToolCommandLine, input: unknown) => {
  const options = {
    stdin: { stream: Stream.make(new TextEncoder().encode(JSON.stringify(input ?? {}))), endOnDone: true },
    forceKillAfter: graceBeforeKill
  }
  if (typeof line === "string") return ChildProcess.make(line, { ...options, shell: "/bin/sh" })
  const [program, ...args] = line
  return ChildProcess.make(program ?? "", args, options)
}

/** The text of a byte stream, keeping the first `limit` bytes (the rest is read and dropped). */
const collect = <E>(bytes: Stream.Stream<Uint8Array, E>, limit: number) =>
  Effect.map(
    Stream.runFold(
      bytes,
      () => ({ chunks: [] as Array<Uint8Array>, size: 0, truncated: false }),
      (kept, chunk) => {
        const room = limit - kept.size
        if (room <= 0) return { ...kept, truncated: kept.truncated || chunk.length > 0 }
        const part = chunk.length > room ? chunk.subarray(0, room) : chunk
        kept.chunks.push(part)
        return { chunks: kept.chunks, size: kept.size + part.length, truncated: chunk.length > room }
      }
    ),
    (kept) => ({ text: new TextDecoder().decode(Buffer.concat(kept.chunks)), truncated: kept.truncated })
  )

/**
 * Runs `line` with `input` as JSON on stdin until it exits or `timeout` passes; then its process
 * group is sent SIGTERM (SIGKILL 2 s later). Fails only when the command cannot be started.
 */
export const runTool = (line: ToolCommandLine, input: unknown, timeout: Duration.Input) =>
  Effect.scoped(
    Effect.gen(function* () {
      const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
      const handle = yield* spawner.spawn(commandOf(line, input))
      const stdout = yield* collect(handle.stdout, outputLimitBytes).pipe(Effect.forkScoped)
      const stderr = yield* collect(handle.stderr, stderrLimitBytes).pipe(Effect.forkScoped)
      const exited = yield* handle.exitCode.pipe(
        Effect.map((code) => ({ code: Number(code) })),
        Effect.timeoutOrElse({ duration: timeout, orElse: () => Effect.succeed(undefined) })
      )
      if (exited === undefined) {
        yield* handle.kill({ forceKillAfter: graceBeforeKill }).pipe(Effect.ignore)
      }
      const out = yield* Fiber.join(stdout).pipe(Effect.orElseSucceed(() => ({ text: "", truncated: false })))
      const err = yield* Fiber.join(stderr).pipe(Effect.orElseSucceed(() => ({ text: "", truncated: false })))
      return exited === undefined
        ? ({ _tag: "TimedOut", stdout: out.text, stderr: err.text, truncated: out.truncated } as const)
        : ({
            _tag: "Exited",
            exitCode: exited.code,
            stdout: out.text,
            stderr: err.text,
            truncated: out.truncated
          } as const)
    })
  )

/** The commit members a tool's stdout may set when it prints a JSON object with `content`. */
const resultMembers = [
  "content",
  "structured_content",
  "is_error",
  "outcome",
  "title",
  "metadata",
  "result_type"
] as const

const jsonResult = (stdout: string): Record<string, unknown> | undefined => {
  try {
    const value: unknown = JSON.parse(stdout)
    return typeof value === "object" && value !== null && !Array.isArray(value) && "content" in value
      ? (value as Record<string, unknown>)
      : undefined
  } catch {
    return undefined
  }
}

const tail = (text: string, characters: number) => (text.length > characters ? text.slice(-characters) : text)

const jsonBytes = (text: string) => Buffer.byteLength(JSON.stringify(text), "utf8")

/**
 * `text` cut so that, as the JSON string the server measures (quotes and escapes counted), it
 * fits the server's bound on a result; `cut` says whether anything was dropped.
 */
export const fitted = (text: string): { readonly text: string; readonly cut: boolean } => {
  let kept = text
  for (let over = jsonBytes(kept) - outputLimitBytes; over > 0; over = jsonBytes(kept) - outputLimitBytes) {
    // A character takes at most 6 bytes as JSON (\uXXXX): never cut more than needed.
    kept = kept.slice(0, kept.length - Math.max(1, Math.floor(over / 6)))
    const last = kept.charCodeAt(kept.length - 1)
    if (last >= 0xd800 && last <= 0xdbff) kept = kept.slice(0, -1)
  }
  return { text: kept, cut: kept.length !== text.length }
}

/**
 * What to commit for a finished run: exit 0 completes with stdout as the content; any other exit
 * fails (outcome failed) with stdout, else the end of stderr; a timeout fails saying so. A stdout
 * that is a JSON object with `content` gives the commit's members itself (a failed exit still
 * fails unless it names its own outcome).
 */
export const commitOf = (run: ToolRun, timeoutMs: number): Omit<Commit, "claim_token"> => {
  if (run._tag === "TimedOut") {
    return {
      content: `The tool did not finish within ${timeoutMs} ms and was stopped.`,
      outcome: "failed",
      metadata: { timed_out: true, stderr_tail: tail(run.stderr, 2000) }
    }
  }
  const failed = run.exitCode !== 0
  const json = jsonResult(run.stdout)
  if (json !== undefined) {
    const members = Object.fromEntries(resultMembers.filter((name) => name in json).map((name) => [name, json[name]]))
    return { ...(failed ? { outcome: "failed" } : {}), ...members } as Omit<Commit, "claim_token">
  }
  const stdout = fitted(run.stdout)
  const truncated = run.truncated || stdout.cut
  if (!failed) return { content: stdout.text, ...(truncated ? { metadata: { truncated: true } } : {}) }
  const said = stdout.text.trim() === "" ? tail(run.stderr, 4000) : stdout.text
  return {
    content: said === "" ? `The tool exited with code ${run.exitCode}.` : said,
    outcome: "failed",
    metadata: { exit_code: run.exitCode, ...(truncated ? { truncated: true } : {}) }
  }
}
