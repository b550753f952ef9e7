// Memory at the profile, workspace and named-agent doors over a real server: the six verbs,
// conditional writes, edit refusals, scopes and anchors (each door its own scope), skills/ rows, the 64-document and 64 KiB limits, grep
// (limit, truncation, ignore_case, line cap, path filter), the caller's memory ceiling, a
// provider's override of workspace memory, and concealment.
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { bearer, request } from "../../support/http.ts"
import { type ConnectedAgent, connectAgent, type signedIn } from "../../support/members.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { decide, machineFields, poll, startDevice } from "../oauth/support-device.ts"

let server: TestServer
let agentA: ConnectedAgent
let agentB: ConnectedAgent
let memberAgent: ConnectedAgent
let ownerToken: string
let memberToken: string
let ownerBrowser: Awaited<ReturnType<typeof signedIn>>

const absentWorkspace = "01900000-0000-7000-8000-000000000000"

const call = (method: string, path: string, token: string, body?: unknown) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, { headers: bearer(token), body })

/** The six verbs at one door (`""` is the profile door). */
const door = (prefix: string) => ({
  list: (token: string) => call("GET", `${prefix}/memory`, token),
  write: (token: string, memory: Record<string, unknown>) => call("POST", `${prefix}/memory`, token, { memory }),
  show: (token: string, path: unknown) => call("POST", `${prefix}/memory/show`, token, { memory: { path } }),
  grep: (token: string, memory: Record<string, unknown>) => call("POST", `${prefix}/memory/grep`, token, { memory }),
  edit: (token: string, memory: Record<string, unknown>) => call("POST", `${prefix}/memory/edit`, token, { memory }),
  remove: (token: string, memory: Record<string, unknown>) => call("POST", `${prefix}/memory/delete`, token, { memory })
})
const profile = door("/profile")
const workspaceDoor = (id: string) => door(`/workspaces/${id}`)
const namedDoor = (name: string) => door(`/profile/agents/${name}`)
/** agent/ memory of agentA's, agentB's and memberAgent's named definitions (each its own anchor). */
const notebook = namedDoor("notebook")
const grepper = namedDoor("grepper")
const racer = namedDoor("racer")

const fresh = { expected_public_id: null, expected_lock_version: null }
const create = (
  at: ReturnType<typeof door>,
  token: string,
  path: string,
  content: string,
  extra: Record<string, unknown> = {}
) => at.write(token, { path, content, ...fresh, ...extra })
const observed = (document: { public_id: string; lock_version: number }) => ({
  expected_public_id: document.public_id,
  expected_lock_version: document.lock_version
})

const expectError = (response: { status: number; body: any }, status: number, code: string) =>
  expect({ status: response.status, code: response.body?.error?.code }).toEqual({ status, code })

let keys = 0
const newWorkspace = async (token: string, workspace: Record<string, unknown>) => {
  const created = await request(server.baseUrl, "POST", "/agent_api/v1/workspaces", {
    headers: { ...bearer(token), "idempotency-key": `memory-${keys++}` },
    body: { workspace }
  })
  if (created.status !== 201) throw new Error(`workspace create failed: ${JSON.stringify(created.body)}`)
  return created.body.workspace as { public_id: string; lock_version: number }
}

/** Sets an agent's declared memory_context_limit directly (the ceiling is read from the user row). */
const setMemoryLimit = (agent: ConnectedAgent, limit: unknown) =>
  server.run(
    Effect.flatMap(
      SqlClient,
      (sql) =>
        sql`UPDATE users SET configuration = ${JSON.stringify({ memory_context_limit: limit })}::jsonb WHERE public_id = ${agent.publicId}`
    )
  )

beforeAll(async () => {
  server = await startTestServer()
  const account = await twoStewards(server, { owner: ["mem-agent-a", "mem-agent-b"], member: ["mem-member-agent"] })
  ownerBrowser = account.ownerBrowser
  ;[agentA, agentB] = account.ownerAgents as [ConnectedAgent, ConnectedAgent]
  memberAgent = account.memberAgents[0]!
  ownerToken = account.ownerToken
  memberToken = account.memberToken
  const declare = async (agent: ConnectedAgent, name: string) => {
    const put = await call("PUT", `/profile/agents/${name}`, agent.token, {
      scope: "instance",
      description: `The ${name}`,
      configuration: {}
    })
    expect(put.status).toBe(201)
  }
  await declare(agentA, "notebook")
  await declare(agentB, "grepper")
  await declare(memberAgent, "racer")
})
afterAll(() => server?.close())

