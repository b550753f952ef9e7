import type { Caller } from "@troupe/domain/accounts/Caller"
import { Conversations } from "@troupe/domain/conversations/Conversations"
import { ConversationForks, type ForkMembers } from "@troupe/domain/conversations/Forks"
import { chainOf } from "@troupe/domain/conversations/Timeline"
import type { ConversationEvent } from "@troupe/machines/conversation/events"
import { newPublicId } from "@troupe/storage/Ids"
import { ConversationsRepository } from "@troupe/storage/repositories/Conversations"
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
let ownerHuman: Caller
let workspaceId: string

const callerOf = (publicId: string) => callersOf(server, publicId)

const conversations = <A, E>(f: (service: Conversations["Service"]) => Effect.Effect<A, E>) =>
  server.run(Effect.flatMap(Conversations, f))

const fork = (conversationId: string, members: ForkMembers = {}, by: Caller = caller) =>
  server.run(Effect.flatMap(ConversationForks, (forks) => forks.fork(by, workspaceId, conversationId, members)))

const refusalOf = <A>(effect: Promise<A>) =>
  effect.then(
    () => "accepted",
    (error: unknown) => String((error as { code?: unknown }).code ?? error)
  )

const send = (conversationId: string, event: ConversationEvent) =>
  conversations((service) =>
    Effect.flatMap(service.standing(caller, workspaceId, conversationId, "write"), (standing) =>
      service.send(standing, event)
    )
  )

const feed = async (conversationId: string) =>
  (await conversations((service) => service.events(caller, workspaceId, conversationId, undefined, 200))).items

const waitFor = (conversationId: string, done: () => Promise<boolean>) =>
  waitForConversation(server, conversationId, done)

/** The conversation's timeline (own and inherited turns) with each turn's active candidate. */
const timeline = (conversationId: string) =>
  server.run(
    Effect.gen(function* () {
      const repository = yield* ConversationsRepository
      const row = (yield* repository.findConversation(conversationId))!
      const chain = yield* chainOf(repository, row)
      const turns = yield* repository.timeline({
        chain,
        afterPosition: null,
        beforePosition: null,
        includeHidden: true,
        from: "oldest",
        limit: 100
      })
      const variants = yield* repository.variantsOf(turns.map((turn) => turn.id))
      return turns.map((turn) => {
        const active = variants.find((variant) => variant.public_id === turn.active_variant_public_id)
        return {
          public_id: turn.public_id,
          position: turn.position,
          kind: turn.kind,
          status: turn.status,
          inherited: !turn.own,
          variant: active?.public_id,
          source: active?.source,
          origin: active?.origin_variant_public_id,
          content: active?.content,
          variants: variants.filter((variant) => variant.turn_id === turn.id).length
        }
      })
    })
  )

const settledCount = async (conversationId: string) =>
  (await timeline(conversationId)).filter((turn) => turn.status !== "running" && turn.status !== "pending").length

const accept = (conversationId: string, kind: "message" | "direct_reply", text: string, model = "local/echo") => {
  const inputId = newPublicId()
  return send(conversationId, {
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
      ids: {
        turnId: newPublicId(),
        variantId: newPublicId(),
        requestId: newPublicId(),
        fallbackVariantId: newPublicId(),
        fallbackRequestId: newPublicId()
      },
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
  })
}

/** A conversation of a message, a reply to it and (optionally) another message, all settled. */
const conversationOf = async (turns: 2 | 3 = 2, title = "source") => {
  const created = await conversations((service) =>
    service.create(caller, workspaceId, { title, metadata: { topic: "forks" }, billing_subject: "team-a" })
  )
  const id = created.public_id
  await accept(id, "message", "note")
  await accept(id, "direct_reply", "hello")
  if (turns === 3) await accept(id, "message", "later")
  await waitFor(id, async () => (await settledCount(id)) === turns)
  return { id, turns: await timeline(id) }
}

const forkCreated = async (conversationId: string, childId: string) =>
  (await feed(conversationId)).find(
    (item) =>
      item.type === "fork_created" &&
      (item.payload as { conversation_public_id?: string }).conversation_public_id === childId
  )

