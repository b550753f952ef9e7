import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { waitForActorState } from "../../support/actors.ts"
import { callerKey, spend, startOfWindow } from "../../support/budget.ts"
import { bearer, request } from "../../support/http.ts"
import type { ConnectedAgent } from "../../support/members.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
let agent: ConnectedAgent
let otherAgent: ConnectedAgent
let limited: ConnectedAgent
let memberToken: string
let ownerToken: string

const absentId = "01900000-0000-7000-8000-000000000000"

const call = (method: string, path: string, token: string, body?: unknown, headers: Record<string, string> = {}) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, { headers: { ...bearer(token), ...headers }, body })

let keys = 0
const freshKey = () => `entry-key-${++keys}`

const expectError = (response: { status: number; body: any }, status: number, code: string) =>
  expect({ status: response.status, body: response.body }).toEqual({
    status,
    body: { error: { code, message: expect.any(String) } }
  })

beforeAll(async () => {
  server = await startTestServer()
  const account = await twoStewards(server, {
    owner: ["store-agent", "other-store-agent", "limited-store-agent"],
    member: []
  })
  ;[agent, otherAgent, limited] = account.ownerAgents as [ConnectedAgent, ConnectedAgent, ConnectedAgent]
  ownerToken = account.ownerToken
  memberToken = account.memberToken
})
afterAll(() => server?.close())

const workspace = async (token: string, name: string) =>
  (await call("POST", "/workspaces", token, { workspace: { name } }, { "idempotency-key": `ws-${name}` })).body
    .workspace

const entriesOf = (workspaceId: string) => `/workspaces/${workspaceId}/store_entries`

/** `idempotencyKey` null sends no Idempotency-Key header. */
const create = (
  token: string,
  workspaceId: string,
  entry: Record<string, unknown>,
  idempotencyKey: string | null = freshKey()
) =>
  call(
    "POST",
    entriesOf(workspaceId),
    token,
    { store_entry: entry },
    idempotencyKey === null ? {} : { "idempotency-key": idempotencyKey }
  )

const created = async (token: string, workspaceId: string, entry: Record<string, unknown>) => {
  const response = await create(token, workspaceId, entry)
  expect(response.status, JSON.stringify(response.body)).toBe(201)
  return response.body.store_entry as { public_id: string; lock_version: number; value: unknown }
}

const archive = async (workspaceId: string) => {
  const archived = await call("POST", `/workspaces/${workspaceId}/archival`, ownerToken, {
    command: { lock_version: 0 }
  })
  expect(archived.status, JSON.stringify(archived.body)).toBeLessThan(300)
  await waitForActorState(server, "workspace", workspaceId, "archived")
}

describe("idempotent create", () => {
  it("a create replays verbatim within the window and refuses the key with another body", async () => {
    const ws = await workspace(agent.token, "Store room")
    const path = entriesOf(ws.public_id)
    const body = { store_entry: { namespace: "prefs", key: "theme", value: { dark: true } } }
    const first = await call("POST", path, agent.token, body, { "idempotency-key": "entry-1" })
    expect(first.status).toBe(201)
    expect(first.headers.get("idempotency-replayed")).toBe("false")
    const again = await call("POST", path, agent.token, body, { "idempotency-key": "entry-1" })
    expect([again.status, again.headers.get("idempotency-replayed")]).toEqual([201, "true"])
    expect(again.body).toEqual(first.body)
    const other = await call(
      "POST",
      path,
      agent.token,
      { store_entry: { namespace: "prefs", key: "font", value: 1 } },
      { "idempotency-key": "entry-1" }
    )
    expectError(other, 409, "idempotency_envelope_mismatch")
    const listed = await call("GET", path, agent.token)
    expect(listed.body.store_entries.map((e: { key: string }) => e.key)).toEqual(["theme"])
    const shown = await call("GET", `${path}/${first.body.store_entry.public_id}`, ownerToken)
    expect(shown.body.store_entry.value).toEqual({ dark: true })
  })

  it("two concurrent creates with one key make one entry and answer alike", async () => {
    const ws = await workspace(agent.token, "Racing store")
    const entry = { namespace: "race", key: "once", value: { n: 1 } }
    const answers = await Promise.all([
      create(agent.token, ws.public_id, entry, "race-key"),
      create(agent.token, ws.public_id, entry, "race-key")
    ])
    expect(answers.map((answer) => answer.status)).toEqual([201, 201])
    expect(answers[1]!.body).toEqual(answers[0]!.body)
    expect(answers.map((answer) => answer.headers.get("idempotency-replayed")).sort()).toEqual(["false", "true"])
    const listed = await call("GET", `${entriesOf(ws.public_id)}?limit=100`, agent.token)
    expect(listed.body.store_entries).toHaveLength(1)
    expect(listed.body.store_entries[0].public_id).toBe(answers[0]!.body.store_entry.public_id)
  })
})