describe("the verbs (at the named-agent door: agent/ of one definition)", () => {
  it("creates with the null pair (201 {memory} with content), shows, lists rows without content", async () => {
    const created = await create(notebook, agentA.token, "agent/notes.md", "first line\nsecond line\n")
    expect(created.status).toBe(201)
    expect(created.body.memory).toMatchObject({
      path: "agent/notes.md",
      lock_version: 0,
      bytesize: 23,
      description: null,
      content: "first line\nsecond line\n"
    })
    expect(created.body.memory.public_id).toMatch(/^[0-9a-f-]{36}$/)
    expect(new Date(created.body.memory.written_at).toISOString()).toBe(created.body.memory.written_at)
    const shown = await notebook.show(agentA.token, "agent/notes.md")
    expect(shown.status).toBe(200)
    expect(shown.body).toEqual(created.body)
    const listed = await notebook.list(agentA.token)
    expect(listed.status).toBe(200)
    const row = listed.body.find((r: { path: string }) => r.path === "agent/notes.md")
    expect(row).toEqual({
      path: "agent/notes.md",
      public_id: created.body.memory.public_id,
      lock_version: 0,
      bytesize: 23,
      description: null,
      written_at: created.body.memory.written_at
    })
  })

  it("accepts the members at top level too", async () => {
    const created = await call("POST", "/profile/agents/notebook/memory", agentA.token, {
      path: "agent/top.md",
      content: "x",
      ...fresh
    })
    expect(created.status).toBe(201)
    expect(
      (await call("POST", "/profile/agents/notebook/memory/show", agentA.token, { path: "agent/top.md" })).body.memory
        .content
    ).toBe("x")
  })

  it("a replace (the observed pair) is 201, keeps public_id, advances lock_version and written_at", async () => {
    const created = (await create(notebook, agentA.token, "agent/replace.md", "v1")).body.memory
    server.clock.advance("1 minute")
    const replaced = await notebook.write(agentA.token, {
      path: "agent/replace.md",
      content: "version two",
      ...observed(created)
    })
    expect(replaced.status).toBe(201)
    expect(replaced.body.memory).toMatchObject({
      public_id: created.public_id,
      lock_version: 1,
      bytesize: 11,
      content: "version two"
    })
    expect(Date.parse(replaced.body.memory.written_at)).toBeGreaterThan(Date.parse(created.written_at))
    // The pair read before is stale now; a null pair on a present path is stale too.
    expectError(
      await notebook.write(agentA.token, { path: "agent/replace.md", content: "v3", ...observed(created) }),
      409,
      "stale_object"
    )
    expectError(await create(notebook, agentA.token, "agent/replace.md", "again"), 409, "stale_object")
    const wrongId = { expected_public_id: "01900000-0000-7000-8000-000000000001", expected_lock_version: 1 }
    expectError(
      await notebook.write(agentA.token, { path: "agent/replace.md", content: "v3", ...wrongId }),
      409,
      "stale_object"
    )
  })

  it("delete takes the observed pair (204); then the path is memory_not_found; a recreate has a new public_id", async () => {
    const created = (await create(notebook, agentA.token, "agent/gone.md", "bye")).body.memory
    expectError(
      await notebook.remove(agentA.token, {
        path: "agent/gone.md",
        expected_public_id: created.public_id,
        expected_lock_version: 7
      }),
      409,
      "stale_object"
    )
    expectError(await notebook.remove(agentA.token, { path: "agent/gone.md", ...fresh }), 400, "parameter_invalid")
    const removed = await notebook.remove(agentA.token, { path: "agent/gone.md", ...observed(created) })
    expect(removed.status).toBe(204)
    expectError(await notebook.show(agentA.token, "agent/gone.md"), 404, "memory_not_found")
    expectError(
      await notebook.remove(agentA.token, { path: "agent/gone.md", ...observed(created) }),
      404,
      "memory_not_found"
    )
    expectError(
      await notebook.write(agentA.token, { path: "agent/gone.md", content: "x", ...observed(created) }),
      404,
      "memory_not_found"
    )
    const again = (await create(notebook, agentA.token, "agent/gone.md", "back")).body.memory
    expect(again.public_id).not.toBe(created.public_id)
    expect(again.lock_version).toBe(0)
  })

  it("edit replaces the one occurrence of old_text (200 {memory}), fenced by the observed pair", async () => {
    const created = (await create(notebook, agentA.token, "agent/edit.md", "alpha beta gamma beta")).body.memory
    const path = "agent/edit.md"
    expectError(
      await notebook.edit(agentA.token, { path, old_text: "beta", new_text: "B", ...observed(created) }),
      422,
      "memory_edit_ambiguous"
    )
    expectError(
      await notebook.edit(agentA.token, { path, old_text: "delta", new_text: "D", ...observed(created) }),
      422,
      "memory_edit_not_found"
    )
    expectError(
      await notebook.edit(agentA.token, { path, old_text: "", new_text: "D", ...observed(created) }),
      422,
      "memory_edit_invalid"
    )
    expectError(
      await notebook.edit(agentA.token, { path, old_text: 7, new_text: "D", ...observed(created) }),
      422,
      "memory_edit_invalid"
    )
    expectError(
      await notebook.edit(agentA.token, { path, old_text: "alpha", new_text: ["D"], ...observed(created) }),
      422,
      "memory_content_invalid"
    )
    // Nothing changed on any refusal.
    expect((await notebook.show(agentA.token, path)).body.memory).toMatchObject({
      lock_version: 0,
      content: "alpha beta gamma beta"
    })
    const edited = await notebook.edit(agentA.token, {
      path,
      old_text: "alpha",
      new_text: "ALPHA",
      ...observed(created)
    })
    expect(edited.status).toBe(200)
    expect(edited.body.memory).toMatchObject({
      public_id: created.public_id,
      lock_version: 1,
      content: "ALPHA beta gamma beta"
    })
    expectError(
      await notebook.edit(agentA.token, { path, old_text: "gamma", new_text: "G", ...observed(created) }),
      409,
      "stale_object"
    )
    expectError(
      await notebook.edit(agentA.token, { path: "agent/none.md", old_text: "a", new_text: "b", ...observed(created) }),
      404,
      "memory_not_found"
    )
    expectError(
      await notebook.edit(agentA.token, { path, old_text: "gamma", ...observed(edited.body.memory) }),
      400,
      "parameter_missing"
    )
    expectError(
      await notebook.edit(agentA.token, { path, old_text: "gamma", new_text: "G", ...fresh }),
      400,
      "parameter_invalid"
    )
    const big = "x".repeat(64 * 1024)
    expectError(
      await notebook.edit(agentA.token, { path, old_text: "gamma", new_text: big, ...observed(edited.body.memory) }),
      422,
      "memory_document_too_large"
    )
  })

  it("the conditional pair is required on every write and delete: absent 400 parameter_missing, malformed 400 parameter_invalid", async () => {
    expectError(await notebook.write(agentA.token, { path: "agent/p.md", content: "x" }), 400, "parameter_missing")
    expectError(
      await notebook.write(agentA.token, { path: "agent/p.md", content: "x", expected_public_id: null }),
      400,
      "parameter_missing"
    )
    expectError(
      await notebook.write(agentA.token, {
        path: "agent/p.md",
        content: "x",
        expected_public_id: null,
        expected_lock_version: 0
      }),
      400,
      "parameter_invalid"
    )
    expectError(
      await notebook.write(agentA.token, {
        path: "agent/p.md",
        content: "x",
        expected_public_id: "nope",
        expected_lock_version: 0
      }),
      400,
      "parameter_invalid"
    )
    expectError(
      await notebook.write(agentA.token, {
        path: "agent/p.md",
        content: "x",
        expected_public_id: absentWorkspace,
        expected_lock_version: -1
      }),
      400,
      "parameter_invalid"
    )
    expectError(await notebook.remove(agentA.token, { path: "agent/p.md" }), 400, "parameter_missing")
    expectError(await notebook.write(agentA.token, { content: "x", ...fresh }), 400, "parameter_missing")
    expectError(await notebook.write(agentA.token, { path: "agent/p.md", ...fresh }), 400, "parameter_missing")
    expectError(await notebook.show(agentA.token, undefined), 400, "parameter_missing")
  })
})

