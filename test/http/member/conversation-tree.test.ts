// The conversation rules around a conversation's tree and its projections, through the real server
// on real PostgreSQL: archive ends the sides and takes subagent children along, DELETE is busy while
// anything in the tree runs, a fork's freeze on its source lifts when it is tombstoned,
// active_turn_public_id, effective_memory_context's anchors, an input's reasoning controls in the
// sealed request, handle_changed on the feeds a renamed principal speaks in, the input edit rules,
// and the standing order (409 conversation_archived before 422).
import { newPublicId } from "@troupe/storage/Ids"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { waitForConversation } from "../../support/conversations.ts"
import { bearer, request } from "../../support/http.ts"
import type { ConnectedAgent } from "../../support/members.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { subagentOf } from "../../support/subagents.ts"
import { fileForm, onePixelPng } from "../../support/uploads.ts"

let server: TestServer
let agent: ConnectedAgent
let ownerToken: string
let ownerPublicId: string
let memberPublicId: string
let workspaceId: string
let keys = 0

const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, { headers: { ...bearer(agent.token), ...headers }, body })
const key = () => ({ "idempotency-key": `tree-${++keys}` })
const conversationsPath = () => `/workspaces/${workspaceId}/conversations`
const path = (id: string, rest = "") => `${conversationsPath()}/${id}${rest}`

const expectError = (response: { status: number; body: any }, status: number, code: string) =>
  expect({ status: response.status, code: response.body?.error?.code }).toEqual({ status, code })

const createConversation = async (members: Record<string, unknown> = {}) => {
  const made = await call("POST", conversationsPath(), { conversation: members }, key())
  expect(made.status).toBe(201)
  return made.body.conversation.public_id as string
}

const input = (id: string, members: Record<string, unknown>) =>
  call("POST", path(id, "/inputs"), { input: members }, key())
const turns = async (id: string) => (await call("GET", path(id, "/turns?limit=100"))).body.turns as Array<any>
const feed = async (id: string) => (await call("GET", path(id, "/events?limit=200"))).body.events as Array<any>
/**
 * A local/script reply that runs until canceled: its directive must be the prompt's last user
 * message alone (messages before it are sent excluded from context, else they would merge).
 */
const slow = (ms = 20_000) => JSON.stringify({ delay_ms: ms, reply: "late" })

const until = (id: string, done: () => Promise<boolean>) => waitForConversation(server, id, done)
const newestStatus = async (id: string) => (await turns(id)).at(-1)?.status

const stateOf = (id: string) =>
  server.run(
    Effect.flatMap(SqlClient, (sql) =>
      Effect.map(
        sql<{ state: string }>`SELECT state FROM conversations WHERE public_id = ${id}`,
        (rows) => rows[0]?.state
      )
    )
  )

const forkOf = async (id: string, members: Record<string, unknown>) => {
  const made = await call("POST", path(id, "/forks"), { fork: members }, key())
  expect(made.status, JSON.stringify(made.body)).toBe(201)
  return made.body.conversation.public_id as string
}

beforeAll(async () => {
  server = await startTestServer()
  const account = await twoStewards(server, { owner: ["tree-talker"], member: [] })
  agent = account.ownerAgents[0] as ConnectedAgent
  ownerToken = account.ownerToken
  ownerPublicId = account.owner.public_id
  memberPublicId = account.member.public_id
  const made = await call("POST", "/workspaces", { workspace: { name: "trees" } }, key())
  workspaceId = made.body.workspace.public_id
})
afterAll(() => server?.close())

