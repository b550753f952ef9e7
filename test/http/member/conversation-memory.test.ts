// The conversation memory door over a real server: the default roots (conversation/, workspace/,
// user/) and their anchors, memory_context bindings (memory off, read-only, agent/ and speaker/),
// the wrapped list and its speaker query, context_revision advancing on writes, standing (read
// level, none, archived) and a provider's override of the workspace's memory.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { type Browser, bearer, request } from "../../support/http.ts"
import type { ConnectedAgent } from "../../support/members.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { decide, machineFields, poll, startDevice } from "../oauth/support-device.ts"

let server: TestServer
let agent: ConnectedAgent
let other: ConnectedAgent
let ownerToken: string
let memberToken: string
let ownerBrowser: Browser
let ownerPublicId: string
let workspaceId: string

const absentId = "01900000-0000-7000-8000-000000000000"

const call = (method: string, path: string, token: string, body?: unknown, headers: Record<string, string> = {}) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, { headers: { ...bearer(token), ...headers }, body })

const expectError = (response: { status: number; body: any }, status: number, code: string) =>
  expect({ status: response.status, code: response.body?.error?.code }).toEqual({ status, code })

let keys = 0
const key = () => ({ "idempotency-key": `memory-door-${++keys}` })

const newWorkspace = async (name: string) =>
  (
    await call(
      "POST",
      "/workspaces",
      ownerToken,
      { workspace: { name, access_mode: "account_wide" } },
      { "idempotency-key": `ws-${name}` }
    )
  ).body.workspace.public_id as string

const conversation = async (token: string, members: Record<string, unknown> = {}, workspace = workspaceId) => {
  const made = await call("POST", `/workspaces/${workspace}/conversations`, token, { conversation: members }, key())
  expect(made.status, JSON.stringify(made.body)).toBe(201)
  return made.body.conversation.public_id as string
}

const at = (id: string, workspace = workspaceId) => `/workspaces/${workspace}/conversations/${id}`

/** The six verbs of one conversation's door. */
const door = (id: string, workspace = workspaceId) => {
  const base = `${at(id, workspace)}/memory`
  return {
    list: (token: string, speaker?: string) =>
      call(
        "GET",
        speaker === undefined ? base : `${base}?${encodeURIComponent("memory[speaker_public_id]")}=${speaker}`,
        token
      ),
    write: (token: string, memory: Record<string, unknown>) => call("POST", base, token, { memory }),
    show: (token: string, memory: Record<string, unknown>) => call("POST", `${base}/show`, token, { memory }),
    grep: (token: string, memory: Record<string, unknown>) => call("POST", `${base}/grep`, token, { memory }),
    edit: (token: string, memory: Record<string, unknown>) => call("POST", `${base}/edit`, token, { memory }),
    remove: (token: string, memory: Record<string, unknown>) => call("POST", `${base}/delete`, token, { memory })
  }
}

const fresh = { expected_public_id: null, expected_lock_version: null }
const observed = (document: { public_id: string; lock_version: number }) => ({
  expected_public_id: document.public_id,
  expected_lock_version: document.lock_version
})
const create = async (
  at: ReturnType<typeof door>,
  token: string,
  path: string,
  content: string,
  extra: Record<string, unknown> = {}
) => {
  const written = await at.write(token, { path, content, ...fresh, ...extra })
  expect(written.status, JSON.stringify(written.body)).toBe(201)
  return written.body.memory as { public_id: string; lock_version: number; path: string }
}

const revision = async (id: string) =>
  (await call("GET", at(id), agent.token)).body.conversation.context_revision as number
const setContext = (id: string, bindings: unknown) =>
  call("POST", `${at(id)}/memory_context`, agent.token, { memory_context: bindings === null ? null : { bindings } })
const paths = (response: { body: any }) => (response.body.memory as Array<{ path: string }>).map((row) => row.path)
const root = { name: "conversation", scope: "conversation", access: "read_write" }

beforeAll(async () => {
  server = await startTestServer()
  const account = await twoStewards(server, { owner: ["door-agent", "door-other"], member: [] })
  ;[agent, other] = account.ownerAgents as [ConnectedAgent, ConnectedAgent]
  ownerToken = account.ownerToken
  memberToken = account.memberToken
  ownerBrowser = account.ownerBrowser
  ownerPublicId = account.owner.public_id
  workspaceId = await newWorkspace("Door room")
})
afterAll(() => server?.close())