describe("profile door: user/ only", () => {
  it("an agent reaches user/ of its steward (shared with the steward and its other agents); a human its own", async () => {
    await create(profile, agentA.token, "user/preferences.md", "likes tea")
    const asSteward = await profile.show(ownerToken, "user/preferences.md")
    expect(asSteward.body.memory.content).toBe("likes tea")
    expect((await profile.show(agentB.token, "user/preferences.md")).body.memory.content).toBe("likes tea")
    const paths = (await profile.list(agentB.token)).body.map((r: { path: string }) => r.path)
    expect(paths).toContain("user/preferences.md")
    // Another human's agent sees another user/ memory.
    expectError(await profile.show(memberAgent.token, "user/preferences.md"), 404, "memory_not_found")
    expectError(await profile.show(memberToken, "user/preferences.md"), 404, "memory_not_found")
  })

  it("lists in byte order of path", async () => {
    for (const path of ["user/b.md", "user/B.md", "user/a/é.md", "user/a.md"])
      await create(profile, ownerToken, path, "x")
    const paths = (await profile.list(ownerToken)).body.map((r: { path: string }) => r.path)
    expect(paths).toEqual([...paths].sort((a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b))))
  })

  it("every other scope, agent/ included, is 422 memory_scope_unavailable at every verb", async () => {
    expectError(await create(profile, agentA.token, "agent/notes.md", "x"), 422, "memory_scope_unavailable")
    expectError(await profile.show(agentA.token, "agent/notes.md"), 422, "memory_scope_unavailable")
    expectError(
      await profile.edit(agentA.token, {
        path: "agent/notes.md",
        old_text: "a",
        new_text: "b",
        expected_public_id: absentWorkspace,
        expected_lock_version: 0
      }),
      422,
      "memory_scope_unavailable"
    )
    expectError(
      await profile.remove(agentA.token, {
        path: "agent/notes.md",
        expected_public_id: absentWorkspace,
        expected_lock_version: 0
      }),
      422,
      "memory_scope_unavailable"
    )
    expectError(await create(profile, ownerToken, "agent/x.md", "x"), 422, "memory_scope_unavailable")
    for (const path of ["workspace/x.md", "conversation/x.md", "speaker/x.md"]) {
      expectError(await create(profile, agentA.token, path, "x"), 422, "memory_scope_unavailable")
    }
    for (const path of ["agent", "workspace"]) {
      expectError(await profile.grep(agentA.token, { pattern: "x", path }), 422, "memory_scope_unavailable")
    }
    // The agent's definitions' memory stays out of the profile door's list and grep.
    const listed = (await profile.list(agentA.token)).body.map((r: { path: string }) => r.path)
    expect(listed.every((path: string) => path.startsWith("user/"))).toBe(true)
  })

  it("the first segment must be a scope: a bare name, an unknown scope or a malformed path is 422 memory_path_invalid", async () => {
    for (const path of [
      "notes.md",
      "user",
      "user/",
      "memories/x.md",
      "user//x",
      "user/../x",
      "user/./x",
      42,
      "a".repeat(1100)
    ]) {
      expectError(await create(profile, ownerToken, path as string, "x"), 422, "memory_path_invalid")
    }
    expectError(await profile.show(ownerToken, "notes.md"), 422, "memory_path_invalid")
    expectError(await profile.grep(ownerToken, { pattern: "x", path: "notes" }), 422, "memory_path_invalid")
  })

  it("the name after the scope is at most 128 characters (code points), else 422 memory_path_invalid", async () => {
    expect((await create(profile, ownerToken, `user/${"é".repeat(128)}`, "x")).status).toBe(201)
    expect((await create(profile, ownerToken, `user/deep/${"n".repeat(123)}`, "x")).status).toBe(201)
    expectError(await create(profile, ownerToken, `user/${"é".repeat(129)}`, "x"), 422, "memory_path_invalid")
    expectError(await create(profile, ownerToken, `user/deep/${"n".repeat(124)}`, "x"), 422, "memory_path_invalid")
    expectError(await profile.show(ownerToken, `user/${"😀".repeat(129)}`), 422, "memory_path_invalid")
  })

  it("paths are printable text: format and bidi controls (U+202E, U+200D, U+FEFF) are refused", async () => {
    for (const path of ["user/invoice\u202etxt.exe", "user/team\u200dnotes", "user/\ufeffbom", "user/a\u2066b"]) {
      expectError(await create(profile, ownerToken, path, "x"), 422, "memory_path_invalid")
      expectError(await profile.show(ownerToken, path), 422, "memory_path_invalid")
    }
    const listed = (await profile.list(ownerToken)).body.map((r: { path: string }) => r.path)
    expect(listed.filter((path: string) => !path.isWellFormed() || /\p{Cf}/u.test(path))).toEqual([])
  })
})

