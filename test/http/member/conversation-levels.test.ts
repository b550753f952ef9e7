// Access levels across every conversation door, through the real server on real PostgreSQL (spec
// "Member: conversations": level none conceals every door with 404; read permits reads and refuses
// writes with 403 not_authorized; supplement "Standing": context_estimate is a read, lists leave
// out what the caller may not see). One conversation, a read entry and a caller left at none.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { waitForConversation } from "../../support/conversations.ts"
import { bearer, request } from "../../support/http.ts"
import type { ConnectedAgent } from "../../support/members.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
let agent: ConnectedAgent
let reader: ConnectedAgent
let stranger: ConnectedAgent
let room: string
let id: string
let keys = 0
/** The doors: [method, path under the conversation, body, keyed]. */
let reads: Array<readonly [string, string, unknown?]>
let writes: Array<readonly [string, string, unknown?, boolean?]>

const as = (who: ConnectedAgent, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, { headers: { ...bearer(who.token), ...headers }, body })
const key = () => ({ "idempotency-key": `levels-${++keys}` })
const conversations = () => `/workspaces/${room}/conversations`
const at = (rest: string) => `${conversations()}/${id}${rest}`

beforeAll(async () => {
  server = await startTestServer()
  const account = await twoStewards(server, { owner: ["level-talker", "level-reader"], member: ["level-stranger"] })
  agent = account.ownerAgents[0] as ConnectedAgent
  reader = account.ownerAgents[1] as ConnectedAgent
  stranger = account.memberAgents[0] as ConnectedAgent
  room = (
    await request(server.baseUrl, "POST", "/agent_api/v1/workspaces", {
      headers: { ...bearer(account.ownerToken), ...key() },
      body: { workspace: { name: "levels", access_mode: "account_wide" } }
    })
  ).body.workspace.public_id
  id = (await as(agent, "POST", conversations(), { conversation: {} }, key())).body.conversation.public_id
  await as(agent, "POST", at("/inputs"), { input: { kind: "message", text: "note" } }, key())
  await as(
    agent,
    "POST",
    at("/inputs"),
    { input: { kind: "direct_reply", text: "hi", model: { model: "local/echo" } } },
    key()
  )
  const turns = async () => (await as(agent, "GET", at("/turns"))).body.turns as Array<any>
  await waitForConversation(server, id, async () => {
    const found = await turns()
    return found.length === 2 && found[1].status === "completed"
  })
  const [message, reply] = await turns()
  const queued = (
    await as(agent, "POST", at("/inputs"), { input: { kind: "message", text: "later", deliver_in: "1h" } }, key())
  ).body.input.public_id
  const access = await as(agent, "PUT", at("/access"), {
    access: { default: "none", entries: [{ user_public_id: reader.publicId, level: "read" }] }
  })
  expect(access.status).toBe(200)
  const variant = reply.active_variant.public_id
  reads = [
    ["GET", ""],
    ["GET", "/inputs"],
    ["GET", `/inputs/${queued}/materialization`],
    ["GET", "/turns"],
    ["GET", `/turns/${message.public_id}`],
    ["GET", `/turns/${reply.public_id}/variants`],
    ["GET", `/turns/${reply.public_id}/variants/${variant}/request`],
    ["GET", "/events"],
    ["GET", "/children"],
    ["POST", "/context_estimate", { context_estimate: { prompt: "hi", model: { model: "local/echo" } } }]
  ]
  writes = [
    ["PATCH", "", { conversation: { title: "mine", lock_version: access.body.conversation.lock_version } }],
    ["POST", "/inputs", { input: { kind: "message", text: "x" } }, true],
    ["PATCH", `/inputs/${queued}`, { input: { text: "edited" } }],
    ["POST", "/inputs/reorder", { inputs: [queued] }],
    ["DELETE", `/inputs/${queued}`],
    ["POST", `/turns/${reply.public_id}/edit`, { edit: { text: "edited" } }],
    ["POST", `/turns/${reply.public_id}/regeneration`, undefined, true],
    ["PATCH", `/turns/${message.public_id}`, { turn: { visibility: "hidden" } }],
    ["POST", `/turns/${reply.public_id}/variants/${variant}/activation`],
    ["PATCH", `/turns/${reply.public_id}/variants/${variant}`, { variant: { concealed: false } }],
    ["DELETE", `/turns/${reply.public_id}`],
    ["POST", "/cancellation"],
    ["POST", "/compaction", {}],
    ["PUT", "/access", { access: { default: "read" } }],
    ["PUT", "/default_runner", { default_runner: { executor_public_id: null } }],
    ["POST", "/forks", { fork: {} }, true],
    ["POST", "/archive"],
    ["POST", "/unarchive"],
    ["DELETE", ""]
  ]
})
afterAll(() => server?.close())

const answer = async (
  who: ConnectedAgent,
  [method, rest, body, keyed]: readonly [string, string, unknown?, boolean?]
) => {
  const got = await as(who, method, at(rest), body, keyed ? key() : {})
  return `${method} ${rest || "/"} ${got.status} ${got.body?.error?.code ?? ""}`.trim()
}

describe("access levels", () => {
  it("read: every read door answers; every write door is 403 not_authorized", async () => {
    for (const door of reads) expect(await answer(reader, door)).toBe(`${door[0]} ${door[1] || "/"} 200`)
    for (const door of writes)
      expect(await answer(reader, door)).toBe(`${door[0]} ${door[1] || "/"} 403 not_authorized`)
  })

  it("none: every door, read or write, is 404 not_found, as an unknown conversation", async () => {
    for (const door of [...reads, ...writes]) {
      expect(await answer(stranger, door)).toBe(`${door[0]} ${door[1] || "/"} 404 not_found`)
    }
  })

  it("lists show the conversation to a reader and leave it out for none", async () => {
    const listed = async (who: ConnectedAgent, path: string) =>
      ((await as(who, "GET", path)).body.conversations as Array<any>).map((row) => row.public_id)
    expect(await listed(reader, `${conversations()}?limit=100`)).toContain(id)
    expect(await listed(reader, "/conversations?limit=100")).toContain(id)
    expect(await listed(stranger, `${conversations()}?limit=100`)).not.toContain(id)
    expect(await listed(stranger, "/conversations?limit=100")).not.toContain(id)
  })

  it("a full entry, not only the creator or the answerer, replaces the access (and narrates access_changed)", async () => {
    const full = { default: "none", entries: [{ user_public_id: reader.publicId, level: "full" }] }
    expect((await as(agent, "PUT", at("/access"), { access: full })).status).toBe(200)
    const replaced = await as(reader, "PUT", at("/access"), {
      access: { default: "read", entries: [{ handle: `@${reader.handle}`, level: "full" }] }
    })
    expect(replaced.status).toBe(200)
    expect(replaced.body.conversation.access).toMatchObject({
      default: "read",
      entries: [{ user_public_id: reader.publicId, handle: reader.handle, level: "full" }]
    })
    const feed = (await as(agent, "GET", at("/events?limit=200"))).body.events as Array<any>
    expect(feed.filter((item) => item.type === "access_changed")).toHaveLength(3)
    expect((await as(stranger, "GET", at(""))).status).toBe(200)
  })
})
