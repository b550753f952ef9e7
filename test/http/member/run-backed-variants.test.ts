// A run-backed variant as every turn door shows it (supplement conversations.md "Turns and
// variants"): its run's mainline rounds and the run's runner_effects, the same on the turn read,
// the window and the variant listing, and agreeing with the run's own transcript and trace; a
// regeneration of a run-backed reply is a new run for the turn, a sibling candidate.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { waitForActorState } from "../../support/actors.ts"
import { waitForConversation } from "../../support/conversations.ts"
import { hostedReply, openConversation } from "../../support/hosted-runs.ts"
import { bearer, request } from "../../support/http.ts"
import {
  inboxCalls,
  memberCalls,
  type RunWorld,
  runnerToolConfiguration,
  runWorld,
  waitForRun,
  writeTool
} from "../../support/runs.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
let world: RunWorld
let runner: { token: string; publicId: string }
let answererId: string

const member = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  request(server.baseUrl, method, `/agent_api/v1/workspaces/${world.workspaceId}${path}`, {
    headers: { ...bearer(world.agent.token), ...headers },
    ...(body === undefined ? {} : { body })
  })

/** Waits until run `runId` is `runState`, then until the turn at `turnPath` reads `turnStatus`. */
const runThenTurn = async (
  conversation: string,
  turnPath: string,
  runId: string,
  runState: string,
  turnStatus: string
) => {
  await waitForActorState(server, "run", runId, runState)
  await waitForConversation(
    server,
    conversation,
    async () => (await member("GET", turnPath)).body.turn?.status === turnStatus
  )
}

beforeAll(async () => {
  server = await startTestServer()
  world = await runWorld(server, { agent: "variant-agent", workspace: "variant-runs", key: "variant-runs-ws" })
  runner = await world.runner("variant-runner", [writeTool("deploy")])
  const named = await request(server.baseUrl, "PUT", "/agent_api/v1/profile/agents/deployer", {
    headers: bearer(world.agent.token),
    body: {
      scope: "instance",
      description: "Deploys through a runner",
      configuration: runnerToolConfiguration(runner.publicId, { name: "deploy", description: "Deploys" })
    }
  })
  expect([200, 201]).toContain(named.status)
  answererId = named.body.agent.public_id
})
afterAll(() => server?.close())

it("a run-backed variant shows its run's mainline rounds and runner_effects on every turn door", async () => {
  const made = await member("POST", "/conversations", { conversation: {} }, { "idempotency-key": "variant-c" })
  const conversation = made.body.conversation.public_id as string
  const directive = JSON.stringify({ tool_calls: [{ name: "deploy", input: { target: "prod" } }] })
  const accepted = await member(
    "POST",
    `/conversations/${conversation}/inputs`,
    { input: { kind: "direct_reply", text: directive, answering_user_public_id: answererId } },
    { "idempotency-key": "variant-input" }
  )
  expect(accepted.status).toBe(202)
  let placed: any
  await waitForConversation(server, conversation, async () => {
    placed = (
      await member("GET", `/conversations/${conversation}/inputs/${accepted.body.input.public_id}/materialization`)
    ).body.materialization
    return Boolean(placed?.run_public_id)
  })
  const runId = placed.run_public_id as string
  const inbox = inboxCalls(server, runner.token)
  let row: any
  await waitForRun(server, runId, async () => {
    row = (await inbox.list()).body.tasks.find((each: any) => each.run_public_id === runId)
    return row !== undefined
  })
  const claimed = await inbox.claim(runId, row.task_key)
  const committed = await inbox.commit(runId, row.task_key, {
    claim_token: claimed.body.claim.claim_token,
    content: "deployed",
    metadata: { checkpoint: "v7" }
  })
  expect(committed.status).toBe(200)
  const turnPath = `/conversations/${conversation}/turns/${placed.turn_public_id}`
  await runThenTurn(conversation, turnPath, runId, "completed", "completed")

  const runs = memberCalls(server, world)
  const trace = (await runs.call("GET", `/${runId}`)).body.run
  const transcript = (await runs.call("GET", `/${runId}/transcript`)).body.rounds as Array<any>
  expect(trace.runner_effects).toEqual({
    status: "touched",
    runners: [
      { runner_executor_public_id: runner.publicId, run_public_id: runId, task_key: row.task_key, checkpoint: "v7" }
    ]
  })
  const shown = (await member("GET", turnPath)).body.turn.active_variant
  expect(shown).toMatchObject({ source: "run", run_public_id: runId, runner_effects: trace.runner_effects })
  expect(shown.rounds.map((round: any) => round.task_key)).toEqual(transcript.map((round) => round.task_key))
  expect(shown.rounds.length).toBeGreaterThan(0)
  for (const [index, round] of shown.rounds.entries()) {
    const { task_key, status, visibility, text_preview, text_bytes, usage, started_at, completed_at } =
      transcript[index]
    expect(round).toEqual(
      Object.fromEntries(
        Object.entries({
          task_key,
          status,
          visibility,
          text_preview,
          text_bytes,
          usage,
          started_at,
          completed_at
        }).filter(([, value]) => value !== undefined && value !== null)
      )
    )
  }
  expect(shown.rounds.at(-1)).toMatchObject({ status: "completed", text_preview: shown.content })
  const window = (await member("GET", `/conversations/${conversation}/turns`)).body.turns
  expect(window.find((turn: any) => turn.public_id === placed.turn_public_id).active_variant).toEqual(shown)
  const listed = (await member("GET", `${turnPath}/variants`)).body.variants
  expect(listed).toEqual([shown])
})