describe("skills/ rows", () => {
  it("<scope>/skills/<name> needs a description (at most 1024 bytes), shown on the row", async () => {
    const created = await create(notebook, agentA.token, "agent/skills/code-review", "# Review\nLook closely.", {
      description: "Reviews code"
    })
    expect(created.status).toBe(201)
    expect(created.body.memory.description).toBe("Reviews code")
    const row = (await notebook.list(agentA.token)).body.find(
      (r: { path: string }) => r.path === "agent/skills/code-review"
    )
    expect(row.description).toBe("Reviews code")
    expectError(
      await create(notebook, agentA.token, "agent/skills/no-description", "x"),
      422,
      "skill_description_required"
    )
    expectError(
      await create(notebook, agentA.token, "agent/skills/blank", "x", { description: "  " }),
      422,
      "skill_description_required"
    )
    expectError(
      await create(notebook, agentA.token, "agent/skills/long", "x", { description: "é".repeat(513) }),
      422,
      "memory_description_invalid"
    )
    expect(
      (await create(notebook, agentA.token, "agent/skills/exact", "x", { description: "d".repeat(1024) })).status
    ).toBe(201)
    expectError(
      await create(notebook, agentA.token, "agent/skills/two-lines", "x", { description: "a\nb" }),
      422,
      "memory_description_invalid"
    )
    // A replace is whole: the description is required again.
    expectError(
      await notebook.write(agentA.token, {
        path: "agent/skills/code-review",
        content: "y",
        ...observed(created.body.memory)
      }),
      422,
      "skill_description_required"
    )
  })

  it("a description outside skills/ is refused (memory_description_invalid)", async () => {
    expectError(
      await create(notebook, agentA.token, "agent/plain.md", "x", { description: "not a skill" }),
      422,
      "memory_description_invalid"
    )
    expect((await create(notebook, agentA.token, "agent/plain.md", "x", { description: null })).status).toBe(201)
  })

  it("skill names are [a-z0-9] words joined by single hyphens, at most 64 characters", async () => {
    for (const name of [
      "Code-Review",
      "code_review",
      "code--review",
      "-code",
      "code-",
      "a".repeat(65),
      "nested/skill"
    ]) {
      expectError(
        await create(notebook, agentA.token, `agent/skills/${name}`, "x", { description: "d" }),
        422,
        "skill_name_invalid"
      )
    }
    expect(
      (await create(notebook, agentA.token, `agent/skills/${"a".repeat(64)}`, "x", { description: "d" })).status
    ).toBe(201)
    expect((await create(notebook, agentA.token, "agent/skills/v2-0-release", "x", { description: "d" })).status).toBe(
      201
    )
  })

  it("conversation/skills/ is refused skill_scope_unavailable", async () => {
    expectError(
      await create(notebook, agentA.token, "conversation/skills/review", "x", { description: "d" }),
      422,
      "skill_scope_unavailable"
    )
  })
})

describe("limits", () => {
  it("64 KiB per document (UTF-8 bytes): one byte more is 422 memory_document_too_large", async () => {
    const exact = await create(notebook, agentA.token, "agent/big.md", "x".repeat(65536))
    expect([exact.status, exact.body.memory.bytesize]).toEqual([201, 65536])
    expectError(
      await create(notebook, agentA.token, "agent/bigger.md", "x".repeat(65537)),
      422,
      "memory_document_too_large"
    )
    expectError(
      await create(notebook, agentA.token, "agent/wide.md", "é".repeat(32769)),
      422,
      "memory_document_too_large"
    )
    expectError(
      await notebook.write(agentA.token, {
        path: "agent/big.md",
        content: "y".repeat(65537),
        ...observed(exact.body.memory)
      }),
      422,
      "memory_document_too_large"
    )
  })

  it("content must be text: a non-string is 422 memory_content_invalid; NUL or a lone surrogate is refused at decoding", async () => {
    expectError(
      await create(notebook, agentA.token, "agent/c.md", 42 as unknown as string),
      422,
      "memory_content_invalid"
    )
    expectError(await create(notebook, agentA.token, "agent/c.md", "a\u0000b"), 400, "parameter_invalid")
    const lone = await request(server.baseUrl, "POST", "/agent_api/v1/profile/agents/notebook/memory", {
      headers: { ...bearer(agentA.token), "content-type": "application/json" },
      raw: '{"memory": {"path": "agent/c.md", "content": "a\\ud800b", "expected_public_id": null, "expected_lock_version": null}}'
    })
    expectError(lone, 400, "parameter_invalid")
    expect((await create(notebook, agentA.token, "agent/empty.md", "")).body.memory.bytesize).toBe(0)
  })

  it("64 documents per anchor: the 65th create is 422 memory_full; replaces still work; a delete makes room", async () => {
    const created = await Promise.all(
      Array.from({ length: 64 }, (_, i) =>
        create(profile, memberToken, `user/doc-${String(i).padStart(2, "0")}.md`, `doc ${i}`)
      )
    )
    expect(created.every((r) => r.status === 201)).toBe(true)
    expectError(await create(profile, memberToken, "user/one-more.md", "x"), 422, "memory_full")
    // The member's agent reaches the same user/ anchor: full for it too.
    expectError(await create(profile, memberAgent.token, "user/from-agent.md", "x"), 422, "memory_full")
    const first = created[0]!.body.memory
    expect(
      (await profile.write(memberToken, { path: first.path, content: "changed", ...observed(first) })).status
    ).toBe(201)
    // The limit is per anchor: the member agent's definition has its own agent/ anchor with room.
    expect((await create(racer, memberAgent.token, "agent/own.md", "mine")).status).toBe(201)
    const current = (await profile.show(memberToken, first.path)).body.memory
    expect((await profile.remove(memberToken, { path: first.path, ...observed(current) })).status).toBe(204)
    expect((await create(profile, memberToken, "user/one-more.md", "x")).status).toBe(201)
    expect((await profile.list(memberToken)).body).toHaveLength(64)
  })

  it("concurrent creates never pass 64", async () => {
    const racing = await Promise.all(
      Array.from({ length: 70 }, (_, i) => create(racer, memberAgent.token, `agent/race-${i}.md`, "r"))
    )
    expect(racing.filter((r) => r.status === 201)).toHaveLength(63)
    expect(racing.filter((r) => r.body?.error?.code === "memory_full")).toHaveLength(7)
    expect((await racer.list(memberAgent.token)).body).toHaveLength(64)
  })
})

