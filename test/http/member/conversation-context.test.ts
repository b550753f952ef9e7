// Member: context through the real server on real PostgreSQL: the estimate's anchors (memory off,
// no prompt documents, local/echo), its render, history budgets, a manual compaction (202 {turn},
// its summary and context_compacted), its refusals (conversation_busy judged first,
// nothing_to_compact), walls at a direct reply's head, and the sealed request door.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { waitForConversation } from "../../support/conversations.ts"
import { bearer, request } from "../../support/http.ts"
import type { ConnectedAgent } from "../../support/members.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
let agent: ConnectedAgent
let sibling: ConnectedAgent
let ownerToken: string
let workspaceId: string
let keys = 0

const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, { headers: { ...bearer(agent.token), ...headers }, body })
const key = () => ({ "idempotency-key": `context-${++keys}` })
const codeOf = (response: { status: number; body: any }) => [response.status, response.body?.error?.code]

const path = (id: string, rest = "") => `/workspaces/${workspaceId}/conversations/${id}${rest}`

const createConversation = async () => {
  const made = await call("POST", `/workspaces/${workspaceId}/conversations`, { conversation: {} }, key())
  expect(made.status).toBe(201)
  return made.body.conversation.public_id as string
}

const input = async (id: string, members: Record<string, unknown>) => {
  const accepted = await call("POST", path(id, "/inputs"), { input: members }, key())
  expect(accepted.status).toBe(202)
  return accepted.body.input
}
const reply = (id: string, text: string, model = "local/echo", extra: Record<string, unknown> = {}) =>
  input(id, { kind: "direct_reply", text, model: { model }, ...extra })
const note = (id: string, text: string) => input(id, { kind: "message", text })

const estimate = (id: string, members: Record<string, unknown>) =>
  call("POST", path(id, "/context_estimate"), { context_estimate: members })
const turns = async (id: string) => (await call("GET", path(id, "/turns?limit=100"))).body.turns as Array<any>
const feed = async (id: string) => (await call("GET", path(id, "/events?limit=200"))).body.events as Array<any>

/** Waits until the conversation holds `count` turns, the newest with `status`. */
const settled = (id: string, count: number, status = "completed") =>
  waitForConversation(server, id, async () => {
    const found = await turns(id)
    return found.length === count && found.at(-1)?.status === status
  })

const inputState = async (id: string, inputId: string) =>
  ((await call("GET", path(id, "/inputs"))).body.inputs as Array<any>).find((row) => row.public_id === inputId)

beforeAll(async () => {
  server = await startTestServer()
  const account = await twoStewards(server, { owner: ["context-agent", "context-sibling"], member: [] })
  agent = account.ownerAgents[0] as ConnectedAgent
  sibling = account.ownerAgents[1] as ConnectedAgent
  ownerToken = account.ownerToken
  const made = await call("POST", "/workspaces", { workspace: { name: "context" } }, key())
  workspaceId = made.body.workspace.public_id
})
afterAll(() => server?.close())

