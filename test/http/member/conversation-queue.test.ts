// A conversation's queue against the supplement's "Queue, drain, steering" and its standing order,
// through the real server on real PostgreSQL: a child conversation's first input (origin child) is
// a kernel row (read first, outside the bound, never the people's to reorder); an edit answers
// every 422 of its body before the row's 409s (kernel_input_immutable, steering_held); the steering
// guard is a fence the actor judges after every 422; a held steer deleted, or returned to the queue
// when its run-backed reply settled, is withdrawn from the run and never lands there; held steers
// reordered land there in the new order; the feed narrates each input once.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { waitForActorState, waitForMessages } from "../../support/actors.ts"
import { waitForConversation } from "../../support/conversations.ts"
import { hostedReply, openConversation, type WorkspaceCall } from "../../support/hosted-runs.ts"
import {
  type AgentCall,
  agentCall,
  inboxCalls,
  type RunWorld,
  readOnlyTool,
  runnerToolConfiguration,
  runWorld,
  waitForRun,
  workspaceCall
} from "../../support/runs.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { waitForSteps } from "../../support/steps.ts"

let server: TestServer
let world: RunWorld
let member: AgentCall
let call: WorkspaceCall

beforeAll(async () => {
  server = await startTestServer()
  world = await runWorld(server)
  member = agentCall(server, world)
  call = workspaceCall(server, world)
})
afterAll(() => server?.close())

const queueOf = async (conversation: string) => (await call("GET", `/conversations/${conversation}/inputs`)).body
const post = (conversation: string, input: Record<string, unknown>) =>
  call("POST", `/conversations/${conversation}/inputs`, { input })
const patch = (conversation: string, inputId: string, input: Record<string, unknown>) =>
  call("PATCH", `/conversations/${conversation}/inputs/${inputId}`, { input })
const codeOf = (answer: { status: number; body: any }) => [answer.status, answer.body.error?.code]
const turnsOf = async (conversation: string) =>
  (await call("GET", `/conversations/${conversation}/turns?limit=100`)).body.turns as Array<any>

/** A conversation whose direct reply (local/script) runs for `ms`. */
const running = async (ms = 20_000) => {
  const conversation = await openConversation(call)
  await post(conversation, {
    kind: "direct_reply",
    text: JSON.stringify({ delay_ms: ms, reply: "late" }),
    model: { model: "local/script" }
  })
  await waitForConversation(
    server,
    conversation,
    async () => (await turnsOf(conversation)).at(-1)?.status === "running"
  )
  return conversation
}

/** A schedule's child conversation whose first input (origin child) blocked unknown_model. */
const blockedChild = async () => {
  const parent = await openConversation(call)
  const made = await call("POST", `/conversations/${parent}/schedules`, {
    schedule: { prompt: "No model", rule: { kind: "interval", every_seconds: 600 } }
  })
  expect(made.status).toBe(201)
  const ran = await call("POST", `/conversations/${parent}/schedules/${made.body.schedule.public_id}/run`)
  const { child_conversation_public_id: child, input_public_id: first } = ran.body.schedule.last_execution
  await waitForSteps(server, async () => (await queueOf(child)).inputs[0]?.state === "blocked")
  return { child: child as string, first: first as string }
}

