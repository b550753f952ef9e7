// Steers a round consumed stay its input when the round is asked again (runs supplement "Run
// inputs door": a steer lands before the next mainline round, consumed into it): a failed round
// retried, a round a force pause aborted and resume re-asks, and a round compacted and re-queued
// each send the steers they had consumed, after their prompt, in the sealed request; a hosted
// run's steer (its conversation's input) too.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { waitForActorState, waitForMessages } from "../../support/actors.ts"
import { hostedReply, openConversation } from "../../support/hosted-runs.ts"
import {
  type AgentCall,
  agentCall,
  inboxCalls,
  memberCalls,
  type RunWorld,
  readOnlyTool,
  runnerToolConfiguration,
  runWorld,
  waitForRun,
  workspaceCall
} from "../../support/runs.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
let world: RunWorld
let calls: ReturnType<typeof memberCalls>
let member: AgentCall
let keys = 0

beforeAll(async () => {
  server = await startTestServer()
  world = await runWorld(server)
  calls = memberCalls(server, world)
  member = agentCall(server, world)
})

/** A conversation titled `title` and a reply `answerer` answers there to `directive`: the conversation, its run and a workspace call. */
const hostedRun = async (title: string, answerer: string, directive: string) => {
  const workspace = workspaceCall(server, world)
  const chat = await openConversation(workspace, { title })
  const { runId } = await hostedReply(server, workspace, chat, answerer, directive)
  /** Posts `text` as a steer of the conversation: the input as accepted. */
  const steerChat = async (text: string) =>
    (
      await workspace("POST", `/conversations/${chat}/inputs`, {
        input: { kind: "message", text, delivery_mode: "steer" }
      })
    ).body.input
  return { runId, steerChat }
}
afterAll(() => server?.close())

const created = async (steps: ReadonlyArray<unknown>) => {
  const made = await calls.create({ approval_mode: "bypass", steps })
  expect(made.status).toBe(201)
  return made.body.run.public_id as string
}

/** A run, with the resolution tokens of its authored asks. */
const createdWithTokens = async (steps: ReadonlyArray<unknown>) => {
  const made = await calls.create({ approval_mode: "bypass", steps })
  expect(made.status).toBe(201)
  return {
    id: made.body.run.public_id as string,
    tokens: made.body.receipt.resolution_tokens as Record<string, string>
  }
}

const steer = async (runId: string, text: string) => {
  const posted = await calls.call(
    "POST",
    `/${runId}/inputs`,
    { input: { kind: "message", text, delivery_mode: "steer" } },
    { "idempotency-key": `steer-${++keys}` }
  )
  expect(posted.status).toBe(202)
  expect(posted.body.input.state).toBe("steering")
  return posted.body.input.public_id as string
}

const task = async (runId: string, key: string) => (await calls.call("GET", `/${runId}/tasks/${key}`)).body.task

/** The texts of a model task's sealed request, entry by entry. */
const sealedTexts = async (runId: string, key: string) => {
  const sealed = await calls.call("GET", `/${runId}/tasks/${key}/request`)
  expect(sealed.status).toBe(200)
  return sealed.body.request.entries.map((entry: { role: string; parts: Array<{ text: string }> }) => ({
    role: entry.role,
    text: entry.parts.map((part) => part.text).join("")
  }))
}

const model = (prompt: string, ref = "local/script") => ({ model: { prompt, model: { model: ref } } })

