// The reference runner's loop against a stand-in executor plane (fake-executor-plane.ts), with a
// stored credential so no device flow runs: it announces its tools, answers pings with pong,
// claims tool calls as the cable says work_available (and by polling while only the cable is down),
// runs the command with the input on stdin, extends a claim the command outlives by half,
// commits (failures too: a timeout, an unserved tool, a refused result), stops a command the
// kernel canceled, skips rows that are not its own work, and refreshes a credential after a 401.
// Against a plane that goes down and comes back: one line when it cannot reach the server (with
// the reason) and none about the cable, quiet retries, one when it reaches it again; and its last
// line on SIGTERM.
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { Inbox } from "../http/cable/support-cable.ts"
import { eventually, isAlive } from "../support/processes.ts"
import { type FakePlane, type Recorded, startFakePlane } from "./fake-executor-plane.ts"
import { node, type RunnerProcess, shout, startRunner, writeConfig } from "./support-runner.ts"

let plane: FakePlane
let directory: string
let runner: RunnerProcess
let serial = 0

const tools = [
  { name: "shout", command: shout, timeout_ms: 10_000 },
  { name: "stall", command: "sleep 30", timeout_ms: 400 },
  { name: "slow", command: node("setTimeout(()=>process.stdout.write('late but done'),2500)"), timeout_ms: 3000 },
  { name: "sleeper", command: node("setInterval(()=>{},1000)"), timeout_ms: 60_000 }
]