describe("the tree", () => {
  it("Conversation: archived --unarchive, not a subagent or side--> active: reaped sides do not return (archive first tombstones them, work canceled, and narrates conversation_ended {reason: archived})", async () => {
    const id = await createConversation()
    await input(id, { kind: "message", text: "hello", visible_in_context: false })
    await until(id, async () => (await turns(id)).length === 1)
    const side = await forkOf(id, { side: true })
    await input(side, { kind: "direct_reply", text: slow(), model: { model: "local/script" } })
    await until(side, async () => (await newestStatus(side)) === "running")
    const archived = await call("POST", path(id, "/archive"))
    expect(archived.status).toBe(200)
    expect(archived.body.conversation.archived_at).not.toBeNull()
    await until(side, async () => (await stateOf(side)) === "tombstoned")
    expect((await call("GET", path(side))).status).toBe(404)
    const [sideTurn] = await server.run(
      Effect.flatMap(
        SqlClient,
        (sql) => sql<{ status: string }>`
          SELECT t.status FROM conversation_turns t JOIN conversations c ON c.id = t.conversation_id
          WHERE c.public_id = ${side} ORDER BY t.position DESC LIMIT 1`
      )
    )
    expect(sideTurn?.status).toBe("canceled")
    expect((await feed(id)).map((item) => item.type)).toEqual([
      "input_accepted",
      "turn_created",
      "input_materialized",
      "turn_status",
      "fork_created",
      "conversation_ended"
    ])
    expect((await feed(id)).at(-1).payload).toEqual({ reason: "archived" })
    expect((await call("POST", path(id, "/unarchive"))).status).toBe(200)
    expect((await call("GET", path(side))).status).toBe(404)
    expect(await stateOf(side)).toBe("tombstoned")
  })

  it("Conversation: active --archive--> archived, subagent tree included: a child follows its parent both ways; its own archive or unarchive is 409 subagent_follows_parent", async () => {
    const parent = await createConversation()
    const child = await subagentOf(server, parent)
    const children = await call("GET", path(parent, "/children"))
    expect(children.body.conversations.map((row: any) => row.public_id)).toEqual([child])
    expect(children.body.conversations[0].parent).toEqual({
      public_id: parent,
      spawn_node_key: "spawn-1",
      label: "helper"
    })
    expectError(await call("POST", path(child, "/archive")), 409, "subagent_follows_parent")
    expect((await call("POST", path(parent, "/archive"))).status).toBe(200)
    await until(child, async () => (await stateOf(child)) === "archived")
    expect((await call("GET", path(child))).body.conversation.archived_at).not.toBeNull()
    expect((await feed(child)).map((item) => item.type)).toEqual(["conversation_ended"])
    expectError(await call("POST", path(child, "/unarchive")), 409, "subagent_follows_parent")
    expect((await call("POST", path(parent, "/unarchive"))).status).toBe(200)
    await until(child, async () => (await stateOf(child)) === "active")
    expect((await call("GET", path(child))).body.conversation.archived_at).toBeNull()
  })

  it("Conversation: any --delete, no live work in tree--> tombstoned: 409 conversation_busy while a turn runs anywhere in the tree (a side, a child); then the tree goes with it", async () => {
    const id = await createConversation()
    await input(id, { kind: "message", text: "hello", visible_in_context: false })
    await until(id, async () => (await turns(id)).length === 1)
    const side = await forkOf(id, { side: true })
    const child = await subagentOf(server, id)
    await input(side, { kind: "direct_reply", text: slow(), model: { model: "local/script" } })
    await until(side, async () => (await newestStatus(side)) === "running")
    expectError(await call("DELETE", path(id)), 409, "conversation_busy")
    expect((await call("POST", path(side, "/cancellation"))).status).toBe(202)
    await until(side, async () => (await newestStatus(side)) === "canceled")
    await input(child, { kind: "direct_reply", text: slow(), model: { model: "local/script" } })
    await until(child, async () => (await newestStatus(child)) === "running")
    expectError(await call("DELETE", path(id)), 409, "conversation_busy")
    expect((await call("POST", path(child, "/cancellation"))).status).toBe(202)
    await until(child, async () => (await newestStatus(child)) === "canceled")
    expect((await call("DELETE", path(id))).status).toBe(204)
    await until(side, async () => (await stateOf(side)) === "tombstoned")
    await until(child, async () => (await stateOf(child)) === "tombstoned")
    expect((await call("GET", path(side))).status).toBe(404)
    expect((await call("GET", path(child))).status).toBe(404)
  })

  it("Source turns a child reads by reference stay frozen while it lives: tombstoning the child lifts its freeze", async () => {
    const id = await createConversation()
    await input(id, { kind: "direct_reply", text: "hello", model: { model: "local/echo" } })
    await until(id, async () => (await newestStatus(id)) === "completed")
    const [tail] = await turns(id)
    // A side reads every settled turn by reference, the tail too.
    const forked = await forkOf(id, { side: true })
    await until(id, async () => (await feed(id)).some((item) => item.type === "fork_created"))
    const edit = () => call("POST", path(id, `/turns/${tail.public_id}/edit`), { edit: { text: "changed" } })
    expectError(await edit(), 409, "branch_required")
    expect((await call("DELETE", path(forked))).status).toBe(204)
    let edited = 0
    await until(id, async () => {
      edited = (await edit()).status
      return edited === 200
    })
    expect(edited).toBe(200)
  })
})

