// The executor plane's own address (GET /agent_api/v1/executor, PUT announcement) and member-plane
// discovery (GET /agent_api/v1/executors[/{public_id}]) with assignment scopes and presence.
import { Inspection } from "@troupe/actors/Inspection"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { bearer, request } from "../../support/http.ts"
import { createMember, createOwner, memberCredentials, ownerCredentials } from "../../support/people.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { about, isType, openRaw } from "../cable/support-cable.ts"
import { agentFields, decide, machineFields, poll, signedInBrowser, startDevice } from "../oauth/support-device.ts"

let server: TestServer
const tools: Record<string, any> = {}

const connect = async (
  browser: Awaited<ReturnType<typeof signedInBrowser>>,
  fields: Record<string, string>,
  scope?: "user_private" | "account_wide"
) => {
  const started = await startDevice(server, fields)
  await decide(browser, started.user_code, "approve", scope)
  return (await poll(server, started.device_code)).body
}

const get = (path: string, token: string) => request(server.baseUrl, "GET", path, { headers: bearer(token) })
const announce = (token: string, body: unknown) =>
  request(server.baseUrl, "PUT", "/agent_api/v1/executor/announcement", { headers: bearer(token), body })

const tool = (name: string, profile: Record<string, unknown> = {}) => ({
  name,
  effect_profile: {
    kind: "read_only",
    destructive: false,
    effect_scope: "closed",
    idempotency: "intrinsic",
    reconciliation: "none",
    ...profile
  },
  description: `The ${name} tool`,
  input_schema: { type: "object" }
})

beforeAll(async () => {
  server = await startTestServer()
  await createOwner(server)
  await createMember(server)
  const owner = await signedInBrowser(server, ownerCredentials.email, ownerCredentials.password)
  const member = await signedInBrowser(server, memberCredentials.email, memberCredentials.password)
  tools.ownerAgent = await connect(owner, agentFields("discovery-agent"))
  tools.otherAgent = await connect(owner, agentFields("other-agent"))
  tools.privateRunner = await connect(owner, machineFields("owner-private"), "user_private")
  tools.sharedRunner = await connect(owner, machineFields("owner-shared"), "account_wide")
  tools.memberRunner = await connect(member, machineFields("member-private"), "user_private")
  const otherAgentId = (await get("/agent_api/v1/profile", tools.otherAgent.access_token)).body.member.public_id
  tools.boundRunner = await connect(owner, machineFields("bound-runner", { assignment_agent_public_id: otherAgentId }))
})
afterAll(() => server?.close())