describe("the default roots", () => {
  it("conversation/, workspace/ and user/ read_write; each its own anchor; other scopes unavailable", async () => {
    const id = await conversation(agent.token)
    const here = door(id)
    await create(here, agent.token, "conversation/notes.md", "conversation notes")
    await create(here, agent.token, "workspace/shared.md", "workspace notes")
    await create(here, agent.token, "user/mine.md", "the human's notes")
    const listed = await here.list(agent.token)
    expect(listed.status).toBe(200)
    expect(Object.keys(listed.body)).toEqual(["memory"])
    expect(paths(listed)).toEqual(["conversation/notes.md", "user/mine.md", "workspace/shared.md"])
    expect(listed.body.memory[0]).toEqual({
      path: "conversation/notes.md",
      public_id: expect.any(String),
      lock_version: 0,
      bytesize: 18,
      description: null,
      written_at: expect.any(String)
    })
    // Another conversation of the workspace: its own conversation/, the same workspace/ and user/.
    const next = await conversation(agent.token)
    expect(paths(await door(next).list(agent.token))).toEqual(["user/mine.md", "workspace/shared.md"])
    expect(
      paths({ body: { memory: (await call("GET", `/workspaces/${workspaceId}/memory`, agent.token)).body } })
    ).toEqual(["workspace/shared.md"])
    expect(paths({ body: { memory: (await call("GET", "/profile/memory", ownerToken)).body } })).toEqual([
      "user/mine.md"
    ])
    expectError(
      await here.write(agent.token, { path: "agent/x.md", content: "x", ...fresh }),
      422,
      "memory_scope_unavailable"
    )
    expectError(await here.show(agent.token, { path: "speaker/x.md" }), 422, "memory_scope_unavailable")
    expectError(
      await here.write(agent.token, { path: "conversation/skills/x", content: "x", ...fresh }),
      422,
      "skill_scope_unavailable"
    )
    const shown = await here.show(agent.token, { path: "conversation/notes.md" })
    expect(shown.body.memory).toMatchObject({ path: "conversation/notes.md", content: "conversation notes" })
    const grep = await here.grep(agent.token, { pattern: "notes" })
    expect(grep.body).toEqual({
      matches: [
        { path: "conversation/notes.md", line_number: 1, text: "conversation notes" },
        { path: "user/mine.md", line_number: 1, text: "the human's notes" },
        { path: "workspace/shared.md", line_number: 1, text: "workspace notes" }
      ],
      truncated: false
    })
  })

  it("writes, edits and deletes advance context_revision; reads and refusals do not", async () => {
    const id = await conversation(agent.token)
    const here = door(id)
    expect(await revision(id)).toBe(0)
    const written = await create(here, agent.token, "conversation/plan.md", "step one")
    expect(await revision(id)).toBe(1)
    await here.list(agent.token)
    await here.show(agent.token, { path: "conversation/plan.md" })
    expectError(
      await here.write(agent.token, { path: "conversation/plan.md", content: "x", ...fresh }),
      409,
      "stale_object"
    )
    expect(await revision(id)).toBe(1)
    const edited = await here.edit(agent.token, {
      path: "conversation/plan.md",
      old_text: "one",
      new_text: "two",
      ...observed(written)
    })
    expect(edited.status).toBe(200)
    expect(edited.body.memory).toMatchObject({ content: "step two", lock_version: 1 })
    expect(await revision(id)).toBe(2)
    const removed = await here.remove(agent.token, { path: "conversation/plan.md", ...observed(edited.body.memory) })
    expect(removed.status).toBe(204)
    expect(await revision(id)).toBe(3)
    expect((await call("GET", at(id), agent.token)).body.conversation.lock_version).toBe(0)
  })
})

describe("bindings", () => {
  it("{bindings: []} disables memory: the list is empty and writes 422 memory_scope_unavailable", async () => {
    const id = await conversation(agent.token)
    await create(door(id), agent.token, "workspace/before.md", "kept")
    expect((await setContext(id, [])).status).toBe(200)
    const listed = await door(id).list(agent.token)
    expect(listed.body).toEqual({ memory: [] })
    expectError(
      await door(id).write(agent.token, { path: "conversation/x.md", content: "x", ...fresh }),
      422,
      "memory_scope_unavailable"
    )
    expect((await setContext(id, null)).status).toBe(200)
    expect(paths(await door(id).list(agent.token))).toContain("workspace/before.md")
  })

  it("a read binding reads and refuses writes 403 memory_read_only; an unbound root is unavailable", async () => {
    const id = await conversation(agent.token)
    await create(door(id), agent.token, "workspace/read-only.md", "look, don't touch")
    await setContext(id, [root, { name: "workspace", scope: "workspace", access: "read" }])
    const here = door(id)
    expect(paths(await here.list(agent.token))).toContain("workspace/read-only.md")
    expectError(
      await here.write(agent.token, { path: "workspace/new.md", content: "x", ...fresh }),
      403,
      "memory_read_only"
    )
    expectError(await here.show(agent.token, { path: "user/mine.md" }), 422, "memory_scope_unavailable")
    await create(here, agent.token, "conversation/fine.md", "writable")
  })

  it("agent/ is the answerer's memory; speaker/ the answerer's memory of the speaker named", async () => {
    const id = await conversation(agent.token)
    await setContext(id, [
      root,
      { name: "agent", scope: "agent", access: "read_write" },
      { name: "speaker", scope: "speaker", access: "read_write" }
    ])
    const here = door(id)
    await create(here, agent.token, "agent/self.md", "about me")
    expectError(
      await here.write(agent.token, { path: "speaker/x.md", content: "x", ...fresh }),
      422,
      "memory_scope_unavailable"
    )
    await create(here, agent.token, "speaker/likes.md", "likes tea", { speaker_public_id: other.publicId })
    expect(paths(await here.list(agent.token, other.publicId))).toEqual(["agent/self.md", "speaker/likes.md"])
    expect(paths(await here.list(agent.token))).toEqual(["agent/self.md"])
    expect(paths(await here.list(agent.token, agent.publicId))).toEqual(["agent/self.md"])
    const shown = await here.show(agent.token, { path: "speaker/likes.md", speaker_public_id: other.publicId })
    expect(shown.body.memory.content).toBe("likes tea")
    expectError(
      await here.show(agent.token, { path: "speaker/likes.md", speaker_public_id: absentId }),
      422,
      "principal_unknown"
    )
    expectError(await here.list(agent.token, "not-a-uuid"), 400, "parameter_invalid")
    // The same answerer's agent/ memory in another conversation that binds it.
    const next = await conversation(agent.token)
    await setContext(next, [root, { name: "agent", scope: "agent", access: "read" }])
    expect(paths(await door(next).list(agent.token))).toEqual(["agent/self.md"])
  })

  it("a binding's own speaker is the only one it reaches", async () => {
    const id = await conversation(agent.token)
    await setContext(id, [
      root,
      { name: "speaker", scope: "speaker", access: "read_write", speaker_public_id: ownerPublicId }
    ])
    const here = door(id)
    await create(here, agent.token, "speaker/fixed.md", "remembered")
    expect(paths(await here.list(agent.token))).toEqual(["speaker/fixed.md"])
    expect(paths(await here.list(agent.token, agent.publicId))).toEqual([])
  })
})

