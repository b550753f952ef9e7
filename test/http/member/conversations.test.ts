// Member: conversations, inputs and turns through the real server on real PostgreSQL: the
// conversation rows of "States and transitions" (archive, unarchive, delete), the input rows
// (drain into a turn, blocked, edit, delete, steering), the queue bound, the turn verbs, the feed,
// and the doors' refusals in the spec's codes.
import type { UserRow } from "@troupe/storage/repositories/Accounts"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { tenYearsAfter } from "../../support/calendar.ts"
import { waitForConversation } from "../../support/conversations.ts"
import { bearer, request } from "../../support/http.ts"
import type { ConnectedAgent } from "../../support/members.ts"
import { serverNow } from "../../support/schedules.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
let agent: ConnectedAgent
let sibling: ConnectedAgent
let outsider: ConnectedAgent
let owner: UserRow
let member: UserRow
let ownerToken: string
let workspaceId: string
let keys = 0

const as = (who: ConnectedAgent, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, { headers: { ...bearer(who.token), ...headers }, body })
const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  as(agent, method, path, body, headers)
/** The owner (a human) with its member personal token. */
const asOwner = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, { headers: { ...bearer(ownerToken), ...headers }, body })
const key = () => ({ "idempotency-key": `conversation-${++keys}` })

const conversationsPath = () => `/workspaces/${workspaceId}/conversations`
const path = (id: string, rest = "") => `${conversationsPath()}/${id}${rest}`

const createConversation = async (members: Record<string, unknown> = {}) => {
  const made = await call("POST", conversationsPath(), { conversation: members }, key())
  expect(made.status).toBe(201)
  return made.body.conversation.public_id as string
}

const input = (id: string, members: Record<string, unknown>, headers = key()) =>
  call("POST", path(id, "/inputs"), { input: members }, headers)

const turns = async (id: string) => (await call("GET", path(id, "/turns?limit=100"))).body.turns as Array<any>
const feedTypes = async (id: string) =>
  ((await call("GET", path(id, "/events?limit=200"))).body.events as Array<any>).map((item) => item.type)

/** Waits until the conversation's newest turn has `status`. */
const settled = (id: string, count: number, status = "completed") =>
  waitForConversation(server, id, async () => {
    const found = await turns(id)
    return found.length === count && found.at(-1)?.status === status
  })

const slow = (ms = 20_000) => JSON.stringify({ delay_ms: ms, reply: "late" })

beforeAll(async () => {
  server = await startTestServer()
  const account = await twoStewards(server, { owner: ["talker", "second-talker"], member: ["outsider"] })
  agent = account.ownerAgents[0] as ConnectedAgent
  sibling = account.ownerAgents[1] as ConnectedAgent
  outsider = account.memberAgents[0] as ConnectedAgent
  owner = account.owner
  member = account.member
  ownerToken = account.ownerToken
  const made = await call("POST", "/workspaces", { workspace: { name: "talk" } }, key())
  workspaceId = made.body.workspace.public_id
})
afterAll(() => server?.close())