beforeAll(async () => {
  plane = await startFakePlane()
  directory = await mkdtemp(join(tmpdir(), "troupe-runner-loop-"))
  const configPath = await writeConfig(directory, "loop", tools)
  await writeFile(
    join(directory, "loop.credential.json"),
    JSON.stringify({
      base_url: plane.baseUrl,
      registration_identifier: "fake",
      access_token: plane.tokens.access,
      refresh_token: plane.tokens.refresh
    }),
    { mode: 0o600 }
  )
  runner = startRunner(configPath, plane.baseUrl)
  await runner.line(/^serving shout, stall, slow, sleeper as Fake runner \(/)
  await runner.line(/^inbox: subscribed$/)
})
afterAll(async () => {
  await runner?.stop()
  await plane?.close()
  if (directory) await rm(directory, { recursive: true, force: true })
})

const event = (what: Recorded["what"], key?: string) =>
  plane.events.take((recorded: Recorded) => recorded.what === what && (key === undefined || recorded.key === key))

let run: string
beforeEach(() => {
  serial += 1
  run = `01900000-0000-7000-8000-${String(serial).padStart(12, "0")}`
})

const toolCall = (key: string, tool: string, input: Record<string, unknown> = {}, timeoutMs = 10_000) => ({
  kind: "tool_call",
  run_public_id: run,
  task_key: key,
  tool_name: tool,
  tool_input: input,
  timeout_ms: timeoutMs
})

describe("the runner's loop", () => {
  it("announced its tools (a tool silent on effects at the cautious profile) and answers pings", async () => {
    const announced = await event("announce")
    expect(announced.body.tools.map((tool: { name: string }) => tool.name)).toEqual([
      "shout",
      "stall",
      "slow",
      "sleeper"
    ])
    expect(announced.body.tools[0]).toEqual({
      name: "shout",
      timeout_ms: 10_000,
      effect_profile: {
        kind: "write",
        destructive: false,
        effect_scope: "open",
        idempotency: "none",
        reconciliation: "none"
      }
    })
    plane.broadcast({ type: "ping", at: new Date().toISOString() })
    await event("pong")
  })

  it("claims a tool call on work_available, runs it with the input on stdin, and commits stdout", async () => {
    plane.add(toolCall("loud", "shout", { text: "hello" }))
    await runner.line(new RegExp(`^claimed ${run}/loud shout$`))
    const commit = await event("commit", `${run}/loud`)
    expect(commit.body).toEqual({ content: "HELLO", claim_token: expect.any(String) })
    await runner.line(new RegExp(`^committed ${run}/loud shout: completed$`))
  })

  it("extends a claim the command outlives by half, and commits before the deadline", async () => {
    plane.add(toolCall("long", "slow", {}, 3000))
    await runner.line(new RegExp(`^claimed ${run}/long slow$`))
    const extended = await event("extend", `${run}/long`)
    expect(extended.body).toEqual({ claim_token: expect.any(String), timeout_ms: 3000 })
    await runner.line(new RegExp(`^extended ${run}/long slow until `))
    expect((await event("commit", `${run}/long`)).body).toMatchObject({ content: "late but done" })
  })

  it("stops a command at the row's timeout and commits outcome failed", async () => {
    plane.add(toolCall("stuck", "stall", {}, 400))
    const commit = await event("commit", `${run}/stuck`)
    expect(commit.body).toMatchObject({ outcome: "failed", metadata: { timed_out: true } })
    await runner.line(new RegExp(`^committed ${run}/stuck stall: failed$`))
  })

  it("fails a call for a tool it does not serve", async () => {
    plane.add(toolCall("unknown", "teleport"))
    expect((await event("commit", `${run}/unknown`)).body).toMatchObject({
      content: "This runner does not serve the tool teleport.",
      outcome: "failed"
    })
  })

  it("commits a refused result as a failure naming the refusal", async () => {
    plane.refuseNextCommit()
    plane.add(toolCall("refused", "shout", { text: "x" }))
    await event("commit", `${run}/refused`)
    await runner.line(new RegExp(`^refused ${run}/refused shout: invalid_title; committing the refusal as a failure$`))
    expect((await event("commit", `${run}/refused`)).body).toMatchObject({
      content: "The tool's result was refused: invalid_title.",
      outcome: "failed"
    })
  })

  it("stops the command of a row the kernel canceled, without committing", async () => {
    plane.add(toolCall("doomed", "sleeper", {}, 60_000))
    await runner.line(new RegExp(`^claimed ${run}/doomed sleeper$`))
    plane.broadcast({ type: "work_canceled", run_public_id: run, task_key: "doomed" })
    await runner.line(new RegExp(`^canceled ${run}/doomed$`))
    // The next row's commit comes first: nothing was committed for the canceled one.
    plane.add(toolCall("after", "shout", { text: "next" }))
    await event("commit", `${run}/after`)
    expect(
      plane.events.buffered((recorded: Recorded) => recorded.what === "commit" && recorded.key === `${run}/doomed`)
    ).toEqual([])
  })

  it("skips rows that are not a runner's (asks, unknown kinds)", async () => {
    plane.add({ kind: "ask", run_public_id: run, task_key: "question", timeout_ms: 60_000 })
    plane.add({ kind: "telepathy", run_public_id: run, task_key: "odd", timeout_ms: 60_000 })
    await runner.line(new RegExp(`^skipped ${run}/question: a ask row is not a runner's$`))
    await runner.line(new RegExp(`^skipped ${run}/odd: a telepathy row is not a runner's$`))
  })

  it("polls while only the cable is down, saying so once without an interval, and subscribes again", async () => {
    plane.dropSockets()
    await runner.line(/^inbox: cable down; polling until it is back$/)
    plane.add(toolCall("polled", "shout", { text: "polled" }), false)
    expect((await event("commit", `${run}/polled`)).body).toMatchObject({ content: "POLLED" })
    await runner.line(/^inbox: subscribed$/)
    expect(
      runner
        .output()
        .split("\n")
        .filter((line) => line.startsWith("inbox: cable down"))
    ).toEqual(["inbox: cable down; polling until it is back"])
  })

  it("refreshes its credential after a 401 and saves the new pair", async () => {
    plane.expireAccessToken()
    plane.add(toolCall("renewed", "shout", { text: "again" }), false)
    plane.dropSockets()
    await event("refresh")
    expect((await event("commit", `${run}/renewed`)).body).toMatchObject({ content: "AGAIN" })
    const saved = JSON.parse(await readFile(join(directory, "loop.credential.json"), "utf8"))
    expect(saved).toMatchObject({ access_token: plane.tokens.access, refresh_token: plane.tokens.refresh })
  })
})

describe("the runner's connection", () => {
  let flaky: FakePlane
  let watched: RunnerProcess
  const pidFile = () => join(directory, "held.pid")
  beforeAll(async () => {
    flaky = await startFakePlane()
    await writeFile(
      join(directory, "flaky.credential.json"),
      JSON.stringify({
        base_url: flaky.baseUrl,
        registration_identifier: "fake",
        access_token: flaky.tokens.access,
        refresh_token: flaky.tokens.refresh
      }),
      { mode: 0o600 }
    )
  })
  afterAll(async () => {
    await watched?.stop()
    await flaky?.close()
  })
  const quoted = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
  const said = (pattern: RegExp) =>
    watched
      .output()
      .split("\n")
      .filter((line) => pattern.test(line))

  it("says why it cannot reach the server at start, once, then once that it reached it", async () => {
    await flaky.goDown()
    const held = node(
      `require('fs').writeFileSync(${JSON.stringify(pidFile())},String(process.pid));setInterval(()=>{},1000)`
    )
    watched = startRunner(
      await writeConfig(directory, "flaky", [{ name: "held", command: held, timeout_ms: 60_000 }]),
      flaky.baseUrl
    )
    await watched.line(
      new RegExp(
        `^cannot reach ${quoted(flaky.baseUrl)}: connection refused \\(ECONNREFUSED\\); trying again in 0\\.5 s, then doubling up to every 30 s$`
      )
    )
    await flaky.comeBack()
    await watched.line(new RegExp(`^reached ${quoted(flaky.baseUrl)} after \\d+\\.\\d s$`))
    await watched.line(/^serving held as /)
    await watched.line(/^inbox: subscribed$/)
    expect(said(/^cannot reach /)).toHaveLength(1)
  })

  it("says an outage once and nothing about the cable, retries quietly, and says once that the server is back", async () => {
    await flaky.goDown()
    // Meanwhile something at the address resets every connection, counting the inbox reads.
    const reads = new Inbox()
    const resetting = createServer((socket) =>
      socket.once("data", (head) => {
        if (head.toString().startsWith("GET /agent_api/v1/executor/inbox")) reads.push(Date.now())
        socket.destroy()
      })
    )
    await new Promise<void>((done) => resetting.listen(Number(new URL(flaky.baseUrl).port), "127.0.0.1", done))
    await watched.line(new RegExp(`^cannot reach ${quoted(flaky.baseUrl)}: `))
    for (let read = 0; read < 3; read++) await reads.take()
    await new Promise<void>((done) => resetting.close(() => done()))
    await flaky.comeBack()
    await watched.line(new RegExp(`^reached ${quoted(flaky.baseUrl)} again after \\d+\\.\\d s$`))
    await watched.line(/^inbox: subscribed$/)
    expect(said(/^cannot reach /)).toHaveLength(2)
    expect(said(/^reached /)).toHaveLength(2)
    expect(said(/WARN|read failed|cable down|polling/)).toEqual([])
  })

  it("stops on SIGTERM saying so last: the call in flight left uncommitted, its command stopped", async () => {
    const key = "01900000-0000-7000-8000-0000000000cc/held"
    flaky.add({
      kind: "tool_call",
      run_public_id: key.split("/")[0]!,
      task_key: "held",
      tool_name: "held",
      timeout_ms: 60_000
    })
    await watched.line(new RegExp(`^claimed ${key} held$`))
    const started = () => readFile(pidFile(), "utf8").catch(() => "")
    await eventually("the command started", 10_000, async () => (await started()) !== "")
    const pid = Number(await started())
    expect(await watched.stop()).toBe(0)
    expect(watched.output().trimEnd().split("\n").at(-1)).toBe(
      "stopped; 1 call in flight left uncommitted (commands stopped; each claim lapses at its deadline)"
    )
    expect(said(/cable down|polling/)).toEqual([])
    expect(isAlive(pid)).toBe(false)
    expect(flaky.events.buffered((recorded: Recorded) => recorded.what === "commit")).toEqual([])
  })
})

describe("the runner's configuration", () => {
  it("is refused when it names a tool twice, saying so", async () => {
    const configPath = await writeConfig(directory, "twice", [
      { name: "shout", command: shout },
      { name: "shout", command: "true" }
    ])
    const refused = startRunner(configPath, plane.baseUrl)
    expect(await refused.exited).toBe(1)
    expect(refused.output()).toContain(`troupe: The runner configuration ${configPath} names the tool shout twice`)
  })
})