describe("kernel rows", () => {
  it("a child's first input (origin child) is read first, outside the bound, and never the people's to reorder", async () => {
    const { child, first } = await blockedChild()
    const a = (await post(child, { kind: "message", text: "a" })).body.input.public_id
    const b = (await post(child, { kind: "message", text: "b" })).body.input.public_id
    // The caller's rows are exactly a and b: the child row is the kernel's.
    const reordered = await call("POST", `/conversations/${child}/inputs/reorder`, { inputs: [b, a] })
    expect(reordered.status).toBe(200)
    expect(reordered.body.inputs.map((row: any) => [row.public_id, row.origin])).toEqual([
      [first, "child"],
      [b, "agent"],
      [a, "agent"]
    ])
    expect(codeOf(await call("POST", `/conversations/${child}/inputs/reorder`, { inputs: [first, a, b] }))).toEqual([
      409,
      "kernel_input_immutable"
    ])
    // The bound counts the caller's 16 rows, never the kernel's.
    for (let index = 2; index < 16; index++) {
      expect((await post(child, { kind: "message", text: `m${index}` })).status).toBe(202)
    }
    expect((await queueOf(child)).input_queue).toEqual({ limit: 16, held: 16 })
    expect(codeOf(await post(child, { kind: "message", text: "one too many" }))).toEqual([409, "input_queue_full"])
  })

  it("an edit answers its body's 422 before the row's 409: kernel_input_immutable, steering_held", async () => {
    const { child, first } = await blockedChild()
    expect(codeOf(await patch(child, first, { kind: "message" }))).toEqual([422, "validation_failed"])
    expect(codeOf(await patch(child, first, { model: { model: "no-provider" } }))).toEqual([422, "validation_failed"])
    expect(codeOf(await patch(child, first, { text: "mine now" }))).toEqual([409, "kernel_input_immutable"])

    const conversation = await running()
    const steer = (await post(conversation, { kind: "message", text: "s", delivery_mode: "steer" })).body.input
    expect(steer.state).toBe("steering")
    // A message takes no model; a held steer is never downgraded: both 422 whatever else the body holds.
    const model = await patch(conversation, steer.public_id, { model: { model: "local/echo" } })
    expect(codeOf(model)).toEqual([422, "validation_failed"])
    expect(model.body.error.message).toContain("model")
    expect(codeOf(await patch(conversation, steer.public_id, { delivery_mode: "steer", text: "x" }))).toEqual([
      422,
      "validation_failed"
    ])
    expect(codeOf(await patch(conversation, steer.public_id, { text: "x" }))).toEqual([409, "steering_held"])
    expect(codeOf(await patch(conversation, steer.public_id, { delivery_mode: "steer_now", text: "x" }))).toEqual([
      409,
      "steering_held"
    ])
    await call("POST", `/conversations/${conversation}/cancellation`)
  })
})

describe("the steering guard", () => {
  it("is a fence: a body's 422 comes first; then the actor judges it against the running reply's run", async () => {
    const conversation = await running()
    const guarded = (members: Record<string, unknown>) =>
      post(conversation, {
        kind: "direct_reply",
        text: "guarded",
        delivery_mode: "steer",
        expected_steering_run_public_id: "01900000-0000-7000-8000-000000000000",
        ...members
      })
    expect(codeOf(await guarded({ model: { model: "no-provider" } }))).toEqual([422, "validation_failed"])
    expect(codeOf(await guarded({ delivery_mode: "queue" }))).toEqual([422, "steering_guard_requires_steer"])
    // A direct reply runs here: no run is steered, whatever the guard names.
    expect(codeOf(await guarded({}))).toEqual([409, "steering_target_changed"])
    expect((await queueOf(conversation)).inputs).toEqual([])
    await call("POST", `/conversations/${conversation}/cancellation`)
  })
})