describe("conversations", () => {
  it("create: defaults, the full document, and an idempotent replay", async () => {
    const headers = key()
    const made = await call("POST", conversationsPath(), { conversation: { title: "hi", metadata: { a: 1 } } }, headers)
    expect(made.status).toBe(201)
    expect(made.body.conversation).toMatchObject({
      title: "hi",
      metadata: { a: 1 },
      billing_subject: null,
      parent: null,
      side: false,
      lock_version: 0,
      context_revision: 0,
      answering_user_public_id: agent.publicId,
      creator_public_id: agent.publicId,
      access: { default: "full", entries: [] },
      memory_context: null,
      context: null,
      input_queue: { limit: 16, held: 0 }
    })
    const again = await call(
      "POST",
      conversationsPath(),
      { conversation: { title: "hi", metadata: { a: 1 } } },
      headers
    )
    expect(again.status).toBe(201)
    expect(again.headers.get("idempotency-replayed")).toBe("true")
    expect(again.body.conversation.public_id).toBe(made.body.conversation.public_id)
  })

  it("create refusals: answerer_not_eligible, principal_not_eligible, billing_subject_too_long", async () => {
    const human = await call(
      "POST",
      conversationsPath(),
      { conversation: { answering_user_public_id: "01900000-0000-7000-8000-000000000000" } },
      key()
    )
    expect(human.status).toBe(422)
    expect(human.body.error.code).toBe("answerer_not_eligible")
    const self = await call(
      "POST",
      conversationsPath(),
      { conversation: { access: { default: "full", entries: [{ user_public_id: agent.publicId, level: "read" }] } } },
      key()
    )
    expect(self.status).toBe(422)
    expect(self.body.error.code).toBe("principal_not_eligible")
    const long = await call("POST", conversationsPath(), { conversation: { billing_subject: "x".repeat(256) } }, key())
    expect(long.status).toBe(422)
    expect(long.body.error.code).toBe("billing_subject_too_long")
    // In characters, not UTF-16 units: 255 emoji fit, 256 do not.
    const emoji = await call(
      "POST",
      conversationsPath(),
      { conversation: { billing_subject: "🎭".repeat(255) } },
      key()
    )
    expect(emoji.status, JSON.stringify(emoji.body)).toBe(201)
    expect(emoji.body.conversation.billing_subject).toBe("🎭".repeat(255))
    const over = await call("POST", conversationsPath(), { conversation: { billing_subject: "🎭".repeat(256) } }, key())
    expect(over.body.error.code).toBe("billing_subject_too_long")
  })

  it("lists roots with filters and keyset cursors; a cursor under another order is 400", async () => {
    const a = await createConversation({ metadata: { team: "red" } })
    await createConversation({ metadata: { team: "blue" } })
    const red = await call("GET", `${conversationsPath()}?metadata_key=team&metadata_value=red`)
    expect(red.status).toBe(200)
    expect(red.body.conversations.map((row: any) => row.public_id)).toEqual([a])
    const first = await call("GET", `${conversationsPath()}?limit=1`)
    expect(first.body.conversations).toHaveLength(1)
    const cursor = first.body.pagination.next_after
    expect(typeof cursor).toBe("string")
    const next = await call("GET", `${conversationsPath()}?limit=1&after=${cursor}`)
    expect(next.body.conversations[0].public_id > first.body.conversations[0].public_id).toBe(true)
    const wrong = await call("GET", `${conversationsPath()}?limit=1&order=desc&after=${cursor}`)
    expect(wrong.status).toBe(400)
    expect(wrong.body.error.code).toBe("parameter_invalid")
    const roots = await call("GET", "/conversations?limit=100")
    expect(roots.body.conversations.some((row: any) => row.public_id === a)).toBe(true)
    expect((await call("GET", `${conversationsPath()}?limit=0`)).status).toBe(400)
    expect((await call("GET", `${conversationsPath()}?metadata_key=team`)).status).toBe(400)
  })

  it("PATCH: lock_version fences, both members missing is 400, metadata over 2 KiB is 413", async () => {
    const id = await createConversation()
    const patched = await call("PATCH", path(id), { conversation: { title: "renamed", lock_version: 0 } })
    expect(patched.status).toBe(200)
    expect(patched.body.conversation).toMatchObject({ title: "renamed", lock_version: 1 })
    const stale = await call("PATCH", path(id), { conversation: { title: "again", lock_version: 0 } })
    expect(stale.status).toBe(409)
    expect(stale.body.error.code).toBe("stale_object")
    const neither = await call("PATCH", path(id), { conversation: { lock_version: 1 } })
    expect(neither.status).toBe(400)
    expect(neither.body.error.code).toBe("parameter_missing")
    const large = await call("PATCH", path(id), {
      conversation: { metadata: { x: "y".repeat(3000) }, lock_version: 1 }
    })
    expect(large.status).toBe(413)
  })

  it("Conversation: active --archive, not a subagent or side--> archived: conversation_ended with reason archived; writes 409 conversation_archived; unarchive brings it back", async () => {
    const id = await createConversation()
    const archived = await call("POST", path(id, "/archive"))
    expect(archived.status).toBe(200)
    expect(archived.body.conversation.archived_at).not.toBeNull()
    expect((await call("POST", path(id, "/archive"))).status).toBe(200)
    const refused = await input(id, { kind: "message", text: "hello" })
    expect(refused.status).toBe(409)
    expect(refused.body.error.code).toBe("conversation_archived")
    const bin = await call("GET", `${conversationsPath()}/archived`)
    expect(bin.body.conversations.map((row: any) => row.public_id)).toContain(id)
    const access = await call("PUT", path(id, "/access"), { access: { default: "read" } })
    expect(access.status).toBe(200)
    const back = await call("POST", path(id, "/unarchive"))
    expect(back.status).toBe(200)
    expect(back.body.conversation.archived_at).toBeNull()
    expect(await feedTypes(id)).toEqual(["conversation_ended", "access_changed"])
    const [ended] = (await call("GET", path(id, "/events?limit=1"))).body.events
    expect(ended.payload).toEqual({ reason: "archived" })
  })

  it("Conversation: any --delete, no live work in tree--> tombstoned: 204, then every door 404; a running reply is 409 conversation_busy", async () => {
    const id = await createConversation()
    await input(id, { kind: "direct_reply", text: slow(), model: { model: "local/script" } })
    await waitForConversation(server, id, async () => (await turns(id)).at(-1)?.status === "running")
    const busy = await call("DELETE", path(id))
    expect(busy.status).toBe(409)
    expect(busy.body.error.code).toBe("conversation_busy")
    expect((await call("POST", path(id, "/cancellation"))).status).toBe(202)
    await settled(id, 1, "canceled")
    expect((await call("DELETE", path(id))).status).toBe(204)
    expect((await call("GET", path(id))).status).toBe(404)
    expect((await call("DELETE", path(id))).status).toBe(404)
    expect((await call("GET", path(id, "/turns"))).status).toBe(404)
  })

  it("access: none conceals with 404, read refuses writes with 403 not_authorized; an identical replacement narrates nothing", async () => {
    const id = await createConversation()
    expect((await as(sibling, "GET", path(id))).status).toBe(200)
    const readOnly = await call("PUT", path(id, "/access"), {
      access: { default: "none", entries: [{ user_public_id: sibling.publicId, level: "read" }] }
    })
    expect(readOnly.status).toBe(200)
    expect(readOnly.body.conversation.access.entries).toMatchObject([
      { user_public_id: sibling.publicId, handle: sibling.handle, kind: "agent", level: "read" }
    ])
    expect((await as(sibling, "GET", path(id))).status).toBe(200)
    const write = await as(sibling, "POST", path(id, "/inputs"), { input: { kind: "message", text: "x" } }, key())
    expect(write.status).toBe(403)
    expect(write.body.error.code).toBe("not_authorized")
    await call("PUT", path(id, "/access"), { access: { default: "none" } })
    expect((await as(sibling, "GET", path(id))).status).toBe(404)
    await call("PUT", path(id, "/access"), { access: { default: "none" } })
    expect(await feedTypes(id)).toEqual(["access_changed", "access_changed"])
    expect((await as(outsider, "GET", path(id))).status).toBe(404)
  })
})