describe("projections", () => {
  it("active_turn_public_id names the running turn (full and basic projections), null when idle", async () => {
    const id = await createConversation()
    expect((await call("GET", path(id))).body.conversation.active_turn_public_id).toBeNull()
    await input(id, { kind: "direct_reply", text: slow(), model: { model: "local/script" } })
    await until(id, async () => (await newestStatus(id)) === "running")
    const [running] = await turns(id)
    expect((await call("GET", path(id))).body.conversation.active_turn_public_id).toBe(running.public_id)
    const listed = (await call("GET", `${conversationsPath()}?limit=100`)).body.conversations.find(
      (row: any) => row.public_id === id
    )
    expect(listed.active_turn_public_id).toBe(running.public_id)
    expect((await call("POST", path(id, "/cancellation"))).status).toBe(202)
    await until(id, async () => (await newestStatus(id)) === "canceled")
    expect((await call("GET", path(id))).body.conversation.active_turn_public_id).toBeNull()
  })

  it("effective_memory_context adds anchor UUIDs: the default roots, and stored bindings resolved", async () => {
    const id = await createConversation()
    const view = (await call("GET", path(id))).body.conversation
    expect(view.effective_memory_context.bindings).toEqual([
      { name: "conversation", scope: "conversation", access: "read_write", conversation_public_id: id },
      { name: "workspace", scope: "workspace", access: "read_write", workspace_public_id: workspaceId },
      { name: "user", scope: "user", access: "read_write", user_public_id: ownerPublicId }
    ])
    const other = await createConversation()
    const bindings = [
      { name: "conversation", scope: "conversation", access: "read_write" },
      { name: "shared", scope: "conversation", access: "read", conversation_public_id: other },
      { name: "agent", scope: "agent", access: "read" },
      { name: "about", scope: "speaker", access: "read", speaker_public_id: ownerPublicId }
    ]
    const set = await call("POST", path(id, "/memory_context"), { memory_context: { bindings } })
    expect(set.status, JSON.stringify(set.body)).toBe(200)
    expect(set.body.conversation.effective_memory_context.bindings).toEqual([
      { ...bindings[0], conversation_public_id: id },
      bindings[1],
      { ...bindings[2], agent_public_id: agent.publicId },
      { ...bindings[3], agent_public_id: agent.publicId, user_public_id: ownerPublicId }
    ])
  })

  it("an input's model.reasoning_enabled and reasoning_effort reach the sealed request and the variant's model", async () => {
    const id = await createConversation()
    await input(id, {
      kind: "direct_reply",
      text: "think",
      model: { model: "local/echo", reasoning_enabled: true, reasoning_effort: "high" }
    })
    await until(id, async () => (await newestStatus(id)) === "completed")
    const [turn] = await turns(id)
    expect(turn.active_variant.model).toEqual({
      provider_id: "local",
      model_ref: "local/echo",
      reasoning_enabled: true,
      reasoning_effort: "high"
    })
    const sealed = await call(
      "GET",
      path(id, `/turns/${turn.public_id}/variants/${turn.active_variant.public_id}/request`)
    )
    expect(sealed.status).toBe(200)
    expect(sealed.body.request.request_options.model).toMatchObject({
      reasoning_enabled: true,
      reasoning_effort: "high"
    })
    expectError(
      await input(id, { kind: "direct_reply", text: "x", model: { model: "local/tiny", reasoning_enabled: true } }),
      422,
      "validation_failed"
    )
    expectError(
      await input(id, { kind: "direct_reply", text: "x", model: { model: "local/echo", reasoning_effort: "huge" } }),
      422,
      "validation_failed"
    )
  })

  it("handle_changed {user_public_id, old, new} is also narrated on the feed of every conversation the renamed principal speaks in or answers", async () => {
    const id = await createConversation()
    const quiet = await createConversation({
      access: { default: "full" }
    })
    await input(id, { kind: "message", text: "hello", visible_in_context: false })
    await until(id, async () => (await turns(id)).length === 1)
    const renamed = await request(server.baseUrl, "PATCH", `/agent_api/v1/principals/${agent.publicId}`, {
      headers: bearer(ownerToken),
      body: { handle: "renamed-talker" }
    })
    expect(renamed.status, JSON.stringify(renamed.body)).toBe(200)
    await until(id, async () => (await feed(id)).some((item) => item.type === "handle_changed"))
    expect((await feed(id)).at(-1)).toMatchObject({
      type: "handle_changed",
      payload: { user_public_id: agent.publicId, old: agent.handle, new: "renamed-talker" }
    })
    // The agent answers every conversation it made: the quiet one narrates it too.
    await until(quiet, async () => (await feed(quiet)).some((item) => item.type === "handle_changed"))
  })
})

