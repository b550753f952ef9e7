// Member: turns through the real server on real PostgreSQL (spec "Member: turns"; supplement
// "Turns and variants", context_revision under "Conversation"): a variant PATCH answers the
// candidate as the deck shows it, and a visibility PATCH naming the visibility a turn already has
// changes no material (no context_revision, no item), as a re-activation.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { waitForConversation } from "../../support/conversations.ts"
import { bearer, request } from "../../support/http.ts"
import type { ConnectedAgent } from "../../support/members.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
let agent: ConnectedAgent
let workspaceId: string
let keys = 0

const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, { headers: { ...bearer(agent.token), ...headers }, body })
const key = () => ({ "idempotency-key": `turns-${++keys}` })
const path = (id: string, rest = "") => `/workspaces/${workspaceId}/conversations/${id}${rest}`

const create = async () =>
  (await call("POST", `/workspaces/${workspaceId}/conversations`, { conversation: {} }, key())).body.conversation
    .public_id as string
const note = (id: string, text: string) =>
  call("POST", path(id, "/inputs"), { input: { kind: "message", text } }, key())
const turns = async (id: string) => (await call("GET", path(id, "/turns?limit=100"))).body.turns as Array<any>
const settled = (id: string, count: number) =>
  waitForConversation(server, id, async () => {
    const found = await turns(id)
    return found.length === count && found.every((turn) => turn.status === "completed")
  })
const revision = async (id: string) => (await call("GET", path(id))).body.conversation.context_revision as number
const itemTypes = async (id: string) =>
  ((await call("GET", path(id, "/events?limit=200"))).body.events as Array<any>).map((item) => item.type)

beforeAll(async () => {
  server = await startTestServer()
  const account = await twoStewards(server, { owner: ["turns-talker"], member: [] })
  agent = account.ownerAgents[0] as ConnectedAgent
  workspaceId = (await call("POST", "/workspaces", { workspace: { name: "turns" } }, key())).body.workspace.public_id
})
afterAll(() => server?.close())

describe("variant PATCH", () => {
  it("answers the candidate as the deck shows it: the active one stays active: true", async () => {
    const id = await create()
    await note(id, "first words")
    await settled(id, 1)
    const [turn] = await turns(id)
    const edited = await call("POST", path(id, `/turns/${turn.public_id}/edit`), { edit: { text: "second words" } })
    const active = edited.body.turn.active_variant.public_id as string
    const shown = await call("PATCH", path(id, `/turns/${turn.public_id}/variants/${active}`), {
      variant: { concealed: false }
    })
    expect(shown.status).toBe(200)
    expect(shown.body.variant).toMatchObject({ public_id: active, active: true, content: "second words" })
    const older = (await call("GET", path(id, `/turns/${turn.public_id}/variants`))).body.variants[0]
    const concealed = await call("PATCH", path(id, `/turns/${turn.public_id}/variants/${older.public_id}`), {
      variant: { concealed: true }
    })
    expect(concealed.body.variant).toMatchObject({ public_id: older.public_id, active: false, concealed: true })
  })

  it("the active candidate is never concealed: activating a concealed one is 422 until it is shown again", async () => {
    const id = await create()
    await note(id, "shown first")
    await settled(id, 1)
    const [turn] = await turns(id)
    await call("POST", path(id, `/turns/${turn.public_id}/edit`), { edit: { text: "shown second" } })
    const older = (await call("GET", path(id, `/turns/${turn.public_id}/variants`))).body.variants[0]
    const variant = path(id, `/turns/${turn.public_id}/variants/${older.public_id}`)
    await call("PATCH", variant, { variant: { concealed: true } })
    const refused = await call("POST", `${variant}/activation`)
    expect([refused.status, refused.body.error?.code]).toEqual([422, "validation_failed"])
    expect((await turns(id))[0].content).toBe("shown second")
    await call("PATCH", variant, { variant: { concealed: false } })
    const activated = await call("POST", `${variant}/activation`)
    expect(activated.status).toBe(200)
    expect(activated.body.turn.active_variant).toMatchObject({ public_id: older.public_id, content: "shown first" })
    expect(activated.body.turn.active_variant.concealed).toBeUndefined()
  })
})

describe("turn PATCH", () => {
  it("the visibility a turn already has changes nothing: no context_revision, no visibility item; a change does", async () => {
    const id = await create()
    await note(id, "kept")
    await settled(id, 1)
    const [turn] = await turns(id)
    const before = await revision(id)
    const same = await call("PATCH", path(id, `/turns/${turn.public_id}`), { turn: { visibility: "visible" } })
    expect(same.status).toBe(200)
    expect(same.body.turn).toMatchObject({ public_id: turn.public_id, visibility: "visible" })
    expect(await revision(id)).toBe(before)
    expect(await itemTypes(id)).not.toContain("visibility")
    const excluded = await call("PATCH", path(id, `/turns/${turn.public_id}`), {
      turn: { visibility: "excluded_from_context" }
    })
    expect(excluded.body.turn.visibility).toBe("excluded_from_context")
    expect(await revision(id)).toBe(before + 1)
    const again = await call("PATCH", path(id, `/turns/${turn.public_id}`), {
      turn: { visibility: "excluded_from_context" }
    })
    expect(again.status).toBe(200)
    expect(await revision(id)).toBe(before + 1)
    expect((await itemTypes(id)).filter((type) => type === "visibility")).toHaveLength(1)
  })
})

describe("the timeline window", () => {
  it("an empty window still says what lies beyond its cursors: has_older past after_position, has_newer past before_position", async () => {
    const id = await create()
    for (const text of ["one", "two", "three"]) await note(id, text)
    await settled(id, 3)
    const window = async (query: string) => (await call("GET", path(id, `/turns?${query}`))).body
    expect(await window("after_position=3")).toEqual({
      turns: [],
      pagination: { before_position: null, after_position: null, has_older: true, has_newer: false }
    })
    expect((await window("before_position=1")).pagination).toEqual({
      before_position: null,
      after_position: null,
      has_older: false,
      has_newer: true
    })
    expect((await window("after_position=1&before_position=2")).pagination).toMatchObject({
      has_older: true,
      has_newer: true
    })
    // Hidden turns count only with include_hidden, as in a window that returns turns.
    const [first] = await turns(id)
    await call("PATCH", path(id, `/turns/${first.public_id}`), { turn: { visibility: "hidden" } })
    expect((await window("after_position=1&before_position=2")).pagination.has_older).toBe(false)
    expect((await window("after_position=1&before_position=2&include_hidden=true")).pagination.has_older).toBe(true)
  })
})
