// A hosted run's durable items ride its conversation's feed (SUPPLEMENT "Cable"; conversations
// supplement "Feed and conversation channel"): its attention_required and task_status items are
// on the conversation's events route and channel, named by run_public_id, numbered contiguously
// with the conversation's own; its turn_status stays off. A standalone run keeps its own feed.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { waitForActorState } from "../../support/actors.ts"
import { waitForConversation } from "../../support/conversations.ts"
import { bearer } from "../../support/http.ts"
import {
  type AgentCall,
  agentCall,
  memberCalls,
  type RunWorld,
  readOnlyTool,
  runnerToolConfiguration,
  runWorld
} from "../../support/runs.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { about, openRaw } from "../cable/support-cable.ts"

let server: TestServer
let world: RunWorld
let runner: { token: string; publicId: string }

const member: AgentCall = (method, path, body, headers) => agentCall(server, world)(method, path, body, headers)

const call = "s1-model-1-t0"
const directive = JSON.stringify({ tool_calls: [{ name: "grep", input: { pattern: "z" } }] })

beforeAll(async () => {
  server = await startTestServer()
  world = await runWorld(server)
  runner = await world.runner("feed-runner", [readOnlyTool("grep")])
})
afterAll(() => server?.close())

/** Every item is numbered after the one before it, from 1. */
const expectContiguous = (items: ReadonlyArray<{ sequence: number }>) =>
  expect(items.map((item) => item.sequence)).toEqual(items.map((_, index) => index + 1))

describe("a hosted run's durable items", () => {
  it("attention_required reaches the conversation's events route and lifecycle channel; task_status items ride its feed in sequence", async () => {
    const named = await member("PUT", "/profile/agents/asks-first", {
      scope: "instance",
      description: "Greps once approved",
      configuration: runnerToolConfiguration(runner.publicId, { name: "grep", description: "Search files" }, "ask")
    })
    expect([201, 200]).toContain(named.status)
    const conversation = (
      await member(
        "POST",
        `/workspaces/${world.workspaceId}/conversations`,
        { conversation: { title: "approvals" } },
        { "idempotency-key": "feed-conversation" }
      )
    ).body.conversation.public_id as string
    const cable = openRaw(server, { headers: bearer(world.agent.token) })
    expect(await cable.frames.take()).toEqual({ type: "welcome" })
    const identifier = JSON.stringify({
      channel: "ConversationChannel",
      workspace_id: world.workspaceId,
      conversation_id: conversation,
      items: "lifecycle"
    })
    cable.subscribe(identifier)
    expect((await cable.frames.take(about(identifier))).type).toBe("confirm_subscription")

    const input = await member(
      "POST",
      `/workspaces/${world.workspaceId}/conversations/${conversation}/inputs`,
      { input: { kind: "direct_reply", text: directive, answering_user_public_id: named.body.agent.public_id } },
      { "idempotency-key": "feed-input" }
    )
    expect(input.status).toBe(202)
    let materialization: any
    await waitForConversation(server, conversation, async () => {
      materialization = (
        await member(
          "GET",
          `/workspaces/${world.workspaceId}/conversations/${conversation}/inputs/${input.body.input.public_id}/materialization`
        )
      ).body.materialization
      return Boolean(materialization?.run_public_id)
    })
    const runId = materialization.run_public_id as string
    await waitForActorState(server, "run", runId, "needs_attention")

    const lifecycle = (type: string) =>
      cable.frames.take((frame: any) => about(identifier)(frame) && frame.message?.event?.type === type)
    const attention = (await lifecycle("attention_required")).message.event
    expect(attention).toMatchObject({
      resource: { type: "run", public_id: runId },
      payload: { run_public_id: runId, attention: { reason: "approval_required", blocked_task_keys: [call] } }
    })
    // The run's turn failed while it waits: the conversation narrates that turn_status, once.
    const failed = (await lifecycle("turn_status")).message.event
    expect(failed.payload).toMatchObject({ turn_public_id: materialization.turn_public_id, run_public_id: runId })
    cable.socket.close()

    const events = (
      await member("GET", `/workspaces/${world.workspaceId}/conversations/${conversation}/events?limit=200`)
    ).body.events as Array<any>
    expectContiguous(events)
    expect(events.find((item) => item.type === "attention_required")).toEqual(attention)
    const statuses = events.filter((item) => item.type === "task_status").map((item) => item.payload)
    expect(statuses).toContainEqual(
      expect.objectContaining({ run_public_id: runId, task_key: call, kind: "tool_task", status: "needs_approval" })
    )
    expect(statuses.every((payload) => payload.run_public_id === runId)).toBe(true)
    // Every turn_status is the conversation's own (it names its turn); the run's stays off.
    const turns = events.filter((item) => item.type === "turn_status")
    expect(turns.length).toBeGreaterThan(0)
    for (const turn of turns) {
      expect(turn.resource.type).toBe("conversation")
      expect(turn.payload).not.toHaveProperty("run_status")
    }
  })
})

describe("a standalone run's durable items", () => {
  it("stay on its own feed, as its run feed carries them", async () => {
    const calls = memberCalls(server, world)
    const created = await calls.create({
      default_runner_executor_public_id: runner.publicId,
      approval_mode: "ask",
      steps: [{ model: { prompt: directive, model: { model: "local/script" }, tools: ["grep"] } }]
    })
    expect(created.status).toBe(201)
    const runId = created.body.run.public_id as string
    await calls.call("POST", `/${runId}/start`)
    await waitForActorState(server, "run", runId, "needs_attention")
    const events = (await calls.call("GET", `/${runId}/events?limit=200`)).body.events as Array<any>
    expectContiguous(events)
    expect(events.every((item) => item.resource.type === "run" && item.resource.public_id === runId)).toBe(true)
    expect(events.find((item) => item.type === "attention_required")?.payload).toEqual({
      run_public_id: runId,
      attention: { reason: "approval_required", blocked_task_keys: [call] }
    })
    const parked = events.find((item) => item.type === "task_status" && item.payload.status === "needs_approval")
    expect(parked?.payload).toMatchObject({ task_key: call, kind: "tool_task" })
    expect(parked?.payload).not.toHaveProperty("run_public_id")
    expect(events.filter((item) => item.type === "turn_status").map((item) => item.payload.run_status)).toContain(
      "needs_attention"
    )
  })
})
