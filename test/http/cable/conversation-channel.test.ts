// The conversation channel on the cable (SUPPLEMENT "Cable"; conversations supplement "Feed and
// conversation channel"), through the real server, its HTTP doors and real WebSocket clients:
// under both identifiers its events equal the REST replay; a cursor's backfill then live with no
// gap or repeat; the lifecycle feed; the transcript of a streaming reply (deltas, a dropped
// attempt's reset, a reply joined midway arriving whole, then the settled turn); which credentials
// it admits; and the one rejection for everything it refuses.
import { logger } from "@rails/actioncable"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { waitForConversation } from "../../support/conversations.ts"
import { bearer, request } from "../../support/http.ts"
import type { ConnectedAgent } from "../../support/members.ts"
import { apiToken } from "../../support/people.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { about, isEvent, openRaw, type RawCable, stockConsumer, stockSubscription } from "./support-cable.ts"

const upstream = "AgentAPI::V1::ConversationEventsChannel"
const short = "ConversationChannel"

let server: TestServer
let agent: ConnectedAgent
let outsider: ConnectedAgent
let ownerCookie: string
let workspaceId: string
let otherWorkspaceId: string
let keys = 0

const call = (method: string, path: string, body?: unknown, token = agent.token) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, {
    headers: { ...bearer(token), ...(method === "POST" ? { "idempotency-key": `conversation-cable-${++keys}` } : {}) },
    body
  })

const conversations = (workspace = workspaceId) => `/workspaces/${workspace}/conversations`

/** Creates a conversation; answers its public id. */
const open = async (members: Record<string, unknown> = {}) => {
  const created = await call("POST", conversations(), { conversation: members })
  expect(created.status).toBe(201)
  return created.body.conversation.public_id as string
}

/** Queues a direct reply (or a message); answers the input. */
const input = async (id: string, text: string, model = "local/echo", kind = "direct_reply") => {
  const accepted = await call("POST", `${conversations()}/${id}/inputs`, {
    input: kind === "message" ? { kind, text } : { kind, text, model: { model } }
  })
  expect(accepted.status).toBe(202)
  return accepted.body.input
}

/** The REST replay of every item. */
const replay = async (id: string) => {
  const page = await call("GET", `${conversations()}/${id}/events?limit=200`)
  expect(page.status).toBe(200)
  return page.body.events as Array<any>
}

const isSettledStatus = (item: any) => item.type === "turn_status" && item.payload.status !== "running"

/** Waits until `count` of the conversation's turns settled. */
const settled = (id: string, count: number) =>
  waitForConversation(server, id, async () => (await replay(id)).filter(isSettledStatus).length >= count)

const script = (directive: Record<string, unknown>) => JSON.stringify(directive)
const words = (count: number) => Array.from({ length: count }, (_, index) => `w${index + 1}`).join(" ")

beforeAll(async () => {
  server = await startTestServer()
  const account = await twoStewards(server, { owner: ["conversation-cable"], member: ["conversation-outsider"] })
  agent = account.ownerAgents[0] as ConnectedAgent
  outsider = account.memberAgents[0] as ConnectedAgent
  ownerCookie = account.ownerBrowser.cookieHeader
  workspaceId = (await call("POST", "/workspaces", { workspace: { name: "talk" } })).body.workspace.public_id
  otherWorkspaceId = (await call("POST", "/workspaces", { workspace: { name: "elsewhere" } })).body.workspace.public_id
})
afterAll(() => server?.close())

const cleanups: Array<() => void> = []
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup()
})

/** A raw socket (a bearer token, or the browser's cookie) that has heard its welcome. */
const welcomed = async (credential: { readonly token: string } | { readonly cookie: string }): Promise<RawCable> => {
  const cable = openRaw(server, { headers: "token" in credential ? bearer(credential.token) : credential })
  cleanups.push(() => cable.socket.close())
  expect(await cable.frames.take()).toEqual({ type: "welcome" })
  return cable
}