describe("grep", () => {
  beforeAll(async () => {
    await create(grepper, agentB.token, "agent/a.md", "Alpha line\nsecond\nthe alpha again\r\nlast")
    await create(grepper, agentB.token, "agent/b/deep.md", "alpha deep\n")
    await create(
      grepper,
      agentB.token,
      "agent/many.md",
      Array.from({ length: 600 }, (_, i) => `match ${i + 1}`).join("\n")
    )
    await create(grepper, agentB.token, "agent/wide.md", `${"w".repeat(800)}\n${"€".repeat(600)}`)
  })

  it("answers {matches: [{path, line_number, text}], truncated} in path then line order", async () => {
    const found = await grepper.grep(agentB.token, { pattern: "alpha", path: "agent/a.md" })
    expect(found.status).toBe(200)
    expect(found.body).toEqual({
      matches: [{ path: "agent/a.md", line_number: 3, text: "the alpha again" }],
      truncated: false
    })
    const all = await grepper.grep(agentB.token, { pattern: "alpha" })
    expect(all.body.matches.map((m: { path: string; line_number: number }) => `${m.path}:${m.line_number}`)).toEqual([
      "agent/a.md:3",
      "agent/b/deep.md:1"
    ])
  })

  it("ignore_case", async () => {
    const found = await grepper.grep(agentB.token, { pattern: "ALPHA", ignore_case: true, path: "agent" })
    expect(found.body.matches.map((m: { path: string; line_number: number }) => `${m.path}:${m.line_number}`)).toEqual([
      "agent/a.md:1",
      "agent/a.md:3",
      "agent/b/deep.md:1"
    ])
    expect((await grepper.grep(agentB.token, { pattern: "ALPHA" })).body.matches).toEqual([])
    expect((await grepper.grep(agentB.token, { pattern: "(?i:A)lpha", path: "agent/a.md" })).body.matches).toHaveLength(
      2
    )
  })

  it("limit defaults to 100 and goes up to 500; more matches set truncated", async () => {
    const byDefault = await grepper.grep(agentB.token, { pattern: "^match \\d+$" })
    expect([byDefault.body.matches.length, byDefault.body.truncated]).toEqual([100, true])
    expect(byDefault.body.matches[99]).toEqual({ path: "agent/many.md", line_number: 100, text: "match 100" })
    const most = await grepper.grep(agentB.token, { pattern: "^match", limit: 500 })
    expect([most.body.matches.length, most.body.truncated]).toEqual([500, true])
    const exact = await grepper.grep(agentB.token, { pattern: "^match", limit: 500, path: "agent/many.md" })
    expect(exact.body.truncated).toBe(true)
    const fits = await grepper.grep(agentB.token, { pattern: "^match 5\\d\\d$", limit: 100 })
    expect([fits.body.matches.length, fits.body.truncated]).toEqual([100, false])
    const one = await grepper.grep(agentB.token, { pattern: "^match", limit: 1 })
    expect([one.body.matches.length, one.body.truncated]).toEqual([1, true])
    for (const limit of [0, 501, 2.5, "10", -1]) {
      expectError(await grepper.grep(agentB.token, { pattern: "x", limit }), 400, "parameter_invalid")
    }
  })

  it("lines are capped at 500 characters (code points); the whole line is matched", async () => {
    const found = await grepper.grep(agentB.token, { pattern: "w$|€$", path: "agent/wide.md" })
    expect(found.body.matches.map((m: { text: string }) => [...m.text].length)).toEqual([500, 500])
    expect(found.body.matches[1].text).toBe("€".repeat(500))
  })

  it("path filters by scope, directory or document", async () => {
    expect((await grepper.grep(agentB.token, { pattern: "alpha", path: "agent/b" })).body.matches).toHaveLength(1)
    expect((await grepper.grep(agentB.token, { pattern: "alpha", path: "agent/b/" })).body.matches).toHaveLength(1)
    expect((await grepper.grep(agentB.token, { pattern: "alpha", path: "agent/c" })).body.matches).toEqual([])
    expect((await profile.grep(agentB.token, { pattern: "tea", path: "user" })).body.matches).toEqual([
      { path: "user/preferences.md", line_number: 1, text: "likes tea" }
    ])
  })

  it("patterns are JavaScript regular expressions (u flag), run in linear time", async () => {
    const matched = async (pattern: string) =>
      (await grepper.grep(agentB.token, { pattern })).body.matches.map(
        (m: { path: string; line_number: number }) => `${m.path}:${m.line_number}`
      )
    expect(await matched("\\bdeep\\b")).toEqual(["agent/b/deep.md:1"])
    expect(await matched("^(?<word>\\p{Lu}\\p{Ll}+) line$")).toEqual(["agent/a.md:1"])
    expect(await matched("€{600}")).toEqual(["agent/wide.md:2"])
    expect(await matched("\\u{20AC}$")).toEqual(["agent/wide.md:2"])
    // The empty pattern compiles and matches every line.
    const every = await grepper.grep(agentB.token, { pattern: "", path: "agent/a.md" })
    expect(every.body.matches).toHaveLength(4)
    const hostile = await grepper.grep(agentB.token, { pattern: "(a|aa)+$|(x+x+)+y" })
    expect(hostile.status).toBe(200)
  })

  it("a pattern that does not compile is 422 memory_pattern_invalid", async () => {
    for (const pattern of ["[", "(?i)alpha", "a**", "\\p{Han}", "\\k<missing>"]) {
      expectError(await grepper.grep(agentB.token, { pattern }), 422, "memory_pattern_invalid")
    }
  })

  it("over 1024 bytes, a backreference or lookaround is 422 memory_pattern_too_costly", async () => {
    expect((await grepper.grep(agentB.token, { pattern: "é".repeat(512) })).status).toBe(200)
    for (const pattern of [
      "é".repeat(513),
      "(a)\\1",
      "(?<l>a)\\k<l>",
      "alpha(?= again)",
      "(?<!the )alpha",
      "a{1001}"
    ]) {
      expectError(await grepper.grep(agentB.token, { pattern }), 422, "memory_pattern_too_costly")
    }
  })

  it("the members' shapes stay 400s", async () => {
    expectError(await grepper.grep(agentB.token, { pattern: 7 }), 400, "parameter_invalid")
    expectError(await grepper.grep(agentB.token, {}), 400, "parameter_missing")
    expectError(await grepper.grep(agentB.token, { pattern: "x", ignore_case: "yes" }), 400, "parameter_invalid")
    expectError(await grepper.grep(agentB.token, { pattern: "x", ignore_case: null }), 400, "parameter_invalid")
    expectError(await grepper.grep(agentB.token, { pattern: "x", limit: null }), 400, "parameter_invalid")
  })
})