describe("standing", () => {
  it("read level reads and writes 403; none and unknown 404; archived reads and writes 409", async () => {
    const id = await conversation(agent.token, { access: { default: "read" } })
    const here = door(id)
    await create(here, agent.token, "conversation/read.md", "readable")
    expect(paths(await here.list(memberToken))).toContain("conversation/read.md")
    expectError(
      await here.write(memberToken, { path: "conversation/x.md", content: "x", ...fresh }),
      403,
      "not_authorized"
    )
    const hidden = await conversation(agent.token, { access: { default: "none" } })
    expectError(await door(hidden).list(memberToken), 404, "not_found")
    expectError(await door(absentId).list(agent.token), 404, "not_found")
    expectError(await door(id, absentId).list(agent.token), 404, "not_found")
    expect((await call("POST", `${at(id)}/archive`, agent.token)).status).toBe(200)
    expect(paths(await here.list(agent.token))).toContain("conversation/read.md")
    expectError(
      await here.write(agent.token, { path: "conversation/x.md", content: "x", ...fresh }),
      409,
      "conversation_archived"
    )
  })

  it("a workspace whose svc.memory is overridden answers 409 memory_overridden and its prompts render no memory", async () => {
    const started = await startDevice(server, machineFields("door-provider", { executor_kind: "tool_provider" }))
    await decide(ownerBrowser, started.user_code, "approve", "account_wide")
    const transport = (await poll(server, started.device_code)).body.access_token as string
    const verbs = ["memory_read", "memory_write", "memory_edit", "memory_ls", "memory_grep", "memory_delete"]
    const effect_profile = {
      kind: "write",
      destructive: false,
      effect_scope: "closed",
      idempotency: "none",
      reconciliation: "none"
    }
    await request(server.baseUrl, "PUT", "/agent_api/v1/executor/announcement", {
      headers: bearer(transport),
      body: {
        tools: verbs.map((name) => ({ name, effect_profile, description: name, input_schema: { type: "object" } }))
      }
    })
    const provider = (await request(server.baseUrl, "GET", "/agent_api/v1/executor", { headers: bearer(transport) }))
      .body.executor.public_id
    const room = await newWorkspace("Overridden door room")
    const id = await conversation(agent.token, {}, room)
    await create(door(id, room), agent.token, "conversation/plan.md", "ship on friday")
    const rendered = async () =>
      (
        await call("POST", `${at(id, room)}/context_estimate`, agent.token, {
          context_estimate: { prompt: "hi", model: { model: "local/echo" }, render: true }
        })
      ).body.context_estimate
    expect((await rendered()).memory.included).toContain("conversation/plan.md")
    const override = await call("PUT", `/workspaces/${room}/tool_provider_overrides`, ownerToken, {
      tool_provider_overrides: { overrides: { "svc.memory": provider }, lock_version: 0 }
    })
    expect(override.status).toBe(200)
    expectError(await door(id, room).list(agent.token), 409, "memory_overridden")
    expectError(
      await door(id, room).write(agent.token, { path: "conversation/x.md", content: "x", ...fresh }),
      409,
      "memory_overridden"
    )
    // The provider serves the memory: the assembly renders none of the service's documents.
    const off = await rendered()
    expect(off.memory).toEqual({ included: [], omitted: [] })
    expect(JSON.stringify(off.entries)).not.toContain("ship on friday")
  })
})
