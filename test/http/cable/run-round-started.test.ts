// A model round's attempts on the run channel's progress feed (runs supplement "Executor inbox":
// the kernel's round_started frame) and a model task's read (`tool_definitions`, `request_bytes`),
// through the real server: an echo round, a round offered a runner's tool and its continuation,
// a fan's fresh agents (mainline false), and a provider retry announcing attempt 2. The frame's
// request_bytes is the task read's, and both are the request door's answer's canonical size.
import { RunChannelMessage } from "@troupe/contracts/cable/RunChannel"
import { Schema } from "effect"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { waitForActorState } from "../../support/actors.ts"
import { bearer } from "../../support/http.ts"
import { inboxCalls, memberCalls, type RunWorld, readOnlyTool, runWorld, waitForRun } from "../../support/runs.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { about, openRaw, type RawCable } from "./support-cable.ts"

let server: TestServer
let world: RunWorld
let runner: { token: string; publicId: string }
let calls: ReturnType<typeof memberCalls>

beforeAll(async () => {
  server = await startTestServer()
  world = await runWorld(server)
  runner = await world.runner("round-started-runner", [readOnlyTool("grep")])
  calls = memberCalls(server, world)
})
afterAll(() => server?.close())

const cleanups: Array<() => void> = []
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup()
})

/** Creates a run of `steps` (pending); answers its public id. */
const create = async (steps: ReadonlyArray<unknown>) => {
  const created = await calls.create({
    approval_mode: "bypass",
    default_runner_executor_public_id: runner.publicId,
    steps
  })
  expect(created.status).toBe(201)
  return created.body.run.public_id as string
}

/** A socket subscribed to the run's progress feed; answers the next round_started frame on each call. */
const rounds = async (id: string) => {
  const cable: RawCable = openRaw(server, { headers: bearer(world.agent.token) })
  cleanups.push(() => cable.socket.close())
  expect(await cable.frames.take()).toEqual({ type: "welcome" })
  const identifier = JSON.stringify({
    channel: "RunChannel",
    workspace_id: world.workspaceId,
    run_id: id,
    items: "progress"
  })
  cable.subscribe(identifier)
  expect((await cable.frames.take(about(identifier))).type).toBe("confirm_subscription")
  return async () => {
    const frame = await cable.frames.take(
      (each: any) => about(identifier)(each) && each.message?.frame?.type === "round_started"
    )
    expect(() => Schema.decodeUnknownSync(RunChannelMessage)(frame.message)).not.toThrow()
    return frame.message.frame
  }
}

const start = async (id: string) => expect((await calls.call("POST", `/${id}/start`)).status).toBe(200)
const taskRead = async (id: string, key: string) => (await calls.call("GET", `/${id}/tasks/${key}`)).body.task

/** The request door's answer's canonical size (UTF-8 bytes of its whitespace-free JSON). */
const sealedBytes = async (id: string, key: string) => {
  const sealed = await calls.call("GET", `/${id}/tasks/${key}/request`)
  expect(sealed.status).toBe(200)
  return Buffer.byteLength(JSON.stringify(sealed.body.request), "utf8")
}

