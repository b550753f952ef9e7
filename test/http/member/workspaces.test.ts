import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { waitForActorState } from "../../support/actors.ts"
import { bearer, request } from "../../support/http.ts"
import type { ConnectedAgent } from "../../support/members.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
let ownerAgent: ConnectedAgent
let otherAgent: ConnectedAgent
let memberAgent: ConnectedAgent
let ownerToken: string
let memberToken: string
let memberPublicId: string

const call = (method: string, path: string, token: string, body?: unknown, headers: Record<string, string> = {}) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, { headers: { ...bearer(token), ...headers }, body })

let keys = 0
const create = (token: string, workspace: Record<string, unknown>, key = `key-${keys++}`) =>
  call("POST", "/workspaces", token, { workspace }, { "idempotency-key": key })

beforeAll(async () => {
  server = await startTestServer()
  const account = await twoStewards(server, {
    owner: ["ws-owner-agent", "ws-other-agent"],
    member: ["ws-member-agent"]
  })
  ;[ownerAgent, otherAgent] = account.ownerAgents as [ConnectedAgent, ConnectedAgent]
  memberAgent = account.memberAgents[0]!
  memberPublicId = account.member.public_id
  ownerToken = account.ownerToken
  memberToken = account.memberToken
})
afterAll(() => server?.close())

describe("create", () => {
  it("a human's create is owned by them, undedicated, with the access mode asked", async () => {
    const created = await create(ownerToken, {
      name: "Plans",
      access_mode: "account_wide",
      metadata: { color: "blue" }
    })
    expect(created.status).toBe(201)
    expect(created.headers.get("idempotency-replayed")).toBe("false")
    expect(created.body.workspace).toMatchObject({
      name: "Plans",
      access_mode: "account_wide",
      metadata: { color: "blue" },
      lock_version: 0,
      state: "active"
    })
    expect(JSON.stringify(created.body)).not.toContain("dedicat")
  })

  it("answers carry archived_at (null while live), the owner and the creator", async () => {
    const profile = (await call("GET", "/profile", ownerToken)).body.member
    const byHuman = (await create(ownerToken, { name: "Projected" })).body.workspace
    const human = { public_id: profile.public_id, display_name: profile.display_name }
    expect(byHuman).toMatchObject({
      archived_at: null,
      owner_public_id: profile.public_id,
      owner: human,
      creator: { ...human, kind: "human" }
    })
    expect(Object.keys(byHuman.owner).sort()).toEqual(["display_name", "public_id"])
    const agent = (await call("GET", "/profile", ownerAgent.token)).body.member
    const byAgent = (await create(ownerAgent.token, { name: "Agent projected" })).body.workspace
    expect(byAgent).toMatchObject({
      owner: human,
      creator: { public_id: agent.public_id, display_name: agent.display_name, kind: "agent" }
    })
    expect((await call("GET", `/workspaces/${byAgent.public_id}`, ownerToken)).body.workspace).toEqual(byAgent)
    const patched = await call("PATCH", `/workspaces/${byAgent.public_id}`, ownerToken, {
      workspace: { name: "Renamed", lock_version: 0 }
    })
    expect(patched.body.workspace).toMatchObject({ archived_at: null, owner: human, creator: byAgent.creator })
    const rows = (await call("GET", "/workspaces?limit=100", ownerToken)).body.workspaces
    expect(rows.find((w: { public_id: string }) => w.public_id === byHuman.public_id)).toEqual(byHuman)
    for (const row of rows) expect(row.archived_at).toBeNull()
  })

  it("an agent's create is forced private, owned by its steward and dedicated to it; dedicated/agent_identifier are ignored", async () => {
    const created = await create(ownerAgent.token, {
      name: "Agent room",
      access_mode: "account_wide",
      dedicated: false,
      agent_identifier: "x"
    })
    expect(created.body.workspace.access_mode).toBe("private")
    const owner = (await call("GET", "/profile", ownerToken)).body.member.public_id
    expect(created.body.workspace.owner_public_id).toBe(owner)
    const dedicated = await call("GET", "/workspaces?dedicated_to_current_agent=true", ownerAgent.token)
    expect(dedicated.body.workspaces.map((w: { public_id: string }) => w.public_id)).toContain(
      created.body.workspace.public_id
    )
    for (const query of ["", "?dedicated_to_current_agent=false"]) {
      const undedicated = await call("GET", `/workspaces${query}`, ownerAgent.token)
      expect(undedicated.body.workspaces.map((w: { public_id: string }) => w.public_id)).not.toContain(
        created.body.workspace.public_id
      )
    }
    expect((await call("GET", "/workspaces?dedicated_to_current_agent=true", ownerToken)).body.workspaces).toEqual([])
  })

  it("replays verbatim with the same key, refuses another body with it, and makes one row under concurrency", async () => {
    const first = await create(ownerToken, { name: "Once" }, "same-key")
    const again = await create(ownerToken, { name: "Once" }, "same-key")
    expect(again.status).toBe(201)
    expect(again.headers.get("idempotency-replayed")).toBe("true")
    expect(again.body).toEqual(first.body)
    const mismatch = await create(ownerToken, { name: "Twice" }, "same-key")
    expect([mismatch.status, mismatch.body.error.code]).toEqual([409, "idempotency_envelope_mismatch"])
    const racing = await Promise.all(
      Array.from({ length: 6 }, () => create(ownerToken, { name: "Racing" }, "racing-key"))
    )
    expect(new Set(racing.map((r) => r.body.workspace.public_id)).size).toBe(1)
    const all = await call("GET", "/workspaces?limit=100", ownerToken)
    expect(all.body.workspaces.filter((w: { name: string }) => w.name === "Racing")).toHaveLength(1)
  })

  it("validates: key 1..255 bytes, name required, metadata a JSON object of at most 2 KiB", async () => {
    expect((await call("POST", "/workspaces", ownerToken, { workspace: { name: "x" } })).body.error.code).toBe(
      "idempotency_key_required"
    )
    expect((await create(ownerToken, { name: "x" }, "k".repeat(256))).body.error.code).toBe("parameter_invalid")
    expect((await create(ownerToken, { name: "x" }, "k".repeat(255))).status).toBe(201)
    expect((await create(ownerToken, {})).body.error.code).toBe("parameter_missing")
    expect((await create(ownerToken, { name: "x", metadata: { blob: "y".repeat(2100) } })).status).toBe(413)
    expect((await create(ownerToken, { name: "x", metadata: [1] })).body.error.code).toBe("validation_failed")
  })
})

