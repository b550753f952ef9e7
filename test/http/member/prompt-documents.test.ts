import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { waitForActorState } from "../../support/actors.ts"
import { bearer, request } from "../../support/http.ts"
import type { ConnectedAgent } from "../../support/members.ts"
import { apiToken } from "../../support/people.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
let ownerAgent: ConnectedAgent
let otherAgent: ConnectedAgent
let memberAgent: ConnectedAgent
let ownerToken: string
let memberToken: string

const call = (method: string, path: string, token: string | undefined, body?: unknown) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, { headers: token === undefined ? {} : bearer(token), body })

const profile = (slot = "") => `/profile/prompt_documents${slot === "" ? "" : `/${slot}`}`
const room = (workspaceId: string, slot = "") =>
  `/workspaces/${workspaceId}/prompt_documents${slot === "" ? "" : `/${slot}`}`
const put = (path: string, token: string, document: Record<string, unknown>) =>
  call("PUT", path, token, { prompt_document: document })
const codeOf = (response: { status: number; body: any }) => [response.status, response.body?.error?.code]

let keys = 0
const createWorkspace = async (token: string, workspace: Record<string, unknown>) => {
  const created = await request(server.baseUrl, "POST", "/agent_api/v1/workspaces", {
    headers: { ...bearer(token), "idempotency-key": `prompt-${keys++}` },
    body: { workspace }
  })
  if (created.status !== 201) throw new Error(`workspace create failed: ${JSON.stringify(created.body)}`)
  return created.body.workspace as { public_id: string; lock_version: number }
}

const absentId = "01900000-0000-7000-8000-000000000000"

beforeAll(async () => {
  server = await startTestServer()
  const account = await twoStewards(server, {
    owner: ["prompt-owner-agent", "prompt-other-agent"],
    member: ["prompt-member-agent"]
  })
  ;[ownerAgent, otherAgent] = account.ownerAgents as [ConnectedAgent, ConnectedAgent]
  memberAgent = account.memberAgents[0]!
  ownerToken = account.ownerToken
  memberToken = account.memberToken
})
afterAll(() => server?.close())

