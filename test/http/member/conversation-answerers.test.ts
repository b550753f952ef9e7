// Who may answer a conversation, through the real server on real PostgreSQL (spec "Create rules":
// an agent of the account that may write in the workspace; supplement "Inputs": a fenced addressee
// is not eligible): the dedication fence and the steward's sight of the workspace, judged alike at
// create, on an input's addressee and on an estimate's; named definitions pass the fence where
// their declarer does (instance scope) or always (steward scope).
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { bearer, request } from "../../support/http.ts"
import type { ConnectedAgent } from "../../support/members.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
let agent: ConnectedAgent
let sibling: ConnectedAgent
let outsider: ConnectedAgent
let ownerToken: string
/** Dedicated to `agent` (an agent's create), owned by the owner, private. */
let dedicated: string
/** The owner's, private: the member's agents cannot see it. */
let ownerPrivate: string
/** The owner's, account-wide. */
let shared: string
const named: Record<string, string> = {}
let keys = 0

const as = (token: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, { headers: { ...bearer(token), ...headers }, body })
const key = () => ({ "idempotency-key": `answerers-${++keys}` })
const conversations = (workspace: string) => `/workspaces/${workspace}/conversations`

const create = (token: string, workspace: string, answerer: string) =>
  as(token, "POST", conversations(workspace), { conversation: { answering_user_public_id: answerer } }, key())

const codeOf = (answer: { status: number; body: any }) => [answer.status, answer.body?.error?.code]

/** A named definition `name` declared by `declarer`, in `scope`: its public id. */
const declare = async (declarer: ConnectedAgent, name: string, scope: "instance" | "steward") => {
  const made = await as(declarer.token, "PUT", `/profile/agents/${name}`, {
    scope,
    description: `${scope} helper`,
    configuration: {}
  })
  expect(made.status).toBe(201)
  return made.body.agent.public_id as string
}

beforeAll(async () => {
  server = await startTestServer()
  const account = await twoStewards(server, { owner: ["answer-talker", "answer-sibling"], member: ["answer-outsider"] })
  agent = account.ownerAgents[0] as ConnectedAgent
  sibling = account.ownerAgents[1] as ConnectedAgent
  outsider = account.memberAgents[0] as ConnectedAgent
  ownerToken = account.ownerToken
  const workspace = async (token: string, members: Record<string, unknown>) =>
    (await as(token, "POST", "/workspaces", { workspace: members }, key())).body.workspace.public_id as string
  dedicated = await workspace(agent.token, { name: "dedicated" })
  ownerPrivate = await workspace(ownerToken, { name: "owner's" })
  shared = await workspace(ownerToken, { name: "shared", access_mode: "account_wide" })
  named.own = await declare(agent, "own-helper", "instance")
  named.siblings = await declare(sibling, "sibling-helper", "instance")
  named.published = await declare(sibling, "published-helper", "steward")
})
afterAll(() => server?.close())

describe("a conversation's answerer", () => {
  it("create: an agent fenced out by the dedication, or whose steward cannot see the workspace, is 422 answerer_not_eligible", async () => {
    expect(codeOf(await create(agent.token, dedicated, sibling.publicId))).toEqual([422, "answerer_not_eligible"])
    expect(codeOf(await create(agent.token, dedicated, named.siblings!))).toEqual([422, "answerer_not_eligible"])
    expect(codeOf(await create(ownerToken, ownerPrivate, outsider.publicId))).toEqual([422, "answerer_not_eligible"])
    expect(codeOf(await create(ownerToken, ownerPrivate, `@${outsider.handle}`))).toEqual([
      422,
      "answerer_not_eligible"
    ])
  })

  it("create: the dedicated agent's own instance definitions, steward-scope definitions and agents that may write answer", async () => {
    for (const answerer of [agent.publicId, named.own!, named.published!]) {
      const made = await create(agent.token, dedicated, answerer)
      expect(made.status).toBe(201)
      expect(made.body.conversation.answering_user_public_id).toBe(answerer)
    }
    for (const answerer of [sibling.publicId, outsider.publicId]) {
      expect((await create(ownerToken, shared, answerer)).status).toBe(201)
    }
    expect((await create(ownerToken, ownerPrivate, sibling.publicId)).status).toBe(201)
  })

  it("an input's or an estimate's addressee is judged the same way: fenced or unseen 422 answerer_not_eligible", async () => {
    const reply = (answerer: string) => ({
      input: { kind: "direct_reply", text: "hi", deliver_in: "1h", answering_user_public_id: answerer }
    })
    const estimate = (answerer: string) => ({
      context_estimate: { prompt: "hi", model: { model: "local/echo" }, answering_user_public_id: answerer }
    })
    const inDedicated = (await create(agent.token, dedicated, agent.publicId)).body.conversation.public_id
    const here = `${conversations(dedicated)}/${inDedicated}`
    for (const fenced of [sibling.publicId, named.siblings!]) {
      expect(codeOf(await as(agent.token, "POST", `${here}/inputs`, reply(fenced), key()))).toEqual([
        422,
        "answerer_not_eligible"
      ])
      expect(codeOf(await as(agent.token, "POST", `${here}/context_estimate`, estimate(fenced)))).toEqual([
        422,
        "answerer_not_eligible"
      ])
    }
    for (const passes of [named.own!, named.published!]) {
      expect((await as(agent.token, "POST", `${here}/inputs`, reply(passes), key())).status).toBe(202)
      expect((await as(agent.token, "POST", `${here}/context_estimate`, estimate(passes))).status).toBe(200)
    }
    const privateOne = (await create(ownerToken, ownerPrivate, sibling.publicId)).body.conversation.public_id
    const owners = `${conversations(ownerPrivate)}/${privateOne}`
    expect(codeOf(await as(ownerToken, "POST", `${owners}/inputs`, reply(outsider.publicId), key()))).toEqual([
      422,
      "answerer_not_eligible"
    ])
    expect(codeOf(await as(ownerToken, "POST", `${owners}/context_estimate`, estimate(outsider.publicId)))).toEqual([
      422,
      "answerer_not_eligible"
    ])
    const sharedOne = (await create(ownerToken, shared, sibling.publicId)).body.conversation.public_id
    const reached = await as(
      ownerToken,
      "POST",
      `${conversations(shared)}/${sharedOne}/inputs`,
      reply(outsider.publicId),
      key()
    )
    expect(reached.status).toBe(202)
    expect(reached.body.input.answering_user_public_id).toBe(outsider.publicId)
  })
})