describe("create errors", () => {
  let ws: { public_id: string }
  beforeAll(async () => {
    ws = await workspace(agent.token, "Create errors")
  })

  it("a missing or blank Idempotency-Key answers 400 idempotency_key_required and creates nothing", async () => {
    for (const key of [null, "", "   "]) {
      expectError(
        await create(agent.token, ws.public_id, { namespace: "keys", key: "nokey", value: 1 }, key),
        400,
        "idempotency_key_required"
      )
    }
    const listed = await call("GET", `${entriesOf(ws.public_id)}?limit=100`, agent.token)
    expect(listed.body.store_entries.map((entry: { key: string }) => entry.key)).not.toContain("nokey")
  })

  it("the same namespace and key under a new Idempotency-Key answers 409 key_taken", async () => {
    await created(agent.token, ws.public_id, { namespace: "dup", key: "once", value: 1 })
    expectError(await create(agent.token, ws.public_id, { namespace: "dup", key: "once", value: 1 }), 409, "key_taken")
    expectError(await create(agent.token, ws.public_id, { namespace: "dup", key: "once", value: 2 }), 409, "key_taken")
    // The same namespace and key in another workspace is another host.
    const elsewhere = await workspace(agent.token, "Create errors elsewhere")
    await created(agent.token, elsewhere.public_id, { namespace: "dup", key: "once", value: 1 })
  })

  it("absent members answer 400 parameter_missing; a bad namespace or key 422 validation_failed naming it", async () => {
    const send = (body: unknown) =>
      call("POST", entriesOf(ws.public_id), agent.token, body, { "idempotency-key": freshKey() })
    expectError(await send({}), 400, "parameter_missing")
    expectError(await send({ store_entry: { key: "b", value: 1 } }), 400, "parameter_missing")
    expectError(await send({ store_entry: { namespace: "a", value: 1 } }), 400, "parameter_missing")
    expectError(await send({ store_entry: { namespace: "a", key: "b" } }), 400, "parameter_missing")
    for (const namespace of ["", "n".repeat(81), 7, null, "rtl\u202eoverride"]) {
      const response = await send({ store_entry: { namespace, key: "k", value: 1 } })
      expectError(response, 422, "validation_failed")
      expect(response.body.error.message).toContain("store_entry.namespace")
    }
    for (const key of ["", "k".repeat(161), "line\nbreak", "zwj\u200dkey", "\ufeffbom"]) {
      const response = await send({ store_entry: { namespace: "ns", key, value: 1 } })
      expectError(response, 422, "validation_failed")
      expect(response.body.error.message).toContain("store_entry.key")
    }
    expect((await send({ store_entry: { namespace: "Upper Case", key: "k".repeat(160), value: 1 } })).status).toBe(201)
  })

  it("a refused create keeps no receipt: the corrected retry with the same key is accepted", async () => {
    const key = freshKey()
    expectError(
      await create(agent.token, ws.public_id, { namespace: "", key: "k", value: 1 }, key),
      422,
      "validation_failed"
    )
    const retried = await create(agent.token, ws.public_id, { namespace: "good", key: "k", value: 1 }, key)
    expect([retried.status, retried.headers.get("idempotency-replayed")]).toEqual([201, "false"])
  })

  it("a value over 1 MiB of canonical JSON answers 413 content_too_large; exactly 1 MiB is accepted", async () => {
    const mib = 1024 * 1024
    expectError(
      await create(agent.token, ws.public_id, { namespace: "big", key: "over", value: "x".repeat(mib - 1) }),
      413,
      "content_too_large"
    )
    await created(agent.token, ws.public_id, { namespace: "big", key: "exact", value: "x".repeat(mib - 2) })
    const listed = await call("GET", `${entriesOf(ws.public_id)}?limit=100`, agent.token)
    const big = listed.body.store_entries.filter((entry: { namespace: string }) => entry.namespace === "big")
    expect(big.map((entry: { key: string }) => entry.key)).toEqual(["exact"])
  })

  it("the 65th entry of a workspace answers 409 entry_limit_reached; a repeated key is still key_taken", async () => {
    const full = await workspace(agent.token, "Full store")
    for (let index = 0; index < 64; index++) {
      await created(agent.token, full.public_id, {
        namespace: "fill",
        key: `k${String(index).padStart(2, "0")}`,
        value: index
      })
    }
    expectError(
      await create(agent.token, full.public_id, { namespace: "fill", key: "k64", value: 64 }),
      409,
      "entry_limit_reached"
    )
    expectError(
      await create(agent.token, full.public_id, { namespace: "fill", key: "k00", value: 0 }),
      409,
      "key_taken"
    )
    // Another workspace is another host.
    await created(agent.token, ws.public_id, { namespace: "fill", key: "k64", value: 64 })
    const first = (await call("GET", `${entriesOf(full.public_id)}?limit=1`, agent.token)).body.store_entries[0]
    expect(
      (await call("DELETE", `${entriesOf(full.public_id)}/${first.public_id}?lock_version=0`, agent.token)).status
    ).toBe(204)
    await created(agent.token, full.public_id, { namespace: "fill", key: "k64", value: 64 })
    expectError(
      await create(agent.token, full.public_id, { namespace: "fill", key: "k65", value: 65 }),
      409,
      "entry_limit_reached"
    )
    expect((await call("GET", `${entriesOf(full.public_id)}?limit=100`, agent.token)).body.store_entries).toHaveLength(
      64
    )
  })
})