describe("the profile door", () => {
  it("an agent writes, reads, lists and deletes its system_prompt; version counts writes across a delete", async () => {
    expect((await call("GET", profile(), ownerAgent.token)).body).toEqual({ prompt_documents: [] })
    expect(codeOf(await call("GET", profile("system_prompt"), ownerAgent.token))).toEqual([
      404,
      "prompt_document_not_found"
    ])

    const written = await put(profile("system_prompt"), ownerAgent.token, {
      content: "You are {{agent}}, helping {{user}}.",
      role: "developer"
    })
    expect(written.status).toBe(200)
    expect(written.body).toEqual({
      prompt_document: {
        slot: "system_prompt",
        role: "developer",
        bytesize: Buffer.byteLength("You are {{agent}}, helping {{user}}."),
        version: 1,
        written_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        content: "You are {{agent}}, helping {{user}}."
      }
    })
    expect((await call("GET", profile("system_prompt"), ownerAgent.token)).body).toEqual(written.body)
    const { content: _content, ...row } = written.body.prompt_document
    expect((await call("GET", profile(), ownerAgent.token)).body).toEqual({ prompt_documents: [row] })

    const rewritten = await put(profile("system_prompt"), ownerAgent.token, { content: "Plain." })
    expect(rewritten.body.prompt_document).toMatchObject({ role: "system", version: 2, bytesize: 6, content: "Plain." })

    const deleted = await call("DELETE", profile("system_prompt"), ownerAgent.token)
    expect([deleted.status, deleted.body]).toEqual([204, undefined])
    expect(codeOf(await call("GET", profile("system_prompt"), ownerAgent.token))).toEqual([
      404,
      "prompt_document_not_found"
    ])
    expect(codeOf(await call("DELETE", profile("system_prompt"), ownerAgent.token))).toEqual([
      404,
      "prompt_document_not_found"
    ])
    expect((await call("GET", profile(), ownerAgent.token)).body).toEqual({ prompt_documents: [] })

    const again = await put(profile("system_prompt"), ownerAgent.token, { content: "Back again." })
    expect(again.body.prompt_document).toMatchObject({ version: 3, role: "system" })
  })

  it("concurrent writes each count: versions are distinct and the last read shows the count", async () => {
    const writes = await Promise.all(
      Array.from({ length: 5 }, (_, index) =>
        put(profile("system_prompt"), otherAgent.token, { content: `Draft ${index}` })
      )
    )
    expect(writes.map((w) => w.status)).toEqual([200, 200, 200, 200, 200])
    expect(writes.map((w) => w.body.prompt_document.version).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5])
    expect((await call("GET", profile("system_prompt"), otherAgent.token)).body.prompt_document.version).toBe(5)
  })

  it("omitting role on write resets it to system", async () => {
    const asUser = await put(profile("system_prompt"), memberAgent.token, { content: "Speak briefly.", role: "user" })
    expect(asUser.body.prompt_document.role).toBe("user")
    const reset = await put(profile("system_prompt"), memberAgent.token, { content: "Speak briefly." })
    expect(reset.body.prompt_document).toMatchObject({ role: "system", version: 2 })
    const developer = await put(profile("system_prompt"), memberAgent.token, {
      content: "Speak briefly.",
      role: "developer"
    })
    expect(developer.body.prompt_document.role).toBe("developer")
    expect(
      (await put(profile("system_prompt"), memberAgent.token, { content: "Speak briefly.", role: null })).body
        .prompt_document.role
    ).toBe("system")
  })

  it("the summarizer is content-only: role system (explicit or omitted), no macros", async () => {
    const written = await put(profile("summarizer"), ownerAgent.token, {
      content: "Summarize the conversation in five lines."
    })
    expect(written.body.prompt_document).toMatchObject({ slot: "summarizer", role: "system", version: 1 })
    expect(
      (await put(profile("summarizer"), ownerAgent.token, { content: "Shorter.", role: "system" })).body.prompt_document
        .version
    ).toBe(2)
    expect(
      codeOf(await put(profile("summarizer"), ownerAgent.token, { content: "Shorter.", role: "developer" }))
    ).toEqual([422, "prompt_document_invalid"])
    expect(codeOf(await put(profile("summarizer"), ownerAgent.token, { content: "Shorter.", role: "user" }))).toEqual([
      422,
      "prompt_document_invalid"
    ])
    const macro = await put(profile("summarizer"), ownerAgent.token, { content: "Summarize for {{user}}." })
    expect(codeOf(macro)).toEqual([422, "prompt_document_invalid"])
    expect(macro.body.error.message).toContain("{{user}}")
    const slots = (await call("GET", profile(), ownerAgent.token)).body.prompt_documents.map(
      (d: { slot: string }) => d.slot
    )
    expect(slots).toEqual(["summarizer", "system_prompt"])
    expect((await call("GET", profile("summarizer"), ownerAgent.token)).body.prompt_document.content).toBe("Shorter.")
  })

  it("an agent has system_prompt and summarizer; persona, character and unknown slots are 422 prompt_slot_unavailable", async () => {
    for (const slot of ["persona", "character", "nonsense"]) {
      expect(codeOf(await put(profile(slot), ownerAgent.token, { content: "x" }))).toEqual([
        422,
        "prompt_slot_unavailable"
      ])
      expect(codeOf(await call("GET", profile(slot), ownerAgent.token))).toEqual([422, "prompt_slot_unavailable"])
      expect(codeOf(await call("DELETE", profile(slot), ownerAgent.token))).toEqual([422, "prompt_slot_unavailable"])
    }
  })

  it("a human has persona only; its documents are its own", async () => {
    for (const slot of ["system_prompt", "summarizer", "character"]) {
      expect(codeOf(await put(profile(slot), memberToken, { content: "x" }))).toEqual([422, "prompt_slot_unavailable"])
      expect(codeOf(await call("GET", profile(slot), memberToken))).toEqual([422, "prompt_slot_unavailable"])
    }
    expect(codeOf(await call("GET", profile("persona"), memberToken))).toEqual([404, "prompt_document_not_found"])
    const persona = await put(profile("persona"), memberToken, {
      content: "I am {{user}}; today is {{date}}.",
      role: "user"
    })
    expect(persona.body.prompt_document).toMatchObject({ slot: "persona", role: "user", version: 1 })
    expect(
      (await call("GET", profile(), memberToken)).body.prompt_documents.map((d: { slot: string }) => d.slot)
    ).toEqual(["persona"])
    // another member's profile, and the member's own agent, see none of it
    expect((await call("GET", profile(), ownerToken)).body).toEqual({ prompt_documents: [] })
    expect(
      (await call("GET", profile(), memberAgent.token)).body.prompt_documents.map((d: { slot: string }) => d.slot)
    ).toEqual(["system_prompt"])
    expect((await call("DELETE", profile("persona"), memberToken)).status).toBe(204)
  })

  it("needs a member credential: none, or a platform session, is 401", async () => {
    expect(codeOf(await call("GET", profile(), undefined))).toEqual([401, "unauthorized"])
    const platform = await apiToken(server)
    expect(codeOf(await call("GET", profile("persona"), platform))).toEqual([401, "unauthorized"])
    expect(codeOf(await put(profile("persona"), platform, { content: "x" }))).toEqual([401, "unauthorized"])
  })
})