const waitForkCreated = async (conversationId: string, childId: string) => {
  await waitFor(conversationId, async () => (await forkCreated(conversationId, childId)) !== undefined)
  return (await forkCreated(conversationId, childId))!
}

beforeAll(async () => {
  server = await startTestServer()
  const account = await twoStewards(server, { owner: ["fork-agent"], member: [] })
  agent = account.ownerAgents[0] as ConnectedAgent
  caller = await callerOf(agent.publicId)
  ownerHuman = await callerOf(account.owner.public_id)
  const made = await request(server.baseUrl, "POST", "/agent_api/v1/workspaces", {
    headers: { ...bearer(agent.token), "idempotency-key": "ws-forks" },
    body: { workspace: { name: "forks" } }
  })
  workspaceId = made.body.workspace.public_id
})
afterAll(() => server?.close())

describe("conversation forks", () => {
  it("a fork at the tail reads the prefix by reference and owns a copy of the tail; the source narrates it", async () => {
    const source = await conversationOf()
    const [note, reply] = source.turns
    const child = await fork(source.id)
    expect(child).toMatchObject({
      title: "source",
      metadata: { topic: "forks" },
      billing_subject: "team-a",
      side: false,
      parent: null,
      source_conversation_public_id: source.id,
      forked_from_turn_public_id: reply!.public_id,
      forked_from_variant_public_id: reply!.variant,
      creator_public_id: agent.publicId,
      answering_user_public_id: agent.publicId,
      context_revision: 0,
      access: { default: "full", entries: [] }
    })
    const turns = await timeline(child.public_id)
    expect(turns).toHaveLength(2)
    expect(turns[0]).toEqual({ ...note, inherited: true })
    expect(turns[1]).toMatchObject({
      position: 2,
      kind: "direct_reply",
      status: "completed",
      inherited: false,
      source: "fork",
      origin: reply!.variant,
      content: "echo: note\n\nhello",
      variants: 1
    })
    expect(turns[1]!.public_id).not.toBe(reply!.public_id)
    expect(turns[1]!.variant).not.toBe(reply!.variant)
    const item = await waitForkCreated(source.id, child.public_id)
    expect(item.payload).toEqual({
      conversation_public_id: child.public_id,
      side: false,
      turn_public_id: reply!.public_id,
      variant_public_id: reply!.variant,
      by: agent.publicId
    })
    expect(await feed(child.public_id)).toEqual([])
  })

  it("a fork at an earlier turn owns its copy there and reads nothing above it; a title is its own", async () => {
    const source = await conversationOf(3)
    const [note, reply] = source.turns
    const child = await fork(source.id, { turn_public_id: reply!.public_id, title: "branch" })
    expect(child).toMatchObject({ title: "branch", forked_from_turn_public_id: reply!.public_id })
    const turns = await timeline(child.public_id)
    expect(turns.map((turn) => [turn.position, turn.inherited, turn.content])).toEqual([
      [1, true, "note"],
      [2, false, "echo: note\n\nhello"]
    ])
    expect(turns[0]!.public_id).toBe(note!.public_id)
    // The child replies from its own tail: its history is the inherited prefix and its copy.
    await accept(child.public_id, "direct_reply", "onwards")
    await waitFor(child.public_id, async () => (await settledCount(child.public_id)) === 3)
    expect((await timeline(child.public_id)).at(-1)).toMatchObject({
      position: 3,
      inherited: false,
      content: "echo: onwards"
    })
    expect(await timeline(source.id)).toEqual(source.turns)
  })

  it("a fork at a variant copies that candidate, not the active one", async () => {
    const source = await conversationOf()
    const reply = source.turns[1]!
    const edited = newPublicId()
    await send(source.id, { type: "turn.edit", turnId: reply.public_id, variantId: edited, text: "rewritten" })
    expect((await timeline(source.id))[1]).toMatchObject({ variant: edited, content: "rewritten", variants: 2 })
    const child = await fork(source.id, { variant_public_id: reply.variant! })
    expect(child.forked_from_variant_public_id).toBe(reply.variant)
    expect((await timeline(child.public_id))[1]).toMatchObject({
      inherited: false,
      source: "fork",
      origin: reply.variant,
      content: "echo: note\n\nhello",
      variants: 1
    })
    const byDefault = await fork(source.id)
    expect((await timeline(byDefault.public_id))[1]).toMatchObject({ origin: edited, content: "rewritten" })
    // A variant of another turn, or unknown turns and variants, are not found.
    const note = source.turns[0]!
    expect(await refusalOf(fork(source.id, { turn_public_id: note.public_id, variant_public_id: edited }))).toBe(
      "not_found"
    )
    expect(await refusalOf(fork(source.id, { turn_public_id: newPublicId() }))).toBe("not_found")
    expect(await refusalOf(fork(source.id, { variant_public_id: "nope" }))).toBe("not_found")
    const other = await conversationOf()
    expect(await refusalOf(fork(source.id, { turn_public_id: other.turns[0]!.public_id }))).toBe("not_found")
  })

  it("the source's frozen prefix refuses content verbs with branch_required; the child's copy takes them", async () => {
    const source = await conversationOf()
    const [note, reply] = source.turns
    const child = await fork(source.id)
    await waitForkCreated(source.id, child.public_id)
    // The fork turn itself is the source's own (the child has its copy): its tail may go.
    await send(source.id, {
      type: "turn.delete",
      turnId: reply!.public_id,
      previousTail: { turnId: note!.public_id, position: 1, kind: "message", status: "completed" }
    })
    expect(
      await refusalOf(
        send(source.id, { type: "turn.edit", turnId: note!.public_id, variantId: newPublicId(), text: "x" })
      )
    ).toBe("branch_required")
    const copy = (await timeline(child.public_id))[1]!
    await send(child.public_id, { type: "turn.edit", turnId: copy.public_id, variantId: newPublicId(), text: "mine" })
    expect((await timeline(child.public_id))[1]).toMatchObject({ content: "mine", variants: 2 })
    // The inherited turn is not the child's to edit either.
    expect(
      await refusalOf(
        send(child.public_id, { type: "turn.edit", turnId: note!.public_id, variantId: newPublicId(), text: "x" })
      )
    ).toBe("branch_required")
  })

  it("a side inherits every settled turn, lists only under side, and is never archived or forked", async () => {
    const source = await conversationOf()
    const side = await fork(source.id, { side: true, turn_public_id: source.turns[0]!.public_id })
    expect(side).toMatchObject({
      side: true,
      parent: null,
      source_conversation_public_id: source.id,
      forked_from_turn_public_id: source.turns[1]!.public_id
    })
    expect(await timeline(side.public_id)).toEqual(source.turns.map((turn) => ({ ...turn, inherited: true })))
    const item = await waitForkCreated(source.id, side.public_id)
    expect(item.payload).toMatchObject({ side: true, turn_public_id: source.turns[1]!.public_id })
    // The source's tail is read by the side: frozen.
    expect(
      await refusalOf(
        send(source.id, { type: "turn.edit", turnId: source.turns[1]!.public_id, variantId: newPublicId(), text: "x" })
      )
    ).toBe("branch_required")
    const listed = (side: boolean) =>
      conversations((service) =>
        service.list(caller, workspaceId, "roots", side ? { side: "1", limit: "100" } : { limit: "100" })
      )
    expect((await listed(true)).items.map((row) => row.public_id)).toContain(side.public_id)
    expect((await listed(false)).items.map((row) => row.public_id)).not.toContain(side.public_id)
    expect(
      await refusalOf(conversations((service) => service.lifecycle(caller, workspaceId, side.public_id, "archive")))
    ).toBe("side_conversation")
    expect(await refusalOf(fork(side.public_id))).toBe("side_conversation")
    // A side replies after what it read.
    await accept(side.public_id, "direct_reply", "aside")
    await waitFor(side.public_id, async () => (await settledCount(side.public_id)) === 3)
    expect((await timeline(side.public_id)).at(-1)).toMatchObject({ position: 3, inherited: false })
  })

  it("an unsettled fork turn is not_terminal; by default the newest settled turn is taken", async () => {
    const source = await conversationOf()
    await accept(source.id, "direct_reply", JSON.stringify({ delay_ms: 60_000 }), "local/script")
    await waitFor(source.id, async () => (await timeline(source.id)).length === 3)
    const running = (await timeline(source.id))[2]!
    expect(running.status).toBe("running")
    expect(await refusalOf(fork(source.id, { turn_public_id: running.public_id }))).toBe("not_terminal")
    expect(await refusalOf(fork(source.id, { variant_public_id: running.variant! }))).toBe("not_terminal")
    const child = await fork(source.id)
    expect(child.forked_from_turn_public_id).toBe(source.turns[1]!.public_id)
    const side = await fork(source.id, { side: true })
    expect((await timeline(side.public_id)).map((turn) => turn.position)).toEqual([1, 2])
    await send(source.id, { type: "conversation.cancel" })
    await waitFor(source.id, async () => (await settledCount(source.id)) === 3)
  })

  it("archived sources fork; the forker creates, the source's creator keeps a full entry", async () => {
    const source = await conversationOf()
    await conversations((service) => service.lifecycle(caller, workspaceId, source.id, "archive"))
    const child = await fork(source.id, {}, ownerHuman)
    expect(child.archived_at).toBeNull()
    expect(child.creator_public_id).not.toBe(agent.publicId)
    expect(child.answering_user_public_id).toBe(agent.publicId)
    // The source's creator is the answerer here: full by that, so no entry names it.
    expect(child.access).toEqual({ default: "full", entries: [] })
    const humans = await conversations((service) =>
      service.create(ownerHuman, workspaceId, { answering_user_public_id: agent.publicId })
    )
    const second = await fork(humans.public_id, {}, caller)
    expect(second.creator_public_id).toBe(agent.publicId)
    expect(second.access.entries).toEqual([
      expect.objectContaining({ user_public_id: humans.creator_public_id, level: "full" })
    ])
  })

  it("copies the conversation's store entries and conversation memory under new ids", async () => {
    const source = await conversations((service) => service.create(caller, workspaceId, {}))
    const hosted = (publicId: string) =>
      server.run(
        Effect.gen(function* () {
          const sql = yield* SqlClient
          const entries = yield* sql<{ public_id: string; namespace: string; key: string; value: string }>`
            SELECT e.public_id::text, e.namespace, e.key, e.value::text AS value FROM store_entries e
            JOIN conversations c ON c.id = e.host_id AND e.host_kind = 'conversation'
            WHERE c.public_id = ${publicId} ORDER BY e.key`
          const documents = yield* sql<{ public_id: string; path: string; content: string }>`
            SELECT d.public_id::text, d.path, d.content FROM memory_documents d
            JOIN conversations c ON c.id = d.anchor_id AND d.anchor_kind = 'conversation'
            WHERE c.public_id = ${publicId} ORDER BY d.path`
          return { entries, documents }
        })
      )
    await server.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient
        const [row] = yield* sql<{ id: bigint }>`SELECT id FROM conversations WHERE public_id = ${source.public_id}`
        for (const key of ["a", "b"]) {
          yield* sql`
            INSERT INTO store_entries (public_id, host_kind, host_id, namespace, key, value, created_at, updated_at)
            VALUES (${newPublicId()}, 'conversation', ${row!.id}, 'ns', ${key}, ${`{"2":1,"1":"${key}"}`}::json, now(), now())`
        }
        yield* sql`
          INSERT INTO memory_documents (public_id, anchor_kind, anchor_id, speaker_id, path, content, bytesize, written_at,
            created_at)
          VALUES (${newPublicId()}, 'conversation', ${row!.id}, 0, 'conversation/notes.md', 'remember', 8, now(), now())`
      })
    )
    const child = await fork(source.public_id)
    const before = await hosted(source.public_id)
    const after = await hosted(child.public_id)
    const strip = <T extends { public_id: string }>(rows: ReadonlyArray<T>) =>
      rows.map(({ public_id, ...rest }) => rest)
    expect(strip(after.entries)).toEqual(strip(before.entries))
    expect(after.entries[0]!.value).toBe('{"2":1,"1":"a"}')
    expect(strip(after.documents)).toEqual(strip(before.documents))
    expect(after.entries.map((row) => row.public_id)).not.toContain(before.entries[0]!.public_id)
    expect(after.documents[0]!.public_id).not.toBe(before.documents[0]!.public_id)
    // A fork of a conversation without turns has none of its own.
    expect(child.forked_from_turn_public_id).toBeNull()
    expect(await timeline(child.public_id)).toEqual([])
  })
})