describe("inputs and the drain", () => {
  it("Input: pending --drain, lane idle, no block--> consumed into a turn: a direct reply on local/echo completes", async () => {
    const id = await createConversation()
    const accepted = await input(id, { kind: "direct_reply", text: "hello", model: { model: "local/echo" } })
    expect(accepted.status).toBe(202)
    expect(accepted.body.input).toMatchObject({
      kind: "direct_reply",
      text: "hello",
      state: "pending",
      queue_position: 0,
      origin: "agent",
      author_public_id: agent.publicId,
      answering_user_public_id: agent.publicId,
      delivery_mode: "queue",
      lock_version: 0
    })
    await settled(id, 1)
    const [turn] = await turns(id)
    expect(turn).toMatchObject({
      position: 1,
      kind: "direct_reply",
      role: "assistant",
      status: "completed",
      inherited: false,
      prompt_text: "hello",
      content: "echo: hello",
      input_public_id: accepted.body.input.public_id
    })
    expect(turn.active_variant).toMatchObject({ source: "inference", status: "completed", active: true })
    expect(await feedTypes(id)).toEqual([
      "input_accepted",
      "turn_created",
      "input_materialized",
      "turn_status",
      "usage",
      "turn_status"
    ])
    const materialization = await call("GET", path(id, `/inputs/${accepted.body.input.public_id}/materialization`))
    expect(materialization.body.materialization).toEqual({
      input_public_id: accepted.body.input.public_id,
      turn_public_id: turn.public_id,
      variant_public_id: turn.active_variant.public_id,
      run_public_id: null
    })
    const view = (await call("GET", path(id))).body.conversation
    expect(view.context).toMatchObject({ as_of_model: { model_ref: "local/echo" } })
  })

  /** A conversation whose head (a reply on an unknown model) blocked, a message queued behind it. */
  const blockedHead = async () => {
    const id = await createConversation()
    const head = await input(id, { kind: "direct_reply", text: "x", model: { model: "nowhere/none" } })
    await input(id, { kind: "message", text: "behind" })
    await waitForConversation(server, id, async () =>
      ((await call("GET", path(id, "/inputs"))).body.inputs as Array<any>).some((row) => row.state === "blocked")
    )
    return { id, headId: head.body.input.public_id as string }
  }

  it("Input: pending --drain, cannot be served--> blocked: FIFO held behind it", async () => {
    const { id } = await blockedHead()
    const queue = (await call("GET", path(id, "/inputs"))).body
    expect(queue.inputs.map((row: any) => [row.state, row.blocked_reason])).toEqual([
      ["blocked", "unknown_model"],
      ["pending", null]
    ])
    expect(queue.input_queue).toEqual({ limit: 16, held: 2 })
    // The message behind would become a turn at once were the lane not held by the blocked head.
    expect(await turns(id)).toEqual([])
    expect(await feedTypes(id)).not.toContain("turn_created")
  })

  it("Input: blocked --edit--> pending: re-judged, then served in order", async () => {
    const { id, headId } = await blockedHead()
    const unknown = await call("PATCH", path(id, `/inputs/${headId}`), {
      input: { model: { model: "elsewhere/none" } }
    })
    expect(unknown.status).toBe(200)
    // The edit returns the row to pending and the drain judges it again in the same step.
    const judged = ((await call("GET", path(id, "/events?limit=200"))).body.events as Array<any>)
      .filter((item) => item.payload.input_public_id === headId && item.type !== "input_accepted")
      .map((item) => [item.type, item.payload.state ?? null])
    expect(judged).toEqual([
      ["input_blocked", null],
      ["input_edited", "pending"],
      ["input_blocked", null]
    ])
    const reblocked = (await call("GET", path(id, "/inputs"))).body.inputs[0]
    expect([reblocked.state, reblocked.blocked_reason]).toEqual(["blocked", "unknown_model"])
    const edited = await call("PATCH", path(id, `/inputs/${headId}`), {
      input: { model: { model: "local/echo" }, expected_lock_version: reblocked.lock_version }
    })
    expect(edited.status).toBe(200)
    await settled(id, 2)
    expect((await turns(id)).map((turn) => [turn.kind, turn.content])).toEqual([
      ["direct_reply", "echo: x"],
      ["message", "behind"]
    ])
  })

  it("Input: pending or blocked --delete, origin is not task_result or child--> gone: consumed rows answer 404", async () => {
    const id = await createConversation()
    const blocked = await input(id, { kind: "direct_reply", text: "x", model: { model: "nowhere/none" } })
    const rowId = blocked.body.input.public_id
    expect((await call("DELETE", path(id, `/inputs/${rowId}`))).status).toBe(204)
    expect((await call("DELETE", path(id, `/inputs/${rowId}`))).status).toBe(404)
    expect((await call("GET", path(id, "/inputs"))).body.inputs).toEqual([])
    const pending = await input(id, { kind: "message", text: "later", deliver_in: "1h" })
    expect(pending.body.input.state).toBe("pending")
    expect((await call("DELETE", path(id, `/inputs/${pending.body.input.public_id}`))).status).toBe(204)
    expect((await call("GET", path(id, "/inputs"))).body.inputs).toEqual([])
    expect(await turns(id)).toEqual([])
  })

  it("the queue bound holds at 16 caller rows (scheduled ones too); the 17th is 409 input_queue_full", async () => {
    const id = await createConversation()
    for (let index = 0; index < 16; index++) {
      expect((await input(id, { kind: "message", text: `m${index}`, deliver_in: "1h" })).status).toBe(202)
    }
    const full = await input(id, { kind: "message", text: "one too many", deliver_in: "1h" })
    expect(full.status).toBe(409)
    expect(full.body.error.code).toBe("input_queue_full")
  })

  it("steps are at most 1 MiB of canonical JSON: exactly 1 MiB is judged on, one byte more is 413 content_too_large", async () => {
    const id = await createConversation()
    // [{"blob":"…"}] is 13 bytes around the text.
    const steps = (bytes: number) => [{ blob: "x".repeat(bytes - 13) }]
    const over = await input(id, { kind: "message", text: "hi", steps: steps(1_048_577) })
    expect([over.status, over.body.error.code]).toEqual([413, "content_too_large"])
    // Within the bound the steps reach their own rules: a direct addressee refuses steps (422).
    const exact = await input(id, { kind: "message", text: "hi", steps: steps(1_048_576) })
    expect([exact.status, exact.body.error.code]).toEqual([422, "validation_failed"])
    expect(exact.body.error.message).toContain("steps")
  })

  it("delivery times: both 422 deliver_at_ambiguous, past 422, far 422, with a steer 422, bad duration 400", async () => {
    const id = await createConversation()
    const codes = async (members: Record<string, unknown>) => {
      const answer = await input(id, { kind: "message", text: "t", ...members })
      return [answer.status, answer.body.error?.code]
    }
    expect(await codes({ deliver_at: "2030-01-01T00:00:00Z", deliver_in: "1m" })).toEqual([422, "deliver_at_ambiguous"])
    expect(await codes({ deliver_at: "2000-01-01T00:00:00Z" })).toEqual([422, "deliver_at_in_past"])
    expect(await codes({ deliver_at: "2999-01-01T00:00:00Z" })).toEqual([422, "deliver_at_too_far"])
    expect(await codes({ deliver_in: "5m", delivery_mode: "steer" })).toEqual([422, "deliver_at_not_steerable"])
    expect(await codes({ deliver_in: "5 minutes" })).toEqual([400, "parameter_invalid"])
    expect(await codes({ deliver_at: "2030-01-01T00:00:00" })).toEqual([400, "parameter_invalid"])
  })

  it("deliver_at and deliver_in may be up to 10 calendar years ahead (leap days counted), not 10 × 365.25 days", async () => {
    const id = await createConversation()
    const now = await serverNow(server)
    const bound = tenYearsAfter(now)
    const at = (millis: number) => new Date(bound + millis).toISOString()
    const status = async (members: Record<string, unknown>) => {
      const answer = await input(id, { kind: "message", text: "far", ...members })
      return [answer.status, answer.body.error?.code]
    }
    expect(await status({ deliver_at: at(-60_000) })).toEqual([202, undefined])
    expect(await status({ deliver_at: at(60_000) })).toEqual([422, "deliver_at_too_far"])
    const days = Math.floor((bound - now) / 86_400_000)
    expect(await status({ deliver_in: `${days}d` })).toEqual([202, undefined])
    expect(await status({ deliver_in: `${days + 1}d` })).toEqual([422, "deliver_at_too_far"])
  })

  it("a message takes no reply-lane member (422 naming it); kind is required (400) and from its vocabulary (422)", async () => {
    const id = await createConversation()
    const named = await input(id, { kind: "message", text: "t", model: { model: "local/echo" } })
    expect(named.status).toBe(422)
    expect(named.body.error.message).toContain("model")
    expect((await input(id, { text: "t" })).status).toBe(400)
    expect((await input(id, { kind: "shout", text: "t" })).status).toBe(422)
  })

  it("a scheduled input never heads before it is due; deliver_in 0s makes it due now", async () => {
    const id = await createConversation()
    const later = await input(id, { kind: "message", text: "later", deliver_in: "1h" })
    expect(later.body.input.deliver_at).not.toBeNull()
    expect(await turns(id)).toEqual([])
    const now = await call("PATCH", path(id, `/inputs/${later.body.input.public_id}`), { input: { deliver_in: "0s" } })
    expect(now.status).toBe(200)
    await settled(id, 1)
  })

  it("Steering input: held --edit delivery_mode steer_now--> promoted; released (steer_released) when a direct reply settles", async () => {
    const id = await createConversation()
    await input(id, { kind: "direct_reply", text: slow(1500), model: { model: "local/script" } })
    await waitForConversation(server, id, async () => (await turns(id)).at(-1)?.status === "running")
    const steer = await input(id, { kind: "message", text: "steer", delivery_mode: "steer" })
    expect(steer.body.input.state).toBe("steering")
    const other = await call("PATCH", path(id, `/inputs/${steer.body.input.public_id}`), { input: { text: "no" } })
    expect(other.status).toBe(409)
    expect(other.body.error.code).toBe("steering_held")
    const promoted = await call("PATCH", path(id, `/inputs/${steer.body.input.public_id}`), {
      input: { delivery_mode: "steer_now" }
    })
    expect(promoted.status).toBe(200)
    expect(promoted.body.input).toMatchObject({ delivery_mode: "steer_now", lock_version: 1 })
    await settled(id, 2)
    const items = ((await call("GET", path(id, "/events?limit=200"))).body.events as Array<any>)
      .filter((item) => item.type === "input_edited")
      .map((item) => item.payload.reason)
    expect(items).toEqual(["promoted", "steer_released"])
  })

  it("reorder names exactly the caller's rows (else 409 queue_changed); they take the old positions", async () => {
    const id = await createConversation()
    const a = (await input(id, { kind: "message", text: "a", deliver_in: "1h" })).body.input.public_id
    const owners = (
      await asOwner("POST", path(id, "/inputs"), { input: { kind: "message", text: "o", deliver_in: "1h" } }, key())
    ).body.input.public_id
    const b = (await input(id, { kind: "message", text: "b", deliver_in: "1h" })).body.input.public_id
    const partial = await call("POST", path(id, "/inputs/reorder"), { inputs: [a] })
    expect(partial.status).toBe(409)
    expect(partial.body.error.code).toBe("queue_changed")
    const another = await call("POST", path(id, "/inputs/reorder"), { inputs: [b, owners, a] })
    expect([another.status, another.body.error?.code]).toEqual([409, "queue_changed"])
    const swapped = await call("POST", path(id, "/inputs/reorder"), { inputs: [b, a] })
    expect(swapped.status).toBe(200)
    expect(swapped.body.inputs.map((row: any) => [row.public_id, row.queue_position])).toEqual([
      [b, 0],
      [owners, 1],
      [a, 2]
    ])
  })

  it("model selection for another addressee: its last reply model here comes before the conversation's and the submitted one", async () => {
    // An account-wide room: a workspace dedicated to the caller fences its sibling out as an answerer.
    const room = (
      await asOwner("POST", "/workspaces", { workspace: { name: "addressees", access_mode: "account_wide" } }, key())
    ).body.workspace.public_id
    const here = `/workspaces/${room}/conversations`
    const id = (await call("POST", here, { conversation: {} }, key())).body.conversation.public_id as string
    const to = (model: string, text: string, answerer?: string) =>
      call(
        "POST",
        `${here}/${id}/inputs`,
        {
          input: {
            kind: "direct_reply",
            text,
            model: { model },
            ...(answerer === undefined ? {} : { answering_user_public_id: answerer })
          }
        },
        key()
      )
    const roomTurns = async () => (await call("GET", `${here}/${id}/turns?limit=100`)).body.turns as Array<any>
    const roomSettled = (count: number) =>
      waitForConversation(server, id, async () => {
        const found = await roomTurns()
        return found.length === count && found.at(-1)?.status === "completed"
      })
    await to("local/script", "first", sibling.publicId)
    await roomSettled(1)
    await to("local/echo", "second")
    await roomSettled(2)
    const third = await to("local/tiny", "third", sibling.publicId)
    expect(third.body.input.model).toMatchObject({ model: "local/script" })
    await roomSettled(3)
    const models = (await roomTurns()).map((turn) => [turn.answering_user_public_id, turn.model?.model_ref])
    expect(models).toEqual([
      [sibling.publicId, "local/script"],
      [agent.publicId, "local/echo"],
      [sibling.publicId, "local/script"]
    ])
  })

  it("an input's fallback_models replaces the answerer's list: [] asks for no fallback, absent keeps the answerer's", async () => {
    await server.run(
      Effect.flatMap(
        SqlClient,
        (
          sql
        ) => sql`UPDATE users SET configuration = COALESCE(configuration, '{}'::jsonb) || ${JSON.stringify({ fallback_models: ["local/script"] })}::jsonb
                     WHERE public_id = ${agent.publicId}`
      )
    )
    const id = await createConversation()
    const none = await input(id, {
      kind: "direct_reply",
      text: "a",
      model: { model: "local/echo" },
      fallback_models: []
    })
    const kept = await input(id, { kind: "direct_reply", text: "b", model: { model: "local/echo" } })
    await settled(id, 2)
    const plans = await server.run(
      Effect.flatMap(
        SqlClient,
        (sql) => sql<{ event: { input: { inputId: string; reply: { fallbackModel: string | null } } } }>`
          SELECT event FROM actor_journal
          WHERE kind = 'conversation' AND actor_id = ${id}::uuid AND event_type = 'input.accept' ORDER BY id`
      )
    )
    const fallbackOf = (inputId: string) =>
      plans.find((row) => row.event.input.inputId === inputId)?.event.input.reply.fallbackModel
    expect(fallbackOf(none.body.input.public_id)).toBeNull()
    expect(fallbackOf(kept.body.input.public_id)).toBe("local/script")
    await server.run(
      Effect.flatMap(
        SqlClient,
        (sql) =>
          sql`UPDATE users SET configuration = configuration - 'fallback_models' WHERE public_id = ${agent.publicId}`
      )
    )
  })

  it("Input: pending --drain, cannot be served--> blocked author_not_authorized when its author is no longer active", async () => {
    const room = (await as(sibling, "POST", "/workspaces", { workspace: { name: "own room" } }, key())).body.workspace
      .public_id
    const id = (await as(sibling, "POST", `/workspaces/${room}/conversations`, { conversation: {} }, key())).body
      .conversation.public_id
    const later = await as(
      sibling,
      "POST",
      `/workspaces/${room}/conversations/${id}/inputs`,
      { input: { kind: "direct_reply", text: "later", model: { model: "local/echo" }, deliver_in: "2s" } },
      key()
    )
    expect(later.status).toBe(202)
    const status = (value: string) =>
      server.run(
        Effect.flatMap(
          SqlClient,
          (sql) => sql`UPDATE users SET status = ${value} WHERE public_id = ${sibling.publicId}`
        )
      )
    const stateOf = () =>
      server.run(
        Effect.flatMap(
          SqlClient,
          (sql) => sql<{ state: string; blocked_reason: string | null }>`
            SELECT state, blocked_reason FROM conversation_inputs WHERE public_id = ${later.body.input.public_id}`
        )
      )
    await status("inactive")
    try {
      await waitForConversation(server, id, async () => (await stateOf())[0]?.state === "blocked")
      expect(await stateOf()).toEqual([{ state: "blocked", blocked_reason: "author_not_authorized" }])
    } finally {
      await status("active")
    }
  })

  it("fences: expected_context_revision 409 stale_context, expected_tail_turn_public_id 409 stale_timeline", async () => {
    const id = await createConversation()
    const stale = await input(id, { kind: "message", text: "x", expected_context_revision: 5 })
    expect(stale.status).toBe(409)
    expect(stale.body.error.code).toBe("stale_context")
    const timeline = await input(id, {
      kind: "message",
      text: "x",
      expected_tail_turn_public_id: "01900000-0000-7000-8000-000000000000"
    })
    expect(timeline.status).toBe(409)
    expect(timeline.body.error.code).toBe("stale_timeline")
  })

  it("speaker_public_id: the caller or an agent author's steward, else 403 not_authorized; the answer shows both", async () => {
    const id = await createConversation()
    const said = (speaker: string) => ({ kind: "message", text: "said", deliver_in: "1h", speaker_public_id: speaker })
    const stewarded = await input(id, said(owner.public_id))
    expect(stewarded.status).toBe(202)
    expect(stewarded.body.input.author_public_id).toBe(agent.publicId)
    expect(stewarded.body.input.speaker).toEqual({
      user_public_id: owner.public_id,
      handle: owner.handle,
      kind: "human",
      display_name: owner.display_name
    })
    const itself = await input(id, said(agent.publicId))
    expect(itself.status).toBe(202)
    expect(itself.body.input.speaker).toMatchObject({ user_public_id: agent.publicId, handle: agent.handle })
    const refusals = [
      await input(id, said(member.public_id)),
      await input(id, said(sibling.publicId)),
      await asOwner("POST", path(id, "/inputs"), { input: said(agent.publicId) }, key())
    ]
    for (const refused of refusals) {
      expect(refused.status).toBe(403)
      expect(refused.body.error.code).toBe("not_authorized")
    }
  })

  it("the contact rule judges an agent author's direct reply to the stored answerer; the answerer and humans pass", async () => {
    const room = (
      await asOwner("POST", "/workspaces", { workspace: { name: "contact room", access_mode: "account_wide" } }, key())
    ).body.workspace.public_id
    const made = await call(
      "POST",
      `/workspaces/${room}/conversations`,
      { conversation: { answering_user_public_id: sibling.publicId } },
      key()
    )
    const inputs = `/workspaces/${room}/conversations/${made.body.conversation.public_id}/inputs`
    const policy = await asOwner("PUT", `/workspaces/${room}/messaging`, {
      messaging: { agents: [{ agent_public_id: sibling.publicId, mode: "private" }], lock_version: 0 }
    })
    expect(policy.status).toBe(200)
    const reply = { input: { kind: "direct_reply", text: "hello", deliver_in: "1h" } }
    const refused = await call("POST", inputs, reply, key())
    expect(refused.status).toBe(422)
    expect(refused.body.error.code).toBe("answerer_not_eligible")
    expect((await call("POST", inputs, { input: { kind: "message", text: "hello" } }, key())).status).toBe(202)
    const answerer = await as(sibling, "POST", inputs, reply, key())
    expect(answerer.status).toBe(202)
    expect(answerer.body.input.answering_user_public_id).toBe(sibling.publicId)
    expect((await asOwner("POST", inputs, reply, key())).status).toBe(202)
  })

  it("an idempotent replay answers the original acceptance, even after consumption, and never adds a row", async () => {
    const id = await createConversation()
    const headers = key()
    const first = await input(id, { kind: "message", text: "once" }, headers)
    await settled(id, 1)
    const again = await input(id, { kind: "message", text: "once" }, headers)
    expect(again.status).toBe(202)
    expect(again.headers.get("idempotency-replayed")).toBe("true")
    expect(again.body).toEqual(first.body)
    expect(await turns(id)).toHaveLength(1)
  })

  it("an Idempotency-Key is its caller's: another caller sending it makes its own row, never the first's", async () => {
    const id = await createConversation()
    const headers = key()
    const first = await input(id, { kind: "message", text: "the agent's", deliver_in: "1h" }, headers)
    expect(first.status).toBe(202)
    const other = await asOwner(
      "POST",
      path(id, "/inputs"),
      { input: { kind: "message", text: "the owner's", deliver_in: "1h" } },
      headers
    )
    expect(other.status).toBe(202)
    expect(other.headers.get("idempotency-replayed")).toBe("false")
    expect(other.body.input).toMatchObject({ text: "the owner's", author_public_id: owner.public_id })
    expect(other.body.input.public_id).not.toBe(first.body.input.public_id)
  })
})