describe("documents", () => {
  it("macros: the five of the registry are kept unrendered; unknown ones are refused by name", async () => {
    const content =
      '{{agent}} for {{user}} in {{workspace}} on {{date}} ({{conversation_kind}}), {{ agent }}; JSON {{"a": 1}} stays text'
    const written = await put(profile("system_prompt"), ownerAgent.token, { content })
    expect(written.body.prompt_document.content).toBe(content)
    const unknown = await put(profile("system_prompt"), ownerAgent.token, {
      content: "{{agent}} {{nope}} {{ user.name }} {{nope}}"
    })
    expect(codeOf(unknown)).toEqual([422, "prompt_document_macro_unknown"])
    expect(unknown.body.error.message).toContain("{{nope}}")
    expect(unknown.body.error.message).toContain("{{user.name}}")
    expect(codeOf(await put(profile("system_prompt"), ownerAgent.token, { content: "{{Agent}}" }))).toEqual([
      422,
      "prompt_document_macro_unknown"
    ])
    // the refused writes did not count
    expect((await call("GET", profile("system_prompt"), ownerAgent.token)).body.prompt_document).toMatchObject({
      content,
      version: written.body.prompt_document.version
    })
  })

  it("64 KiB of UTF-8 is the bound: over it is 422 prompt_document_too_large", async () => {
    const exact = await put(profile("system_prompt"), otherAgent.token, { content: "a".repeat(65536) })
    expect(exact.body.prompt_document.bytesize).toBe(65536)
    expect(codeOf(await put(profile("system_prompt"), otherAgent.token, { content: "a".repeat(65537) }))).toEqual([
      422,
      "prompt_document_too_large"
    ])
    // counted in bytes, not characters: 32,769 two-byte characters are 65,538 bytes
    expect(codeOf(await put(profile("system_prompt"), otherAgent.token, { content: "é".repeat(32769) }))).toEqual([
      422,
      "prompt_document_too_large"
    ])
    const multibyte = await put(profile("system_prompt"), otherAgent.token, { content: "é".repeat(32768) })
    expect(multibyte.body.prompt_document.bytesize).toBe(65536)
  })

  it("malformed documents: content missing is 400 parameter_missing; NUL or a lone surrogate 400; the rest is 422 prompt_document_invalid", async () => {
    const path = profile("system_prompt")
    expect(codeOf(await put(path, memberAgent.token, {}))).toEqual([400, "parameter_missing"])
    expect(codeOf(await put(path, memberAgent.token, { content: null }))).toEqual([400, "parameter_missing"])
    expect(codeOf(await call("PUT", path, memberAgent.token, {}))).toEqual([400, "parameter_missing"])
    for (const document of [
      { content: 42 },
      { content: ["x"] },
      { content: "x", role: "assistant" },
      { content: "x", role: 1 },
      { content: "" },
      { content: "   \n" }
    ]) {
      expect(codeOf(await put(path, memberAgent.token, document))).toEqual([422, "prompt_document_invalid"])
    }
    // text PostgreSQL cannot store is refused when the body is decoded, before the document is judged
    for (const document of [{ content: "nul \u0000 inside" }, { content: "lone \ud800 surrogate" }]) {
      expect(codeOf(await put(path, memberAgent.token, document))).toEqual([400, "parameter_invalid"])
    }
    // no body, or one that is not JSON, is the plane's malformed-JSON answer
    expect(codeOf(await call("PUT", path, memberAgent.token, undefined))).toEqual([400, "parameter_invalid"])
    const malformedJson = await request(server.baseUrl, "PUT", `/agent_api/v1${path}`, {
      headers: { ...bearer(memberAgent.token), "content-type": "application/json" },
      raw: "{not json"
    })
    expect(codeOf(malformedJson)).toEqual([400, "parameter_invalid"])
    // the members at top level are accepted too
    const topLevel = await call("PUT", path, memberAgent.token, { content: "Top level.", role: "developer" })
    expect(topLevel.body.prompt_document).toMatchObject({ content: "Top level.", role: "developer" })
  })
})

