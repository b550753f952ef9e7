// The conversation lists' pages around concealed rows, through the real server on real PostgreSQL
// (spec "Member: conversations": level none conceals and hides from lists; keyset pagination): with
// concealed conversations between visible ones, every page holds `limit` visible rows until the
// last, whose next_after is null, in both orderings, on the workspace list, the cross-workspace
// list, the sides, the children and the archived bins.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { bearer, request } from "../../support/http.ts"
import type { ConnectedAgent } from "../../support/members.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { subagentOf } from "../../support/subagents.ts"

let server: TestServer
/** Lists; `maker` creates every conversation, concealing some from `lister`. */
let lister: ConnectedAgent
let maker: ConnectedAgent
let room: string
let keys = 0
let children = 0
/** Each row made, in order, and whether `lister` sees it. */
const roots: Array<{ id: string; visible: boolean }> = []

const as = (who: ConnectedAgent, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, { headers: { ...bearer(who.token), ...headers }, body })
const key = () => ({ "idempotency-key": `pages-${++keys}` })
const conversations = () => `/workspaces/${room}/conversations`
const at = (id: string, rest = "") => `${conversations()}/${id}${rest}`

/** Visible, concealed twice, visible, … : four visible rows with concealed ones between and after. */
const pattern = [true, false, false, true, false, false, true, false, false, true, false, false]
const concealed = { default: "none", entries: [] }

const conceal = async (id: string) => {
  const put = await as(maker, "PUT", at(id, "/access"), { access: concealed })
  expect(put.status, JSON.stringify(put.body)).toBe(200)
}

/** Pages through `path` with limit=2: the ids seen and each page's size. */
const pages = async (path: string, query = "") => {
  const seen: Array<string> = []
  const sizes: Array<number> = []
  let after: string | null = null
  do {
    const cursor: string = after === null ? "" : `&after=${after}`
    const page: any = await as(lister, "GET", `${path}${path.includes("?") ? "&" : "?"}limit=2${query}${cursor}`)
    expect(page.status, JSON.stringify(page.body)).toBe(200)
    seen.push(...page.body.conversations.map((row: any) => row.public_id as string))
    sizes.push(page.body.conversations.length)
    after = page.body.pagination.next_after
  } while (after !== null && sizes.length < 20)
  return { seen, sizes }
}

/** Every ordering of `path` pages full until the last and shows exactly `visible`, in order. */
const expectFullPages = async (path: string, visible: ReadonlyArray<string>) => {
  expect(visible).toHaveLength(4)
  expect(await pages(path)).toEqual({ seen: visible, sizes: [2, 2] })
  expect(await pages(path, "&order=desc")).toEqual({ seen: [...visible].reverse(), sizes: [2, 2] })
  expect(await pages(path, "&order_by=last_activity_at")).toEqual({ seen: visible, sizes: [2, 2] })
  expect(await pages(path, "&order_by=last_activity_at&order=desc")).toEqual({
    seen: [...visible].reverse(),
    sizes: [2, 2]
  })
}

const childOf = (parentId: string, access: unknown) =>
  // Each child later than the one before, its own spawn key.
  subagentOf(server, parentId, { access, spawnKey: `spawn-${++children}`, at: new Date(Date.now() + children) })

const visibleOf = (rows: ReadonlyArray<{ id: string; visible: boolean }>) =>
  rows.filter((row) => row.visible).map((row) => row.id)

beforeAll(async () => {
  server = await startTestServer()
  const account = await twoStewards(server, { owner: ["page-lister", "page-maker"], member: [] })
  lister = account.ownerAgents[0] as ConnectedAgent
  maker = account.ownerAgents[1] as ConnectedAgent
  room = (
    await request(server.baseUrl, "POST", "/agent_api/v1/workspaces", {
      headers: { ...bearer(account.ownerToken), ...key() },
      body: { workspace: { name: "pages", access_mode: "account_wide" } }
    })
  ).body.workspace.public_id
  for (const visible of pattern) {
    const made = await as(maker, "POST", conversations(), { conversation: visible ? {} : { access: concealed } }, key())
    expect(made.status, JSON.stringify(made.body)).toBe(201)
    roots.push({ id: made.body.conversation.public_id, visible })
  }
})
afterAll(() => server?.close())

describe("conversation list pages", () => {
  it("the workspace's and the cross-workspace root lists page full until the last, never showing a concealed row", async () => {
    expect((await as(lister, "GET", at(roots[1]!.id))).status).toBe(404)
    await expectFullPages(conversations(), visibleOf(roots))
    await expectFullPages("/conversations", visibleOf(roots))
  })

  it("the sides (side=1) page full until the last", async () => {
    const sides: Array<{ id: string; visible: boolean }> = []
    for (const visible of pattern) {
      const made = await as(maker, "POST", at(roots[0]!.id, "/forks"), { fork: { side: true } }, key())
      expect(made.status, JSON.stringify(made.body)).toBe(201)
      const id = made.body.conversation.public_id as string
      if (!visible) await conceal(id)
      sides.push({ id, visible })
    }
    await expectFullPages(`${conversations()}?side=1`, visibleOf(sides))
  })

  it("a conversation's children page full until the last", async () => {
    const parent = roots[3]!.id
    const children: Array<{ id: string; visible: boolean }> = []
    for (const visible of pattern) {
      children.push({ id: await childOf(parent, visible ? { default: "full", entries: [] } : concealed), visible })
    }
    await expectFullPages(at(parent, "/children"), visibleOf(children))
  })

  it("the archived bins (the workspace's and archived=1 across workspaces) page full until the last", async () => {
    for (const { id } of roots) {
      const archived = await as(maker, "POST", at(id, "/archive"))
      expect(archived.status, JSON.stringify(archived.body)).toBe(200)
    }
    await expectFullPages(`${conversations()}/archived`, visibleOf(roots))
    await expectFullPages("/conversations?archived=1", visibleOf(roots))
  })
})