describe("context_estimate", () => {
  it('anchors: "hello" 6 tokens in 1 message; after its reply "again" 19 in 3, selected 1; local usage agrees', async () => {
    const id = await createConversation()
    const first = await estimate(id, { prompt: "hello", model: { model: "local/echo" } })
    expect(first.status).toBe(200)
    expect(first.body).toEqual({
      context_estimate: {
        input_tokens: 6,
        tokenizer_exact: true,
        catalog_input_token_limit: 32768,
        advisory_input_token_limit: null,
        message_count: 1,
        history: { selected: 0, skipped: 0, skipped_reason: null, compacted: false }
      }
    })
    await reply(id, "hello")
    await settled(id, 1)
    const [answered] = await turns(id)
    expect(answered.active_variant.usage.input_tokens).toBe(6)
    // The model is now the last reply's.
    const again = await estimate(id, { prompt: "again" })
    expect(again.body.context_estimate).toMatchObject({
      input_tokens: 19,
      message_count: 3,
      history: { selected: 1, skipped: 0, skipped_reason: null, compacted: false }
    })
  })

  it('anchors: after a message turn "note", "hello" is 7 tokens in 1 message', async () => {
    const id = await createConversation()
    await note(id, "note")
    await settled(id, 1)
    const counted = await estimate(id, { prompt: "hello", model: { model: "local/echo" } })
    expect(counted.body.context_estimate).toMatchObject({
      input_tokens: 7,
      message_count: 1,
      history: { selected: 1, skipped: 0 }
    })
  })

  it("render adds mechanism, entries, storage, blocks, memory and slots; render must be a JSON boolean", async () => {
    const id = await createConversation()
    await reply(id, "hello")
    await settled(id, 1)
    const rendered = await estimate(id, { prompt: "again", render: true })
    expect(rendered.status).toBe(200)
    const answer = rendered.body.context_estimate
    const entries = [
      { role: "user", parts: [{ type: "text", text: "hello" }] },
      { role: "assistant", parts: [{ type: "text", text: "echo: hello" }] },
      { role: "user", parts: [{ type: "text", text: "again" }] }
    ]
    expect(answer).toMatchObject({ input_tokens: 19, mechanism: "default", entries })
    expect(answer.storage).toEqual({
      bytes: Buffer.byteLength(JSON.stringify(entries)),
      bound: 1048576,
      within_bound: true
    })
    expect(answer.blocks.map((block: any) => [block.block, block.state, block.tokens])).toEqual([
      ["slot:system_prompt", "empty", 0],
      ["slot:character", "empty", 0],
      ["slot:persona", "empty", 0],
      ["memory", "empty", 0],
      ["history", "selected", 13],
      ["input", "selected", 6]
    ])
    expect(answer.memory).toEqual({ included: [], omitted: [] })
    expect(answer.slots).toEqual({ system_prompt: null, character: null, persona: null })
    expect(codeOf(await estimate(id, { prompt: "again", render: "yes" }))).toEqual([400, "parameter_invalid"])
    expect((await estimate(id, { prompt: "again", render: false })).body.context_estimate.entries).toBeUndefined()
  })

  it("history bounds: max_entries and token_budget_share name what was skipped; bad bounds 400 or 422", async () => {
    const id = await createConversation()
    await note(id, "first note")
    await note(id, "second note")
    await settled(id, 2)
    const model = { model: "local/echo" }
    expect(
      (await estimate(id, { prompt: "x", model, history: { max_entries: 1 } })).body.context_estimate
    ).toMatchObject({
      input_tokens: Math.ceil(Buffer.byteLength("second note\n\nx") / 4) + 4,
      history: { selected: 1, skipped: 1, skipped_reason: "max_entries", compacted: false }
    })
    expect(
      (await estimate(id, { prompt: "x", model, history: { token_budget_share: 0.0002 } })).body.context_estimate
        .history
    ).toEqual({ selected: 0, skipped: 2, skipped_reason: "budget_exceeded", compacted: false })
    expect(codeOf(await estimate(id, { prompt: "x", model, history: { max_entries: 201 } }))).toEqual([
      422,
      "validation_failed"
    ])
    expect(codeOf(await estimate(id, { prompt: "x", model, history: { most: 1 } }))[0]).toBe(400)
  })

  it("the model as for inputs: none, or not in the catalog, is 422 validation_failed", async () => {
    const id = await createConversation()
    expect(codeOf(await estimate(id, { prompt: "x" }))).toEqual([422, "validation_failed"])
    expect(codeOf(await estimate(id, { prompt: "x", model: { model: "nowhere/none" } }))).toEqual([
      422,
      "validation_failed"
    ])
    expect(codeOf(await call("POST", path("01900000-0000-7000-8000-000000000000", "/context_estimate"), {}))).toEqual([
      404,
      "not_found"
    ])
  })

  it("the model as for inputs for another addressee: its own last reply here before the conversation's and the submitted one", async () => {
    // An account-wide room: a workspace dedicated to the caller fences its sibling out as an answerer.
    const room = (
      await request(server.baseUrl, "POST", "/agent_api/v1/workspaces", {
        headers: { ...bearer(ownerToken), ...key() },
        body: { workspace: { name: "addressees", access_mode: "account_wide" } }
      })
    ).body.workspace.public_id
    const here = `/workspaces/${room}/conversations`
    const id = (await call("POST", here, { conversation: {} }, key())).body.conversation.public_id as string
    const roomTurns = async () => (await call("GET", `${here}/${id}/turns?limit=100`)).body.turns as Array<any>
    const ask = async (model: string, count: number, answerer?: string) => {
      const members = { kind: "direct_reply", text: "hi", model: { model } }
      const body = { input: answerer === undefined ? members : { ...members, answering_user_public_id: answerer } }
      expect((await call("POST", `${here}/${id}/inputs`, body, key())).status).toBe(202)
      await waitForConversation(server, id, async () => {
        const found = await roomTurns()
        return found.length === count && found.at(-1)?.status === "completed"
      })
    }
    await ask("local/tiny", 1, sibling.publicId)
    await ask("local/echo", 2)
    const estimated = await call("POST", `${here}/${id}/context_estimate`, {
      context_estimate: { prompt: "x", model: { model: "local/script" }, answering_user_public_id: sibling.publicId }
    })
    expect(estimated.status).toBe(200)
    // local/tiny's window (256), not local/echo's or local/script's (32768).
    expect(estimated.body.context_estimate.catalog_input_token_limit).toBe(256)
  })

  it("prompt documents and memory take their places: system_prompt, character, persona, memory, history, input", async () => {
    const roomMade = await call("POST", "/workspaces", { workspace: { name: "documents" } }, key())
    const room = roomMade.body.workspace.public_id
    const put = (at: string, content: string) => call("PUT", at, { prompt_document: { content } })
    expect((await put(`/workspaces/${room}/prompt_documents/character`, "The room of {{workspace}}.")).status).toBe(200)
    const memory = await call("POST", `/workspaces/${room}/memory`, {
      memory: {
        path: "workspace/facts.md",
        content: "the sky is blue",
        expected_public_id: null,
        expected_lock_version: null
      }
    })
    expect(memory.status).toBe(201)
    const made = await call("POST", `/workspaces/${room}/conversations`, { conversation: {} }, key())
    const id = made.body.conversation.public_id
    const at = (rest: string) => `/workspaces/${room}/conversations/${id}${rest}`
    const rendered = await call("POST", at("/context_estimate"), {
      context_estimate: { prompt: "hi", model: { model: "local/echo" }, render: true }
    })
    expect(rendered.body.context_estimate.entries).toEqual([
      {
        role: "system",
        parts: [{ type: "text", text: "The room of documents.\n\nMemory:\n\nworkspace/facts.md\nthe sky is blue" }]
      },
      { role: "user", parts: [{ type: "text", text: "hi" }] }
    ])
    expect(rendered.body.context_estimate.memory).toEqual({ included: ["workspace/facts.md"], omitted: [] })
    expect(rendered.body.context_estimate.slots).toMatchObject({
      character: { role: "system", bytes: Buffer.byteLength("The room of documents.") }
    })
    // memory_context {bindings: []} turns memory off.
    expect((await call("POST", at("/memory_context"), { memory_context: { bindings: [] } })).status).toBe(200)
    const off = await call("POST", at("/context_estimate"), {
      context_estimate: { prompt: "hi", model: { model: "local/echo" }, render: true }
    })
    expect(off.body.context_estimate.memory).toEqual({ included: [], omitted: [] })
    expect(off.body.context_estimate.message_count).toBe(2)
  })
})

