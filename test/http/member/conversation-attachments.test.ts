// An input's attachments reach the model that answers it (spec "Member: conversation inputs":
// text "" clears the words and keeps the pictures; supplement "Local provider (testable)": echo
// appends " [<content_type>]" per upload part of the last user message), through the real server
// on real PostgreSQL: a reply with a PNG, an attachment-only input, a regeneration carrying it; a
// text-only model fails the turn unsupported_input_media (or its fallback answers), and the
// conversation goes on.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { waitForConversation } from "../../support/conversations.ts"
import { bearer, request } from "../../support/http.ts"
import type { ConnectedAgent } from "../../support/members.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { fileForm, onePixelPng } from "../../support/uploads.ts"

let server: TestServer
let agent: ConnectedAgent
let workspaceId: string
let keys = 0

const call = (method: string, path: string, body?: unknown) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, {
    headers: { ...bearer(agent.token), "idempotency-key": `attachments-${++keys}` },
    body
  })
const path = (id: string, rest = "") => `/workspaces/${workspaceId}/conversations/${id}${rest}`

const create = async () =>
  (await call("POST", `/workspaces/${workspaceId}/conversations`, { conversation: {} })).body.conversation
    .public_id as string
const input = async (id: string, members: Record<string, unknown>) => {
  const made = await call("POST", path(id, "/inputs"), { input: members })
  expect(made.status, JSON.stringify(made.body)).toBe(202)
}
const turns = async (id: string) => (await call("GET", path(id, "/turns?limit=100"))).body.turns as Array<any>
const variants = async (id: string, turnId: string) =>
  (await call("GET", path(id, `/turns/${turnId}/variants`))).body.variants as Array<any>
/** The conversation has `count` turns, none running. */
const settled = (id: string, count: number) =>
  waitForConversation(server, id, async () => {
    const found = await turns(id)
    return found.length === count && found.every((turn) => turn.status !== "running")
  })

const upload = async () => {
  const form = fileForm(onePixelPng, "look.png")
  const made = await request(server.baseUrl, "POST", "/agent_api/v1/uploads", {
    headers: { ...bearer(agent.token), "content-type": form.contentType },
    raw: form.body
  })
  expect(made.status).toBe(201)
  return made.body.upload.public_id as string
}

beforeAll(async () => {
  server = await startTestServer()
  const account = await twoStewards(server, { owner: ["attachments-agent"], member: [] })
  agent = account.ownerAgents[0] as ConnectedAgent
  workspaceId = (await call("POST", "/workspaces", { workspace: { name: "attachments" } })).body.workspace.public_id
})
afterAll(() => server?.close())

describe("an input's attachments reach its reply's model", () => {
  it("a direct reply with a PNG attachment: local/echo reads it as an upload part after the text", async () => {
    const id = await create()
    await input(id, {
      kind: "direct_reply",
      text: "look",
      attachments: [await upload()],
      model: { model: "local/echo" }
    })
    await settled(id, 1)
    expect((await turns(id))[0]).toMatchObject({ status: "completed", content: "echo: look [image/png]" })
  })

  it("an attachment-only input (text empty) is answered with its part; a regeneration still carries it", async () => {
    const id = await create()
    await input(id, { kind: "direct_reply", text: "hi", model: { model: "local/echo" } })
    await settled(id, 1)
    await input(id, { kind: "direct_reply", text: "", attachments: [await upload()], model: { model: "local/echo" } })
    await settled(id, 2)
    const turn = (await turns(id))[1]
    expect(turn).toMatchObject({ status: "completed" })
    expect(turn.content).toMatch(/^echo: ?\s\[image\/png\]$/)
    const regenerated = await call("POST", path(id, `/turns/${turn.public_id}/regeneration`))
    expect(regenerated.status).toBe(202)
    await waitForConversation(server, id, async () => (await variants(id, turn.public_id)).length === 2)
    await settled(id, 2)
    const deck = await variants(id, turn.public_id)
    expect(deck.map((variant) => [variant.status, variant.content.endsWith(" [image/png]")])).toEqual([
      ["completed", true],
      ["completed", true]
    ])
  })

  it("a text-only model fails the turn unsupported_input_media; the conversation goes on", async () => {
    const id = await create()
    await input(id, {
      kind: "direct_reply",
      text: "look",
      attachments: [await upload()],
      model: { model: "local/tiny" },
      fallback_models: []
    })
    await settled(id, 1)
    const [turn] = await turns(id)
    expect(turn).toMatchObject({ status: "failed", failure_reason_key: "unsupported_input_media" })
    expect((await variants(id, turn.public_id)).map((variant) => [variant.status, variant.failure_reason_key])).toEqual(
      [["failed", "unsupported_input_media"]]
    )
    await input(id, { kind: "direct_reply", text: "still here", model: { model: "local/echo" } })
    await settled(id, 2)
    // The failed turn's prompt is history: the new text follows it in the last user message.
    expect((await turns(id))[1]).toMatchObject({ status: "completed", content: "echo: look\n\nstill here" })
  })

  it("a text-only model with a fallback that takes images: the fallback answers", async () => {
    const id = await create()
    await input(id, {
      kind: "direct_reply",
      text: "look",
      attachments: [await upload()],
      model: { model: "local/tiny" },
      fallback_models: ["local/echo"]
    })
    await settled(id, 1)
    const [turn] = await turns(id)
    expect(turn).toMatchObject({ status: "completed", content: "echo: look [image/png]" })
    expect(
      (await variants(id, turn.public_id)).map((variant) => [variant.source, variant.status, variant.active])
    ).toEqual([
      ["inference", "failed", false],
      ["fallback", "completed", true]
    ])
  })
})
