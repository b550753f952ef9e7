// A turn's candidates and an input's materialization, through the real server on real PostgreSQL
// (spec "Member: turns", "Member: conversation inputs"; supplement "Turns and variants", "Queue,
// drain, steering"): a fork's copy of an edit regenerates from its source's request; a canceled regeneration stays in the deck inactive while the turn completes
// on its old candidate and queued rows stay; a regeneration's replay; materialization while
// queued, once opened, for a hidden turn and for a deleted row; a regeneration's origin; a fork's and a
// side's last reply model; re-activation off the tail.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { waitForConversation } from "../../support/conversations.ts"
import { bearer, request } from "../../support/http.ts"
import type { ConnectedAgent } from "../../support/members.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
let agent: ConnectedAgent
let ownerToken: string
let workspaceId: string
let keys = 0

const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, { headers: { ...bearer(agent.token), ...headers }, body })
const key = () => ({ "idempotency-key": `candidates-${++keys}` })
const path = (id: string, rest = "") => `/workspaces/${workspaceId}/conversations/${id}${rest}`

const create = async () =>
  (await call("POST", `/workspaces/${workspaceId}/conversations`, { conversation: {} }, key())).body.conversation
    .public_id as string
const input = (id: string, members: Record<string, unknown>) =>
  call("POST", path(id, "/inputs"), { input: members }, key())
const turns = async (id: string) => (await call("GET", path(id, "/turns?limit=100"))).body.turns as Array<any>
const variants = async (id: string, turnId: string) =>
  (await call("GET", path(id, `/turns/${turnId}/variants`))).body.variants as Array<any>
const settled = (id: string, count: number) =>
  waitForConversation(server, id, async () => {
    const found = await turns(id)
    return found.length === count && found.every((turn) => turn.status === "completed")
  })

/** A local/script directive: as a prompt alone, local/script answers it after `ms`. */
const slow = (ms = 20_000) => JSON.stringify({ delay_ms: ms, reply: "late" })

beforeAll(async () => {
  server = await startTestServer()
  const account = await twoStewards(server, { owner: ["candidate-talker"], member: [] })
  agent = account.ownerAgents[0] as ConnectedAgent
  ownerToken = account.ownerToken
  workspaceId = (await call("POST", "/workspaces", { workspace: { name: "candidates" } }, key())).body.workspace
    .public_id
})
afterAll(() => server?.close())