describe("compaction", () => {
  it("idle: 202 {turn} (compaction_summary, role user, no speaker); the summary completes and narrates context_compacted", async () => {
    const id = await createConversation()
    await reply(id, "hello")
    await settled(id, 1)
    const asked = await call("POST", path(id, "/compaction"), { compaction: {} })
    expect(asked.status).toBe(202)
    expect(asked.body.turn).toMatchObject({
      position: 2,
      kind: "compaction_summary",
      role: "user",
      status: "running",
      answering_user_public_id: null,
      input_public_id: null
    })
    expect(asked.body.turn.speaker).toBeUndefined()
    await settled(id, 2)
    const summary = (await turns(id)).at(-1)
    expect(summary.content).toMatch(/^echo: The conversation so far:/)
    const items = await feed(id)
    const compacted = items.filter((item) => item.type === "context_compacted")
    expect(compacted.map((item) => item.payload)).toEqual([
      expect.objectContaining({ trigger: "manual", turn_public_id: asked.body.turn.public_id })
    ])
    expect(items.findLast((item) => item.type === "turn_status")?.payload).toMatchObject({
      turn_kind: "compaction_summary",
      status: "completed"
    })
    // The summary bounds the history; nothing follows it yet.
    expect((await estimate(id, { prompt: "again" })).body.context_estimate).toMatchObject({
      message_count: 1,
      history: { selected: 1, skipped: 0, compacted: true }
    })
    expect(codeOf(await call("POST", path(id, "/compaction"), {}))).toEqual([422, "nothing_to_compact"])
    // The summary is no reply: the next reply still asks local/echo; the summary cannot be edited.
    expect(codeOf(await call("POST", path(id, `/turns/${summary.public_id}/edit`), { edit: { text: "x" } }))).toEqual([
      409,
      "kernel_authored"
    ])
  })

  it("nothing to compact in a new conversation (422); a running reply is judged first (409 conversation_busy)", async () => {
    const id = await createConversation()
    expect(codeOf(await call("POST", path(id, "/compaction"), {}))).toEqual([422, "nothing_to_compact"])
    await reply(id, JSON.stringify({ delay_ms: 20_000, reply: "late" }), "local/script")
    await settled(id, 1, "running")
    expect(codeOf(await call("POST", path(id, "/compaction"), {}))).toEqual([409, "conversation_busy"])
    expect((await call("POST", path(id, "/cancellation"))).status).toBe(202)
    await settled(id, 1, "canceled")
  })

  it("a side with no turn of its own compacts the history it inherits: 202 {turn}, then the summary bounds it", async () => {
    const id = await createConversation()
    await reply(id, "hello")
    await settled(id, 1)
    const side = await call("POST", path(id, "/forks"), { fork: { side: true } }, key())
    expect(side.status).toBe(201)
    const sideId = side.body.conversation.public_id as string
    expect(
      (await estimate(sideId, { prompt: "x", model: { model: "local/echo" } })).body.context_estimate.history
    ).toEqual({ selected: 1, skipped: 0, skipped_reason: null, compacted: false })
    const asked = await call("POST", path(sideId, "/compaction"), { compaction: { model: "local/echo" } })
    expect(asked.status).toBe(202)
    expect(asked.body.turn).toMatchObject({ position: 2, kind: "compaction_summary", inherited: false })
    await settled(sideId, 2)
    expect((await turns(sideId)).at(-1)?.content).toMatch(/^echo: The conversation so far:\n\nuser: hello/)
    expect(
      (await estimate(sideId, { prompt: "x", model: { model: "local/echo" } })).body.context_estimate.history
    ).toEqual({ selected: 1, skipped: 0, skipped_reason: null, compacted: true })
    // The source's history is its own: nothing was compacted there.
    expect((await turns(id)).map((turn) => turn.kind)).toEqual(["direct_reply"])
  })

  it("an unknown summarizer model is 422 validation_failed", async () => {
    const id = await createConversation()
    await note(id, "something")
    await settled(id, 1)
    expect(codeOf(await call("POST", path(id, "/compaction"), { compaction: { model: "nowhere/none" } }))).toEqual([
      422,
      "validation_failed"
    ])
  })
})

