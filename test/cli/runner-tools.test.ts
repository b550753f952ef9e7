// The reference runner's tool commands, without a server: the call's JSON input on stdin, stdout
// as the result, exit codes, a JSON stdout giving the commit's members, and the timeout that
// kills the command's whole process group.
import { NodeServices } from "@effect/platform-node"
import { commitOf, runTool } from "@troupe/cli/runner/ToolCommand"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"

const run = (line: string | ReadonlyArray<string>, input: unknown, timeoutMs = 10_000) =>
  Effect.runPromise(runTool(line, input, timeoutMs).pipe(Effect.provide(NodeServices.layer)))

const node = (script: string) => [process.execPath, "-e", script]

describe("a tool command", () => {
  it("reads the call's input as JSON on stdin; its stdout is the result", async () => {
    const done = await run(
      node(
        "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>process.stdout.write('sum '+JSON.parse(s).a+JSON.parse(s).b))"
      ),
      { a: 2, b: 3 }
    )
    expect(done).toMatchObject({ _tag: "Exited", exitCode: 0, stdout: "sum 23" })
    expect(commitOf(done, 10_000)).toEqual({ content: "sum 23" })
  })

  it("runs a shell string through /bin/sh", async () => {
    const done = await run("read line; printf 'got %s' \"$line\"", { q: "x" })
    expect(done).toMatchObject({ _tag: "Exited", exitCode: 0, stdout: 'got {"q":"x"}' })
  })

  it("a non-zero exit fails, saying stdout, else the end of stderr", async () => {
    const quiet = await run("echo broken >&2; exit 3", {})
    expect(quiet).toMatchObject({ _tag: "Exited", exitCode: 3 })
    expect(commitOf(quiet, 10_000)).toEqual({
      content: "broken\n",
      outcome: "failed",
      metadata: { exit_code: 3 }
    })
    const said = await run("echo 'partial answer'; exit 1", {})
    expect(commitOf(said, 10_000)).toMatchObject({ content: "partial answer\n", outcome: "failed" })
  })

  it("a JSON object with content on stdout gives the commit's members", async () => {
    const printed = {
      content: [{ type: "text", text: "hello" }],
      structured_content: { n: 1 },
      title: "Greeting",
      metadata: { checkpoint: "c1" },
      ignored: true
    }
    const done = await run(node(`process.stdout.write(${JSON.stringify(JSON.stringify(printed))})`), {})
    expect(commitOf(done, 10_000)).toEqual({
      content: [{ type: "text", text: "hello" }],
      structured_content: { n: 1 },
      title: "Greeting",
      metadata: { checkpoint: "c1" }
    })
    const plain = await run(`echo '{"answer": 42}'`, {})
    expect(commitOf(plain, 10_000)).toEqual({ content: '{"answer": 42}\n' })
  })

  it("is stopped at its timeout with its children, and the commit fails saying so", async () => {
    const started = Date.now()
    // The shell's child (sleep) is in the same process group and goes too: stdout closes.
    const stopped = await run("echo started; sleep 30; echo never", {}, 300)
    expect(Date.now() - started).toBeLessThan(10_000)
    expect(stopped).toMatchObject({ _tag: "TimedOut", stdout: "started\n" })
    expect(commitOf(stopped, 300)).toMatchObject({
      content: "The tool did not finish within 300 ms and was stopped.",
      outcome: "failed",
      metadata: { timed_out: true }
    })
  })

  it("a command that ignores SIGTERM is killed after the grace period", async () => {
    const started = Date.now()
    const stopped = await run(node("process.on('SIGTERM',()=>{});setInterval(()=>{},1000)"), {}, 200)
    expect(stopped._tag).toBe("TimedOut")
    expect(Date.now() - started).toBeLessThan(10_000)
  })

  it("a command that does not read its input still runs", async () => {
    const done = await run(["true"], { large: "x".repeat(200_000) })
    expect(done).toMatchObject({ _tag: "Exited", exitCode: 0, stdout: "" })
  })

  it("a command that cannot start fails", async () => {
    await expect(run(["/nonexistent/tool"], {})).rejects.toThrow()
  })
})