describe("fences", () => {
  it("expected_tail_turn_public_id names the newest visible turn: an inherited one on a side, the one below a hidden tail", async () => {
    const id = await createConversation()
    await input(id, { kind: "direct_reply", text: "one", model: { model: "local/echo" } })
    await until(id, async () => (await newestStatus(id)) === "completed")
    await input(id, { kind: "direct_reply", text: "two", model: { model: "local/echo" } })
    await until(id, async () => (await turns(id)).length === 2 && (await newestStatus(id)) === "completed")
    const [first, second] = await turns(id)
    const side = await forkOf(id, { side: true })
    const message = { kind: "message", text: "m", deliver_in: "1h" }
    expect((await input(side, { ...message, expected_tail_turn_public_id: second.public_id })).status).toBe(202)
    expectError(await input(side, { ...message, expected_tail_turn_public_id: first.public_id }), 409, "stale_timeline")
    const other = await createConversation()
    await input(other, { kind: "direct_reply", text: "one", model: { model: "local/echo" } })
    await until(other, async () => (await newestStatus(other)) === "completed")
    await input(other, { kind: "direct_reply", text: "two", model: { model: "local/echo" } })
    await until(other, async () => (await turns(other)).length === 2 && (await newestStatus(other)) === "completed")
    const [below, hidden] = await turns(other)
    expect(
      (await call("PATCH", path(other, `/turns/${hidden.public_id}`), { turn: { visibility: "hidden" } })).status
    ).toBe(200)
    expect((await input(other, { ...message, expected_tail_turn_public_id: below.public_id })).status).toBe(202)
    expectError(
      await input(other, { ...message, expected_tail_turn_public_id: hidden.public_id }),
      409,
      "stale_timeline"
    )
  })
})

