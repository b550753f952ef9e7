// A conversation input names the uploads its attachments bind (spec "Member: uploads": bytes are
// readable by the creator or a principal who can read a row naming the upload; unbound uploads
// are reclaimed after a day; supplement "Uploads": a named one lives while a naming row does):
// through the real server, a reader of the conversation reads the attachment's bytes and
// thumbnail, others get 404; the reaper keeps what an input binds and takes what it unbound.
import { Uploads } from "@troupe/domain/uploads/Uploads"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { waitForConversation } from "../../support/conversations.ts"
import { bearer, request } from "../../support/http.ts"
import type { ConnectedAgent } from "../../support/members.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { fileForm, onePixelPng } from "../../support/uploads.ts"

let server: TestServer
let agent: ConnectedAgent
/** Another agent of the same steward: it reads the agent's workspace and its conversations. */
let sibling: ConnectedAgent
/** An agent of another human of the account: it does not. */
let outsider: ConnectedAgent
let workspaceId: string
let keys = 0

const call = (method: string, path: string, body?: unknown, token = agent.token) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, {
    headers: { ...bearer(token), "idempotency-key": `namings-${++keys}` },
    body
  })
const conversations = () => `/workspaces/${workspaceId}/conversations`
const reap = () => server.run(Effect.flatMap(Uploads, (uploads) => uploads.reap))

const upload = async (name: string) => {
  const form = fileForm(onePixelPng, name)
  const made = await request(server.baseUrl, "POST", "/agent_api/v1/uploads", {
    headers: { ...bearer(agent.token), "content-type": form.contentType },
    raw: form.body
  })
  expect(made.status).toBe(201)
  return made.body.upload.public_id as string
}

const newConversation = async () => {
  const made = await call("POST", conversations(), { conversation: {} })
  expect(made.status).toBe(201)
  return made.body.conversation.public_id as string
}

/** An input due in an hour binding `attachments`: answers its public id. */
const scheduled = async (conversationId: string, attachments: ReadonlyArray<string>) => {
  const made = await call("POST", `${conversations()}/${conversationId}/inputs`, {
    input: { kind: "direct_reply", text: "later", deliver_in: "1h", attachments }
  })
  expect(made.status, JSON.stringify(made.body)).toBe(202)
  return made.body.input.public_id as string
}

const status = async (path: string, token = agent.token) =>
  (await request(server.baseUrl, "GET", `/agent_api/v1${path}`, { headers: bearer(token) })).status

beforeAll(async () => {
  server = await startTestServer()
  const account = await twoStewards(server, { owner: ["namings-agent", "namings-sibling"], member: ["namings-out"] })
  agent = account.ownerAgents[0] as ConnectedAgent
  sibling = account.ownerAgents[1] as ConnectedAgent
  outsider = account.memberAgents[0] as ConnectedAgent
  workspaceId = (await call("POST", "/workspaces", { workspace: { name: "namings" } })).body.workspace.public_id
})
afterAll(() => server?.close())

describe("an input's attachments", () => {
  it("are readable by whoever reads the conversation: bytes and thumbnail; others get 404", async () => {
    const image = await upload("look.png")
    expect(await status(`/uploads/${image}/bytes`, sibling.token)).toBe(404)
    const conversationId = await newConversation()
    const made = await call("POST", `${conversations()}/${conversationId}/inputs`, {
      input: { kind: "direct_reply", text: "look", model: { model: "local/echo" }, attachments: [image] }
    })
    expect(made.status).toBe(202)
    await waitForConversation(
      server,
      conversationId,
      async () =>
        (await call("GET", `${conversations()}/${conversationId}/turns`)).body.turns?.at(-1)?.status === "completed"
    )
    expect(await status(`${conversations()}/${conversationId}`, sibling.token)).toBe(200)
    expect(await status(`/uploads/${image}/bytes`, sibling.token)).toBe(200)
    expect(await status(`/uploads/${image}/thumbnail`, sibling.token)).toBe(200)
    // The descriptor stays its creator's.
    expect(await status(`/uploads/${image}`, sibling.token)).toBe(404)
    expect(await status(`${conversations()}/${conversationId}`, outsider.token)).toBe(404)
    expect(await status(`/uploads/${image}/bytes`, outsider.token)).toBe(404)
  })

  it("live while an input binds them; unbound by an edit or with the input, they go a day after their creation", async () => {
    server.clock.advance("25 hours")
    await reap()
    const [kept, rebound, withdrawn] = [await upload("kept.png"), await upload("rebound.png"), await upload("gone.png")]
    const conversationId = await newConversation()
    const keeping = await scheduled(conversationId, [kept, rebound])
    const withdrawing = await scheduled(conversationId, [withdrawn])
    const edited = await call("PATCH", `${conversations()}/${conversationId}/inputs/${keeping}`, {
      input: { attachments: [kept] }
    })
    expect(edited.status, JSON.stringify(edited.body)).toBe(200)
    expect((await call("DELETE", `${conversations()}/${conversationId}/inputs/${withdrawing}`)).status).toBe(204)
    server.clock.advance("25 hours")
    expect((await reap()).uploads).toBe(2)
    expect(await status(`/uploads/${kept}/bytes`)).toBe(200)
    expect(await status(`/uploads/${rebound}/bytes`)).toBe(404)
    expect(await status(`/uploads/${withdrawn}/bytes`)).toBe(404)
  })
})
