// Member: conversations against the contract's finer lines, through the real server on real
// PostgreSQL: an identical access replacement with entries changes nothing, a side or a subagent
// answers its lifecycle refusal in every state, the metadata filter's number/boolean reading,
// cursors fenced by their ordering, the create envelope, and level none concealing every door.
import { newPublicId } from "@troupe/storage/Ids"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { waitForConversation } from "../../support/conversations.ts"
import { bearer, request } from "../../support/http.ts"
import type { ConnectedAgent } from "../../support/members.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { subagentOf } from "../../support/subagents.ts"

let server: TestServer
let agent: ConnectedAgent
let sibling: ConnectedAgent
let ownerToken: string
let ownerPublicId: string
let workspaceId: string
let keys = 0

const as = (who: ConnectedAgent, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, { headers: { ...bearer(who.token), ...headers }, body })
const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  as(agent, method, path, body, headers)
const key = () => ({ "idempotency-key": `contract-${++keys}` })
const conversationsPath = () => `/workspaces/${workspaceId}/conversations`
const path = (id: string, rest = "") => `${conversationsPath()}/${id}${rest}`

const expectError = (response: { status: number; body: any }, status: number, code: string) =>
  expect({ status: response.status, code: response.body?.error?.code }).toEqual({ status, code })

const createConversation = async (members: Record<string, unknown> = {}) => {
  const made = await call("POST", conversationsPath(), { conversation: members }, key())
  expect(made.status, JSON.stringify(made.body)).toBe(201)
  return made.body.conversation.public_id as string
}

const feedTypes = async (id: string) =>
  ((await call("GET", path(id, "/events?limit=200"))).body.events as Array<any>).map((item) => item.type)
const turns = async (id: string) => (await call("GET", path(id, "/turns?limit=100"))).body.turns as Array<any>
const ids = (response: { body: any }) => (response.body.conversations as Array<any>).map((row) => row.public_id)

const stateOf = (id: string) =>
  server.run(
    Effect.flatMap(SqlClient, (sql) =>
      Effect.map(
        sql<{ state: string }>`SELECT state FROM conversations WHERE public_id = ${id}`,
        (rows) => rows[0]?.state
      )
    )
  )

beforeAll(async () => {
  server = await startTestServer()
  const account = await twoStewards(server, { owner: ["contract-talker", "contract-sibling"], member: [] })
  agent = account.ownerAgents[0] as ConnectedAgent
  sibling = account.ownerAgents[1] as ConnectedAgent
  ownerToken = account.ownerToken
  ownerPublicId = account.owner.public_id
  const made = await call("POST", "/workspaces", { workspace: { name: "contract" } }, key())
  workspaceId = made.body.workspace.public_id
})
afterAll(() => server?.close())

describe("access", () => {
  it("an identical replacement with entries changes nothing and narrates nothing", async () => {
    const id = await createConversation()
    const access = { default: "read", entries: [{ user_public_id: sibling.publicId, level: "none" }] }
    const first = await call("PUT", path(id, "/access"), { access })
    expect(first.status).toBe(200)
    expect(first.body.conversation.lock_version).toBe(1)
    const again = await call("PUT", path(id, "/access"), { access })
    expect(again.status).toBe(200)
    expect(again.body.conversation.lock_version).toBe(1)
    const byHandle = await call("PUT", path(id, "/access"), {
      access: { default: "read", entries: [{ handle: `@${sibling.handle}`, level: "none" }] }
    })
    expect(byHandle.body.conversation.lock_version).toBe(1)
    expect(await feedTypes(id)).toEqual(["access_changed"])
  })

  it("level none conceals every door with 404 and the lists; a read entry may not replace access (403)", async () => {
    const id = await createConversation()
    await call("PUT", path(id, "/access"), {
      access: { default: "full", entries: [{ user_public_id: sibling.publicId, level: "none" }] }
    })
    for (const [method, rest, body] of [
      ["GET", "", undefined],
      ["GET", "/children", undefined],
      ["GET", "/events", undefined],
      ["PATCH", "", { conversation: { title: "x", lock_version: 1 } }],
      ["PUT", "/access", { access: { default: "full" } }],
      ["POST", "/archive", undefined],
      ["DELETE", "", undefined]
    ] as const) {
      expectError(await as(sibling, method, path(id, rest), body), 404, "not_found")
    }
    expect(ids(await as(sibling, "GET", `${conversationsPath()}?limit=100`))).not.toContain(id)
    expect(ids(await as(sibling, "GET", "/conversations?limit=100"))).not.toContain(id)
    await call("PUT", path(id, "/access"), {
      access: { default: "none", entries: [{ user_public_id: sibling.publicId, level: "read" }] }
    })
    expectError(await as(sibling, "PUT", path(id, "/access"), { access: { default: "full" } }), 403, "not_authorized")
  })
})