describe("reading and listing", () => {
  it("another member's private workspace is 404, not 403; account-wide ones are visible", async () => {
    const hidden = (await create(ownerToken, { name: "Secret", access_mode: "private" })).body.workspace
    const shared = (await create(ownerToken, { name: "Shared", access_mode: "account_wide" })).body.workspace
    const asMember = await call("GET", `/workspaces/${hidden.public_id}`, memberToken)
    const absent = await call("GET", "/workspaces/01900000-0000-7000-8000-000000000000", memberToken)
    expect([asMember.status, asMember.body]).toEqual([absent.status, absent.body])
    expect(asMember.status).toBe(404)
    expect((await call("GET", `/workspaces/${shared.public_id}`, memberAgent.token)).status).toBe(200)
    expect((await call("GET", `/workspaces/${hidden.public_id}`, memberAgent.token)).status).toBe(404)
    expect((await call("GET", "/workspaces/not-a-uuid", memberToken)).status).toBe(404)
  })

  it("lists by state (live or archived, else 400) with keyset pagination", async () => {
    expect((await call("GET", "/workspaces?state=gone", ownerToken)).body.error.code).toBe("parameter_invalid")
    const seen: Array<string> = []
    let after: string | null = null
    do {
      const page: { body: { workspaces: Array<{ public_id: string }>; pagination: { next_after: string | null } } } =
        await call("GET", `/workspaces?limit=2${after ? `&after=${after}` : ""}`, ownerToken)
      seen.push(...page.body.workspaces.map((w) => w.public_id))
      after = page.body.pagination.next_after
    } while (after)
    expect(new Set(seen).size).toBe(seen.length)
    expect(seen.length).toBeGreaterThanOrEqual(4)
  })
})