describe("regeneration", () => {
  it("an edited reply regenerates from the turn's sealed request; the new sample becomes the shown candidate", async () => {
    const id = await create()
    await input(id, { kind: "direct_reply", text: "hi", model: { model: "local/echo" } })
    await settled(id, 1)
    const [turn] = await turns(id)
    const edited = await call("POST", path(id, `/turns/${turn.public_id}/edit`), { edit: { text: "edited" } })
    expect(edited.body.turn.active_variant).toMatchObject({ source: "edit", model: null })
    const regenerated = await call("POST", path(id, `/turns/${turn.public_id}/regeneration`), undefined, key())
    expect(regenerated.status).toBe(202)
    expect(regenerated.body.variant).toMatchObject({ source: "inference", status: "running", active: false })
    await waitForConversation(server, id, async () => (await turns(id))[0]?.active_variant.source === "inference")
    expect((await turns(id))[0]).toMatchObject({ status: "completed", content: "echo: hi", prompt_text: "hi" })
    expect((await variants(id, turn.public_id)).map((variant) => [variant.source, variant.active])).toEqual([
      ["inference", false],
      ["edit", false],
      ["inference", true]
    ])
    // The conversation goes on.
    await input(id, { kind: "message", text: "after" })
    await settled(id, 2)
  })

  it("a regenerated candidate's origin is the candidate whose sealed request it asked again", async () => {
    const id = await create()
    await input(id, { kind: "direct_reply", text: "hi", model: { model: "local/echo" } })
    await settled(id, 1)
    const [turn] = await turns(id)
    const first = turn.active_variant.public_id
    expect(turn.active_variant.origin_variant_public_id).toBeNull()
    const asked = await call("POST", path(id, `/turns/${turn.public_id}/regeneration`), undefined, key())
    expect(asked.body.variant.origin_variant_public_id).toBe(first)
    await waitForConversation(server, id, async () => (await turns(id))[0]?.active_variant.public_id !== first)
    // An edit shown: the sample asks the newest sealed request again, so names that candidate.
    const edited = await call("POST", path(id, `/turns/${turn.public_id}/edit`), { edit: { text: "edited" } })
    const second = asked.body.variant.public_id
    expect(edited.body.turn.active_variant.origin_variant_public_id).toBe(second)
    const again = await call("POST", path(id, `/turns/${turn.public_id}/regeneration`), undefined, key())
    expect(again.body.variant.origin_variant_public_id).toBe(second)
  })

  it("a fork's copy of an edited reply regenerates from the source turn's sealed request", async () => {
    const id = await create()
    await input(id, { kind: "direct_reply", text: "hi", model: { model: "local/echo" } })
    await settled(id, 1)
    const [turn] = await turns(id)
    await call("POST", path(id, `/turns/${turn.public_id}/edit`), { edit: { text: "edited" } })
    const forked = await call("POST", path(id, "/forks"), { fork: { turn_public_id: turn.public_id } }, key())
    expect(forked.status).toBe(201)
    const fork = forked.body.conversation.public_id as string
    const [copy] = await turns(fork)
    expect(copy).toMatchObject({ inherited: false, content: "edited", active_variant: { source: "fork" } })
    const regenerated = await call("POST", path(fork, `/turns/${copy.public_id}/regeneration`), undefined, key())
    expect(regenerated.status, JSON.stringify(regenerated.body)).toBe(202)
    await waitForConversation(server, fork, async () => (await turns(fork))[0]?.active_variant.source === "inference")
    expect((await turns(fork))[0]).toMatchObject({ status: "completed", content: "echo: hi" })
    // The source keeps its edit.
    expect((await turns(id))[0]).toMatchObject({ content: "edited", active_variant: { source: "edit" } })
  })

  it("cancellation cuts a running regeneration: 202, the sample canceled and inactive, the turn completed on its old candidate; queued rows stay", async () => {
    const id = await create()
    await input(id, { kind: "direct_reply", text: slow(), model: { model: "local/echo" } })
    await settled(id, 1)
    const [turn] = await turns(id)
    const asked = await call(
      "POST",
      path(id, `/turns/${turn.public_id}/regeneration`),
      { regeneration: { model: { model: "local/script" } } },
      key()
    )
    expect(asked.status).toBe(202)
    const fresh = asked.body.variant.public_id
    const behind = await input(id, { kind: "message", text: "behind" })
    expect(behind.body.input.state).toBe("pending")
    const cut = await call("POST", path(id, "/cancellation"))
    expect(cut.status).toBe(202)
    expect(cut.body.conversation.public_id).toBe(id)
    await settled(id, 2)
    const deck = await variants(id, turn.public_id)
    expect(deck.map((variant) => [variant.public_id, variant.status, variant.active])).toEqual([
      [turn.active_variant.public_id, "completed", true],
      [fresh, "canceled", false]
    ])
    const [after, message] = await turns(id)
    expect(after).toMatchObject({ status: "completed", content: turn.content })
    expect(message).toMatchObject({ kind: "message", content: "behind", input_public_id: behind.body.input.public_id })
  })

  it("a replay with the same key answers the original 202 and starts nothing more; another caller's receipt is 404", async () => {
    const id = await create()
    await input(id, { kind: "direct_reply", text: "again", model: { model: "local/echo" } })
    await settled(id, 1)
    const [turn] = await turns(id)
    const headers = key()
    const regeneration = path(id, `/turns/${turn.public_id}/regeneration`)
    const first = await call("POST", regeneration, undefined, headers)
    expect(first.status).toBe(202)
    expect(first.headers.get("idempotency-replayed")).toBe("false")
    const again = await call("POST", regeneration, undefined, headers)
    expect(again.status).toBe(202)
    expect(again.headers.get("idempotency-replayed")).toBe("true")
    expect(again.body).toEqual(first.body)
    await waitForConversation(server, id, async () =>
      (await variants(id, turn.public_id)).every((variant) => variant.status === "completed")
    )
    expect(await variants(id, turn.public_id)).toHaveLength(2)
    const receipt = `${regeneration}_receipt?idempotency_key=${headers["idempotency-key"]}`
    expect((await call("GET", receipt)).status).toBe(200)
    const owners = await request(server.baseUrl, "GET", `/agent_api/v1${receipt}`, { headers: bearer(ownerToken) })
    expect([owners.status, owners.body.error?.code]).toEqual([404, "not_found"])
  })
})