describe("turns", () => {
  it("the window: newest by default, after_position and before_position, has_older and has_newer", async () => {
    const id = await createConversation()
    for (const text of ["one", "two", "three"]) await input(id, { kind: "message", text })
    await settled(id, 3)
    const newest = await call("GET", path(id, "/turns?limit=2"))
    expect(newest.body.turns.map((turn: any) => turn.position)).toEqual([2, 3])
    expect(newest.body.pagination).toEqual({ before_position: 2, after_position: 3, has_older: true, has_newer: false })
    const older = await call("GET", path(id, "/turns?limit=2&before_position=2"))
    expect(older.body.turns.map((turn: any) => turn.position)).toEqual([1])
    const after = await call("GET", path(id, "/turns?limit=1&after_position=1"))
    expect(after.body.turns.map((turn: any) => turn.position)).toEqual([2])
    expect((await call("GET", path(id, "/turns?limit=101"))).status).toBe(400)
  })

  it("edit makes a new active candidate (source edit); elsewhere than the tail is 409 branch_required", async () => {
    const id = await createConversation()
    await input(id, { kind: "message", text: "first" })
    await input(id, { kind: "message", text: "second" })
    await settled(id, 2)
    const [first, second] = await turns(id)
    const edited = await call("POST", path(id, `/turns/${second.public_id}/edit`), { edit: { text: "changed" } })
    expect(edited.status).toBe(200)
    expect(edited.body.turn).toMatchObject({ content: "changed", active_variant: { source: "edit", active: true } })
    const elsewhere = await call("POST", path(id, `/turns/${first.public_id}/edit`), { edit: { text: "no" } })
    expect(elsewhere.status).toBe(409)
    expect(elsewhere.body.error.code).toBe("branch_required")
    const variants = await call("GET", path(id, `/turns/${second.public_id}/variants`))
    expect(variants.body.variants.map((variant: any) => [variant.source, variant.active])).toEqual([
      ["edit", false],
      ["edit", true]
    ])
    const activated = await call(
      "POST",
      path(id, `/turns/${second.public_id}/variants/${variants.body.variants[0].public_id}/activation`)
    )
    expect(activated.body.turn.content).toBe("second")
  })

  it("regeneration: 202 with a new inactive running candidate and its receipt; the new one becomes active when it completes", async () => {
    const id = await createConversation()
    await input(id, { kind: "direct_reply", text: "again", model: { model: "local/echo" } })
    await settled(id, 1)
    const [turn] = await turns(id)
    const headers = { "idempotency-key": "regen-1" }
    const regenerated = await call("POST", path(id, `/turns/${turn.public_id}/regeneration`), undefined, headers)
    expect(regenerated.status).toBe(202)
    expect(regenerated.body).toMatchObject({
      turn: { public_id: turn.public_id, status: "running" },
      variant: { active: false, status: "running" }
    })
    const receipt = await call("GET", path(id, `/turns/${turn.public_id}/regeneration_receipt?idempotency_key=regen-1`))
    expect(receipt.status).toBe(200)
    expect(receipt.body).toEqual(regenerated.body)
    expect(
      (await call("GET", path(id, `/turns/${turn.public_id}/regeneration_receipt?idempotency_key=other`))).status
    ).toBe(404)
    await waitForConversation(
      server,
      id,
      async () => (await turns(id))[0]?.active_variant?.public_id === regenerated.body.variant.public_id
    )
    const [after] = await turns(id)
    expect(after).toMatchObject({ status: "completed", content: "echo: again" })
    const missingKey = await call("POST", path(id, `/turns/${turn.public_id}/regeneration`))
    expect(missingKey.status).toBe(400)
    expect(missingKey.body.error.code).toBe("idempotency_key_required")
  })

  it("cancellation: 202 cuts a running first sample (turn canceled); nothing running answers 200", async () => {
    const id = await createConversation()
    expect((await call("POST", path(id, "/cancellation"))).status).toBe(200)
    await input(id, { kind: "direct_reply", text: slow(), model: { model: "local/script" } })
    await waitForConversation(server, id, async () => (await turns(id)).at(-1)?.status === "running")
    const cut = await call("POST", path(id, "/cancellation"))
    expect(cut.status).toBe(202)
    await settled(id, 1, "canceled")
  })

  it("visibility and DELETE of the tail; hidden turns only with include_hidden", async () => {
    const id = await createConversation()
    await input(id, { kind: "message", text: "a" })
    await input(id, { kind: "message", text: "b" })
    await settled(id, 2)
    const [a, b] = await turns(id)
    const hidden = await call("PATCH", path(id, `/turns/${a.public_id}`), { turn: { visibility: "hidden" } })
    expect(hidden.status).toBe(200)
    expect((await turns(id)).map((turn) => turn.public_id)).toEqual([b.public_id])
    expect((await call("GET", path(id, `/turns/${a.public_id}`))).status).toBe(404)
    expect((await call("GET", path(id, `/turns/${a.public_id}?include_hidden=true`))).status).toBe(200)
    expect((await call("DELETE", path(id, `/turns/${a.public_id}`))).status).toBe(409)
    expect((await call("DELETE", path(id, `/turns/${b.public_id}`))).status).toBe(204)
    expect((await call("GET", path(id, `/turns/${b.public_id}`))).status).toBe(404)
    expect(await feedTypes(id)).toContain("turn_deleted")
  })
})
