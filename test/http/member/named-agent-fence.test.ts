// The dedication fence for named agent definitions over HTTP against the database (spec "Named
// agent definition": an instance-scope definition is "dedication-fenced like" its declarer, a
// steward-scope one "never dedication-fenced"; conversations supplement "Standing"): in a
// workspace dedicated to the declaring agent, the writes a definition's reply makes (a kernel
// cancel in another conversation, a spawned child) pass where its declarer's would, for an
// instance-scope definition of the declarer and for a steward-scope one of another agent alike.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { hostedReply, openConversation, type WorkspaceCall } from "../../support/hosted-runs.ts"
import { bearer, request } from "../../support/http.ts"
import type { ConnectedAgent } from "../../support/members.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { waitForSteps } from "../../support/steps.ts"

let server: TestServer
let declarer: ConnectedAgent
let sibling: ConnectedAgent
let member: WorkspaceCall

const declare = async (agent: ConnectedAgent, name: string, scope: "instance" | "steward") => {
  const made = await request(server.baseUrl, "PUT", `/agent_api/v1/profile/agents/${name}`, {
    headers: bearer(agent.token),
    body: {
      scope,
      description: `The ${name}`,
      configuration: {
        approval_mode: "bypass",
        default_model: "local/script",
        kernel_tools: ["svc.conversation.cancel", "svc.conversation.spawn"]
      }
    }
  })
  expect(made.status).toBe(201)
  return made.body.agent.public_id as string
}

beforeAll(async () => {
  server = await startTestServer()
  const account = await twoStewards(server, { owner: ["fence-declarer", "fence-sibling"], member: [] })
  ;[declarer, sibling] = account.ownerAgents as [ConnectedAgent, ConnectedAgent]
  // The declarer's workspace: private and dedicated to it.
  const made = await request(server.baseUrl, "POST", "/agent_api/v1/workspaces", {
    headers: { ...bearer(declarer.token), "idempotency-key": "fence-ws" },
    body: { workspace: { name: "Dedicated room" } }
  })
  expect(made.status).toBe(201)
  const workspaceId = made.body.workspace.public_id as string
  let keys = 0
  member = (method, path, body) =>
    request(server.baseUrl, method, `/agent_api/v1/workspaces/${workspaceId}${path}`, {
      headers: { ...bearer(declarer.token), "idempotency-key": `fence-${++keys}` },
      ...(body === undefined ? {} : { body })
    })
})
afterAll(() => server?.close())

/** The calls of the answerer's reply in a fresh conversation whose model cancels in `peer` and spawns a child. */
const writesOf = async (answerer: string) => {
  const host = await openConversation(member, { title: `host of ${answerer}` })
  const peer = await openConversation(member, { title: `peer of ${answerer}` })
  const calls = [
    { name: "cancel", input: { to: peer } },
    { name: "spawn", input: { prompt: "a child", model: "local/echo" } }
  ]
  const { runId } = await hostedReply(server, member, host, answerer, JSON.stringify({ tool_calls: calls }))
  const task = async (key: string) => (await member("GET", `/runs/${runId}/tasks/${key}`)).body.task
  let tasks: Array<any> = []
  await waitForSteps(
    server,
    async () => {
      tasks = await Promise.all(["s1-model-1-t0", "s1-model-1-t1"].map(task))
      return tasks.every((each) => each !== undefined && ["completed", "failed"].includes(each.status))
    },
    { timeout: "30 seconds" }
  )
  return tasks.map((each) => ({ status: each.status, key: each.error?.key ?? null }))
}

describe("a workspace dedicated to the declaring agent", () => {
  it("an instance-scope definition of the declarer writes where the declarer may", async () => {
    const inner = await declare(declarer, "inner", "instance")
    const completed = { status: "completed", key: null }
    expect(await writesOf(inner)).toEqual([completed, completed])
  })

  it("a steward-scope definition of another agent is never fenced", async () => {
    const published = await declare(sibling, "published", "steward")
    const completed = { status: "completed", key: null }
    expect(await writesOf(published)).toEqual([completed, completed])
  })
})