describe("steers held against a run-backed reply", () => {
  /** A reply `answerer` answers with a call to its runner's grep, dispatched and waiting: the run, conversation and runner. */
  const dispatched = async (name: string) => {
    const runner = await world.runner(`${name}-runner`, [readOnlyTool("grep")])
    const agent = await member("PUT", `/profile/agents/${name}`, {
      scope: "instance",
      description: "Greps when asked",
      configuration: runnerToolConfiguration(runner.publicId, { name: "grep", description: "Greps" })
    })
    expect([200, 201]).toContain(agent.status)
    const conversation = await openConversation(call)
    const directive = JSON.stringify({ tool_calls: [{ name: "grep", input: { pattern: "x" } }] })
    const { runId } = await hostedReply(server, call, conversation, agent.body.agent.public_id, directive)
    await waitForRun(server, runId, async () => (await task(runId, "s1-model-1-t0"))?.status === "dispatched")
    return { runId, conversation, runner }
  }
  const task = async (runId: string, key: string) =>
    (await member("GET", `/workspaces/${world.workspaceId}/runs/${runId}/tasks/${key}`)).body.task
  const sealedTexts = async (runId: string, key: string) =>
    (
      await member("GET", `/workspaces/${world.workspaceId}/runs/${runId}/tasks/${key}/request`)
    ).body.request.entries.map((entry: { parts: Array<{ text: string }> }) =>
      entry.parts.map((part) => part.text).join("")
    )

  it("a held steer deleted never lands in the run's next round; the feed narrates each input once", async () => {
    const { runId, conversation, runner } = await dispatched("steer-canceler")
    const canceled = JSON.stringify({ reply: "canceled steer" })
    const kept = JSON.stringify({ reply: "kept steer" })
    const first = (await post(conversation, { kind: "message", text: canceled, delivery_mode: "steer" })).body.input
    const second = (await post(conversation, { kind: "message", text: kept, delivery_mode: "steer" })).body.input
    expect([first.state, second.state]).toEqual(["steering", "steering"])
    await waitForMessages(server, "run", runId)
    expect((await call("DELETE", `/conversations/${conversation}/inputs/${first.public_id}`)).status).toBe(204)
    await waitForMessages(server, "run", runId)

    const inbox = inboxCalls(server, runner.token)
    const claimed = await inbox.claim(runId, "s1-model-1-t0")
    await inbox.commit(runId, "s1-model-1-t0", { claim_token: claimed.body.claim.claim_token, content: "3 hits" })
    await waitForActorState(server, "run", runId, "completed")
    const texts = await sealedTexts(runId, "s1-model-1-c")
    expect(texts).toContain(kept)
    expect(texts).not.toContain(canceled)
    expect((await task(runId, "s1-model-1-c")).output).toBe("kept steer")

    await waitForConversation(
      server,
      conversation,
      async () => (await turnsOf(conversation))[0]?.status === "completed"
    )
    const items = ((await call("GET", `/conversations/${conversation}/events?limit=200`)).body.events as Array<any>)
      .filter((item) => item.type.startsWith("input_"))
      .map((item) => [item.type, item.resource.type, item.payload.input_public_id])
    expect(items.filter((item) => item[2] !== first.public_id && item[2] !== second.public_id)).toHaveLength(2)
    expect(items.filter((item) => item[2] === first.public_id || item[2] === second.public_id)).toEqual([
      ["input_accepted", "conversation", first.public_id],
      ["input_accepted", "conversation", second.public_id],
      ["input_deleted", "conversation", first.public_id],
      ["input_materialized", "conversation", second.public_id]
    ])
  })

  it("held steers reordered land in the run's next round in the new order", async () => {
    const { runId, conversation, runner } = await dispatched("steer-reorderer")
    const first = JSON.stringify({ reply: "first steer" })
    const second = JSON.stringify({ reply: "second steer" })
    const a = (await post(conversation, { kind: "message", text: first, delivery_mode: "steer" })).body.input
    const b = (await post(conversation, { kind: "message", text: second, delivery_mode: "steer" })).body.input
    expect([a.state, b.state]).toEqual(["steering", "steering"])
    await waitForMessages(server, "run", runId)
    const reordered = await call("POST", `/conversations/${conversation}/inputs/reorder`, {
      inputs: [b.public_id, a.public_id]
    })
    expect(reordered.status).toBe(200)
    await waitForMessages(server, "run", runId)

    const inbox = inboxCalls(server, runner.token)
    const claimed = await inbox.claim(runId, "s1-model-1-t0")
    await inbox.commit(runId, "s1-model-1-t0", { claim_token: claimed.body.claim.claim_token, content: "3 hits" })
    await waitForActorState(server, "run", runId, "completed")
    expect((await sealedTexts(runId, "s1-model-1-c")).slice(-2)).toEqual([second, first])
    expect((await task(runId, "s1-model-1-c")).output).toBe("first steer")
  })

  it("a held steer its reply settled without landing returns to the queue and is withdrawn from the run", async () => {
    const agent = await member("PUT", "/profile/agents/steer-releaser", {
      scope: "instance",
      description: "Reads notes when asked",
      configuration: { approval_mode: "bypass", default_model: "local/script", kernel_tools: ["svc.memory.read"] }
    })
    expect([200, 201]).toContain(agent.status)
    const conversation = await openConversation(call)
    const failing = JSON.stringify({ delay_ms: 1500, fail: "provider_model_unavailable" })
    const { runId } = await hostedReply(server, call, conversation, agent.body.agent.public_id, failing)
    await waitForRun(server, runId, async () => (await task(runId, "s1-model-1"))?.status === "running")
    const steered = JSON.stringify({ reply: "steered" })
    const steer = (await post(conversation, { kind: "message", text: steered, delivery_mode: "steer" })).body.input
    expect(steer.state).toBe("steering")
    await waitForActorState(server, "run", runId, "needs_attention")
    // The failed reply had no next round: the steer went back to the queue and became a message turn.
    await waitForConversation(server, conversation, async () => (await turnsOf(conversation)).length === 2)
    expect((await turnsOf(conversation)).map((turn) => [turn.kind, turn.status, turn.content])).toEqual([
      ["direct_reply", "failed", ""],
      ["message", "completed", steered]
    ])
    await waitForMessages(server, "run", runId)
    // Retried, the round asks with its own prompt only: the steer is the conversation's now.
    expect(
      (
        await member("POST", `/workspaces/${world.workspaceId}/runs/${runId}/tasks/s1-model-1/retry`, {
          model: "local/echo"
        })
      ).status
    ).toBe(200)
    await waitForActorState(server, "run", runId, "completed")
    expect(await sealedTexts(runId, "s1-model-1")).not.toContain(steered)
  })
})