describe("what a fork inherits", () => {
  it("a fork and a side start with their source's last reply model: an input and an estimate without a model find it", async () => {
    const id = await create()
    await input(id, { kind: "direct_reply", text: "hi", model: { model: "local/echo" } })
    await settled(id, 1)
    for (const members of [{}, { side: true }]) {
      const forked = await call("POST", path(id, "/forks"), { fork: members }, key())
      expect(forked.status).toBe(201)
      const fork = forked.body.conversation.public_id as string
      const count = (await turns(fork)).length
      const estimate = await call("POST", path(fork, "/context_estimate"), { context_estimate: { prompt: "again" } })
      expect(estimate.status, JSON.stringify(estimate.body)).toBe(200)
      const asked = await input(fork, { kind: "direct_reply", text: "again" })
      expect(asked.status, JSON.stringify(asked.body)).toBe(202)
      await settled(fork, count + 1)
      expect((await turns(fork)).at(-1)?.active_variant).toMatchObject({
        status: "completed",
        model: { model_ref: "local/echo" }
      })
    }
  })

  it("re-activating the shown candidate off the tail (an inherited or frozen turn) is 409 branch_required; on the tail it is silent", async () => {
    const id = await create()
    await input(id, { kind: "direct_reply", text: "hi", model: { model: "local/echo" } })
    await input(id, { kind: "message", text: "note" })
    await settled(id, 2)
    const [reply, note] = await turns(id)
    const forked = await call("POST", path(id, "/forks"), { fork: {} }, key())
    const fork = forked.body.conversation.public_id as string
    const [inherited, copy] = await turns(fork)
    expect([inherited.inherited, copy.inherited]).toEqual([true, false])
    const activation = (conversation: string, turn: any) =>
      call("POST", path(conversation, `/turns/${turn.public_id}/variants/${turn.active_variant.public_id}/activation`))
    const refused = await activation(fork, inherited)
    expect([refused.status, refused.body.error?.code]).toEqual([409, "branch_required"])
    // The source's turn the fork reads is frozen there too; each conversation's own tail re-activates silently.
    const frozen = await activation(id, reply)
    expect([frozen.status, frozen.body.error?.code]).toEqual([409, "branch_required"])
    for (const [conversation, tail] of [
      [fork, copy],
      [id, note]
    ] as const) {
      const silent = await activation(conversation, tail)
      expect(silent.status).toBe(200)
      expect(silent.body.turn.active_variant.public_id).toBe(tail.active_variant.public_id)
    }
  })
})

describe("materialization", () => {
  it("nulls while queued; then the opened turn and variant (run null); a hidden turn only with include_hidden; a deleted row 404", async () => {
    const id = await create()
    const later = (await input(id, { kind: "message", text: "later", deliver_in: "1h" })).body.input.public_id
    const gone = (await input(id, { kind: "message", text: "gone", deliver_in: "1h" })).body.input.public_id
    const of = (inputId: string, query = "") => call("GET", path(id, `/inputs/${inputId}/materialization${query}`))
    expect((await of(later)).body.materialization).toEqual({
      input_public_id: later,
      turn_public_id: null,
      variant_public_id: null,
      run_public_id: null
    })
    expect((await call("DELETE", path(id, `/inputs/${gone}`))).status).toBe(204)
    expect([(await of(gone)).status, (await of(gone)).body.error?.code]).toEqual([404, "not_found"])
    expect((await call("PATCH", path(id, `/inputs/${later}`), { input: { deliver_in: "0s" } })).status).toBe(200)
    await settled(id, 1)
    const [turn] = await turns(id)
    const opened = {
      input_public_id: later,
      turn_public_id: turn.public_id,
      variant_public_id: turn.active_variant.public_id,
      run_public_id: null
    }
    expect((await of(later)).body.materialization).toEqual(opened)
    expect((await call("PATCH", path(id, `/turns/${turn.public_id}`), { turn: { visibility: "hidden" } })).status).toBe(
      200
    )
    expect((await of(later)).status).toBe(404)
    expect((await of(later, "?include_hidden=false")).status).toBe(404)
    for (const flag of ["true", "1"])
      expect((await of(later, `?include_hidden=${flag}`)).body.materialization).toEqual(opened)
    expect((await of(later, "?include_hidden=yes")).status).toBe(400)
  })
})
