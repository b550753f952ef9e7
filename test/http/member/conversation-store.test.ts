// The conversation store-entry host over a real server: the workspace host's shape and rules
// (creates replay, keyset lists, PATCH and DELETE fenced by lock_version) on a host of its own, and
// the conversation's standing: read level reads, full level writes, none and unknown 404, archived
// reads and refuses writes 409 conversation_archived.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { bearer, request } from "../../support/http.ts"
import type { ConnectedAgent } from "../../support/members.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
let agent: ConnectedAgent
let ownerToken: string
let memberToken: string
let workspaceId: string

const absentId = "01900000-0000-7000-8000-000000000000"

const call = (method: string, path: string, token: string, body?: unknown, headers: Record<string, string> = {}) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, { headers: { ...bearer(token), ...headers }, body })

const expectError = (response: { status: number; body: any }, status: number, code: string) =>
  expect({ status: response.status, code: response.body?.error?.code }).toEqual({ status, code })

let keys = 0
const freshKey = () => `conversation-entry-${++keys}`

const conversation = async (members: Record<string, unknown> = {}) => {
  const made = await call(
    "POST",
    `/workspaces/${workspaceId}/conversations`,
    agent.token,
    { conversation: members },
    { "idempotency-key": freshKey() }
  )
  expect(made.status, JSON.stringify(made.body)).toBe(201)
  return made.body.conversation.public_id as string
}

const entriesOf = (id: string, workspace = workspaceId) => `/workspaces/${workspace}/conversations/${id}/store_entries`

const create = (token: string, id: string, entry: Record<string, unknown>, key: string | null = freshKey()) =>
  call("POST", entriesOf(id), token, { store_entry: entry }, key === null ? {} : { "idempotency-key": key })

beforeAll(async () => {
  server = await startTestServer()
  const account = await twoStewards(server, { owner: ["store-host-agent"], member: [] })
  agent = account.ownerAgents[0]!
  ownerToken = account.ownerToken
  memberToken = account.memberToken
  const made = await call(
    "POST",
    "/workspaces",
    ownerToken,
    { workspace: { name: "Store host room", access_mode: "account_wide" } },
    { "idempotency-key": "store-host-room" }
  )
  workspaceId = made.body.workspace.public_id
})
afterAll(() => server?.close())