describe("a re-asked round carries the steers it consumed", () => {
  it("retry: a steer consumed into a round that fails is in the retried round's sealed request", async () => {
    // The steer is the round's last user message: its directive fails the round.
    const failing = JSON.stringify({ fail: "provider_model_unavailable" })
    const id = await created([model("first")])
    const inputId = await steer(id, failing)
    await calls.call("POST", `/${id}/start`)
    await waitForActorState(server, "run", id, "needs_attention")
    expect(await task(id, "s1-model-1")).toMatchObject({ status: "failed" })
    const consumed = (await calls.call("GET", `/${id}/inputs`)).body.inputs
    expect(consumed.find((each: { public_id: string }) => each.public_id === inputId)).toBeUndefined()

    // Retried on local/echo: the round asks again with its prompt and the steer it consumed.
    const retried = await calls.call("POST", `/${id}/tasks/s1-model-1/retry`, { model: "local/echo" })
    expect(retried.status).toBe(200)
    await waitForActorState(server, "run", id, "completed")
    expect(await sealedTexts(id, "s1-model-1")).toEqual([
      { role: "user", text: "first" },
      { role: "user", text: failing }
    ])
    expect(await task(id, "s1-model-1")).toMatchObject({
      status: "completed",
      output: `echo: ${failing}`
    })
  })

  it("force pause: a round aborted by the pause asks again on resume with the steer it consumed", async () => {
    const slow = JSON.stringify({ reply: "steered", delay_ms: 2000 })
    const id = await created([model("first")])
    await steer(id, slow)
    await calls.call("POST", `/${id}/start`)
    expect((await task(id, "s1-model-1")).status).toBe("running")
    const paused = await calls.call("POST", `/${id}/pause`, { force: true })
    expect(paused.status).toBe(200)
    expect(await task(id, "s1-model-1")).toMatchObject({ status: "waiting" })
    expect((await calls.call("POST", `/${id}/resume`, {})).status).toBe(200)
    await waitForActorState(server, "run", id, "completed")
    expect(await sealedTexts(id, "s1-model-1")).toEqual([
      { role: "user", text: "first" },
      { role: "user", text: slow }
    ])
    expect((await task(id, "s1-model-1")).output).toBe("steered")
  })

  it("compact: a round over its window re-queued under its summary keeps the steer it consumed", async () => {
    // local/tiny (window 256): the second round replays the first (124 tokens and its echo) and fails.
    const first = "alpha ".repeat(80).trim()
    const { id, tokens } = await createdWithTokens([
      model(first, "local/tiny"),
      { ask: { prompt: "go on?" } },
      model("beta ".repeat(30).trim(), "local/tiny")
    ])
    await calls.call("POST", `/${id}/start`)
    await waitForRun(server, id, async () => (await task(id, "s1-ask-1")).status === "dispatched")
    await steer(id, "gamma")
    const resolved = await calls.call("POST", `/${id}/tasks/s1-ask-1/resolution`, {
      resolution_token: tokens["s1-ask-1"],
      content: "yes"
    })
    expect(resolved.status).toBe(200)
    await waitForActorState(server, "run", id, "needs_attention")
    expect(await task(id, "s1-model-2")).toMatchObject({ status: "failed", error: { key: "context_window_exceeded" } })
    expect((await sealedTexts(id, "s1-model-2")).at(-1)).toEqual({ role: "user", text: "gamma" })

    expect((await calls.call("POST", `/${id}/tasks/s1-model-2/compact`)).status).toBe(200)
    await waitForActorState(server, "run", id, "completed")
    const compacted = await sealedTexts(id, "s1-model-2")
    expect(compacted.map((entry: { role: string }) => entry.role)).toEqual(["user", "user", "user"])
    expect(compacted.slice(1)).toEqual([
      { role: "user", text: "beta ".repeat(30).trim() },
      { role: "user", text: "gamma" }
    ])
  })

  it("hosted: a conversation's steer held while a force pause aborts the first round is in that round's re-asked request", async () => {
    const agent = await member("PUT", "/profile/agents/paused-steered", {
      scope: "instance",
      description: "Reads notes when asked",
      configuration: { approval_mode: "bypass", default_model: "local/script", kernel_tools: ["svc.memory.read"] }
    })
    expect([200, 201]).toContain(agent.status)
    const slow = JSON.stringify({ reply: "unsteered", delay_ms: 3000 })
    const { runId, steerChat } = await hostedRun("paused", agent.body.agent.public_id, slow)
    await waitForRun(server, runId, async () => (await task(runId, "s1-model-1"))?.status === "running")
    const steered = JSON.stringify({ reply: "steered" })
    expect((await steerChat(steered)).state).toBe("steering")
    await waitForMessages(server, "run", runId)
    expect((await calls.call("POST", `/${runId}/pause`, { force: true })).status).toBe(200)
    expect((await calls.call("POST", `/${runId}/resume`, {})).status).toBe(200)
    await waitForActorState(server, "run", runId, "completed")
    expect(await sealedTexts(runId, "s1-model-1")).toEqual([
      { role: "user", text: slow },
      { role: "user", text: steered }
    ])
    expect((await task(runId, "s1-model-1")).output).toBe("steered")
  })

  it("hosted: a conversation's steer consumed into a continuation that fails is in the retried continuation's request", async () => {
    const runner = await world.runner("steer-runner", [readOnlyTool("grep")])
    const agent = await member("PUT", "/profile/agents/steered", {
      scope: "instance",
      description: "Greps when asked",
      configuration: runnerToolConfiguration(runner.publicId, { name: "grep", description: "Greps" })
    })
    expect([200, 201]).toContain(agent.status)
    const directive = JSON.stringify({ tool_calls: [{ name: "grep", input: { pattern: "x" } }] })
    const { runId, steerChat } = await hostedRun("steered", agent.body.agent.public_id, directive)
    const inbox = inboxCalls(server, runner.token)
    await waitForRun(server, runId, async () => (await task(runId, "s1-model-1-t0"))?.status === "dispatched")

    // Held against the running reply, the steer lands in the continuation, whose directive it is.
    const failing = JSON.stringify({ fail: "provider_model_unavailable" })
    expect((await steerChat(failing)).state).toBe("steering")
    const claimed = await inbox.claim(runId, "s1-model-1-t0")
    await inbox.commit(runId, "s1-model-1-t0", { claim_token: claimed.body.claim.claim_token, content: "3 hits" })
    await waitForActorState(server, "run", runId, "needs_attention")
    expect(await task(runId, "s1-model-1-c")).toMatchObject({ status: "failed" })

    const retried = await calls.call("POST", `/${runId}/tasks/s1-model-1-c/retry`, { model: "local/echo" })
    expect(retried.status).toBe(200)
    await waitForActorState(server, "run", runId, "completed")
    expect((await sealedTexts(runId, "s1-model-1-c")).at(-1)).toEqual({ role: "user", text: failing })
    expect((await task(runId, "s1-model-1-c")).output).toBe(`echo: ${failing}`)
  })
})