describe("announcement", () => {
  it("a new address serves nothing; the announcement replaces tools, environment and documents whole", async () => {
    const token = tools.sharedRunner.access_token
    expect((await get("/agent_api/v1/executor", token)).body.executor).toMatchObject({
      served_tools: [],
      environment: null,
      served_documents: []
    })
    const announced = await announce(token, {
      tools: [tool("search"), tool("write_file", { kind: "write", destructive: true, idempotency: "none" })],
      environment: { os: "linux", cwd: "/srv" },
      documents: [{ name: "README", description: "How to use me" }]
    })
    expect(announced.status).toBe(200)
    expect(announced.body.executor.served_tools.map((t: { name: string }) => t.name)).toEqual(["search", "write_file"])
    expect(announced.body.measured_at).toEqual(expect.any(String))
    expect((await get("/agent_api/v1/executor", token)).body.executor.environment).toEqual({ os: "linux", cwd: "/srv" })
    const cleared = await announce(token, { tools: [] })
    expect(cleared.body.executor).toMatchObject({ served_tools: [], environment: null, served_documents: [] })
  })

  it("validates with field paths", async () => {
    const token = tools.privateRunner.access_token
    const missing = await announce(token, {})
    expect([missing.status, missing.body.error.code]).toEqual([400, "parameter_missing"])
    const badKind = await announce(token, { tools: [tool("a"), tool("b", { kind: "dangerous" })] })
    expect([badKind.status, badKind.body.error.code]).toEqual([422, "validation_failed"])
    expect(badKind.body.error.message).toContain("tools.1.effect_profile.kind")
    const duplicate = await announce(token, { tools: [tool("a"), tool("a")] })
    expect(duplicate.body.error.message).toContain("tools.1.name")
    const noProfile = await announce(token, { tools: [{ name: "x" }] })
    expect(noProfile.body.error.message).toContain("tools.0.effect_profile")
    const huge = await announce(token, { tools: [], environment: { blob: "x".repeat(70_000) } })
    expect([huge.status, huge.body.error.code]).toEqual([413, "content_too_large"])
  })

  it("Executor address: active → active, served tools, environment and documents replaced by an announcement, one step of its address", async () => {
    const token = tools.memberRunner.access_token
    const announced = (await announce(token, { tools: [tool("lookup")], documents: null })).body.executor
    expect(announced).toMatchObject({ served_tools: [tool("lookup")], environment: null, served_documents: [] })
    const detail = await server.run(
      Effect.flatMap(Inspection, (inspection) => inspection.detail("executorAddress", announced.public_id))
    )
    expect(detail?.row.state_value).toBe("active")
    expect(detail?.journal.at(-1)).toMatchObject({
      event: { type: "executor.announce", announcement: { tools: [tool("lookup")], environment: null, documents: [] } },
      actions: ["executor.recordAnnouncement"]
    })
  })

  it("reads the body by its contract: /openapi.json shows its members; faults inside are 422 naming them", async () => {
    const spec = (await request(server.baseUrl, "GET", "/openapi.json")).body
    const body = spec.paths["/agent_api/v1/executor/announcement"].put.requestBody.content["application/json"].schema
    expect(Object.keys(body.properties).sort()).toEqual(["documents", "environment", "tools"])
    expect(body.required).toEqual(["tools"])
    const token = tools.privateRunner.access_token
    for (const [sent, member] of [
      [{ tools: "all" }, "tools"],
      [{ tools: [{ ...tool("a"), timeout_ms: 0 }] }, "tools.0.timeout_ms"],
      [{ tools: [tool("a\u202e")] }, "tools.0.name"],
      [{ tools: [], environment: ["linux"] }, "environment"],
      [{ tools: [], documents: [{ name: " ", description: "blank" }] }, "documents.0.name"]
    ] as const) {
      const refused = await announce(token, sent)
      expect([refused.status, refused.body.error.code], member).toEqual([422, "validation_failed"])
      expect(refused.body.error.message).toContain(member)
    }
    const notObject = await announce(token, [tool("a")])
    expect([notObject.status, notObject.body.error.code]).toEqual([400, "parameter_invalid"])
  })

  // A tool's timeout is frozen into the tasks of runs that use it: an announced one is bounded
  // like a tool step's own (1 ms to 7 days), never a number a run's task cannot keep.
  it("an announced timeout_ms is 1 ms to 7 days; beyond is 422 validation_failed naming it", async () => {
    const token = tools.privateRunner.access_token
    const week = 7 * 24 * 3600 * 1000
    for (const timeout of [week + 1, 2 ** 31, Number.MAX_SAFE_INTEGER]) {
      const refused = await announce(token, { tools: [{ ...tool("a"), timeout_ms: timeout }] })
      expect([refused.status, refused.body.error.code], String(timeout)).toEqual([422, "validation_failed"])
      expect(refused.body.error.message).toContain("tools.0.timeout_ms")
    }
    const kept = await announce(token, { tools: [{ ...tool("a"), timeout_ms: week }] })
    expect(kept.status).toBe(200)
    expect(kept.body.executor.served_tools[0].timeout_ms).toBe(week)
  })

  it("takes a transport credential only", async () => {
    expect((await announce(tools.ownerAgent.access_token, { tools: [] })).status).toBe(401)
    expect((await announce(tools.ownerAgent.executor_access_token, { tools: [] })).status).toBe(200)
  })
})