describe("regenerating a run-backed reply opens a new hosted run for the turn", () => {
  let echoer: string
  let keys = 0
  const call = (method: string, path: string, body?: unknown, key = `regenerated-${++keys}`) =>
    member(method, path, body, { "idempotency-key": key })

  /** A named agent answering through a run (it imports a kernel tool) on `model`: its public id. */
  const answererOn = async (name: string, model: string) => {
    const named = await request(server.baseUrl, "PUT", `/agent_api/v1/profile/agents/${name}`, {
      headers: bearer(world.agent.token),
      body: {
        scope: "instance",
        description: `Answers on ${model}`,
        configuration: { approval_mode: "bypass", default_model: model, kernel_tools: ["svc.memory.read"] }
      }
    })
    expect([200, 201]).toContain(named.status)
    return named.body.agent.public_id as string
  }

  beforeAll(async () => {
    // Its replies are echoes: a regeneration asked of local/script runs the input's directive instead.
    echoer = await answererOn("echoer", "local/echo")
  })

  /** A completed run-backed reply to `text`: its conversation, turn path and first run. */
  const answered = async (text: string) => {
    const conversation = await openConversation(call)
    const { runId, turnId } = await hostedReply(server, call, conversation, echoer, text)
    const turnPath = `/conversations/${conversation}/turns/${turnId}`
    await waitForConversation(
      server,
      conversation,
      async () => (await member("GET", turnPath)).body.turn?.status === "completed"
    )
    return { conversation, turnPath, runId }
  }

  const regenerate = (turnPath: string, key: string) =>
    call("POST", `${turnPath}/regeneration`, { regeneration: { model: { model: "local/script" } } }, key)

  it("202 with a new running run-backed candidate; the old one shows until the new run completes", async () => {
    const directive = JSON.stringify({ reply: "second take", delay_ms: 1500 })
    const { conversation, turnPath, runId } = await answered(directive)
    const accepted = await regenerate(turnPath, "regen-run-ok")
    expect(accepted.status).toBe(202)
    const fresh = accepted.body.variant
    expect(accepted.body.turn).toMatchObject({ status: "running" })
    expect(fresh).toMatchObject({ source: "run", active: false, status: "running" })
    expect(fresh.run_public_id).toEqual(expect.any(String))
    expect(fresh.run_public_id).not.toBe(runId)

    const during = (await member("GET", turnPath)).body.turn
    expect(during).toMatchObject({
      status: "running",
      content: `echo: ${directive}`,
      active_variant: { run_public_id: runId, active: true },
      running_variant: { public_id: fresh.public_id, run_public_id: fresh.run_public_id }
    })
    const replay = await regenerate(turnPath, "regen-run-ok")
    expect([replay.status, replay.headers.get("idempotency-replayed")]).toEqual([202, "true"])
    expect(replay.body).toEqual(accepted.body)
    const receipt = await member("GET", `${turnPath}/regeneration_receipt?idempotency_key=regen-run-ok`)
    expect([receipt.status, receipt.body]).toEqual([200, accepted.body])

    await runThenTurn(conversation, turnPath, fresh.run_public_id, "completed", "completed")
    const after = (await member("GET", turnPath)).body.turn
    expect(after).toMatchObject({
      content: "second take",
      active_variant: { public_id: fresh.public_id, source: "run", run_public_id: fresh.run_public_id },
      running_variant: null
    })
    expect(after.active_variant.rounds.at(-1)).toMatchObject({ status: "completed", text_preview: "second take" })
    const listed = (await member("GET", `${turnPath}/variants`)).body.variants
    expect(listed.map((variant: any) => [variant.run_public_id, variant.status, variant.active])).toEqual([
      [runId, "completed", false],
      [fresh.run_public_id, "completed", true]
    ])
    const events = (await member("GET", `/conversations/${conversation}/events?limit=200`)).body.events
    const items = events.map((event: any) => ({ type: event.type, ...event.payload }))
    expect(items).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          type: "turn_variant",
          variant_public_id: fresh.public_id,
          source: "run",
          active: false
        }),
        expect.objectContaining({
          type: "turn_status",
          status: "running",
          variant_public_id: fresh.public_id,
          run_public_id: fresh.run_public_id
        }),
        expect.objectContaining({ type: "turn_variant", variant_public_id: fresh.public_id, active: true })
      ])
    )
  })

  it("a regeneration canceled leaves its candidate in the deck: the old one shows and the turn is completed", async () => {
    const directive = JSON.stringify({ reply: "never shown", delay_ms: 30000 })
    const { conversation, turnPath, runId } = await answered(directive)
    const accepted = await regenerate(turnPath, "regen-run-cut")
    expect(accepted.status).toBe(202)
    expect((await call("POST", `/conversations/${conversation}/cancellation`)).status).toBe(202)
    await runThenTurn(conversation, turnPath, accepted.body.variant.run_public_id, "canceled", "completed")
    const after = (await member("GET", turnPath)).body.turn
    expect(after).toMatchObject({ content: `echo: ${directive}`, active_variant: { run_public_id: runId } })
    const listed = (await member("GET", `${turnPath}/variants`)).body.variants
    expect(listed.map((variant: any) => [variant.status, variant.active])).toEqual([
      ["completed", true],
      ["canceled", false]
    ])
  })

  it("a first reply whose run is held at needs_attention, retried, asks its own prompt once", async () => {
    const directive = JSON.stringify({ fail: "provider_model_unavailable" })
    const scripted = await answererOn("scripted", "local/script")
    const conversation = await openConversation(call)
    const { runId, turnId } = await hostedReply(server, call, conversation, scripted, directive)
    const turnPath = `/conversations/${conversation}/turns/${turnId}`
    await runThenTurn(conversation, turnPath, runId, "needs_attention", "failed")
    const held = (await memberCalls(server, world).call("GET", `/${runId}`)).body.run
    const [key] = held.attention.blocked_task_keys
    const retried = await memberCalls(server, world).call("POST", `/${runId}/tasks/${key}/retry`, {
      model: "local/echo"
    })
    expect(retried.status).toBe(200)
    await runThenTurn(conversation, turnPath, runId, "completed", "completed")
    expect((await member("GET", turnPath)).body.turn).toMatchObject({
      content: `echo: ${directive}`,
      active_variant: { run_public_id: runId, status: "completed", failure_reason_key: null }
    })
  })

  it("a regeneration whose run is held at needs_attention shows its failed candidate and fails the turn until it runs again", async () => {
    const directive = JSON.stringify({ fail: "provider_model_unavailable" })
    const { conversation, turnPath } = await answered(directive)
    const accepted = await regenerate(turnPath, "regen-run-held")
    expect(accepted.status).toBe(202)
    const fresh = accepted.body.variant
    await runThenTurn(conversation, turnPath, fresh.run_public_id, "needs_attention", "failed")
    const after = (await member("GET", turnPath)).body.turn
    expect(after).toMatchObject({
      failure_reason_key: "halt_failure",
      active_variant: { public_id: fresh.public_id, status: "failed", run_public_id: fresh.run_public_id }
    })
    // Its run retried runs the turn again: the regeneration's candidate completes, shown.
    const held = (await memberCalls(server, world).call("GET", `/${fresh.run_public_id}`)).body.run
    const [key] = held.attention.blocked_task_keys
    const retried = await memberCalls(server, world).call("POST", `/${fresh.run_public_id}/tasks/${key}/retry`, {
      model: "local/echo"
    })
    expect(retried.status).toBe(200)
    await runThenTurn(conversation, turnPath, fresh.run_public_id, "completed", "completed")
    // The turn being answered is the input, never its own history: the directive is asked once.
    expect((await member("GET", turnPath)).body.turn).toMatchObject({
      content: `echo: ${directive}`,
      active_variant: { public_id: fresh.public_id, status: "completed", failure_reason_key: null }
    })
    // The conversation goes on.
    const next = await call("POST", `/conversations/${conversation}/inputs`, {
      input: { kind: "message", text: "after" }
    })
    expect(next.status).toBe(202)
    await waitForConversation(
      server,
      conversation,
      async () => (await member("GET", `/conversations/${conversation}/turns`)).body.turns.length === 2
    )
  })
})