describe("changes", () => {
  it("PATCH takes lock_version plus name or metadata; stale is 409, missing 400", async () => {
    const ws = (await create(ownerToken, { name: "Draft" })).body.workspace
    const patched = await call("PATCH", `/workspaces/${ws.public_id}`, ownerToken, {
      workspace: { name: "Final", lock_version: 0 }
    })
    expect(patched.body.workspace).toMatchObject({ name: "Final", lock_version: 1 })
    const topLevel = await call("PATCH", `/workspaces/${ws.public_id}`, ownerToken, {
      metadata: { a: 1 },
      lock_version: 1
    })
    expect(topLevel.body.workspace).toMatchObject({ metadata: { a: 1 }, lock_version: 2 })
    expect(
      (await call("PATCH", `/workspaces/${ws.public_id}`, ownerToken, { workspace: { name: "Late", lock_version: 0 } }))
        .body.error.code
    ).toBe("stale_object")
    expect(
      (await call("PATCH", `/workspaces/${ws.public_id}`, ownerToken, { workspace: { name: "x" } })).body.error.code
    ).toBe("parameter_missing")
    expect(
      (await call("PATCH", `/workspaces/${ws.public_id}`, ownerToken, { workspace: { lock_version: 2 } })).body.error
        .code
    ).toBe("parameter_missing")
  })

  it("access_mode and ownership_transfer are the owner's: agents and others get 403 not_workspace_owner", async () => {
    const ws = (await create(ownerToken, { name: "Owned", access_mode: "account_wide" })).body.workspace
    const byAgent = await call("PUT", `/workspaces/${ws.public_id}/access_mode`, ownerAgent.token, {
      access_mode: { access_mode: "private", lock_version: 0 }
    })
    expect([byAgent.status, byAgent.body.error.code]).toEqual([403, "not_workspace_owner"])
    const byMember = await call("PUT", `/workspaces/${ws.public_id}/access_mode`, memberToken, {
      access_mode: { access_mode: "private", lock_version: 0 }
    })
    expect(byMember.body.error.code).toBe("not_workspace_owner")
    const bad = await call("PUT", `/workspaces/${ws.public_id}/access_mode`, ownerToken, {
      access_mode: { access_mode: "public", lock_version: 0 }
    })
    expect(bad.body.error.code).toBe("validation_failed")
    const transferred = await call("POST", `/workspaces/${ws.public_id}/ownership_transfer`, ownerToken, {
      ownership_transfer: { target_user_public_id: memberPublicId, lock_version: 0 }
    })
    expect(transferred.body.workspace.owner_public_id).toBe(memberPublicId)
    expect(transferred.body.workspace.owner.public_id).toBe(memberPublicId)
    expect(transferred.body.workspace.creator).toEqual(ws.creator)
    const toAgent = await call("POST", `/workspaces/${ws.public_id}/ownership_transfer`, memberToken, {
      ownership_transfer: { target_user_public_id: memberAgent.publicId, lock_version: 1 }
    })
    expect([toAgent.status, toAgent.body.error.code]).toEqual([422, "target_not_eligible"])
  })

  it("the dedication fence refuses other agents' writes with workspace_agent_identifier_mismatch; humans may write", async () => {
    const ws = (await create(ownerAgent.token, { name: "Fenced" })).body.workspace
    const other = await call("PATCH", `/workspaces/${ws.public_id}`, otherAgent.token, {
      workspace: { name: "Mine", lock_version: 0 }
    })
    expect([other.status, other.body.error.code]).toEqual([403, "workspace_agent_identifier_mismatch"])
    expect(
      (
        await call("PATCH", `/workspaces/${ws.public_id}`, ownerToken, {
          workspace: { name: "Human edit", lock_version: 0 }
        })
      ).status
    ).toBe(200)
  })
})