describe("lifecycle", () => {
  it("a side answers 422 side_conversation to archive and unarchive alike", async () => {
    const id = await createConversation()
    await call("POST", path(id, "/inputs"), { input: { kind: "message", text: "hello" } }, key())
    await waitForConversation(server, id, async () => (await turns(id)).length === 1)
    const made = await call("POST", path(id, "/forks"), { fork: { side: true } }, key())
    expect(made.status, JSON.stringify(made.body)).toBe(201)
    const side = made.body.conversation.public_id as string
    expectError(await call("POST", path(side, "/archive")), 422, "side_conversation")
    expectError(await call("POST", path(side, "/unarchive")), 422, "side_conversation")
    expect(ids(await call("GET", `${conversationsPath()}?side=true&limit=100`))).toContain(side)
  })

  it("a subagent answers 409 subagent_follows_parent in either state, a repeat of its parent's command included", async () => {
    const parent = await createConversation()
    const child = await subagentOf(server, parent)
    expectError(await call("POST", path(child, "/unarchive")), 409, "subagent_follows_parent")
    expect((await call("POST", path(parent, "/archive"))).status).toBe(200)
    await waitForConversation(server, child, async () => (await stateOf(child)) === "archived")
    expectError(await call("POST", path(child, "/archive")), 409, "subagent_follows_parent")
    const repeat = await call("POST", path(parent, "/archive"))
    expect(repeat.status).toBe(200)
    expect(repeat.body.conversation.lock_version).toBe(1)
  })

  it("DELETE: then absent from every list, the bin and the children door", async () => {
    const id = await createConversation()
    await call("POST", path(id, "/archive"))
    expect(ids(await call("GET", `${conversationsPath()}/archived?limit=100`))).toContain(id)
    expect((await call("DELETE", path(id))).status).toBe(204)
    expect(ids(await call("GET", `${conversationsPath()}/archived?limit=100`))).not.toContain(id)
    expect(ids(await call("GET", "/conversations?archived=1&limit=100"))).not.toContain(id)
    expectError(await call("GET", path(id, "/children")), 404, "not_found")
    expectError(await call("POST", path(id, "/unarchive")), 404, "not_found")
    expectError(await call("PUT", path(id, "/access"), { access: { default: "full" } }), 404, "not_found")
  })
})

