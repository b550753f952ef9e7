import type { Caller } from "@troupe/domain/accounts/Caller"
import { Conversations } from "@troupe/domain/conversations/Conversations"
import type { ConversationEvent } from "@troupe/machines/conversation/events"
import { newPublicId } from "@troupe/storage/Ids"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { callerOf as callersOf } from "../../support/callers.ts"
import { waitForConversation } from "../../support/conversations.ts"
import { bearer, request } from "../../support/http.ts"
import type { ConnectedAgent } from "../../support/members.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
let agent: ConnectedAgent
let caller: Caller
let workspaceId: string

const callerOf = (publicId: string) => callersOf(server, publicId)

const conversations = <A, E>(f: (service: Conversations["Service"]) => Effect.Effect<A, E>) =>
  server.run(Effect.flatMap(Conversations, f))

const feed = async (conversationId: string) =>
  (await conversations((service) => service.events(caller, workspaceId, conversationId, undefined, 200))).items

const waitFor = (conversationId: string, done: () => Promise<boolean>) =>
  waitForConversation(server, conversationId, done)

const turnStatuses = (conversationId: string) =>
  server.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient
      return yield* sql<{ position: number; kind: string; status: string; content: string }>`
        SELECT t.position, t.kind, t.status, v.content FROM conversation_turns t
        JOIN conversations c ON c.id = t.conversation_id
        JOIN conversation_variants v ON v.public_id = t.active_variant_public_id
        WHERE c.public_id = ${conversationId} ORDER BY t.position`
    })
  )

const accept = (conversationId: string, kind: "message" | "direct_reply", text: string, model = "local/echo") => {
  const ids = {
    turnId: newPublicId(),
    variantId: newPublicId(),
    requestId: newPublicId(),
    fallbackVariantId: newPublicId(),
    fallbackRequestId: newPublicId()
  }
  const inputId = newPublicId()
  const event: ConversationEvent = {
    type: "input.accept",
    at: Date.now(),
    input: {
      inputId,
      kind,
      kernel: false,
      role: "user",
      deliveryMode: "queue",
      dueAt: null,
      authorId: agent.publicId,
      reply: kind === "message" ? null : { model, modelKnown: true, fallbackModel: null, answererId: agent.publicId },
      ids,
      row: {
        text,
        origin: "agent",
        author_id: String(caller.user.id),
        speaker_id: String(caller.user.id),
        answerer_id: null,
        members: {}
      },
      item: {
        input_public_id: inputId,
        kind,
        delivery_mode: "queue",
        origin: "agent",
        author_public_id: agent.publicId
      }
    }
  }
  return conversations((service) =>
    Effect.flatMap(service.standing(caller, workspaceId, conversationId, "write"), (standing) =>
      service.send(standing, event)
    )
  )
}

beforeAll(async () => {
  server = await startTestServer()
  const account = await twoStewards(server, { owner: ["conversation-agent"], member: [] })
  agent = account.ownerAgents[0] as ConnectedAgent
  caller = await callerOf(agent.publicId)
  const made = await request(server.baseUrl, "POST", "/agent_api/v1/workspaces", {
    headers: { ...bearer(agent.token), "idempotency-key": "ws-conversations" },
    body: { workspace: { name: "conversations" } }
  })
  workspaceId = made.body.workspace.public_id
})
afterAll(() => server?.close())

describe("conversation replies", () => {
  it("Input: pending --drain, lane idle--> consumed into a turn: a direct reply (by the service) asks local/echo and its turn completes", async () => {
    const created = await conversations((service) => service.create(caller, workspaceId, { title: "first" }))
    const id = created.public_id
    await accept(id, "direct_reply", "hello")
    await waitFor(id, async () => (await turnStatuses(id)).some((turn) => turn.status === "completed"))
    expect(await turnStatuses(id)).toEqual([
      { position: 1, kind: "direct_reply", status: "completed", content: "echo: hello" }
    ])
    const items = await feed(id)
    expect(items.map((item) => item.type)).toEqual([
      "input_accepted",
      "turn_created",
      "input_materialized",
      "turn_status",
      "usage",
      "turn_status"
    ])
    expect(items.map((item) => item.sequence)).toEqual([1, 2, 3, 4, 5, 6])
    expect(items.at(-1)!.payload).toMatchObject({ turn_kind: "direct_reply", status: "completed" })
  })

  it("messages drain into completed turns and a later reply reads them as history", async () => {
    const created = await conversations((service) => service.create(caller, workspaceId, {}))
    const id = created.public_id
    await accept(id, "message", "note")
    await accept(id, "direct_reply", "again")
    await waitFor(id, async () => (await turnStatuses(id)).filter((turn) => turn.status === "completed").length === 2)
    expect(await turnStatuses(id)).toEqual([
      { position: 1, kind: "message", status: "completed", content: "note" },
      { position: 2, kind: "direct_reply", status: "completed", content: "echo: note\n\nagain" }
    ])
    const view = await conversations((service) => service.read(caller, workspaceId, id))
    expect(view.context_revision).toBe(3)
    expect(view.input_queue).toEqual({ limit: 16, held: 0 })
  })
})