describe("the caller's memory ceiling (memory_context_limit)", () => {
  it("access read makes writes 403 memory_read_only; roots leave other scopes unavailable", async () => {
    const limited = await connectAgent(server, ownerBrowser, "mem-limited")
    const doc = (await create(profile, limited.token, "user/limited-before.md", "written before the limit")).body.memory
    await setMemoryLimit(limited, { roots: ["user"], access: "read" })
    expect((await profile.show(limited.token, "user/limited-before.md")).status).toBe(200)
    expectError(await create(profile, limited.token, "user/limited-after.md", "x"), 403, "memory_read_only")
    expectError(
      await profile.edit(limited.token, {
        path: "user/limited-before.md",
        old_text: "before",
        new_text: "after",
        ...observed(doc)
      }),
      403,
      "memory_read_only"
    )
    expectError(
      await profile.remove(limited.token, { path: "user/limited-before.md", ...observed(doc) }),
      403,
      "memory_read_only"
    )
    await setMemoryLimit(limited, { roots: ["agent"], access: null })
    expectError(await profile.show(limited.token, "user/limited-before.md"), 422, "memory_scope_unavailable")
    expect((await profile.list(limited.token)).body).toEqual([])
    await setMemoryLimit(limited, { roots: null, access: "read_write" })
    expect((await create(profile, limited.token, "user/limited-after.md", "x")).status).toBe(201)
  })
})

