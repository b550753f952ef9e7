// The run channel on the cable (SUPPLEMENT "Cable"; runs supplement "Run feed" and "Executor
// inbox"), through the real server and real WebSocket clients: under both identifiers, its events
// equal to the run's replay items; a cursor's backfill then live with no gap and no repeat while the
// run goes on; the lifecycle feed; the progress feed's kernel frames and a relayed executor post;
// and the one rejection for everything it refuses (a hosted run among them).
import { logger } from "@rails/actioncable"
import { type StreamItem, Streams } from "@troupe/actors/Streams"
import { RunChannelMessage } from "@troupe/contracts/cable/RunChannel"
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { waitForActorState } from "../../support/actors.ts"
import { bearer, request } from "../../support/http.ts"
import { inboxCalls, memberCalls, type RunWorld, readOnlyTool, runWorld } from "../../support/runs.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { about, isEvent, openRaw, type RawCable, stockConsumer, stockSubscription } from "./support-cable.ts"

const upstream = "AgentAPI::V1::RunEventsChannel"
const short = "RunChannel"

let server: TestServer
let world: RunWorld
let runner: { token: string; publicId: string }
let calls: ReturnType<typeof memberCalls>

beforeAll(async () => {
  server = await startTestServer()
  world = await runWorld(server)
  runner = await world.runner("run-channel-runner", [readOnlyTool("grep"), readOnlyTool("lint")])
  calls = memberCalls(server, world)
})
afterAll(() => server?.close())

const cleanups: Array<() => void> = []
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup()
})

/** Creates a run of tool steps on the runner; answers its public id (pending). */
const create = async (steps: ReadonlyArray<unknown>) => {
  const created = await calls.create({
    approval_mode: "bypass",
    default_runner_executor_public_id: runner.publicId,
    steps
  })
  expect(created.status).toBe(201)
  return created.body.run.public_id as string
}

const start = async (id: string) => expect((await calls.call("POST", `/${id}/start`)).status).toBe(200)

/** Claims a dispatched task as the runner and commits it; answers nothing. */
const finish = async (id: string, key: string, outcome?: "failed") => {
  const inbox = inboxCalls(server, runner.token)
  const claimed = await inbox.claim(id, key)
  expect(claimed.status).toBe(200)
  const committed = await inbox.commit(id, key, {
    claim_token: claimed.body.claim.claim_token,
    content: `${key} done`,
    ...(outcome === undefined ? {} : { outcome })
  })
  expect(committed.status).toBe(200)
}

/** The run's durable items, as the feed replays them. */
const replay = (id: string) =>
  server.run(
    Effect.gen(function* () {
      const page = yield* (yield* Streams).read(`run:${id}`, undefined, 200)
      return JSON.parse(JSON.stringify(page.items)) as Array<StreamItem>
    })
  )

/** A raw socket with the credential that has heard its welcome. */
const welcomed = async (token: string): Promise<RawCable> => {
  const cable = openRaw(server, { headers: bearer(token) })
  cleanups.push(() => cable.socket.close())
  expect(await cable.frames.take()).toEqual({ type: "welcome" })
  return cable
}

/** Every message the channel sends is one of its contract's. */
const decoded = (frame: any) => {
  expect(() => Schema.decodeUnknownSync(RunChannelMessage)(frame.message)).not.toThrow()
  return frame.message
}

const identifierOf = (channel: string, params: Record<string, unknown>) => JSON.stringify({ channel, ...params })

/** Subscribes on the socket; answers the confirmation's or rejection's type. */
const subscribe = async (cable: RawCable, identifier: string) => {
  cable.subscribe(identifier)
  return (await cable.frames.take(about(identifier))).type as string
}

const isCompleted = (item: any) => item.type === "turn_status" && item.payload.status === "completed"

/** The items a subscription receives, up to and including the run's completion. */
const itemsUntilCompleted = async (cable: RawCable, identifier: string) => {
  const items: Array<any> = []
  for (;;) {
    const message = decoded(await cable.frames.take(about(identifier)))
    expect(Object.keys(message)).toEqual(["event"])
    items.push(message.event)
    if (isCompleted(message.event)) return items
  }
}

const sequences = (items: ReadonlyArray<{ readonly sequence: number }>) => items.map((item) => item.sequence)
const lifecycle = (item: StreamItem) => item.type === "turn_status" || item.type === "attention_required"