describe("POST .../conversations/{id}/forks", () => {
  const forksPath = (conversationId: string) =>
    `/agent_api/v1/workspaces/${workspaceId}/conversations/${conversationId}/forks`
  const post = (conversationId: string, key: string | undefined, body?: unknown) =>
    request(server.baseUrl, "POST", forksPath(conversationId), {
      headers: { ...bearer(agent.token), ...(key === undefined ? {} : { "idempotency-key": key }) },
      ...(body === undefined ? {} : { body })
    })

  it("answers 201 {conversation}; a replay answers the original body; the key is required", async () => {
    const source = await conversationOf(3)
    const reply = source.turns[1]!
    const made = await post(source.id, "fork-1", { fork: { turn_public_id: reply.public_id, title: "over http" } })
    expect(made.status).toBe(201)
    expect(made.body.conversation).toMatchObject({
      title: "over http",
      side: false,
      source_conversation_public_id: source.id,
      forked_from_turn_public_id: reply.public_id,
      forked_from_variant_public_id: reply.variant,
      creator_public_id: agent.publicId
    })
    const replayed = await post(source.id, "fork-1", { fork: { turn_public_id: reply.public_id, title: "over http" } })
    expect(replayed.status).toBe(201)
    expect(replayed.headers.get("idempotency-replayed")).toBe("true")
    expect(replayed.body).toEqual(made.body)
    const mismatch = await post(source.id, "fork-1", { fork: { title: "another" } })
    expect(mismatch.body.error.code).toBe("idempotency_envelope_mismatch")
    expect((await post(source.id, undefined, {})).body.error.code).toBe("idempotency_key_required")
    // No body, top-level members: the newest settled turn, the source's title.
    const bare = await post(source.id, "fork-2")
    expect(bare.status).toBe(201)
    expect(bare.body.conversation).toMatchObject({
      title: "source",
      forked_from_turn_public_id: source.turns[2]!.public_id
    })
    const side = await post(source.id, "fork-3", { side: true })
    expect(side.status).toBe(201)
    expect(side.body.conversation.side).toBe(true)
    const listed = await request(
      server.baseUrl,
      "GET",
      `/agent_api/v1/workspaces/${workspaceId}/conversations?side=1&limit=100`,
      { headers: bearer(agent.token) }
    )
    expect(listed.body.conversations.map((row: { public_id: string }) => row.public_id)).toContain(
      side.body.conversation.public_id
    )
  })

  it("refuses unknown turns 404, unsettled ones 409 not_terminal and sides 422 side_conversation", async () => {
    const source = await conversationOf()
    const unknown = await post(source.id, "refused-1", { fork: { turn_public_id: newPublicId() } })
    expect([unknown.status, unknown.body.error.code]).toEqual([404, "not_found"])
    expect((await post(newPublicId(), "refused-2", {})).status).toBe(404)
    await accept(source.id, "direct_reply", JSON.stringify({ delay_ms: 60_000 }), "local/script")
    await waitFor(source.id, async () => (await timeline(source.id)).length === 3)
    const running = (await timeline(source.id))[2]!
    const busy = await post(source.id, "refused-3", { fork: { turn_public_id: running.public_id } })
    expect([busy.status, busy.body.error.code]).toEqual([409, "not_terminal"])
    await send(source.id, { type: "conversation.cancel" })
    const side = await post(source.id, "refused-4", { fork: { side: true } })
    const again = await post(side.body.conversation.public_id, "refused-5", {})
    expect([again.status, again.body.error.code]).toEqual([422, "side_conversation"])
  })
})

