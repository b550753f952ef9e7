// The conversation lists' filters and ordering, through the real server on real PostgreSQL (spec
// "Member: conversations"; supplement "Conversation", Lists): archived on the cross-workspace
// list, answering_user_public_id, metadata_key + metadata_value (a string, or a number or boolean
// of that JSON text), order_by last_activity_at with its own cursors, and their 400s.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { waitForConversation } from "../../support/conversations.ts"
import { bearer, request } from "../../support/http.ts"
import type { ConnectedAgent } from "../../support/members.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
let agent: ConnectedAgent
let sibling: ConnectedAgent
let room: string
let keys = 0

const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, { headers: { ...bearer(agent.token), ...headers }, body })
const key = () => ({ "idempotency-key": `lists-${++keys}` })
const conversations = () => `/workspaces/${room}/conversations`

const create = async (members: Record<string, unknown> = {}) => {
  const made = await call("POST", conversations(), { conversation: members }, key())
  expect(made.status).toBe(201)
  return made.body.conversation.public_id as string
}

const ids = async (path: string) => {
  const listed = await call("GET", path)
  expect(listed.status, JSON.stringify(listed.body)).toBe(200)
  return (listed.body.conversations as Array<any>).map((row) => row.public_id as string)
}

const refusal = async (path: string) => {
  const refused = await call("GET", path)
  return [refused.status, refused.body.error?.code]
}

beforeAll(async () => {
  server = await startTestServer()
  const account = await twoStewards(server, { owner: ["list-talker", "list-answerer"], member: [] })
  agent = account.ownerAgents[0] as ConnectedAgent
  sibling = account.ownerAgents[1] as ConnectedAgent
  room = (
    await request(server.baseUrl, "POST", "/agent_api/v1/workspaces", {
      headers: { ...bearer(account.ownerToken), ...key() },
      body: { workspace: { name: "lists", access_mode: "account_wide" } }
    })
  ).body.workspace.public_id
})
afterAll(() => server?.close())

describe("conversation lists", () => {
  it("the cross-workspace list: active roots by default, archived=1|true the archived ones; other values 400", async () => {
    const kept = await create()
    const archived = await create()
    expect((await call("POST", `${conversations()}/${archived}/archive`)).status).toBe(200)
    const active = await ids("/conversations?limit=100")
    expect(active).toContain(kept)
    expect(active).not.toContain(archived)
    expect(await ids("/conversations?limit=100&archived=0")).toEqual(active)
    for (const flag of ["1", "true"]) {
      const bin = await ids(`/conversations?limit=100&archived=${flag}`)
      expect(bin).toContain(archived)
      expect(bin).not.toContain(kept)
    }
    expect(await ids(`${conversations()}?limit=100`)).not.toContain(archived)
    expect(await ids(`${conversations()}/archived?limit=100`)).toEqual([archived])
    expect(await refusal("/conversations?archived=yes")).toEqual([400, "parameter_invalid"])
  })

  it("answering_user_public_id keeps the conversations that agent answers; not a UUID is 400", async () => {
    const answered = await create({ answering_user_public_id: sibling.publicId })
    expect(await ids(`${conversations()}?answering_user_public_id=${sibling.publicId}`)).toEqual([answered])
    expect(await ids(`/conversations?answering_user_public_id=${sibling.publicId}`)).toEqual([answered])
    expect(await ids(`${conversations()}?answering_user_public_id=01900000-0000-7000-8000-000000000000`)).toEqual([])
    expect(await refusal(`${conversations()}?answering_user_public_id=@${sibling.handle}`)).toEqual([
      400,
      "parameter_invalid"
    ])
  })

  it("metadata_value matches a string, or a number or boolean of that JSON text; both nonempty and bounded, else 400", async () => {
    const typed = await create({ metadata: { count: 5, done: true, label: "5" } })
    const text = await create({ metadata: { count: "5", done: "true" } })
    const matching = (name: string, value: string) =>
      ids(`${conversations()}?limit=100&metadata_key=${name}&metadata_value=${value}`)
    expect(await matching("count", "5")).toEqual([typed, text])
    expect(await matching("done", "true")).toEqual([typed, text])
    expect(await matching("label", "5")).toEqual([typed])
    expect(await matching("count", "6")).toEqual([])
    const bad = [
      "metadata_value=5",
      "metadata_key=count&metadata_value=",
      `metadata_key=${"k".repeat(129)}&metadata_value=5`,
      `metadata_key=count&metadata_value=${"v".repeat(1025)}`
    ]
    for (const query of bad) expect(await refusal(`${conversations()}?${query}`)).toEqual([400, "parameter_invalid"])
    expect(await matching("k".repeat(128), "v".repeat(1024))).toEqual([])
  })

  it("order_by last_activity_at follows inputs and turns, pages with its own cursors; another order_by's cursor is 400", async () => {
    const quiet = await create({ metadata: { set: "activity" } })
    const busy = await create({ metadata: { set: "activity" } })
    const stale = await create({ metadata: { set: "activity" } })
    const said = await call(
      "POST",
      `${conversations()}/${busy}/inputs`,
      { input: { kind: "message", text: "hi" } },
      key()
    )
    expect(said.status).toBe(202)
    await waitForConversation(
      server,
      busy,
      async () => (await call("GET", `${conversations()}/${busy}/turns`)).body.turns.length === 1
    )
    const filter = "metadata_key=set&metadata_value=activity"
    expect(await ids(`${conversations()}?${filter}&order_by=last_activity_at`)).toEqual([quiet, stale, busy])
    expect(await ids(`${conversations()}?${filter}&order_by=last_activity_at&order=desc`)).toEqual([busy, stale, quiet])
    const paged: Array<string> = []
    let after: string | null = null
    do {
      const query: string = `${filter}&order_by=last_activity_at&order=desc&limit=1${after ? `&after=${after}` : ""}`
      const page: any = await call("GET", `${conversations()}?${query}`)
      paged.push(...page.body.conversations.map((row: any) => row.public_id))
      after = page.body.pagination.next_after
      if (after !== null) {
        expect(await refusal(`${conversations()}?${filter}&order=desc&limit=1&after=${after}`)).toEqual([
          400,
          "parameter_invalid"
        ])
      }
    } while (after !== null)
    expect(paged).toEqual([busy, stale, quiet])
    expect(await refusal(`${conversations()}?order_by=created_at`)).toEqual([400, "parameter_invalid"])
  })
})