describe("walls at a direct reply's head", () => {
  const long = (letter: string) => letter.repeat(400)

  it("the rest alone over the window blocks estimated_input_exceeds_model_limit", async () => {
    const id = await createConversation()
    const row = await reply(id, "z".repeat(2000), "local/tiny")
    await waitForConversation(server, id, async () => (await inputState(id, row.public_id))?.state === "blocked")
    expect((await inputState(id, row.public_id)).blocked_reason).toBe("estimated_input_exceeds_model_limit")
  })

  it("context_mode raw with history to cut blocks compaction_unavailable_under_raw", async () => {
    const id = await createConversation()
    for (const letter of ["a", "b", "c"]) await note(id, long(letter))
    await settled(id, 3)
    const row = await reply(id, "go", "local/tiny", { context_mode: "raw" })
    await waitForConversation(server, id, async () => (await inputState(id, row.public_id))?.state === "blocked")
    expect((await inputState(id, row.public_id)).blocked_reason).toBe("compaction_unavailable_under_raw")
  })

  it("history to cut with no stated bound: a wall compaction goes first, then the reply reads the summary", async () => {
    const id = await createConversation()
    for (const letter of ["a", "b", "c"]) await note(id, long(letter))
    await settled(id, 3)
    await reply(id, "go", "local/tiny")
    await settled(id, 5)
    const [summary, answer] = (await turns(id)).slice(3)
    expect(summary).toMatchObject({ kind: "compaction_summary", status: "completed" })
    // The summary (a user message) and the input merge: echo answers both.
    expect(answer).toMatchObject({
      kind: "direct_reply",
      status: "completed",
      content: `echo: ${summary.content}\n\ngo`
    })
    const compacted = (await feed(id)).filter((item) => item.type === "context_compacted")
    expect(compacted.map((item) => item.payload.trigger)).toEqual(["wall"])
    const sealed = await call(
      "GET",
      path(id, `/turns/${answer.public_id}/variants/${answer.active_variant.public_id}/request`)
    )
    expect(sealed.body.request.entries).toEqual([
      { role: "user", parts: [{ type: "text", text: `${summary.content}\n\ngo` }] }
    ])
  })

  it("a stated bound cuts without compacting", async () => {
    const id = await createConversation()
    for (const letter of ["a", "b", "c"]) await note(id, long(letter))
    await settled(id, 3)
    await reply(id, "go", "local/tiny", { history: { max_entries: 1 } })
    await settled(id, 4)
    expect((await turns(id)).at(-1)).toMatchObject({ kind: "direct_reply", status: "completed" })
  })
})