describe("Edit rules of inputs", () => {
  const scheduled = async (id: string, members: Record<string, unknown>) => {
    const made = await input(id, { kind: "direct_reply", text: "later", deliver_in: "1h", ...members })
    expect(made.status, JSON.stringify(made.body)).toBe(202)
    return made.body.input as any
  }
  const edit = (id: string, inputId: string, members: Record<string, unknown>) =>
    call("PATCH", path(id, `/inputs/${inputId}`), { input: members })

  it("history and reasoning_replay replace the whole stored intent (context_options follows)", async () => {
    const id = await createConversation()
    const row = await scheduled(id, {
      history: { max_entries: 5, token_budget_share: 0.5 },
      reasoning_replay: { a: 1 }
    })
    expect(row.context_options).toEqual({ history: { max_entries: 5, token_budget_share: 0.5 } })
    const edited = await edit(id, row.public_id, { history: { max_entries: 3 }, reasoning_replay: { b: 2 } })
    expect(edited.status, JSON.stringify(edited.body)).toBe(200)
    expect(edited.body.input).toMatchObject({
      history: { max_entries: 3 },
      reasoning_replay: { b: 2 },
      context_options: { history: { max_entries: 3 } },
      lock_version: 1
    })
    const cleared = await edit(id, row.public_id, { history: null })
    expect(cleared.body.input.history).toBeNull()
    expect(cleared.body.input.context_options).toEqual({})
  })

  it("steps: a supplied array replaces, omission or null keeps, [] clears; nonempty steps for a direct addressee 422", async () => {
    const id = await createConversation()
    const row = await scheduled(id, { steps: [] })
    expect((await edit(id, row.public_id, { text: "kept" })).body.input.steps).toEqual([])
    expect((await edit(id, row.public_id, { steps: null })).body.input.steps).toEqual([])
    expectError(await edit(id, row.public_id, { steps: [{ key: "a" }] }), 422, "validation_failed")
  })

  it('attachments: absent keeps, text "" clears the words and keeps the pictures, [] unbinds, a list rebinds in order', async () => {
    const upload = async (name: string) => {
      const form = fileForm(onePixelPng, name)
      const made = await request(server.baseUrl, "POST", "/agent_api/v1/uploads", {
        headers: { ...bearer(agent.token), "content-type": form.contentType },
        raw: form.body
      })
      expect(made.status).toBe(201)
      return made.body.upload.public_id as string
    }
    const [a, b] = [await upload("a.png"), await upload("b.png")]
    const id = await createConversation()
    const row = await scheduled(id, { attachments: [a] })
    expect(row.attachments.map((each: any) => each.public_id)).toEqual([a])
    const words = await edit(id, row.public_id, { text: "" })
    expect(words.body.input).toMatchObject({ text: "" })
    expect(words.body.input.attachments.map((each: any) => each.public_id)).toEqual([a])
    const rebound = await edit(id, row.public_id, { attachments: [b, a] })
    expect(rebound.body.input.attachments.map((each: any) => each.public_id)).toEqual([b, a])
    expect((await edit(id, row.public_id, { attachments: [] })).body.input.attachments).toEqual([])
  })

  it("times: absent keeps, a time reschedules, deliver_in 0s makes it due now; a steer takes no time", async () => {
    const id = await createConversation()
    const row = await scheduled(id, { model: { model: "local/echo" } })
    const later = new Date(Date.now() + 2 * 60 * 60 * 1000).toISOString()
    const moved = await edit(id, row.public_id, { deliver_at: later })
    expect(new Date(moved.body.input.deliver_at).toISOString()).toBe(later)
    const kept = await edit(id, row.public_id, { text: "still later" })
    expect(new Date(kept.body.input.deliver_at).toISOString()).toBe(later)
    expect((await edit(id, row.public_id, { deliver_in: "0s", text: "now" })).status).toBe(200)
    await until(id, async () => (await newestStatus(id)) === "completed")
    expect((await turns(id))[0]).toMatchObject({ prompt_text: "now" })
    const steer = await input(id, { kind: "direct_reply", text: "steer", delivery_mode: "steer", deliver_in: "1h" })
    expectError(steer, 422, "deliver_at_not_steerable")
  })

  it("a message takes no reply-lane member on an edit either (422 validation_failed naming it)", async () => {
    const id = await createConversation()
    const made = await input(id, { kind: "message", text: "later", deliver_in: "1h" })
    const refused = await edit(id, made.body.input.public_id, { model: { model: "local/echo" } })
    expectError(refused, 422, "validation_failed")
    expect(refused.body.error.message).toContain("model")
  })
})