describe("PATCH .../turns/{tid} on an inherited turn", () => {
  const conversationPath = (conversationId: string, rest = "") =>
    `/agent_api/v1/workspaces/${workspaceId}/conversations/${conversationId}${rest}`
  const call = (method: string, path: string, body?: unknown) =>
    request(server.baseUrl, method, path, { headers: bearer(agent.token), ...(body === undefined ? {} : { body }) })
  const window = async (conversationId: string, query = "") =>
    (await call("GET", conversationPath(conversationId, `/turns?limit=100${query}`))).body.turns as Array<{
      public_id: string
      visibility: string
      inherited: boolean
    }>
  const messageCount = async (conversationId: string) => {
    const answer = await call("POST", conversationPath(conversationId, "/context_estimate"), {
      context_estimate: { prompt: "x", model: { model: "local/echo" } }
    })
    return answer.body.context_estimate.message_count as number
  }

  it("Turn visibility on an inherited turn is child-local", async () => {
    const source = await conversationOf(3)
    const reply = source.turns[1]!
    const child = await fork(source.id)
    const other = await fork(source.id)
    // note + reply's prompt, the reply, later + the prompt.
    expect(await messageCount(child.public_id)).toBe(3)
    const hidden = await call("PATCH", conversationPath(child.public_id, `/turns/${reply.public_id}`), {
      turn: { visibility: "hidden" }
    })
    expect(hidden.status).toBe(200)
    expect(hidden.body.turn).toMatchObject({ public_id: reply.public_id, visibility: "hidden", inherited: true })
    expect((await window(child.public_id)).map((turn) => turn.public_id)).not.toContain(reply.public_id)
    expect((await window(child.public_id, "&include_hidden=true"))[1]).toMatchObject({
      public_id: reply.public_id,
      visibility: "hidden",
      inherited: true
    })
    expect((await window(source.id))[1]).toMatchObject({ public_id: reply.public_id, visibility: "visible" })
    expect((await window(other.public_id))[1]).toMatchObject({
      public_id: reply.public_id,
      visibility: "visible",
      inherited: true
    })
    // The child's history skips it: note, later and the prompt merge into one message.
    expect(await messageCount(child.public_id)).toBe(1)
    expect(await messageCount(other.public_id)).toBe(3)
    expect((await feed(child.public_id)).map((item) => [item.type, item.payload])).toContainEqual([
      "visibility",
      expect.objectContaining({ turn_public_id: reply.public_id, visibility: "hidden" })
    ])
    expect((await feed(source.id)).map((item) => item.type)).not.toContain("visibility")
    // A fork of the child reads the turn as the child does; one taken at it copies it hidden.
    const grandchild = await fork(child.public_id)
    expect((await window(grandchild.public_id, "&include_hidden=true"))[1]).toMatchObject({
      public_id: reply.public_id,
      visibility: "hidden"
    })
    const atReply = await fork(child.public_id, { turn_public_id: reply.public_id })
    expect((await window(atReply.public_id, "&include_hidden=true"))[1]).toMatchObject({
      inherited: false,
      visibility: "hidden"
    })
    // Shown again, the child reads it as before.
    const shown = await call("PATCH", conversationPath(child.public_id, `/turns/${reply.public_id}`), {
      turn: { visibility: "visible" }
    })
    expect(shown.body.turn.visibility).toBe("visible")
    expect(await messageCount(child.public_id)).toBe(3)
  })

  it("a candidate of an inherited turn is its source's: concealing it from the child is 409 branch_required", async () => {
    const source = await conversationOf()
    const reply = source.turns[1]!
    await send(source.id, { type: "turn.edit", turnId: reply.public_id, variantId: newPublicId(), text: "edited" })
    await accept(source.id, "message", "later")
    await waitFor(source.id, async () => (await settledCount(source.id)) === 3)
    const child = await fork(source.id)
    const variantsPath = conversationPath(child.public_id, `/turns/${reply.public_id}/variants`)
    const listed = (await call("GET", variantsPath)).body
    expect(listed.turn).toEqual({ public_id: reply.public_id, inherited: true })
    const concealed = await call("PATCH", `${variantsPath}/${reply.variant}`, { variant: { concealed: true } })
    expect([concealed.status, concealed.body.error?.code]).toEqual([409, "branch_required"])
    const deck = (await call("GET", conversationPath(source.id, `/turns/${reply.public_id}/variants`))).body.variants
    expect(deck.find((variant: { public_id: string }) => variant.public_id === reply.variant)).not.toHaveProperty(
      "concealed"
    )
  })
})