describe("workspace door", () => {
  it("reaches workspace/ only, with every verb", async () => {
    const ws = await newWorkspace(ownerToken, { name: "Memory room" })
    const at = workspaceDoor(ws.public_id)
    const created = await create(at, ownerToken, "workspace/plan.md", "step one\nstep two")
    expect(created.status).toBe(201)
    expect((await at.show(ownerToken, "workspace/plan.md")).body.memory.content).toBe("step one\nstep two")
    expect((await at.list(ownerToken)).body.map((r: { path: string }) => r.path)).toEqual(["workspace/plan.md"])
    expect((await at.grep(ownerToken, { pattern: "two" })).body.matches).toEqual([
      { path: "workspace/plan.md", line_number: 2, text: "step two" }
    ])
    const edited = await at.edit(ownerToken, {
      path: "workspace/plan.md",
      old_text: "one",
      new_text: "1",
      ...observed(created.body.memory)
    })
    expect(edited.body.memory.content).toBe("step 1\nstep two")
    expect((await at.remove(ownerToken, { path: "workspace/plan.md", ...observed(edited.body.memory) })).status).toBe(
      204
    )
    expectError(await at.show(ownerToken, "workspace/plan.md"), 404, "memory_not_found")
    expectError(await create(at, ownerToken, "user/x.md", "x"), 422, "memory_scope_unavailable")
    expectError(await create(at, ownerToken, "agent/x.md", "x"), 422, "memory_scope_unavailable")
    expectError(await create(profile, ownerToken, "workspace/x.md", "x"), 422, "memory_scope_unavailable")
  })

  it("each workspace is its own anchor", async () => {
    const one = await newWorkspace(ownerToken, { name: "One" })
    const two = await newWorkspace(ownerToken, { name: "Two" })
    await create(workspaceDoor(one.public_id), ownerToken, "workspace/only-here.md", "x")
    expectError(await workspaceDoor(two.public_id).show(ownerToken, "workspace/only-here.md"), 404, "memory_not_found")
  })

  it("another member's private workspace memory is 404 not_found, exactly like an absent workspace", async () => {
    const hidden = await newWorkspace(ownerToken, { name: "Private memory", access_mode: "private" })
    await create(workspaceDoor(hidden.public_id), ownerToken, "workspace/secret.md", "classified")
    const verbs = (id: string, token: string) => {
      const at = workspaceDoor(id)
      return [
        at.list(token),
        at.show(token, "workspace/secret.md"),
        at.grep(token, { pattern: "classified" }),
        create(at, token, "workspace/new.md", "x"),
        at.edit(token, {
          path: "workspace/secret.md",
          old_text: "c",
          new_text: "d",
          expected_public_id: absentWorkspace,
          expected_lock_version: 0
        }),
        at.remove(token, { path: "workspace/secret.md", expected_public_id: absentWorkspace, expected_lock_version: 0 })
      ]
    }
    for (const token of [memberToken, memberAgent.token]) {
      const concealed = await Promise.all(verbs(hidden.public_id, token))
      const absent = await Promise.all(verbs(absentWorkspace, token))
      for (const [index, response] of concealed.entries()) {
        expect([response.status, response.body]).toEqual([absent[index]!.status, absent[index]!.body])
        expectError(response, 404, "not_found")
      }
    }
    expectError(await workspaceDoor("not-a-uuid").list(memberToken), 404, "not_found")
  })

  it("an account-wide workspace's memory is every member's to read and write", async () => {
    const shared = await newWorkspace(ownerToken, { name: "Shared memory", access_mode: "account_wide" })
    expect(
      (await create(workspaceDoor(shared.public_id), memberAgent.token, "workspace/shared.md", "hello")).status
    ).toBe(201)
    expect((await workspaceDoor(shared.public_id).show(ownerToken, "workspace/shared.md")).body.memory.content).toBe(
      "hello"
    )
  })

  it("writes need write standing: another agent on a dedicated workspace is 403; an archived workspace is 409; reads still work", async () => {
    const dedicated = await newWorkspace(agentA.token, { name: "A's room" })
    const at = workspaceDoor(dedicated.public_id)
    const doc = (await create(at, agentA.token, "workspace/a.md", "for A")).body.memory
    expect((await at.show(agentB.token, "workspace/a.md")).status).toBe(200)
    expectError(await create(at, agentB.token, "workspace/b.md", "x"), 403, "workspace_agent_identifier_mismatch")
    expectError(
      await at.remove(agentB.token, { path: "workspace/a.md", ...observed(doc) }),
      403,
      "workspace_agent_identifier_mismatch"
    )
    // The steward (a human with access) may write.
    expect((await create(at, ownerToken, "workspace/steward.md", "x")).status).toBe(201)

    const archived = await newWorkspace(ownerToken, { name: "Archive me" })
    const room = workspaceDoor(archived.public_id)
    const kept = (await create(room, ownerToken, "workspace/kept.md", "kept")).body.memory
    const archival = await call("POST", `/workspaces/${archived.public_id}/archival`, ownerToken, {
      command: { lock_version: 0 }
    })
    expect(archival.status).toBe(200)
    expectError(await create(room, ownerToken, "workspace/late.md", "x"), 409, "workspace_not_active")
    expectError(
      await room.edit(ownerToken, { path: "workspace/kept.md", old_text: "kept", new_text: "k", ...observed(kept) }),
      409,
      "workspace_not_active"
    )
    expect((await room.show(ownerToken, "workspace/kept.md")).body.memory.content).toBe("kept")
    expect((await room.list(ownerToken)).status).toBe(200)
  })

  it("the caller's read-only ceiling holds at the workspace door too", async () => {
    const limited = await connectAgent(server, ownerBrowser, "mem-limited-ws")
    const ws = await newWorkspace(ownerToken, { name: "Ceiling", access_mode: "account_wide" })
    await setMemoryLimit(limited, { roots: null, access: "read" })
    expectError(
      await create(workspaceDoor(ws.public_id), limited.token, "workspace/x.md", "x"),
      403,
      "memory_read_only"
    )
    await setMemoryLimit(limited, { roots: ["agent", "user"], access: null })
    expectError(
      await create(workspaceDoor(ws.public_id), limited.token, "workspace/x.md", "x"),
      422,
      "memory_scope_unavailable"
    )
  })
})

describe("a provider's override of workspace memory", () => {
  it("while svc.memory is overridden: 409 memory_overridden, except show, write and delete of a skills/ path", async () => {
    // A tool provider of the account, shared account-wide, announcing every memory verb.
    const started = await startDevice(server, machineFields("memory-provider", { executor_kind: "tool_provider" }))
    await decide(ownerBrowser, started.user_code, "approve", "account_wide")
    const transport = (await poll(server, started.device_code)).body.access_token as string
    const verbs = ["memory_read", "memory_write", "memory_edit", "memory_ls", "memory_grep", "memory_delete"]
    const profileOf = {
      kind: "write",
      destructive: false,
      effect_scope: "closed",
      idempotency: "none",
      reconciliation: "none"
    }
    const announced = await request(server.baseUrl, "PUT", "/agent_api/v1/executor/announcement", {
      headers: bearer(transport),
      body: {
        tools: verbs.map((name) => ({
          name,
          effect_profile: profileOf,
          description: name,
          input_schema: { type: "object" }
        }))
      }
    })
    expect(announced.status).toBe(200)
    const provider = (await request(server.baseUrl, "GET", "/agent_api/v1/executor", { headers: bearer(transport) }))
      .body.executor

    const ws = await newWorkspace(ownerToken, { name: "Overridden" })
    const at = workspaceDoor(ws.public_id)
    const plain = (await create(at, ownerToken, "workspace/plain.md", "plain text")).body.memory
    const skill = (await create(at, ownerToken, "workspace/skills/deploy", "how to deploy", { description: "Deploys" }))
      .body.memory
    const override = await call("PUT", `/workspaces/${ws.public_id}/tool_provider_overrides`, ownerToken, {
      tool_provider_overrides: { overrides: { "svc.memory": provider.public_id }, lock_version: 0 }
    })
    expect(override.status).toBe(200)

    expectError(await at.list(ownerToken), 409, "memory_overridden")
    expectError(await at.grep(ownerToken, { pattern: "deploy" }), 409, "memory_overridden")
    expectError(await at.show(ownerToken, "workspace/plain.md"), 409, "memory_overridden")
    expectError(await create(at, ownerToken, "workspace/new.md", "x"), 409, "memory_overridden")
    expectError(
      await at.edit(ownerToken, { path: "workspace/plain.md", old_text: "plain", new_text: "p", ...observed(plain) }),
      409,
      "memory_overridden"
    )
    expectError(
      await at.edit(ownerToken, {
        path: "workspace/skills/deploy",
        old_text: "how",
        new_text: "How",
        ...observed(skill)
      }),
      409,
      "memory_overridden"
    )
    expectError(
      await at.remove(ownerToken, { path: "workspace/plain.md", ...observed(plain) }),
      409,
      "memory_overridden"
    )

    expect((await at.show(ownerToken, "workspace/skills/deploy")).body.memory.content).toBe("how to deploy")
    const replaced = await at.write(ownerToken, {
      path: "workspace/skills/deploy",
      content: "v2",
      description: "Deploys",
      ...observed(skill)
    })
    expect(replaced.status).toBe(201)
    expect(
      (await create(at, ownerToken, "workspace/skills/rollback", "undo", { description: "Rolls back" })).status
    ).toBe(201)
    expect(
      (await at.remove(ownerToken, { path: "workspace/skills/deploy", ...observed(replaced.body.memory) })).status
    ).toBe(204)

    // The profile door is not the workspace's: unaffected.
    expect((await profile.list(ownerToken)).status).toBe(200)
    const cleared = await call("PUT", `/workspaces/${ws.public_id}/tool_provider_overrides`, ownerToken, {
      tool_provider_overrides: { overrides: {}, lock_version: 1 }
    })
    expect(cleared.status).toBe(200)
    expect((await at.list(ownerToken)).body.map((r: { path: string }) => r.path)).toEqual([
      "workspace/plain.md",
      "workspace/skills/rollback"
    ])
  })
})

