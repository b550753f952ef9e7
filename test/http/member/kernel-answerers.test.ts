// Answerers the kernel picks, through the real server on real PostgreSQL, judged as a
// conversation's are (spec "Create rules"; supplement "Schedules" and "Inputs": fenced is not
// eligible): a schedule's answerer at create and PATCH (422 answerer_not_eligible) and again when
// an execution starts (it fails, the schedule's last_error_code names why), and a spawn's named
// agent (the call fails answerer_not_eligible).
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { hostedInput, type WorkspaceCall } from "../../support/hosted-runs.ts"
import { bearer, request } from "../../support/http.ts"
import type { ConnectedAgent } from "../../support/members.ts"
import { executionsOf, scheduleRowOf } from "../../support/schedules.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { waitForSteps } from "../../support/steps.ts"

let server: TestServer
let agent: ConnectedAgent
let sibling: ConnectedAgent
let outsider: ConnectedAgent
let ownerToken: string
/** Dedicated to `agent` (an agent's create). */
let dedicated: string
/** The owner's, account-wide until a test makes it private. */
let shared: string
/** `agent`'s instance definition (it passes the fence where `agent` does). */
let own: string
let keys = 0

const as = (token: string, method: string, path: string, body?: unknown) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, {
    headers: { ...bearer(token), "idempotency-key": `kernel-answerers-${++keys}` },
    body
  })
const codeOf = (answer: { status: number; body: any }) => [answer.status, answer.body?.error?.code]

const openConversation = async (token: string, workspace: string) => {
  const made = await as(token, "POST", `/workspaces/${workspace}/conversations`, { conversation: {} })
  expect(made.status).toBe(201)
  return made.body.conversation.public_id as string
}

const schedulesOf = (workspace: string, conversation: string) =>
  `/workspaces/${workspace}/conversations/${conversation}/schedules`
const scheduleBody = (answerer: string) => ({
  schedule: {
    prompt: "Ping",
    rule: { kind: "interval", every_seconds: 3600 },
    model: { model: "local/echo" },
    answering_user_public_id: answerer
  }
})

beforeAll(async () => {
  server = await startTestServer()
  const account = await twoStewards(server, { owner: ["kernel-talker", "kernel-sibling"], member: ["kernel-outsider"] })
  agent = account.ownerAgents[0] as ConnectedAgent
  sibling = account.ownerAgents[1] as ConnectedAgent
  outsider = account.memberAgents[0] as ConnectedAgent
  ownerToken = account.ownerToken
  const workspace = async (token: string, members: Record<string, unknown>) =>
    (await as(token, "POST", "/workspaces", { workspace: members })).body.workspace.public_id as string
  dedicated = await workspace(agent.token, { name: "dedicated" })
  shared = await workspace(ownerToken, { name: "shared", access_mode: "account_wide" })
  const declared = await as(agent.token, "PUT", "/profile/agents/own-helper", {
    scope: "instance",
    description: "instance helper",
    configuration: {}
  })
  expect(declared.status).toBe(201)
  own = declared.body.agent.public_id
})
afterAll(() => server?.close())

describe("a schedule's answerer", () => {
  it("create and PATCH: a sibling fenced out by the dedication is 422 answerer_not_eligible; the agent's own definition answers", async () => {
    const conversation = await openConversation(agent.token, dedicated)
    const schedules = schedulesOf(dedicated, conversation)
    expect(codeOf(await as(agent.token, "POST", schedules, scheduleBody(sibling.publicId)))).toEqual([
      422,
      "answerer_not_eligible"
    ])
    const made = await as(agent.token, "POST", schedules, scheduleBody(own))
    expect(made.status).toBe(201)
    expect(made.body.schedule.answering_user_public_id).toBe(own)
    const patched = await as(agent.token, "PATCH", `${schedules}/${made.body.schedule.public_id}`, {
      schedule: { answering_user_public_id: sibling.publicId, expected_lock_version: 0 }
    })
    expect(codeOf(patched)).toEqual([422, "answerer_not_eligible"])
  })

  it("an execution whose answerer's steward no longer sees the workspace fails answerer_not_eligible and opens no child", async () => {
    const conversation = await openConversation(ownerToken, shared)
    const schedules = schedulesOf(shared, conversation)
    const made = await as(ownerToken, "POST", schedules, scheduleBody(outsider.publicId))
    expect(made.status).toBe(201)
    const id = made.body.schedule.public_id as string
    const read = await as(ownerToken, "GET", `/workspaces/${shared}`)
    const closed = await as(ownerToken, "PUT", `/workspaces/${shared}/access_mode`, {
      access_mode: { access_mode: "private", lock_version: read.body.workspace.lock_version }
    })
    expect(closed.status).toBe(200)
    expect((await as(ownerToken, "POST", `${schedules}/${id}/run`)).status).toBe(200)
    await waitForSteps(
      server,
      async () => (await scheduleRowOf(server, id)).last_error_code === "answerer_not_eligible"
    )
    expect(await executionsOf(server, id)).toEqual([])
  })
})

describe("a spawn's answerer", () => {
  it("a sibling fenced out by the dedication fails the call answerer_not_eligible; the agent's own definition is spawned", async () => {
    // The agent answers its own reply with the kernel's spawn (a paired agent's configuration has no door).
    await server.run(
      Effect.flatMap(
        SqlClient,
        (sql) =>
          sql`UPDATE users SET configuration = ${JSON.stringify({
            approval_mode: "bypass",
            default_model: "local/script",
            kernel_tools: ["svc.conversation.spawn"]
          })}::jsonb WHERE public_id = ${agent.publicId}`
      )
    )
    const member: WorkspaceCall = (method, path, body) =>
      as(agent.token, method, `/workspaces/${dedicated}${path}`, body)
    const host = await openConversation(agent.token, dedicated)
    const calls = [
      { name: "spawn", input: { prompt: "x", agent: sibling.publicId, model: "local/echo" } },
      { name: "spawn", input: { prompt: "x", agent: own, model: "local/echo" } }
    ]
    const { runId } = await hostedInput(server, member, host, {
      kind: "direct_reply",
      text: JSON.stringify({ tool_calls: calls }),
      answering_user_public_id: agent.publicId
    })
    const taskOf = async (key: string) => (await member("GET", `/runs/${runId}/tasks/${key}`)).body.task
    let tasks: Array<any> = []
    await waitForSteps(
      server,
      async () => {
        tasks = await Promise.all(["s1-model-1-t0", "s1-model-1-t1"].map(taskOf))
        return tasks.every((task) => ["completed", "failed"].includes(task?.status))
      },
      { timeout: "30 seconds" }
    )
    expect(tasks.map((task) => [task.status, task.error?.key ?? null])).toEqual([
      ["failed", "answerer_not_eligible"],
      ["completed", null]
    ])
    const spawned = JSON.parse(tasks[1].output).conversation_id as string
    const children = (await member("GET", `/conversations/${host}/children`)).body.conversations
    expect(children.map((child: any) => child.public_id)).toEqual([spawned])
    const child = (await member("GET", `/conversations/${spawned}`)).body.conversation
    expect(child.answering_user_public_id).toBe(own)
  })
})
