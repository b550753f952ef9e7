// Conversation: any --delete, no live work in tree--> tombstoned, reclaimed after 30 days by a durable
// timer: the row, its turns and variants, the inference requests its replies asked, its store
// entries and conversation memory go; a forked-from source keeps its turns for the fork. Its own
// server: the clock moves a month.
import { TimerRunner } from "@troupe/actors/TimerRunner"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { waitForActorState } from "../../support/actors.ts"
import { waitForConversation } from "../../support/conversations.ts"
import { bearer, request } from "../../support/http.ts"
import type { ConnectedAgent } from "../../support/members.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
let agent: ConnectedAgent
let workspaceId: string
let keys = 0

const call = (method: string, path: string, body?: unknown) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, {
    headers: { ...bearer(agent.token), "idempotency-key": `reap-${++keys}` },
    body
  })
const path = (id: string, rest = "") => `/workspaces/${workspaceId}/conversations/${id}${rest}`

const count = (id: string) =>
  server.run(
    Effect.flatMap(SqlClient, (sql) =>
      Effect.map(
        sql<{ conversations: number; turns: number; requests: number; entries: number; documents: number }>`
          SELECT
            (SELECT count(*)::int FROM conversations WHERE public_id = ${id}) AS conversations,
            (SELECT count(*)::int FROM conversation_turns t JOIN conversations c ON c.id = t.conversation_id
              WHERE c.public_id = ${id}) AS turns,
            (SELECT count(*)::int FROM inference_requests r JOIN conversations c ON c.id = r.asked_by_conversation_id
              WHERE c.public_id = ${id}) AS requests,
            (SELECT count(*)::int FROM store_entries s JOIN conversations c ON c.id = s.host_id
              WHERE s.host_kind = 'conversation' AND c.public_id = ${id}) AS entries,
            (SELECT count(*)::int FROM memory_documents m JOIN conversations c ON c.id = m.anchor_id
              WHERE m.anchor_kind = 'conversation' AND c.public_id = ${id}) AS documents`,
        (rows) => rows[0]!
      )
    )
  )

const replied = async (id: string) => {
  await call("POST", path(id, "/inputs"), {
    input: { kind: "direct_reply", text: "hi", model: { model: "local/echo" } }
  })
  await waitForConversation(server, id, async () => {
    const turns = (await call("GET", path(id, "/turns"))).body.turns as Array<{ status: string }>
    return turns.at(-1)?.status === "completed"
  })
}

beforeAll(async () => {
  server = await startTestServer()
  const account = await twoStewards(server, { owner: ["reaped-talker"], member: [] })
  agent = account.ownerAgents[0] as ConnectedAgent
  workspaceId = (await call("POST", "/workspaces", { workspace: { name: "reap" } })).body.workspace.public_id
})
afterAll(() => server?.close())

describe("Conversation reap", () => {
  it("Conversation: any --delete--> tombstoned: reclaimed after 30 days (a durable timer) with everything it holds", async () => {
    const id = (await call("POST", `/workspaces/${workspaceId}/conversations`, { conversation: {} })).body.conversation
      .public_id
    await replied(id)
    await call("POST", path(id, "/store_entries"), { store_entry: { namespace: "n", key: "k", value: 1 } })
    const written = await call("POST", path(id, "/memory"), {
      memory: {
        path: "conversation/notes.md",
        content: "remember",
        expected_public_id: null,
        expected_lock_version: null
      }
    })
    expect(written.status).toBeLessThan(300)
    const source = (await call("POST", `/workspaces/${workspaceId}/conversations`, { conversation: {} })).body
      .conversation.public_id
    await replied(source)
    const fork = await call("POST", path(source, "/forks"), { fork: {} })
    expect(fork.status).toBe(201)
    expect(await count(id)).toEqual({ conversations: 1, turns: 1, requests: 1, entries: 1, documents: 1 })
    expect((await call("DELETE", path(id))).status).toBe(204)
    expect((await call("DELETE", path(source))).status).toBe(204)
    server.clock.advance("29 days")
    await server.run(Effect.flatMap(TimerRunner, (runner) => runner.runDue))
    expect((await count(id)).conversations).toBe(1)
    server.clock.advance("1 day")
    server.clock.advance("1 second")
    await waitForActorState(server, "conversation", id, "reaped")
    await waitForActorState(server, "conversation", source, "reaped")
    expect(await count(id)).toEqual({ conversations: 0, turns: 0, requests: 0, entries: 0, documents: 0 })
    expect((await count(source)).turns).toBe(1)
    // (The member token has expired with the month: the fork's inherited read is the forks test's.)
    expect((await count(fork.body.conversation.public_id)).conversations).toBe(1)
  })
})