describe("lists", () => {
  it("metadata_value matches a string, or a number or boolean of that JSON text", async () => {
    const tag = `n-${Date.now()}`
    const number = await createConversation({ metadata: { tag, n: 1.5, flag: true, s: "1.50" } })
    const byNumber = await call("GET", `${conversationsPath()}?metadata_key=n&metadata_value=1.50&limit=100`)
    expect(byNumber.status).toBe(200)
    expect(ids(byNumber)).toContain(number)
    expect(ids(await call("GET", `${conversationsPath()}?metadata_key=n&metadata_value=15e-1&limit=100`))).toContain(
      number
    )
    expect(ids(await call("GET", `${conversationsPath()}?metadata_key=flag&metadata_value=true&limit=100`))).toContain(
      number
    )
    expect(ids(await call("GET", `${conversationsPath()}?metadata_key=s&metadata_value=1.5&limit=100`))).not.toContain(
      number
    )
    expect(ids(await call("GET", `${conversationsPath()}?metadata_key=tag&metadata_value=${tag}`))).toEqual([number])
    expect(ids(await call("GET", `${conversationsPath()}?metadata_key=n&metadata_value=2&limit=100`))).not.toContain(
      number
    )
  })

  it("a cursor reused under another order_by is 400; bad filters are 400 parameter_invalid", async () => {
    await createConversation()
    await createConversation()
    const first = await call("GET", `${conversationsPath()}?limit=1&order_by=last_activity_at&order=desc`)
    expect(first.status).toBe(200)
    const cursor = first.body.pagination.next_after as string
    const next = await call(
      "GET",
      `${conversationsPath()}?limit=1&order_by=last_activity_at&order=desc&after=${cursor}`
    )
    expect(next.status).toBe(200)
    expect(ids(next)[0]).not.toBe(ids(first)[0])
    expectError(
      await call("GET", `${conversationsPath()}?limit=1&order=desc&after=${cursor}`),
      400,
      "parameter_invalid"
    )
    for (const query of [
      "order_by=title",
      "answering_user_public_id=@someone",
      "metadata_value=x",
      "metadata_key=&metadata_value=x",
      `metadata_key=${"k".repeat(129)}&metadata_value=x`,
      "side=maybe"
    ]) {
      expectError(await call("GET", `${conversationsPath()}?${query}`), 400, "parameter_invalid")
    }
    expectError(await call("GET", "/conversations?archived=yes"), 400, "parameter_invalid")
  })

  it("a forged activity cursor (no instant of ours) is 400 parameter_invalid, never a 5xx", async () => {
    const publicId = newPublicId()
    for (const value of ["not-a-time", "2026-01-01", "2026-13-40T00:00:00.000Z"]) {
      const forged = Buffer.from(JSON.stringify(["last_activity_at", "asc", value, publicId])).toString("base64url")
      expectError(
        await call("GET", `${conversationsPath()}?order_by=last_activity_at&after=${forged}`),
        400,
        "parameter_invalid"
      )
    }
  })

  it("UUIDs read in either case: an uppercase answerer filter, access entry and answerer", async () => {
    const made = await call(
      "POST",
      conversationsPath(),
      {
        conversation: {
          answering_user_public_id: agent.publicId.toUpperCase(),
          access: { default: "none", entries: [{ user_public_id: sibling.publicId.toUpperCase(), level: "read" }] }
        }
      },
      key()
    )
    expect(made.status, JSON.stringify(made.body)).toBe(201)
    const id = made.body.conversation.public_id as string
    expect(made.body.conversation.access.entries[0].user_public_id).toBe(sibling.publicId)
    expect((await as(sibling, "GET", path(id))).status).toBe(200)
    const found = await call(
      "GET",
      `${conversationsPath()}?answering_user_public_id=${agent.publicId.toUpperCase()}&limit=100`
    )
    expect(ids(found)).toContain(id)
  })

  it("answering_user_public_id filters by the answerer", async () => {
    // The owner's workspace (no dedication): both of its agents may answer there.
    const made = await request(server.baseUrl, "POST", "/agent_api/v1/workspaces", {
      headers: { ...bearer(ownerToken), ...key() },
      body: { workspace: { name: "shared" } }
    })
    const shared = `/workspaces/${made.body.workspace.public_id}/conversations`
    const create = async (members: Record<string, unknown>) =>
      (await call("POST", shared, { conversation: members }, key())).body.conversation.public_id as string
    const answered = await create({ answering_user_public_id: `@${sibling.handle}` })
    const own = await create({})
    const found = await call("GET", `${shared}?answering_user_public_id=${sibling.publicId}&limit=100`)
    expect(ids(found)).toEqual([answered])
    expect(ids(await call("GET", `/conversations?answering_user_public_id=${agent.publicId}&limit=100`))).toContain(own)
  })
})

describe("create", () => {
  it("the envelope: the same key with another body (access entry order included) is 409 idempotency_envelope_mismatch", async () => {
    const headers = key()
    const access = { default: "full", entries: [{ user_public_id: sibling.publicId, level: "read" }] }
    const made = await call("POST", conversationsPath(), { conversation: { title: "a", access } }, headers)
    expect(made.status, JSON.stringify(made.body)).toBe(201)
    expect(made.headers.get("idempotency-replayed")).toBe("false")
    const replay = await call("POST", conversationsPath(), { conversation: { title: "a", access } }, headers)
    expect(replay.status).toBe(201)
    expect(replay.headers.get("idempotency-replayed")).toBe("true")
    expect(replay.body).toEqual(made.body)
    expectError(
      await call("POST", conversationsPath(), { conversation: { title: "b", access } }, headers),
      409,
      "idempotency_envelope_mismatch"
    )
    const two = [
      { user_public_id: sibling.publicId, level: "read" },
      { user_public_id: ownerPublicId, level: "none" }
    ]
    const ordered = key()
    const first = await call(
      "POST",
      conversationsPath(),
      { conversation: { access: { default: "full", entries: two } } },
      ordered
    )
    expect(first.status, JSON.stringify(first.body)).toBe(201)
    expect(first.body.conversation.access.entries.map((entry: any) => entry.user_public_id)).toEqual([
      sibling.publicId,
      ownerPublicId
    ])
    expectError(
      await call(
        "POST",
        conversationsPath(),
        { conversation: { access: { default: "full", entries: [...two].reverse() } } },
        ordered
      ),
      409,
      "idempotency_envelope_mismatch"
    )
  })
})