describe("the executor's own view", () => {
  const presence = (executor: Record<string, unknown>) => ({
    presence: executor.presence,
    last_seen_at: executor.last_seen_at,
    connected_at: executor.connected_at
  })
  const discovered = async (publicId: string) =>
    (await get(`/agent_api/v1/executors/${publicId}`, tools.ownerAgent.access_token)).body.executor

  it("carries presence, last_seen_at and connected_at with the discovery row's values, before and after contact", async () => {
    const token = tools.sharedRunner.access_token
    const before = (await get("/agent_api/v1/executor", token)).body.executor
    expect(presence(before)).toEqual({ presence: "not_yet_seen", last_seen_at: null, connected_at: null })
    expect(presence(await discovered(before.public_id))).toEqual(presence(before))

    const inbox = JSON.stringify({ channel: "ExecutorInboxChannel" })
    const cable = openRaw(server, { headers: bearer(token) })
    await cable.frames.take(isType("welcome"))
    cable.subscribe(inbox)
    await cable.frames.take((frame: { type?: string }) => about(inbox)(frame) && frame.type === "confirm_subscription")
    const online = (await get("/agent_api/v1/executor", token)).body.executor
    expect(online).toMatchObject({
      presence: "online",
      last_seen_at: expect.any(String),
      connected_at: expect.any(String)
    })
    expect(presence(await discovered(online.public_id))).toEqual(presence(online))
    const announced = (await announce(token, { tools: [] })).body.executor
    expect(presence(announced)).toEqual(presence(online))
    cable.socket.close()
    await cable.closed
  })
})

describe("discovery", () => {
  const names = async (token: string, query = "") =>
    ((await get(`/agent_api/v1/executors${query}`, token)).body.executors as Array<{ display_name: string }>)
      .map((e) => e.display_name)
      .sort()

  it("an agent sees account-wide machines, its steward's private ones and those bound to it", async () => {
    expect(await names(tools.ownerAgent.access_token)).toEqual(["Runner owner-private", "Runner owner-shared"])
    expect(await names(tools.otherAgent.access_token)).toEqual([
      "Runner bound-runner",
      "Runner owner-private",
      "Runner owner-shared"
    ])
  })

  it("rows carry scope, agent binding, served tools and presence", async () => {
    const { executors } = (await get("/agent_api/v1/executors", tools.otherAgent.access_token)).body
    const bound = executors.find((e: { display_name: string }) => e.display_name === "Runner bound-runner")
    const otherAgentId = (await get("/agent_api/v1/profile", tools.otherAgent.access_token)).body.member.public_id
    expect(bound).toMatchObject({
      kind: "runner",
      assignment_scope: "agent_private",
      assignment_agent_public_id: otherAgentId,
      presence: "not_yet_seen",
      last_seen_at: null
    })
    const shared = executors.find((e: { display_name: string }) => e.display_name === "Runner owner-shared")
    expect(shared).toMatchObject({ assignment_scope: "account_wide", assignment_agent_public_id: null })
  })

  it("filters by kind (runner or tool_provider, else 400); one address by id, 404 when not visible", async () => {
    expect(await names(tools.ownerAgent.access_token, "?kind=tool_provider")).toEqual([])
    for (const kind of ["agent_application", "", "RUNNER", "runner&kind=runner"]) {
      const refused = await get(`/agent_api/v1/executors?kind=${kind}`, tools.ownerAgent.access_token)
      expect([refused.status, refused.body.error.code], kind).toEqual([400, "parameter_invalid"])
    }
    const shared = (await get("/agent_api/v1/executor", tools.sharedRunner.access_token)).body.executor
    const one = await get(`/agent_api/v1/executors/${shared.public_id}`, tools.ownerAgent.access_token)
    expect(one.body.executor.public_id).toBe(shared.public_id)
    const memberRunner = (await get("/agent_api/v1/executor", tools.memberRunner.access_token)).body.executor
    const hidden = await get(`/agent_api/v1/executors/${memberRunner.public_id}`, tools.ownerAgent.access_token)
    const absent = await get(
      "/agent_api/v1/executors/01900000-0000-7000-8000-000000000000",
      tools.ownerAgent.access_token
    )
    expect([hidden.status, hidden.body]).toEqual([absent.status, absent.body])
    expect(absent.status).toBe(404)
  })

  it("takes a member credential; a transport credential is refused", async () => {
    expect((await get("/agent_api/v1/executors", tools.sharedRunner.access_token)).status).toBe(401)
  })
})