describe("principals that may not be named", () => {
  it("the system user: answerer_not_eligible at create and on an input, principal_not_eligible in access", async () => {
    expectError(
      await call("POST", conversationsPath(), { conversation: { answering_user_public_id: "@system" } }, key()),
      422,
      "answerer_not_eligible"
    )
    expectError(
      await call(
        "POST",
        conversationsPath(),
        { conversation: { access: { default: "full", entries: [{ handle: "system", level: "read" }] } } },
        key()
      ),
      422,
      "principal_not_eligible"
    )
    const id = await createConversation()
    expectError(
      await input(id, { kind: "direct_reply", text: "x", answering_user_public_id: "@system" }),
      422,
      "answerer_not_eligible"
    )
  })

  it("an access entry naming a principal without access to the workspace is 422 principal_not_eligible", async () => {
    const id = await createConversation()
    expectError(
      await call("PUT", path(id, "/access"), {
        access: { default: "full", entries: [{ user_public_id: memberPublicId, level: "read" }] }
      }),
      422,
      "principal_not_eligible"
    )
    const named = await call("PUT", path(id, "/access"), {
      access: { default: "full", entries: [{ user_public_id: ownerPublicId, level: "read" }] }
    })
    expect(named.status, JSON.stringify(named.body)).toBe(200)
  })
})

describe("the standing order", () => {
  it("an archived conversation answers 409 conversation_archived before any 422", async () => {
    const id = await createConversation()
    await input(id, { kind: "message", text: "hello", visible_in_context: false })
    await until(id, async () => (await turns(id)).length === 1)
    const [message] = await turns(id)
    expect((await call("POST", path(id, "/archive"))).status).toBe(200)
    expectError(
      await input(id, { kind: "direct_reply", text: "x", model: { model: "bad" } }),
      409,
      "conversation_archived"
    )
    expectError(
      await call("POST", path(id, `/turns/${message.public_id}/regeneration`), {}, key()),
      409,
      "conversation_archived"
    )
    expectError(await call("POST", path(id, "/cancellation")), 409, "conversation_archived")
    expectError(
      await call("POST", path(id, "/compaction"), { compaction: { model: "nowhere/none" } }),
      409,
      "conversation_archived"
    )
  })

  it("regeneration of a message turn is 422 validation_failed even while another turn runs", async () => {
    const id = await createConversation()
    await input(id, { kind: "message", text: "hello", visible_in_context: false })
    await until(id, async () => (await turns(id)).length === 1)
    const [message] = await turns(id)
    await input(id, { kind: "direct_reply", text: slow(), model: { model: "local/script" } })
    await until(id, async () => (await newestStatus(id)) === "running")
    expectError(
      await call("POST", path(id, `/turns/${message.public_id}/regeneration`), {}, key()),
      422,
      "validation_failed"
    )
    expect((await call("POST", path(id, "/cancellation"))).status).toBe(202)
  })
})

describe("Steering refusals on create (conversations supplement, steering)", () => {
  it("a steer with attachments is 422 attachments_not_steerable; a steering guard on a queued input 422 steering_guard_requires_steer", async () => {
    const form = fileForm(onePixelPng, "steer.png")
    const made = await request(server.baseUrl, "POST", "/agent_api/v1/uploads", {
      headers: { ...bearer(agent.token), "content-type": form.contentType },
      raw: form.body
    })
    expect(made.status).toBe(201)
    const attachments = [made.body.upload.public_id]
    const id = await createConversation()
    for (const delivery_mode of ["steer", "steer_now"]) {
      expectError(
        await input(id, { kind: "direct_reply", text: "look", delivery_mode, attachments }),
        422,
        "attachments_not_steerable"
      )
    }
    expectError(
      await input(id, { kind: "direct_reply", text: "guarded", expected_steering_run_public_id: newPublicId() }),
      422,
      "steering_guard_requires_steer"
    )
    expect((await input(id, { kind: "direct_reply", text: "queued", attachments })).status).toBe(202)
  })
})