const identifierOf = (channel: string, params: Record<string, unknown>) => JSON.stringify({ channel, ...params })

/** Subscribes on the socket; answers the confirmation or rejection's type. */
const subscribe = async (cable: RawCable, identifier: string) => {
  cable.subscribe(identifier)
  return (await cable.frames.take(about(identifier))).type as string
}

/** The next `{event}` messages of a subscription, up to and including the first `last` matches. */
const eventsUntil = async (cable: RawCable, identifier: string, last: (event: any) => boolean) => {
  const events: Array<any> = []
  for (;;) {
    const frame = await cable.frames.take(about(identifier))
    expect(Object.keys(frame.message)).toEqual(["event"])
    events.push(frame.message.event)
    if (last(frame.message.event)) return events
  }
}

const sequences = (items: ReadonlyArray<any>) => items.map((item) => item.sequence)

describe("the conversation channel's durable feeds", () => {
  it("answers under both identifiers, to an agent and to the owner's browser; after: '' replays from item 1", async () => {
    const id = await open({ title: "replayed" })
    await input(id, "hello")
    await settled(id, 1)
    const replayed = await replay(id)
    expect(replayed.map((item) => item.type)).toEqual([
      "input_accepted",
      "turn_created",
      "input_materialized",
      "turn_status",
      "usage",
      "turn_status"
    ])

    // The stock client, with the upstream client's identifier.
    const { consumer } = stockConsumer(server, bearer(agent.token))
    cleanups.push(() => consumer.disconnect())
    const stock = stockSubscription(consumer, {
      channel: upstream,
      workspace_id: workspaceId,
      conversation_id: id,
      after: ""
    })
    expect(await stock.events.take()).toEqual({ event: "connected", reconnected: false })
    const received: Array<any> = []
    for (const _ of replayed) received.push((await stock.events.take(isEvent("received"))).data)
    expect(received).toEqual(replayed.map((event) => ({ event })))

    // Raw sockets, with our short identifier: the agent's bearer, the owner's browser cookie.
    for (const credential of [{ token: agent.token }, { cookie: ownerCookie }]) {
      const cable = await welcomed(credential)
      const identifier = identifierOf(short, { workspace_id: workspaceId, conversation_id: id, after: "" })
      expect(await subscribe(cable, identifier)).toBe("confirm_subscription")
      expect(await eventsUntil(cable, identifier, (event) => event.sequence === replayed.length)).toEqual(replayed)
    }
  })

  it("replays after a cursor, then goes on live with no gap and no repeat while a reply streams", async () => {
    const id = await open()
    await input(id, "first")
    await settled(id, 1)
    const before = await replay(id)
    const params = { workspace_id: workspaceId, conversation_id: id }
    const cursorItem = before[2]
    const follower = await welcomed({ token: agent.token })
    const followed = identifierOf(upstream, { ...params, after: cursorItem.cursor })
    expect(await subscribe(follower, followed)).toBe("confirm_subscription")
    // Live only: nothing that was committed before the subscription.
    const watcher = await welcomed({ cookie: ownerCookie })
    const live = identifierOf(short, params)
    expect(await subscribe(watcher, live)).toBe("confirm_subscription")

    await input(id, script({ reply: words(12), pace_ms: 30 }), "local/script")
    await input(id, "a note", "local/echo", "message")
    const noteSettled = (event: any) => isSettledStatus(event) && event.payload.turn_kind === "message"
    const fromCursor = await eventsUntil(follower, followed, noteSettled)
    const liveItems = await eventsUntil(watcher, live, noteSettled)

    const all = await replay(id)
    expect(fromCursor).toEqual(all.filter((item) => item.sequence > cursorItem.sequence))
    expect(sequences(fromCursor)).toEqual(
      Array.from({ length: all.length - cursorItem.sequence }, (_, index) => cursorItem.sequence + 1 + index)
    )
    expect(liveItems).toEqual(all.filter((item) => item.sequence > before.length))
  })

  it("the lifecycle feed carries only turn_status and conversation_ended, from a cursor and live", async () => {
    const id = await open()
    await input(id, "one")
    await input(id, "noted", "local/echo", "message")
    await settled(id, 2)
    const cable = await welcomed({ token: agent.token })
    const identifier = identifierOf(short, {
      workspace_id: workspaceId,
      conversation_id: id,
      items: "lifecycle",
      after: ""
    })
    expect(await subscribe(cable, identifier)).toBe("confirm_subscription")
    const lifecycle = (await replay(id)).filter((item) => item.type === "turn_status")
    expect(lifecycle.map((item) => item.payload.status)).toEqual(["running", "completed", "completed"])
    const last = lifecycle.at(-1).sequence
    expect(await eventsUntil(cable, identifier, (event) => event.sequence === last)).toEqual(lifecycle)

    expect((await call("POST", `${conversations()}/${id}/archive`)).status).toBe(200)
    const [ended] = await eventsUntil(cable, identifier, () => true)
    expect(ended).toMatchObject({ type: "conversation_ended", payload: { reason: "archived" } })
    expect(ended).toEqual((await replay(id)).at(-1))
  })

  it("Conversation: any --delete--> tombstoned: conversation_ended with reason tombstoned reaches a subscriber last; the subscription is refused after", async () => {
    const id = await open()
    const params = { workspace_id: workspaceId, conversation_id: id }
    const cable = await welcomed({ token: agent.token })
    const identifier = identifierOf(short, params)
    expect(await subscribe(cable, identifier)).toBe("confirm_subscription")
    expect((await call("DELETE", `${conversations()}/${id}`)).status).toBe(204)
    const [ended] = await eventsUntil(cable, identifier, () => true)
    expect(ended).toMatchObject({ type: "conversation_ended", payload: { reason: "tombstoned" } })
    const again = await welcomed({ token: agent.token })
    expect(await subscribe(again, identifierOf(upstream, { ...params, after: "" }))).toBe("reject_subscription")
  })
})