describe("the conversation host", () => {
  it("creates replay; lists, reads, replaces and deletes like the workspace host", async () => {
    const id = await conversation()
    const body = { namespace: "prefs", key: "theme", value: { dark: true } }
    const first = await create(agent.token, id, body, "theme-key")
    expect(first.status, JSON.stringify(first.body)).toBe(201)
    expect(first.headers.get("idempotency-replayed")).toBe("false")
    expect(first.body.store_entry).toEqual({
      public_id: expect.any(String),
      namespace: "prefs",
      key: "theme",
      lock_version: 0,
      value: { dark: true },
      created_at: expect.any(String),
      updated_at: expect.any(String)
    })
    const again = await create(agent.token, id, body, "theme-key")
    expect([again.status, again.headers.get("idempotency-replayed")]).toEqual([201, "true"])
    expect(again.body).toEqual(first.body)
    expectError(await create(agent.token, id, body), 409, "key_taken")
    expectError(
      await create(agent.token, id, { namespace: "prefs", key: "x", value: 1 }, null),
      400,
      "idempotency_key_required"
    )
    expectError(await create(agent.token, id, { namespace: "", key: "x", value: 1 }), 422, "validation_failed")
    await create(agent.token, id, { namespace: "prefs", key: "font", value: "mono" })
    const listed = await call("GET", `${entriesOf(id)}?limit=1`, agent.token)
    expect(listed.body.store_entries.map((entry: { key: string }) => entry.key)).toEqual(["font"])
    expect(listed.body.store_entries[0]).not.toHaveProperty("value")
    const next = await call("GET", `${entriesOf(id)}?limit=1&after=${listed.body.pagination.next_after}`, agent.token)
    expect(next.body.store_entries.map((entry: { key: string }) => entry.key)).toEqual(["theme"])
    const entry = first.body.store_entry.public_id as string
    const patched = await call("PATCH", `${entriesOf(id)}/${entry}`, agent.token, {
      store_entry: { value: { dark: false }, lock_version: 0 }
    })
    expect(patched.body.store_entry).toMatchObject({ value: { dark: false }, lock_version: 1 })
    expectError(
      await call("PATCH", `${entriesOf(id)}/${entry}`, agent.token, { value: 1, lock_version: 0 }),
      409,
      "stale_object"
    )
    expect((await call("GET", `${entriesOf(id)}/${entry}`, agent.token)).body.store_entry.value).toEqual({
      dark: false
    })
    expectError(await call("DELETE", `${entriesOf(id)}/${entry}?lock_version=0`, agent.token), 409, "stale_object")
    expect((await call("DELETE", `${entriesOf(id)}/${entry}?lock_version=1`, agent.token)).status).toBe(204)
    expectError(await call("GET", `${entriesOf(id)}/${entry}`, agent.token), 404, "not_found")
  })

  it("each conversation is its own host, apart from its workspace's", async () => {
    const one = await conversation()
    const two = await conversation()
    const entry = { namespace: "shared", key: "same", value: 1 }
    const mine = (await create(agent.token, one, entry)).body.store_entry.public_id
    expect((await create(agent.token, two, entry)).status).toBe(201)
    const workspaceEntry = await call(
      "POST",
      `/workspaces/${workspaceId}/store_entries`,
      agent.token,
      { store_entry: entry },
      { "idempotency-key": freshKey() }
    )
    expect(workspaceEntry.status).toBe(201)
    expectError(await call("GET", `${entriesOf(two)}/${mine}`, agent.token), 404, "not_found")
    expectError(await call("GET", `/workspaces/${workspaceId}/store_entries/${mine}`, agent.token), 404, "not_found")
  })
})

describe("standing", () => {
  it("read level reads and writes 403; none and unknown 404", async () => {
    const id = await conversation({ access: { default: "read" } })
    const entry = (await create(agent.token, id, { namespace: "n", key: "k", value: 1 })).body.store_entry
    expect((await call("GET", entriesOf(id), memberToken)).body.store_entries).toHaveLength(1)
    expect((await call("GET", `${entriesOf(id)}/${entry.public_id}`, memberToken)).status).toBe(200)
    expectError(await create(memberToken, id, { namespace: "n", key: "other", value: 1 }), 403, "not_authorized")
    expectError(
      await call("PATCH", `${entriesOf(id)}/${entry.public_id}`, memberToken, { value: 2, lock_version: 0 }),
      403,
      "not_authorized"
    )
    expectError(
      await call("DELETE", `${entriesOf(id)}/${entry.public_id}?lock_version=0`, memberToken),
      403,
      "not_authorized"
    )
    const hidden = await conversation({ access: { default: "none" } })
    expectError(await call("GET", entriesOf(hidden), memberToken), 404, "not_found")
    expectError(await call("GET", entriesOf(absentId), agent.token), 404, "not_found")
    expectError(await call("GET", entriesOf(id, absentId), agent.token), 404, "not_found")
  })

  it("an archived conversation reads its entries and refuses writes 409 conversation_archived", async () => {
    const id = await conversation()
    const entry = (await create(agent.token, id, { namespace: "n", key: "k", value: 1 })).body.store_entry
    expect((await call("POST", `/workspaces/${workspaceId}/conversations/${id}/archive`, agent.token)).status).toBe(200)
    expect((await call("GET", `${entriesOf(id)}/${entry.public_id}`, agent.token)).body.store_entry.value).toBe(1)
    expectError(await create(agent.token, id, { namespace: "n", key: "new", value: 1 }), 409, "conversation_archived")
    expectError(
      await call("PATCH", `${entriesOf(id)}/${entry.public_id}`, agent.token, { value: 2, lock_version: 0 }),
      409,
      "conversation_archived"
    )
    expectError(
      await call("DELETE", `${entriesOf(id)}/${entry.public_id}?lock_version=0`, agent.token),
      409,
      "conversation_archived"
    )
  })
})