describe("lifecycle", () => {
  /** An archived workspace, through its archival command. */
  const archivedWorkspace = async (name: string) => {
    const ws = (await create(ownerToken, { name })).body.workspace
    await call("POST", `/workspaces/${ws.public_id}/archival`, ownerToken, { command: { lock_version: 0 } })
    await waitForActorState(server, "workspace", ws.public_id, "archived")
    return (await call("GET", `/workspaces/${ws.public_id}`, ownerToken)).body.workspace
  }

  it("Workspace: active --archival command, lock_version matches--> archiving, then archived", async () => {
    const ws = (await create(ownerToken, { name: "Seasonal" })).body.workspace
    const stale = await call("POST", `/workspaces/${ws.public_id}/archival`, ownerToken, {
      command: { lock_version: 7 }
    })
    expect([stale.status, stale.body.error.code]).toEqual([409, "stale_object"])
    const archival = await call("POST", `/workspaces/${ws.public_id}/archival`, ownerToken, {
      command: { lock_version: 0 }
    })
    // The answer reads the row after the command's step: archiving, or already archived when the
    // archival's job finished first (the machine test pins the archiving state itself).
    expect(["archiving", "archived"]).toContain(archival.body.workspace.state)
    const archivedAt = archival.body.workspace.archived_at
    expect(Date.parse(archivedAt)).toBeGreaterThanOrEqual(Date.parse(ws.created_at))
    await waitForActorState(server, "workspace", ws.public_id, "archived")
    const archived = (await call("GET", `/workspaces/${ws.public_id}`, ownerToken)).body.workspace
    expect(archived.state).toBe("archived")
    expect(archived.archived_at).toBe(archivedAt)
    const listed = (await call("GET", "/workspaces?state=archived", ownerToken)).body.workspaces.find(
      (w: { public_id: string }) => w.public_id === ws.public_id
    )
    expect(listed.archived_at).toBe(archivedAt)
    const patch = await call("PATCH", `/workspaces/${ws.public_id}`, ownerToken, {
      workspace: { name: "x", lock_version: archived.lock_version }
    })
    expect(patch.body.error.code).toBe("workspace_not_active")
    const again = await call("POST", `/workspaces/${ws.public_id}/archival`, ownerToken, {
      command: { lock_version: archived.lock_version }
    })
    expect(again.body.error.code).toBe("workspace_not_active")
  })

  it("Workspace: archived --restoration command, lock_version matches--> restoring, then active; DELETE tombstones", async () => {
    const archived = await archivedWorkspace("Returning")
    const stale = await call("POST", `/workspaces/${archived.public_id}/restoration`, ownerToken, {
      command: { lock_version: 0 }
    })
    expect(stale.body.error.code).toBe("stale_object")
    const restoring = await call("POST", `/workspaces/${archived.public_id}/restoration`, ownerToken, {
      command: { lock_version: archived.lock_version }
    })
    // The answer reads the row after the command's step: restoring, or already active when the
    // restoration's job finished first (the machine test pins the restoring state itself).
    expect(restoring.body.workspace).toMatchObject({ archived_at: null })
    expect(["restoring", "active"]).toContain(restoring.body.workspace.state)
    await waitForActorState(server, "workspace", archived.public_id, "active")
    const active = (await call("GET", `/workspaces/${archived.public_id}`, ownerToken)).body.workspace
    expect(active).toMatchObject({ state: "active", archived_at: null })
    expect((await call("DELETE", `/workspaces/${archived.public_id}`, ownerToken)).body.error.code).toBe(
      "parameter_missing"
    )
    const deleted = await call(
      "DELETE",
      `/workspaces/${archived.public_id}?lock_version=${active.lock_version}`,
      ownerToken
    )
    expect(deleted.body.workspace.state).toBe("tombstoned")
    expect((await call("GET", `/workspaces/${archived.public_id}`, ownerToken)).status).toBe(404)
  })
})