describe("the run channel's durable feeds", () => {
  it("after: '' replays from item 1 with the run's replay items, under the upstream identifier", async () => {
    const id = await create([{ tool: { name: "grep" } }])
    await start(id)
    await finish(id, "s1-tool-1")
    await waitForActorState(server, "run", id, "completed")
    const replayed = await replay(id)
    expect(replayed.map((item) => item.type)).toEqual(expect.arrayContaining(["task_status", "turn_status"]))

    const { consumer } = stockConsumer(server, bearer(world.agent.token))
    cleanups.push(() => consumer.disconnect())
    const stock = stockSubscription(consumer, {
      channel: upstream,
      workspace_id: world.workspaceId,
      run_id: id,
      after: ""
    })
    expect(await stock.events.take()).toEqual({ event: "connected", reconnected: false })
    const received: Array<any> = []
    for (const _ of replayed) received.push((await stock.events.take(isEvent("received"))).data)
    expect(received).toEqual(replayed.map((event) => ({ event })))
  })

  it("replays after a cursor, then goes on live with no gap and no repeat while the run goes on", async () => {
    const id = await create([{ tool: { name: "grep" } }, { tool: { name: "lint" } }, { tool: { name: "grep" } }])
    await start(id)
    const sofar = await replay(id)
    const cursorItem = sofar[0]!
    const params = { workspace_id: world.workspaceId, run_id: id }
    const follower = await welcomed(world.agent.token)
    const followed = identifierOf(upstream, { ...params, after: cursorItem.cursor })
    expect(await subscribe(follower, followed)).toBe("confirm_subscription")
    const watcher = await welcomed(world.agent.token)
    const live = identifierOf(short, params)
    expect(await subscribe(watcher, live)).toBe("confirm_subscription")

    await finish(id, "s1-tool-1")
    await finish(id, "s1-tool-2")
    await finish(id, "s1-tool-3")
    const fromCursor = await itemsUntilCompleted(follower, followed)
    const liveItems = await itemsUntilCompleted(watcher, live)

    const all = await replay(id)
    expect(fromCursor).toEqual(all.filter((item) => item.sequence > cursorItem.sequence))
    expect(sequences(fromCursor)).toEqual(
      Array.from({ length: all.length - cursorItem.sequence }, (_, index) => cursorItem.sequence + 1 + index)
    )
    // Live only: nothing from before the subscription, everything after it.
    expect(liveItems[0].sequence).toBeGreaterThan(sofar.at(-1)!.sequence)
    expect(liveItems).toEqual(all.filter((item) => item.sequence >= liveItems[0].sequence))
    expect(liveItems.map((item) => `${item.type}:${item.payload.task_key ?? item.payload.status}`)).toContain(
      "task_status:s1-tool-3"
    )
  })

  it("the lifecycle feed carries only turn_status and attention_required, from item 1 and live", async () => {
    const id = await create([{ tool: { name: "grep", on_failure: "halt" } }])
    await start(id)
    const cable = await welcomed(world.agent.token)
    const identifier = identifierOf(short, {
      workspace_id: world.workspaceId,
      run_id: id,
      items: "lifecycle",
      after: ""
    })
    expect(await subscribe(cable, identifier)).toBe("confirm_subscription")
    await finish(id, "s1-tool-1", "failed")
    await waitForActorState(server, "run", id, "needs_attention")
    expect((await calls.call("POST", `/${id}/tasks/s1-tool-1/retry`)).status).toBe(200)
    await finish(id, "s1-tool-1")
    const received = await itemsUntilCompleted(cable, identifier)
    const expected = (await replay(id)).filter(lifecycle)
    expect(received).toEqual(expected)
    expect(received.map((item) => item.type)).toContain("attention_required")
    expect(received.map((item) => item.payload.status).filter(Boolean)).toEqual([
      "running",
      "failed",
      "running",
      "completed"
    ])
  })
})