describe("one entry", () => {
  it("an unknown id answers 404 not_found on GET, PATCH and DELETE", async () => {
    const ws = await workspace(agent.token, "Unknown ids")
    for (const id of [absentId, "not-a-uuid"]) {
      const path = `${entriesOf(ws.public_id)}/${id}`
      expectError(await call("GET", path, agent.token), 404, "not_found")
      expectError(
        await call("PATCH", path, agent.token, { store_entry: { value: 1, lock_version: 0 } }),
        404,
        "not_found"
      )
      expectError(await call("DELETE", `${path}?lock_version=0`, agent.token), 404, "not_found")
    }
  })

  it("an entry of one workspace is 404 under another (wrong host) and never listed there", async () => {
    const a = await workspace(agent.token, "Host A")
    const b = await workspace(agent.token, "Host B")
    const entry = await created(agent.token, a.public_id, { namespace: "host", key: "a", value: "A's" })
    const wrong = `${entriesOf(b.public_id)}/${entry.public_id}`
    expectError(await call("GET", wrong, agent.token), 404, "not_found")
    expectError(
      await call("PATCH", wrong, agent.token, { store_entry: { value: "B's", lock_version: 0 } }),
      404,
      "not_found"
    )
    expectError(await call("DELETE", `${wrong}?lock_version=0`, agent.token), 404, "not_found")
    expect((await call("GET", entriesOf(b.public_id), agent.token)).body.store_entries).toEqual([])
    const right = await call("GET", `${entriesOf(a.public_id)}/${entry.public_id}`, agent.token)
    expect(right.body.store_entry).toMatchObject({ value: "A's", lock_version: 0 })
  })

  it("a workspace the caller cannot see answers like an absent one, on every route", async () => {
    // A human member's workspace is private to that member.
    const hidden = await workspace(memberToken, "Member's private store")
    const entry = await created(memberToken, hidden.public_id, { namespace: "secret", key: "mine", value: "member's" })
    for (const token of [agent.token, ownerToken]) {
      for (const workspaceId of [hidden.public_id, absentId]) {
        const path = `${entriesOf(workspaceId)}/${entry.public_id}`
        expectError(await call("GET", entriesOf(workspaceId), token), 404, "not_found")
        expectError(
          await call(
            "POST",
            entriesOf(workspaceId),
            token,
            { store_entry: { namespace: "n", key: "k", value: 1 } },
            {
              "idempotency-key": freshKey()
            }
          ),
          404,
          "not_found"
        )
        expectError(await call("GET", path, token), 404, "not_found")
        expectError(
          await call("PATCH", path, token, { store_entry: { value: "stolen", lock_version: 0 } }),
          404,
          "not_found"
        )
        expectError(await call("DELETE", `${path}?lock_version=0`, token), 404, "not_found")
      }
    }
    const kept = await call("GET", `${entriesOf(hidden.public_id)}/${entry.public_id}`, memberToken)
    expect(kept.body.store_entry).toMatchObject({ value: "member's", lock_version: 0 })
  })

  it("PATCH and DELETE with a stale lock_version answer 409 stale_object and change nothing", async () => {
    const ws = await workspace(agent.token, "Stale store")
    const entry = await created(agent.token, ws.public_id, { namespace: "stale", key: "k", value: "v0" })
    const path = `${entriesOf(ws.public_id)}/${entry.public_id}`
    const patched = await call("PATCH", path, agent.token, { store_entry: { value: "v1", lock_version: 0 } })
    expect([patched.status, patched.body.store_entry.lock_version]).toEqual([200, 1])
    expectError(
      await call("PATCH", path, agent.token, { store_entry: { value: "v2", lock_version: 0 } }),
      409,
      "stale_object"
    )
    expectError(await call("DELETE", `${path}?lock_version=0`, agent.token), 409, "stale_object")
    expect((await call("GET", path, agent.token)).body.store_entry).toMatchObject({ value: "v1", lock_version: 1 })
    expect((await call("DELETE", `${path}?lock_version=1`, agent.token)).status).toBe(204)
    expectError(await call("GET", path, agent.token), 404, "not_found")
  })

  it("PATCH without lock_version and DELETE without ?lock_version= answer 400 parameter_missing", async () => {
    const ws = await workspace(agent.token, "Missing lock versions")
    const entry = await created(agent.token, ws.public_id, { namespace: "lv", key: "k", value: 1 })
    const path = `${entriesOf(ws.public_id)}/${entry.public_id}`
    expectError(await call("PATCH", path, agent.token, { store_entry: { value: 2 } }), 400, "parameter_missing")
    expectError(await call("PATCH", path, agent.token, { value: 2 }), 400, "parameter_missing")
    expectError(await call("DELETE", path, agent.token), 400, "parameter_missing")
    expectError(await call("DELETE", `${path}?lock_version=`, agent.token), 400, "parameter_missing")
    expect((await call("GET", path, agent.token)).body.store_entry).toMatchObject({ value: 1, lock_version: 0 })
  })
})

