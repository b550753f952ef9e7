// A run-backed variant as every turn door shows it (supplement conversations.md "Turns and
// variants"): its run's mainline rounds and the run's runner_effects, the same on the turn read,
// the window and the variant listing, and agreeing with the run's own transcript and trace.
import { afterAll, beforeAll, expect, it } from "vitest"
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
  await waitForActorState(server, "run", runId, "completed")
  const turnPath = `/conversations/${conversation}/turns/${placed.turn_public_id}`
  await waitForConversation(
    server,
    conversation,
    async () => (await member("GET", turnPath)).body.turn?.status === "completed"
  )

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

it("a run-backed reply has no sealed request to ask again: regeneration is 422 and the conversation goes on", async () => {
  const named = await request(server.baseUrl, "PUT", "/agent_api/v1/profile/agents/reader", {
    headers: bearer(world.agent.token),
    body: {
      scope: "instance",
      description: "Reads notes when asked",
      configuration: { approval_mode: "bypass", default_model: "local/script", kernel_tools: ["svc.memory.read"] }
    }
  })
  expect([200, 201]).toContain(named.status)
  let keys = 0
  const call = (method: string, path: string, body?: unknown) =>
    member(method, path, body, { "idempotency-key": `regenerated-${++keys}` })
  const conversation = await openConversation(call)
  const { runId, turnId } = await hostedReply(server, call, conversation, named.body.agent.public_id, "hello")
  await waitForActorState(server, "run", runId, "completed")
  const turnPath = `/conversations/${conversation}/turns/${turnId}`
  await waitForConversation(
    server,
    conversation,
    async () => (await member("GET", turnPath)).body.turn?.status === "completed"
  )
  const refused = await call("POST", `${turnPath}/regeneration`)
  expect([refused.status, refused.body.error?.code]).toEqual([422, "validation_failed"])
  const after = await call("POST", `/conversations/${conversation}/inputs`, {
    input: { kind: "message", text: "after" }
  })
  expect(after.status).toBe(202)
  await waitForConversation(
    server,
    conversation,
    async () => (await member("GET", `/conversations/${conversation}/turns`)).body.turns.length === 2
  )
})