describe("the transcript", () => {
  const transcriptOf = async (
    id: string,
    credential: { token: string } | { cookie: string } = { cookie: ownerCookie }
  ) => {
    const cable = await welcomed(credential)
    const identifier = identifierOf(short, { workspace_id: workspaceId, conversation_id: id, items: "transcript" })
    expect(await subscribe(cable, identifier)).toBe("confirm_subscription")
    return { cable, identifier, untilTurn: () => eventsUntil(cable, identifier, (event) => event.type === "turn") }
  }

  const textOf = (items: ReadonlyArray<any>) =>
    items
      .filter((item) => item.type === "text_delta")
      .map((item) => item.text)
      .join("")

  it("streams a reply's deltas, then the settled turn as the turns door answers it", async () => {
    const id = await open()
    const { untilTurn } = await transcriptOf(id)
    const reply = words(8)
    await input(id, script({ reply, pace_ms: 20 }), "local/script")
    const items = await untilTurn()
    const turn = items.at(-1)
    expect(turn.turn).toMatchObject({ status: "completed", kind: "direct_reply", content: reply })
    const shown = await call("GET", `${conversations()}/${id}/turns/${turn.turn_public_id}`)
    expect(shown.status).toBe(200)
    expect(turn.turn).toEqual(shown.body.turn)
    const deltas = items.slice(0, -1)
    expect(deltas.map((item) => item.type)).toEqual(Array(8).fill("text_delta"))
    expect(textOf(deltas)).toBe(reply)
    for (const delta of deltas) {
      expect(Object.keys(delta).sort()).toEqual(["text", "turn_public_id", "type", "variant_public_id"])
      expect(delta).toMatchObject({
        turn_public_id: turn.turn_public_id,
        variant_public_id: turn.turn.active_variant.public_id
      })
    }
  })

  it("a dropped attempt's output is a stream_reset; a message turn settles as a turn item", async () => {
    const id = await open()
    const { untilTurn } = await transcriptOf(id, { token: agent.token })
    await input(id, script({ fail: "provider_error", fail_times: 1, reply: "second try" }), "local/script")
    const items = await untilTurn()
    expect(items.map((item) => item.type)).toEqual(["stream_reset", "text_delta", "text_delta", "turn"])
    expect(items[0]).toEqual({
      type: "stream_reset",
      turn_public_id: items[3].turn_public_id,
      variant_public_id: items[3].turn.active_variant.public_id
    })
    expect(textOf(items)).toBe("second try")
    await input(id, "just a note", "local/echo", "message")
    const [noted] = await untilTurn()
    expect(noted.turn).toMatchObject({ kind: "message", status: "completed", content: "just a note" })
  })

  it("a subscriber that joins a running reply gets its text whole, then the turn", async () => {
    const id = await open()
    const first = await transcriptOf(id)
    const reply = words(16)
    await input(id, script({ reply, pace_ms: 40 }), "local/script")
    // Some of the reply has streamed before the second subscriber comes.
    for (let seen = 0; seen < 3; ) {
      const frame = await first.cable.frames.take(about(first.identifier))
      if (frame.message.event.type === "text_delta") seen++
    }
    const late = await transcriptOf(id, { token: agent.token })
    const items = await late.untilTurn()
    expect(textOf(items)).toBe(reply)
    expect(items.at(-1).turn.content).toBe(reply)
  })
})