describe("named-agent door", () => {
  beforeAll(async () => {
    const put = (token: string, name: string, scope: string) =>
      call("PUT", `/profile/agents/${name}`, token, { scope, description: `The ${name}`, configuration: {} })
    expect((await put(agentA.token, "reviewer", "instance")).status).toBe(201)
    expect((await put(agentA.token, "published", "steward")).status).toBe(201)
  })

  it("reaches agent/ of the declarer's definition only, with every verb", async () => {
    const at = namedDoor("reviewer")
    const created = await create(at, agentA.token, "agent/persona-notes.md", "be kind")
    expect(created.status).toBe(201)
    expect((await at.show(agentA.token, "agent/persona-notes.md")).body.memory.content).toBe("be kind")
    expect((await at.list(agentA.token)).body.map((r: { path: string }) => r.path)).toEqual(["agent/persona-notes.md"])
    expect((await at.grep(agentA.token, { pattern: "kind" })).body.matches).toHaveLength(1)
    const edited = await at.edit(agentA.token, {
      path: "agent/persona-notes.md",
      old_text: "kind",
      new_text: "thorough",
      ...observed(created.body.memory)
    })
    expect(edited.body.memory).toMatchObject({ lock_version: 1, content: "be thorough" })
    expect((await create(at, agentA.token, "agent/skills/triage", "steps", { description: "Triage" })).status).toBe(201)
    // The definition's memory is its own, not another definition's.
    expectError(await notebook.show(agentA.token, "agent/persona-notes.md"), 404, "memory_not_found")
    expectError(await create(at, agentA.token, "user/x.md", "x"), 422, "memory_scope_unavailable")
    expectError(await create(at, agentA.token, "workspace/x.md", "x"), 422, "memory_scope_unavailable")
    expect(
      (await at.remove(agentA.token, { path: "agent/persona-notes.md", ...observed(edited.body.memory) })).status
    ).toBe(204)
  })

  it("declarer only: another agent (even of the same steward, even a published row) and unknown names are 404; a human is 403 not_agent", async () => {
    expectError(await namedDoor("reviewer").list(agentB.token), 404, "not_found")
    expectError(await namedDoor("published").show(agentB.token, "agent/x.md"), 404, "not_found")
    expectError(await namedDoor("nobody").list(agentA.token), 404, "not_found")
    expectError(await namedDoor("reviewer").list(ownerToken), 403, "not_agent")
    expectError(await create(namedDoor("reviewer"), ownerToken, "agent/x.md", "x"), 403, "not_agent")
    const miss = await namedDoor("Reviewer").list(agentA.token)
    expect(miss.status).toBe(404)
  })

  it("a removed definition's memory is 404 until it is restored, and then it is back", async () => {
    const at = namedDoor("published")
    await create(at, agentA.token, "agent/keep.md", "survives removal")
    expect((await call("DELETE", "/profile/agents/published", agentA.token)).status).toBe(204)
    expectError(await at.list(agentA.token), 404, "not_found")
    const restored = await call("PUT", "/profile/agents/published", agentA.token, {
      scope: "steward",
      description: "The published",
      configuration: {}
    })
    expect(restored.status).toBe(200)
    expect((await at.show(agentA.token, "agent/keep.md")).body.memory.content).toBe("survives removal")
  })

  it("the declarer's read-only ceiling holds here too", async () => {
    const declarer = await connectAgent(server, ownerBrowser, "mem-declarer")
    expect(
      (
        await call("PUT", "/profile/agents/helper", declarer.token, {
          scope: "instance",
          description: "Helps",
          configuration: {}
        })
      ).status
    ).toBe(201)
    await setMemoryLimit(declarer, { roots: null, access: "read" })
    expectError(await create(namedDoor("helper"), declarer.token, "agent/x.md", "x"), 403, "memory_read_only")
    expect((await namedDoor("helper").list(declarer.token)).status).toBe(200)
  })
})

describe("authentication", () => {
  it("every door wants a member credential", async () => {
    const anonymous = await request(server.baseUrl, "GET", "/agent_api/v1/profile/memory")
    expectError(anonymous, 401, "unauthorized")
    const transportless = await request(
      server.baseUrl,
      "POST",
      `/agent_api/v1/workspaces/${absentWorkspace}/memory/show`,
      { body: { memory: { path: "workspace/x" } } }
    )
    expectError(transportless, 401, "unauthorized")
  })
})