describe("round_started and the model task read", () => {
  it("an echo round: attempt 1 of local/echo on the mainline, its size the task read's", async () => {
    const id = await create([{ model: { prompt: "hello there", model: { model: "local/echo" } } }])
    const before = await taskRead(id, "s1-model-1")
    expect(before.tool_definitions).toEqual([])
    expect(before).not.toHaveProperty("request_bytes")
    expect((await calls.call("GET", `/${id}/tasks/s1-model-1/request`)).status).toBe(404)

    const next = await rounds(id)
    await start(id)
    const frame = await next()
    expect(frame).toEqual({
      type: "round_started",
      run_public_id: id,
      task_key: "s1-model-1",
      mainline: true,
      attempt: 1,
      model: "local/echo",
      request_bytes: expect.any(Number),
      at: expect.any(String)
    })
    expect(Number.isNaN(Date.parse(frame.at))).toBe(false)
    await waitForActorState(server, "run", id, "completed")
    const read = await taskRead(id, "s1-model-1")
    expect(read.tool_definitions).toEqual([])
    expect(read.request_bytes).toBe(frame.request_bytes)
    expect(read.request_bytes).toBe(await sealedBytes(id, "s1-model-1"))
  })

  it("a round offered a runner's tool shows its definition; its continuation is announced too", async () => {
    const directive = JSON.stringify({ tool_calls: [{ name: "grep", input: { pattern: "x" } }] })
    const id = await create([{ model: { prompt: directive, model: { model: "local/script" }, tools: ["grep"] } }])
    const next = await rounds(id)
    await start(id)
    const first = await next()
    expect(first).toMatchObject({ task_key: "s1-model-1", mainline: true, attempt: 1, model: "local/script" })

    const read = await taskRead(id, "s1-model-1")
    expect(read.tool_definitions).toEqual([
      { type: "function", function: { name: "grep", description: "The grep tool", parameters: { type: "object" } } }
    ])
    expect(read.request_bytes).toBe(first.request_bytes)
    expect(read.request_bytes).toBe(await sealedBytes(id, "s1-model-1"))
    const sealed = await calls.call("GET", `/${id}/tasks/s1-model-1/request`)
    expect(read.tool_definitions).toEqual(sealed.body.request.request_options.tools)

    await waitForRun(server, id, async () => (await taskRead(id, "s1-model-1-t0"))?.status === "dispatched")
    const inbox = inboxCalls(server, runner.token)
    const claimed = await inbox.claim(id, "s1-model-1-t0")
    expect(claimed.status).toBe(200)
    const committed = await inbox.commit(id, "s1-model-1-t0", {
      claim_token: claimed.body.claim.claim_token,
      content: "3 matches"
    })
    expect(committed.status).toBe(200)
    const continued = await next()
    expect(continued).toMatchObject({ task_key: "s1-model-1-c", mainline: true, attempt: 1, model: "local/script" })
    await waitForActorState(server, "run", id, "completed")
    expect((await taskRead(id, "s1-model-1-c")).request_bytes).toBe(continued.request_bytes)
    // A tool task has neither member.
    const call = await taskRead(id, "s1-model-1-t0")
    expect(call).not.toHaveProperty("tool_definitions")
    expect(call).not.toHaveProperty("request_bytes")
  })

  it("a fan's model steps are fresh agents: announced with mainline false", async () => {
    const id = await create([
      {
        parallel: [
          { model: { prompt: "left", model: { model: "local/echo" } } },
          { model: { prompt: "right", model: { model: "local/echo" } } }
        ]
      },
      { model: { prompt: "after", model: { model: "local/echo" } } }
    ])
    const next = await rounds(id)
    await start(id)
    const frames = [await next(), await next(), await next()]
    expect(Object.fromEntries(frames.map((frame) => [frame.task_key, frame.mainline]))).toEqual({
      "s1-model-1": false,
      "s1-model-2": false,
      "s1-model-3": true
    })
    await waitForActorState(server, "run", id, "completed")
    for (const frame of frames) expect((await taskRead(id, frame.task_key)).request_bytes).toBe(frame.request_bytes)
  })

  it("a provider retry announces attempt 2 of the same round, the same size", async () => {
    const directive = JSON.stringify({ fail: "provider_error", fail_times: 1 })
    const id = await create([{ model: { prompt: directive, model: { model: "local/script" } } }])
    const next = await rounds(id)
    await start(id)
    const first = await next()
    const second = await next()
    expect([first.attempt, second.attempt]).toEqual([1, 2])
    expect(second).toMatchObject({ task_key: "s1-model-1", mainline: true, model: "local/script" })
    expect(second.request_bytes).toBe(first.request_bytes)
    await waitForActorState(server, "run", id, "completed")
    expect((await taskRead(id, "s1-model-1")).request_bytes).toBe(first.request_bytes)
  })
})