describe("the run channel's progress feed", () => {
  it("carries step_started, step_claimed and a relayed executor_progress frame as {frame}", async () => {
    const id = await create([{ tool: { name: "grep", input: { pattern: "x" } } }])
    const cable = await welcomed(world.agent.token)
    const identifier = identifierOf(upstream, { workspace_id: world.workspaceId, run_id: id, items: "progress" })
    expect(await subscribe(cable, identifier)).toBe("confirm_subscription")
    const frameOf = async (type: string) =>
      decoded(await cable.frames.take((frame: any) => about(identifier)(frame) && frame.message?.frame?.type === type))

    await start(id)
    const started = await frameOf("step_started")
    expect(started).toEqual({
      frame: {
        type: "step_started",
        run_public_id: id,
        task_key: "s1-tool-1",
        tool_name: "grep",
        status: "dispatched",
        at: expect.any(String)
      }
    })

    const inbox = inboxCalls(server, runner.token)
    const claimed = await inbox.claim(id, "s1-tool-1")
    expect(claimed.status).toBe(200)
    expect(await frameOf("step_claimed")).toEqual({
      frame: {
        type: "step_claimed",
        run_public_id: id,
        task_key: "s1-tool-1",
        tool_name: "grep",
        executor_public_id: runner.publicId,
        at: expect.any(String)
      }
    })

    const token = claimed.body.claim.claim_token as string
    const posted = await inbox.progress({
      frame: { run_public_id: id, task_key: "s1-tool-1", claim_token: token, text_tail: "3 matches so far" }
    })
    expect([posted.status, posted.body]).toEqual([202, { accepted: true }])
    expect(await frameOf("executor_progress")).toEqual({
      frame: {
        type: "executor_progress",
        run_public_id: id,
        task_key: "s1-tool-1",
        tool_name: "grep",
        executor_public_id: runner.publicId,
        at: expect.any(String),
        text_tail: "3 matches so far"
      }
    })
    // Nothing but frames, and none of another run's.
    expect(cable.frames.buffered(about(identifier))).toEqual([])
  })

  it("is live only: a frame published before the subscription is not replayed", async () => {
    const id = await create([{ tool: { name: "grep" } }, { tool: { name: "lint" } }])
    await start(id)
    const cable = await welcomed(world.agent.token)
    const identifier = identifierOf(short, { workspace_id: world.workspaceId, run_id: id, items: "progress" })
    expect(await subscribe(cable, identifier)).toBe("confirm_subscription")
    await finish(id, "s1-tool-1")
    const first = await cable.frames.take(about(identifier))
    // s1-tool-1's step_started went before the subscription; its claim and s1-tool-2's start come after.
    expect(first.message.frame).toMatchObject({ type: "step_claimed", task_key: "s1-tool-1" })
    expect((await cable.frames.take(about(identifier))).message.frame).toMatchObject({
      type: "step_started",
      task_key: "s1-tool-2"
    })
  })
})

describe("rejections", () => {
  let id: string
  beforeAll(async () => {
    id = await create([{ tool: { name: "grep" } }])
  })

  const rejectionOf = async (token: string, params: Record<string, unknown>, channel = short) => {
    const cable = await welcomed(token)
    return subscribe(cable, identifierOf(channel, params))
  }

  it("rejects unknown ids, bad params, a cursor on the progress feed and feeds runs do not have", async () => {
    const good = { workspace_id: world.workspaceId, run_id: id }
    const unknown = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
    const refused: Array<Record<string, unknown>> = [
      { ...good, run_id: unknown },
      { ...good, workspace_id: unknown },
      { ...good, run_id: "not-a-uuid" },
      { workspace_id: world.workspaceId },
      { run_id: id },
      { ...good, run_id: 42 },
      { ...good, after: "not a cursor" },
      { ...good, after: 3 },
      { ...good, items: "progress", after: "" },
      { ...good, items: "transcript" },
      { ...good, items: "everything" },
      { ...good, items: null }
    ]
    for (const params of refused) {
      for (const channel of [short, upstream]) {
        expect([params, await rejectionOf(world.agent.token, params, channel)]).toEqual([params, "reject_subscription"])
      }
    }
    for (const items of ["events", "lifecycle", "progress"]) {
      expect(await rejectionOf(world.agent.token, { ...good, items }, upstream)).toBe("confirm_subscription")
    }
    expect(await rejectionOf(world.agent.token, { ...good, after: "" })).toBe("confirm_subscription")
  })

  it("is for member credentials: the runner's transport credential is rejected", async () => {
    expect(await rejectionOf(runner.token, { workspace_id: world.workspaceId, run_id: id })).toBe("reject_subscription")
  })

  it("rejects a hosted run: its items ride its conversation's channel", async () => {
    const hostedId = await create([{ tool: { name: "grep" } }])
    const params = { workspace_id: world.workspaceId, run_id: hostedId, after: "" }
    expect(await rejectionOf(world.agent.token, params)).toBe("confirm_subscription")
    const conversation = await request(
      server.baseUrl,
      "POST",
      `/agent_api/v1/workspaces/${world.workspaceId}/conversations`,
      { headers: { ...bearer(world.agent.token), "idempotency-key": "hosting" }, body: { conversation: {} } }
    )
    expect(conversation.status).toBe(201)
    // No door makes a hosted run yet: its row names the conversation that hosts it.
    await server.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient
        const host = conversation.body.conversation.public_id as string
        yield* sql`UPDATE runs SET conversation_id = (SELECT id FROM conversations WHERE public_id = ${host})
                   WHERE public_id = ${hostedId}`
      })
    )
    const trace = await calls.call("GET", `/${hostedId}`)
    expect(trace.body.run?.conversation_public_id).toBe(conversation.body.conversation.public_id)
    for (const items of ["events", "lifecycle", "progress"]) {
      expect(await rejectionOf(world.agent.token, { workspace_id: world.workspaceId, run_id: hostedId, items })).toBe(
        "reject_subscription"
      )
    }
  })
})

// Quiet unless asked for: the stock client logs every step when enabled.
logger.enabled = process.env.ACTIONCABLE_DEBUG === "1"