describe("the workspace door", () => {
  it("the character slot is read, written, listed and deleted; profile slots are unavailable there", async () => {
    const ws = await createWorkspace(ownerToken, { name: "Stage" })
    expect((await call("GET", room(ws.public_id), ownerToken)).body).toEqual({ prompt_documents: [] })
    expect(codeOf(await call("GET", room(ws.public_id, "character"), ownerToken))).toEqual([
      404,
      "prompt_document_not_found"
    ])
    const written = await put(room(ws.public_id, "character"), ownerToken, {
      content: "This room is {{workspace}}.",
      role: "developer"
    })
    expect(written.body.prompt_document).toMatchObject({
      slot: "character",
      role: "developer",
      version: 1,
      content: "This room is {{workspace}}."
    })
    expect((await call("GET", room(ws.public_id, "character"), ownerToken)).body).toEqual(written.body)
    expect((await call("GET", room(ws.public_id), ownerToken)).body.prompt_documents).toEqual([
      {
        slot: "character",
        role: "developer",
        bytesize: written.body.prompt_document.bytesize,
        version: 1,
        written_at: written.body.prompt_document.written_at
      }
    ])
    const reset = await put(room(ws.public_id, "character"), ownerToken, { content: "Quiet room." })
    expect(reset.body.prompt_document).toMatchObject({ role: "system", version: 2 })
    for (const slot of ["system_prompt", "summarizer", "persona", "nonsense"]) {
      expect(codeOf(await put(room(ws.public_id, slot), ownerToken, { content: "x" }))).toEqual([
        422,
        "prompt_slot_unavailable"
      ])
      expect(codeOf(await call("GET", room(ws.public_id, slot), ownerToken))).toEqual([422, "prompt_slot_unavailable"])
      expect(codeOf(await call("DELETE", room(ws.public_id, slot), ownerToken))).toEqual([
        422,
        "prompt_slot_unavailable"
      ])
    }
    expect(codeOf(await put(room(ws.public_id, "character"), ownerToken, { content: "{{speaker}}" }))).toEqual([
      422,
      "prompt_document_macro_unknown"
    ])
    expect(codeOf(await put(room(ws.public_id, "character"), ownerToken, { content: "b".repeat(65537) }))).toEqual([
      422,
      "prompt_document_too_large"
    ])
    expect(codeOf(await put(room(ws.public_id, "character"), ownerToken, { content: "x", role: "narrator" }))).toEqual([
      422,
      "prompt_document_invalid"
    ])
    expect(codeOf(await put(room(ws.public_id, "character"), ownerToken, {}))).toEqual([400, "parameter_missing"])
    expect((await call("DELETE", room(ws.public_id, "character"), ownerToken)).status).toBe(204)
    expect(codeOf(await call("DELETE", room(ws.public_id, "character"), ownerToken))).toEqual([
      404,
      "prompt_document_not_found"
    ])
    expect(
      (await put(room(ws.public_id, "character"), ownerToken, { content: "Again." })).body.prompt_document.version
    ).toBe(3)
    // the profile's documents and the workspace's are apart
    expect((await call("GET", profile(), ownerToken)).body).toEqual({ prompt_documents: [] })
  })

  it("another member's private workspace is 404 like absence, for every route and slot", async () => {
    const hidden = await createWorkspace(ownerToken, { name: "Hidden", access_mode: "private" })
    await put(room(hidden.public_id, "character"), ownerToken, { content: "Secret." })
    for (const token of [memberToken, memberAgent.token]) {
      for (const id of [hidden.public_id, absentId, "not-a-uuid"]) {
        for (const response of [
          await call("GET", room(id), token),
          await call("GET", room(id, "character"), token),
          await call("GET", room(id, "nonsense"), token),
          await put(room(id, "character"), token, { content: "Mine." }),
          await call("DELETE", room(id, "character"), token)
        ]) {
          expect([response.status, response.body]).toEqual([
            404,
            { error: { code: "not_found", message: "Not found" } }
          ])
        }
      }
    }
    // the owner's agent sees what its steward sees
    expect(
      (await call("GET", room(hidden.public_id, "character"), ownerAgent.token)).body.prompt_document.content
    ).toBe("Secret.")
  })

  it("seeing is enough to read; writing needs standing: another agent on a dedicated workspace is 403", async () => {
    const dedicated = await createWorkspace(ownerAgent.token, { name: "Agent's room" })
    const written = await put(room(dedicated.public_id, "character"), ownerAgent.token, { content: "Mine, {{agent}}." })
    expect(written.status).toBe(200)
    expect((await call("GET", room(dedicated.public_id, "character"), otherAgent.token)).status).toBe(200)
    expect((await call("GET", room(dedicated.public_id), otherAgent.token)).body.prompt_documents).toHaveLength(1)
    expect(
      codeOf(await put(room(dedicated.public_id, "character"), otherAgent.token, { content: "Taken over." }))
    ).toEqual([403, "workspace_agent_identifier_mismatch"])
    expect(codeOf(await call("DELETE", room(dedicated.public_id, "character"), otherAgent.token))).toEqual([
      403,
      "workspace_agent_identifier_mismatch"
    ])
    // humans with access may write
    expect(
      (await put(room(dedicated.public_id, "character"), ownerToken, { content: "Human edit." })).body.prompt_document
        .version
    ).toBe(2)
    // an account-wide workspace is another human's to read and write too
    const shared = await createWorkspace(ownerToken, { name: "Commons", access_mode: "account_wide" })
    expect((await put(room(shared.public_id, "character"), memberToken, { content: "Shared." })).status).toBe(200)
    expect(
      (await call("GET", room(shared.public_id, "character"), memberAgent.token)).body.prompt_document.content
    ).toBe("Shared.")
  })

  it("an archived workspace is read-only (409 workspace_not_active); a tombstoned one is 404", async () => {
    const ws = await createWorkspace(ownerToken, { name: "Old stage" })
    await put(room(ws.public_id, "character"), ownerToken, { content: "Before." })
    const archival = await call("POST", `/workspaces/${ws.public_id}/archival`, ownerToken, {
      command: { lock_version: ws.lock_version }
    })
    expect(archival.status).toBe(200)
    await waitForActorState(server, "workspace", ws.public_id, "archived")
    expect((await call("GET", room(ws.public_id, "character"), ownerToken)).body.prompt_document.content).toBe(
      "Before."
    )
    expect(codeOf(await put(room(ws.public_id, "character"), ownerToken, { content: "After." }))).toEqual([
      409,
      "workspace_not_active"
    ])
    expect(codeOf(await call("DELETE", room(ws.public_id, "character"), ownerToken))).toEqual([
      409,
      "workspace_not_active"
    ])
    const archived = (await call("GET", `/workspaces/${ws.public_id}`, ownerToken)).body.workspace
    const tombstoned = await call(
      "DELETE",
      `/workspaces/${ws.public_id}?lock_version=${archived.lock_version}`,
      ownerToken
    )
    expect(tombstoned.status).toBe(200)
    expect(codeOf(await call("GET", room(ws.public_id, "character"), ownerToken))).toEqual([404, "not_found"])
    expect(codeOf(await call("GET", room(ws.public_id), ownerToken))).toEqual([404, "not_found"])
  })
})