describe("rejections", () => {
  let id: string
  beforeAll(async () => {
    id = await open()
  })

  const answerTo = async (
    credential: { token: string } | { cookie: string },
    params: Record<string, unknown>,
    channel = short
  ) => subscribe(await welcomed(credential), identifierOf(channel, params))

  it("rejects another workspace's URL, an outsider, unknown ids and bad params alike", async () => {
    const good = { workspace_id: workspaceId, conversation_id: id }
    const unknown = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
    const mine = { token: agent.token }
    const refused: Array<[{ token: string }, Record<string, unknown>]> = [
      [mine, { ...good, workspace_id: otherWorkspaceId }],
      [{ token: outsider.token }, good],
      [mine, { ...good, conversation_id: unknown }],
      [mine, { ...good, workspace_id: unknown }],
      [mine, { ...good, conversation_id: "not-a-uuid" }],
      [mine, { workspace_id: workspaceId }],
      [mine, { conversation_id: id }],
      [mine, { ...good, conversation_id: 42 }],
      [mine, { ...good, after: "not a cursor" }],
      [mine, { ...good, after: 3 }],
      [mine, { ...good, after: null }],
      [mine, { ...good, items: "transcript", after: "" }],
      [mine, { ...good, items: "progress", after: "" }],
      [mine, { ...good, items: "everything" }],
      [mine, { ...good, items: null }]
    ]
    for (const [credential, params] of refused) {
      for (const channel of [short, upstream]) {
        expect([params, await answerTo(credential, params, channel)]).toEqual([params, "reject_subscription"])
      }
    }
    for (const items of ["events", "lifecycle", "transcript", "progress"]) {
      expect(await answerTo(mine, { ...good, items }, upstream)).toBe("confirm_subscription")
    }
  })

  it("rejects a human whose level is none, and a platform API session", async () => {
    const closed = await open({ access: { default: "none" } })
    const params = { workspace_id: workspaceId, conversation_id: closed, after: "" }
    expect(await answerTo({ token: agent.token }, params)).toBe("confirm_subscription")
    expect(await answerTo({ cookie: ownerCookie }, params)).toBe("reject_subscription")
    expect(await answerTo({ cookie: ownerCookie }, { ...params, conversation_id: id })).toBe("confirm_subscription")
    expect(await answerTo({ token: await apiToken(server) }, { ...params, conversation_id: id })).toBe(
      "reject_subscription"
    )
  })
})

// Quiet unless asked for: the stock client logs every step when enabled.
logger.enabled = process.env.ACTIONCABLE_DEBUG === "1"