describe("write standing", () => {
  it("writes need write standing: the dedication fence and an active workspace; unseen workspaces are 404", async () => {
    const ws = await workspace(agent.token, "Fenced store")
    const path = entriesOf(ws.public_id)
    const body = { store_entry: { namespace: "n", key: "k", value: 1 } }
    const fenced = await call("POST", path, otherAgent.token, body, { "idempotency-key": "fenced" })
    expectError(fenced, 403, "workspace_agent_identifier_mismatch")
    expect((await call("GET", path, otherAgent.token)).status).toBe(200)
    const hidden = await call("GET", path, memberToken)
    const absent = await call("GET", entriesOf(absentId), memberToken)
    expect([hidden.status, hidden.body]).toEqual([absent.status, absent.body])
    await archive(ws.public_id)
    const archived = await call("POST", path, agent.token, body, { "idempotency-key": "archived" })
    expectError(archived, 409, "workspace_not_active")
    expect((await call("GET", path, agent.token)).status).toBe(200)
  })

  it("PATCH and DELETE by another agent meet the dedication fence: 403 workspace_agent_identifier_mismatch", async () => {
    const ws = await workspace(agent.token, "Fenced entries")
    const entry = await created(agent.token, ws.public_id, { namespace: "fence", key: "k", value: "agent's" })
    const path = `${entriesOf(ws.public_id)}/${entry.public_id}`
    // Another agent of the same steward sees the workspace (and reads the entry) but may not write.
    expect((await call("GET", path, otherAgent.token)).body.store_entry.value).toBe("agent's")
    expectError(
      await call("PATCH", path, otherAgent.token, { store_entry: { value: "theirs", lock_version: 0 } }),
      403,
      "workspace_agent_identifier_mismatch"
    )
    expectError(
      await call("DELETE", `${path}?lock_version=0`, otherAgent.token),
      403,
      "workspace_agent_identifier_mismatch"
    )
    expect((await call("GET", path, agent.token)).body.store_entry).toMatchObject({ value: "agent's", lock_version: 0 })
    // The workspace's human owner is not fenced.
    const patched = await call("PATCH", path, ownerToken, { store_entry: { value: "owner's", lock_version: 0 } })
    expect([patched.status, patched.body.store_entry.value]).toEqual([200, "owner's"])
  })

  it("on an archived workspace PATCH and DELETE answer 409 workspace_not_active; reads still serve", async () => {
    const ws = await workspace(agent.token, "Archived entries")
    const entry = await created(agent.token, ws.public_id, { namespace: "arch", key: "k", value: { kept: true } })
    const path = `${entriesOf(ws.public_id)}/${entry.public_id}`
    await archive(ws.public_id)
    for (const token of [agent.token, ownerToken]) {
      expectError(
        await call("PATCH", path, token, { store_entry: { value: "late", lock_version: 0 } }),
        409,
        "workspace_not_active"
      )
      expectError(await call("DELETE", `${path}?lock_version=0`, token), 409, "workspace_not_active")
    }
    const shown = await call("GET", path, agent.token)
    expect(shown.status).toBe(200)
    expect(shown.body.store_entry).toMatchObject({ public_id: entry.public_id, value: { kept: true }, lock_version: 0 })
    const listed = await call("GET", entriesOf(ws.public_id), agent.token)
    expect(listed.body.store_entries.map((e: { public_id: string }) => e.public_id)).toEqual([entry.public_id])
  })
})

