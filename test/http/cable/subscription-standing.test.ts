// A subscription's standing is judged again at each recheck of the socket (SUPPLEMENT "Cable":
// authority rechecked at least every 30 s; conversations supplement "Standing": what a caller
// cannot see is absent from feeds and subscriptions), with the interval shortened so the tests need
// not wait: a subscriber who loses sight of a conversation hears reject_subscription for it, as
// absence answers, while its other subscriptions go on.
import { afterAll, afterEach, beforeAll, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { bearer, request } from "../../support/http.ts"
import type { ConnectedAgent } from "../../support/members.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { about, isType, openRaw, type RawCable } from "./support-cable.ts"

let server: TestServer
let agent: ConnectedAgent
let ownerToken: string
let workspaceId: string
let keys = 0

const call = (method: string, path: string, body?: unknown) =>
  request(server.baseUrl, method, `/agent_api/v1/workspaces/${workspaceId}${path}`, {
    headers: { ...bearer(agent.token), ...(method === "POST" ? { "idempotency-key": `standing-${++keys}` } : {}) },
    body
  })

beforeAll(async () => {
  server = await startTestServer({ cableTiming: { recheckInterval: "200 millis" } })
  const account = await twoStewards(server, { owner: ["standing-agent"], member: [] })
  agent = account.ownerAgents[0] as ConnectedAgent
  ownerToken = account.ownerToken
  workspaceId = (
    await request(server.baseUrl, "POST", "/agent_api/v1/workspaces", {
      headers: { ...bearer(agent.token), "idempotency-key": "standing-workspace" },
      body: { workspace: { name: "watched" } }
    })
  ).body.workspace.public_id
})
afterAll(() => server?.close())

const sockets: Array<RawCable> = []
afterEach(() => {
  for (const cable of sockets.splice(0)) cable.socket.close()
})

const open = async () =>
  (await call("POST", "/conversations", { conversation: {} })).body.conversation.public_id as string

it("a subscriber that loses sight of a conversation is told reject_subscription; its other subscriptions go on", async () => {
  const hidden = await open()
  const kept = await open()
  // The owner (not the conversations' creator) follows both with a member token.
  const cable = openRaw(server, { headers: bearer(ownerToken) })
  sockets.push(cable)
  await cable.frames.take(isType("welcome"))
  const identifierOf = (conversation: string) =>
    JSON.stringify({ channel: "ConversationChannel", workspace_id: workspaceId, conversation_id: conversation })
  for (const conversation of [hidden, kept]) {
    cable.subscribe(identifierOf(conversation))
    expect((await cable.frames.take(about(identifierOf(conversation)))).type).toBe("confirm_subscription")
  }

  expect((await call("PUT", `/conversations/${hidden}/access`, { access: { default: "none" } })).status).toBe(200)
  // The item narrating the change may reach it first; then the rejection, as absence answers.
  const rejected = await cable.frames.take(
    (frame: any) => about(identifierOf(hidden))(frame) && frame.type === "reject_subscription"
  )
  expect(rejected).toEqual({ identifier: identifierOf(hidden), type: "reject_subscription" })

  expect(
    (await call("POST", `/conversations/${kept}/inputs`, { input: { kind: "message", text: "still here" } })).status
  ).toBe(202)
  const item = await cable.frames.take(about(identifierOf(kept)))
  expect(item.message.event).toMatchObject({ type: "input_accepted" })
  // Nothing more of the conversation it no longer sees.
  const heard = cable.frames.buffered(about(identifierOf(hidden))).map((frame: any) => frame.message.event.type)
  expect(heard.filter((type: string) => type !== "access_changed")).toEqual([])
})