describe("messaging, overrides and principals", () => {
  it("messaging is read and replaced whole, validated, under the workspace's lock_version", async () => {
    const ws = (await create(ownerToken, { name: "Chatty" })).body.workspace
    expect((await call("GET", `/workspaces/${ws.public_id}/messaging`, ownerToken)).body).toEqual({
      messaging: { agents: [], lock_version: 0 }
    })
    const replaced = await call("PUT", `/workspaces/${ws.public_id}/messaging`, ownerToken, {
      messaging: {
        agents: [
          { agent_public_id: ownerAgent.publicId, mode: "private", allowed_sender_public_ids: [otherAgent.publicId] },
          { agent_public_id: otherAgent.publicId }
        ],
        lock_version: 0
      }
    })
    expect(replaced.body.messaging).toEqual({
      agents: [
        { agent_public_id: ownerAgent.publicId, mode: "private", allowed_sender_public_ids: [otherAgent.publicId] },
        { agent_public_id: otherAgent.publicId, mode: "public", allowed_sender_public_ids: [] }
      ],
      lock_version: 1
    })
    const bad = await call("PUT", `/workspaces/${ws.public_id}/messaging`, ownerToken, {
      messaging: { agents: [{ agent_public_id: ownerAgent.publicId, mode: "secret" }], lock_version: 1 }
    })
    expect(bad.body.error.code).toBe("validation_failed")
    const missing = await call("PUT", `/workspaces/${ws.public_id}/messaging`, ownerToken, {
      messaging: { lock_version: 1 }
    })
    expect(missing.body.error.code).toBe("parameter_missing")
  })

  it("messaging ids are public ids in any case: answered as the agents' own, and one agent in two cases is a repeat", async () => {
    const ws = (await create(ownerToken, { name: "Cased" })).body.workspace
    const put = (agents: unknown, lockVersion: number) =>
      call("PUT", `/workspaces/${ws.public_id}/messaging`, ownerToken, {
        messaging: { agents, lock_version: lockVersion }
      })
    const upper = (id: string) => id.toUpperCase()
    const replaced = await put(
      [
        {
          agent_public_id: upper(ownerAgent.publicId),
          mode: "private",
          allowed_sender_public_ids: [upper(otherAgent.publicId), otherAgent.publicId]
        }
      ],
      0
    )
    expect(replaced.status).toBe(200)
    expect(replaced.body.messaging.agents).toEqual([
      { agent_public_id: ownerAgent.publicId, mode: "private", allowed_sender_public_ids: [otherAgent.publicId] }
    ])
    // The same agent twice, once upper-cased, would leave two entries with different modes.
    const repeated = await put(
      [
        { agent_public_id: ownerAgent.publicId, mode: "public" },
        { agent_public_id: upper(ownerAgent.publicId), mode: "private" }
      ],
      1
    )
    expect([repeated.status, repeated.body.error?.code]).toEqual([422, "validation_failed"])
    expect((await call("GET", `/workspaces/${ws.public_id}/messaging`, ownerToken)).body.messaging.lock_version).toBe(1)
  })

  it("overrides: reserved namespaces, then other namespaces, then provider eligibility; {} clears", async () => {
    const ws = (await create(ownerToken, { name: "Overridden" })).body.workspace
    const put = (overrides: unknown, lockVersion = 0) =>
      call("PUT", `/workspaces/${ws.public_id}/tool_provider_overrides`, ownerToken, {
        tool_provider_overrides: { overrides, lock_version: lockVersion }
      })
    expect(
      (await put({ "svc.graph": "01900000-0000-7000-8000-000000000000", "svc.memory": "x" })).body.error.code
    ).toBe("reserved_namespace")
    expect((await put({ "svc.skill": "01900000-0000-7000-8000-000000000000" })).body.error.code).toBe(
      "validation_failed"
    )
    expect((await put({ "svc.memory": "01900000-0000-7000-8000-000000000000" })).body.error.code).toBe(
      "provider_not_eligible"
    )
    const cleared = await put({})
    expect(cleared.body.tool_provider_overrides).toEqual({ overrides: {}, lock_version: 1 })
  })

  it("override checks come before the lock: a stale lock_version still hears the 422; then it is stale_object", async () => {
    const ws = (await create(ownerToken, { name: "Checked first" })).body.workspace
    const put = (overrides: unknown) =>
      call("PUT", `/workspaces/${ws.public_id}/tool_provider_overrides`, ownerToken, {
        tool_provider_overrides: { overrides, lock_version: 7 }
      })
    const provider = "01900000-0000-7000-8000-000000000000"
    expect((await put({ "svc.tools": provider })).body.error.code).toBe("reserved_namespace")
    expect((await put({ "svc.other": provider })).body.error.code).toBe("validation_failed")
    expect((await put({ "svc.memory": provider })).body.error.code).toBe("provider_not_eligible")
    const stale = await put({})
    expect([stale.status, stale.body.error.code]).toEqual([409, "stale_object"])
  })

  it("principals list every key, ordered by display name, never the system user", async () => {
    const ws = (await create(ownerToken, { name: "Crowd", access_mode: "account_wide" })).body.workspace
    const { principals } = (await call("GET", `/workspaces/${ws.public_id}/principals`, memberToken)).body
    const names = principals.map((p: { display_name: string }) => p.display_name)
    expect(names).toEqual([...names].sort())
    expect(names).not.toContain("System")
    for (const principal of principals) {
      expect(Object.keys(principal).sort()).toEqual([
        "agent_identifier",
        "display_name",
        "handle",
        "kind",
        "public_id",
        "steward_public_id"
      ])
    }
    const agent = principals.find((p: { kind: string }) => p.kind === "agent")
    expect(agent.agent_identifier).toEqual(expect.any(String))
    expect(principals.find((p: { kind: string }) => p.kind === "human").steward_public_id).toBeNull()
  })
})