describe("the sealed request", () => {
  it("answers a candidate's sealed messages and options; a message's candidate or an unknown one is 404", async () => {
    const id = await createConversation()
    await note(id, "note")
    await reply(id, "hello")
    await settled(id, 2)
    const [message, answered] = await turns(id)
    const sealed = await call(
      "GET",
      path(id, `/turns/${answered.public_id}/variants/${answered.active_variant.public_id}/request`)
    )
    expect(sealed.status).toBe(200)
    expect(sealed.body.request.entries).toEqual([{ role: "user", parts: [{ type: "text", text: "note\n\nhello" }] }])
    expect(sealed.body.request.request_options).toMatchObject({
      workload: "text_generation",
      model: { provider_id: "local", model_ref: "local/echo" }
    })
    expect(
      codeOf(
        await call("GET", path(id, `/turns/${message.public_id}/variants/${message.active_variant.public_id}/request`))
      )
    ).toEqual([404, "not_found"])
    expect(
      codeOf(
        await call(
          "GET",
          path(id, `/turns/${answered.public_id}/variants/01900000-0000-7000-8000-000000000000/request`)
        )
      )
    ).toEqual([404, "not_found"])
  })

  it("a summary's request is its summarizer's: instructions, then the transcript", async () => {
    const id = await createConversation()
    await reply(id, "hello")
    await settled(id, 1)
    const asked = await call("POST", path(id, "/compaction"), {})
    await settled(id, 2)
    const sealed = await call(
      "GET",
      path(id, `/turns/${asked.body.turn.public_id}/variants/${asked.body.turn.active_variant.public_id}/request`)
    )
    expect(sealed.body.request.entries.map((entry: any) => entry.role)).toEqual(["system", "user"])
    expect(sealed.body.request.entries[1].parts[0].text).toBe(
      "The conversation so far:\n\nuser: hello\n\nassistant: echo: hello"
    )
  })
})