describe("request budget", () => {
  it("the 6,001st request in a minute answers 429 rate_limited with Retry-After on every route of this host", async () => {
    const ws = await workspace(limited.token, "Budgeted store")
    const collection = entriesOf(ws.public_id)
    const entry = await created(limited.token, ws.public_id, { namespace: "budget", key: "k", value: 1 })
    await startOfWindow(server)
    await spend(server, "store_entries", await callerKey(server, limited.publicId), 5_999)
    expect((await call("GET", collection, limited.token)).status).toBe(200)
    for (const [method, path] of [
      ["GET", collection],
      ["POST", collection],
      ["GET", `${collection}/${entry.public_id}`],
      ["PATCH", `${collection}/${entry.public_id}`],
      ["DELETE", `${collection}/${entry.public_id}?lock_version=0`]
    ] as const) {
      const refused = await call(
        method,
        path,
        limited.token,
        method === "POST" ? { store_entry: { namespace: "budget", key: "late", value: 1 } } : undefined,
        method === "POST" ? { "idempotency-key": freshKey() } : {}
      )
      expectError(refused, 429, "rate_limited")
      const retryAfter = refused.headers.get("retry-after")
      expect(retryAfter).toMatch(/^\d+$/)
      expect(Number(retryAfter)).toBeGreaterThanOrEqual(1)
      expect(Number(retryAfter)).toBeLessThanOrEqual(60)
    }
    // Another caller has its own budget.
    expect((await call("GET", collection, ownerToken)).status).toBe(200)

    const retryAfter = Number((await call("GET", collection, limited.token)).headers.get("retry-after"))
    server.clock.advance(`${retryAfter} seconds`)
    const listed = await call("GET", `${collection}?limit=100`, limited.token)
    expect(listed.status).toBe(200)
    // Nothing refused was done.
    expect(listed.body.store_entries.map((e: { key: string }) => e.key)).toEqual(["k"])
  })
})
