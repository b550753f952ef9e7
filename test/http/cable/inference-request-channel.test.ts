// The inference request channel on the cable (SUPPLEMENT "Cable"; inference supplement "Event
// items"), through the real server and real WebSocket clients: under both identifiers, its
// messages equal to the REST replay's items; a cursor's backfill then live with no gap or repeat
// while a slow request streams; `after: ""` from item 1; live only without `after`; the lifecycle
// feed; which credentials it admits; and the one rejection for everything it refuses.
import { logger } from "@rails/actioncable"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { waitForActorState } from "../../support/actors.ts"
import { type Browser, bearer, request } from "../../support/http.ts"
import type { ConnectedAgent } from "../../support/members.ts"
import { apiToken } from "../../support/people.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { agentFields, decide, poll, startDevice } from "../oauth/support-device.ts"
import { about, isEvent, isType, openRaw, type RawCable, stockConsumer, stockSubscription } from "./support-cable.ts"

const upstream = "AgentAPI::V1::InferenceRequestEventsChannel"
const short = "InferenceRequestChannel"

let server: TestServer
let agent: ConnectedAgent
let outsider: ConnectedAgent
let ownerMemberToken: string
let transportToken: string
let ownerBrowser: Browser
let workspaceId: string
let otherWorkspaceId: string
let keys = 0

const call = (method: string, path: string, body?: unknown, token = agent.token) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, {
    headers: { ...bearer(token), ...(method === "POST" ? { "idempotency-key": `cable-${++keys}` } : {}) },
    body
  })

const requests = (workspace = workspaceId) => `/workspaces/${workspace}/inference_requests`

/** Creates a text generation request; answers its public id. */
const create = async (model: string, input: string) => {
  const created = await call("POST", requests(), {
    inference_request: { workload: "text_generation", model: { model }, input }
  })
  expect(created.status).toBe(202)
  return created.body.inference_request.public_id as string
}

/** The REST replay of every item. */
const replay = async (id: string) => {
  const page = await call("GET", `${requests()}/${id}/events?limit=200`)
  expect(page.status).toBe(200)
  return page.body.events as Array<any>
}

const slowReply = (words: number) =>
  JSON.stringify({
    reply: Array.from({ length: words }, (_, index) => `w${index + 1}`).join(" "),
    pace_ms: 50
  })

beforeAll(async () => {
  server = await startTestServer()
  const account = await twoStewards(server, { owner: ["cable-agent"], member: ["cable-outsider"] })
  agent = account.ownerAgents[0] as ConnectedAgent
  outsider = account.memberAgents[0] as ConnectedAgent
  ownerMemberToken = account.ownerToken
  ownerBrowser = account.ownerBrowser
  // Another agent application of the owner: its connection answers a transport credential too.
  const started = await startDevice(server, agentFields("cable-runner"))
  await decide(ownerBrowser, started.user_code, "approve")
  transportToken = (await poll(server, started.device_code)).body.executor_access_token
  expect(transportToken).toEqual(expect.any(String))
  workspaceId = (await call("POST", "/workspaces", { workspace: { name: "cable" } })).body.workspace.public_id
  otherWorkspaceId = (await call("POST", "/workspaces", { workspace: { name: "elsewhere" } })).body.workspace.public_id
})
afterAll(() => server?.close())

const cleanups: Array<() => void> = []
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup()
})

/** A raw socket with the credential that has heard its welcome. */
const welcomed = async (token: string): Promise<RawCable> => {
  const cable = openRaw(server, { headers: bearer(token) })
  cleanups.push(() => cable.socket.close())
  expect(await cable.frames.take()).toEqual({ type: "welcome" })
  return cable
}

const identifierOf = (channel: string, params: Record<string, unknown>) => JSON.stringify({ channel, ...params })

/** Subscribes on the socket; answers the identifier and the confirmation or rejection's type. */
const subscribe = async (cable: RawCable, identifier: string) => {
  cable.subscribe(identifier)
  return (await cable.frames.take(about(identifier))).type as string
}

/** The items a subscription receives, up to and including the request's `result`. */
const itemsUntilResult = async (cable: RawCable, identifier: string) => {
  const items: Array<any> = []
  for (;;) {
    const frame = await cable.frames.take(about(identifier))
    expect(Object.keys(frame.message)).toEqual(["event"])
    items.push(frame.message.event)
    if (frame.message.event.type === "result") return items
  }
}

const sequences = (items: ReadonlyArray<any>) => items.map((item) => item.sequence)

describe("the inference request channel", () => {
  it("answers under both identifiers; after: '' replays from item 1 with the REST replay's items", async () => {
    const id = await create("local/echo", "hello there")
    await waitForActorState(server, "inferenceRequest", id, "completed")
    const replayed = await replay(id)
    expect(replayed.at(-1).type).toBe("result")

    // The stock client, with the upstream client's identifier.
    const { consumer } = stockConsumer(server, bearer(agent.token))
    cleanups.push(() => consumer.disconnect())
    const stock = stockSubscription(consumer, {
      channel: upstream,
      workspace_id: workspaceId,
      inference_request_id: id,
      after: ""
    })
    expect(await stock.events.take()).toEqual({ event: "connected", reconnected: false })
    const received: Array<any> = []
    for (const _ of replayed) received.push((await stock.events.take(isEvent("received"))).data)
    expect(received).toEqual(replayed.map((event) => ({ event })))

    // A raw socket, with our short identifier.
    const cable = await welcomed(agent.token)
    const identifier = identifierOf(short, { workspace_id: workspaceId, inference_request_id: id, after: "" })
    expect(await subscribe(cable, identifier)).toBe("confirm_subscription")
    expect(await itemsUntilResult(cable, identifier)).toEqual(replayed)
  })

  it("replays after a cursor, then goes on live with no gap and no repeat while a slow request streams", async () => {
    const id = await create("local/script", slowReply(16))
    const params = { workspace_id: workspaceId, inference_request_id: id }
    // Live only: subscribed once the request is accepted, it never replays item 1.
    const watcher = await welcomed(agent.token)
    const live = identifierOf(short, params)
    expect(await subscribe(watcher, live)).toBe("confirm_subscription")
    const liveItems: Array<any> = []
    while (liveItems.at(-1)?.type !== "text_delta") {
      liveItems.push((await watcher.frames.take(about(live))).message.event)
    }
    expect(liveItems[0].sequence).toBeGreaterThan(1)
    // Streaming has begun: take a cursor from the replay and follow from it on another socket.
    const sofar = await replay(id)
    const cursorItem = sofar[1]
    expect(cursorItem.type).toBe("run_status")
    const follower = await welcomed(agent.token)
    const followed = identifierOf(upstream, { ...params, after: cursorItem.cursor })
    expect(await subscribe(follower, followed)).toBe("confirm_subscription")
    const fromCursor = await itemsUntilResult(follower, followed)
    liveItems.push(...(await itemsUntilResult(watcher, live)))

    const all = await replay(id)
    expect(all.filter((item) => item.type === "text_delta")).toHaveLength(16)
    expect(fromCursor).toEqual(all.filter((item) => item.sequence > cursorItem.sequence))
    expect(liveItems).toEqual(all.filter((item) => item.sequence >= liveItems[0].sequence))
    expect(sequences(fromCursor)).toEqual(
      Array.from({ length: all.length - cursorItem.sequence }, (_, index) => cursorItem.sequence + 1 + index)
    )
  })

  it("the lifecycle feed carries only run_status and result, from a cursor and live", async () => {
    const finished = await create("local/echo", "one two three")
    await waitForActorState(server, "inferenceRequest", finished, "completed")
    const cable = await welcomed(agent.token)
    const replayed = identifierOf(short, {
      workspace_id: workspaceId,
      inference_request_id: finished,
      items: "lifecycle",
      after: ""
    })
    expect(await subscribe(cable, replayed)).toBe("confirm_subscription")
    const lifecycle = (await replay(finished)).filter((item) => item.type === "run_status" || item.type === "result")
    expect(lifecycle.map((item) => item.payload.status ?? item.type)).toEqual([
      "queued",
      "running",
      "completed",
      "completed"
    ])
    expect(await itemsUntilResult(cable, replayed)).toEqual(lifecycle)

    const streaming = await create("local/script", slowReply(6))
    const watched = identifierOf(upstream, {
      workspace_id: workspaceId,
      inference_request_id: streaming,
      items: "lifecycle"
    })
    expect(await subscribe(cable, watched)).toBe("confirm_subscription")
    const live = await itemsUntilResult(cable, watched)
    const all = await replay(streaming)
    expect(live.length).toBeGreaterThan(1)
    expect(live).toEqual(
      all.filter((item) => item.sequence >= live[0].sequence && (item.type === "run_status" || item.type === "result"))
    )
  })

  it("admits an agent's credential and a human's member token", async () => {
    const id = await create("local/echo", "for the steward")
    await waitForActorState(server, "inferenceRequest", id, "completed")
    const replayed = await replay(id)
    for (const token of [agent.token, ownerMemberToken]) {
      const cable = await welcomed(token)
      const identifier = identifierOf(short, { workspace_id: workspaceId, inference_request_id: id, after: "" })
      expect(await subscribe(cable, identifier)).toBe("confirm_subscription")
      expect(await itemsUntilResult(cable, identifier)).toEqual(replayed)
    }
  })
})

describe("rejections", () => {
  let id: string
  beforeAll(async () => {
    id = await create("local/echo", "keep out")
    await waitForActorState(server, "inferenceRequest", id, "completed")
  })

  const rejectionOf = async (token: string, params: Record<string, unknown>, channel = short) => {
    const cable = await welcomed(token)
    return subscribe(cable, identifierOf(channel, params))
  }

  it("rejects another workspace's request, an unreadable workspace, unknown ids and bad params alike", async () => {
    const good = { workspace_id: workspaceId, inference_request_id: id }
    const unknown = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
    const refused: Array<[string, Record<string, unknown>]> = [
      [agent.token, { ...good, workspace_id: otherWorkspaceId }],
      [outsider.token, good],
      [agent.token, { ...good, inference_request_id: unknown }],
      [agent.token, { ...good, workspace_id: unknown }],
      [agent.token, { ...good, inference_request_id: "not-a-uuid" }],
      [agent.token, { workspace_id: workspaceId }],
      [agent.token, { inference_request_id: id }],
      [agent.token, { ...good, inference_request_id: 42 }],
      [agent.token, { ...good, after: "not a cursor" }],
      [agent.token, { ...good, after: 3 }],
      [agent.token, { ...good, after: null }],
      [agent.token, { ...good, items: "transcript" }],
      [agent.token, { ...good, items: "progress" }],
      [agent.token, { ...good, items: "everything" }],
      [agent.token, { ...good, items: null }]
    ]
    for (const [token, params] of refused) {
      for (const channel of [short, upstream]) {
        expect([params, await rejectionOf(token, params, channel)]).toEqual([params, "reject_subscription"])
      }
    }
    // The same subscription is confirmed for the agent, under either identifier.
    expect(await rejectionOf(agent.token, good, upstream)).toBe("confirm_subscription")
    expect(await rejectionOf(agent.token, { ...good, items: "events", after: "" })).toBe("confirm_subscription")
  })

  it("rejects another request's cursor; its own cursor is confirmed", async () => {
    const other = await create("local/echo", "elsewhere")
    await waitForActorState(server, "inferenceRequest", other, "completed")
    const cursorOf = async (requestId: string) =>
      (
        await request(
          server.baseUrl,
          "GET",
          `/agent_api/v1/workspaces/${workspaceId}/inference_requests/${requestId}/events?limit=1`,
          { headers: bearer(agent.token) }
        )
      ).body.pagination.next_after as string
    const good = { workspace_id: workspaceId, inference_request_id: id }
    expect(await rejectionOf(agent.token, { ...good, after: await cursorOf(other) })).toBe("reject_subscription")
    expect(await rejectionOf(agent.token, { ...good, after: await cursorOf(id) })).toBe("confirm_subscription")
  })

  it("rejects a tombstoned request", async () => {
    const gone = await create("local/echo", "soon gone")
    await waitForActorState(server, "inferenceRequest", gone, "completed")
    const params = { workspace_id: workspaceId, inference_request_id: gone, after: "" }
    expect(await rejectionOf(agent.token, params)).toBe("confirm_subscription")
    expect((await call("DELETE", `${requests()}/${gone}`)).status).toBe(204)
    expect(await rejectionOf(agent.token, params)).toBe("reject_subscription")
  })

  it("is for member credentials: a transport credential and a platform session are rejected", async () => {
    const params = { workspace_id: workspaceId, inference_request_id: id, after: "" }
    expect(await rejectionOf(transportToken, params)).toBe("reject_subscription")
    expect(await rejectionOf(await apiToken(server), params)).toBe("reject_subscription")
  })

  it("an agent's socket is told unauthorized (no reconnect) at once when a re-pair fences its credential", async () => {
    const connect = async () => {
      const started = await startDevice(server, agentFields("cable-repaired"))
      await decide(ownerBrowser, started.user_code, "approve")
      return (await poll(server, started.device_code)).body.access_token as string
    }
    const cable = await welcomed(await connect())
    await connect()
    expect(await cable.frames.take(isType("disconnect"))).toEqual({
      type: "disconnect",
      reason: "unauthorized",
      reconnect: false
    })
    await cable.closed
  })

  it("a member credential opens the cable, but neither the executor inbox nor ActorChannel", async () => {
    const cable = await welcomed(agent.token)
    expect(await subscribe(cable, JSON.stringify({ channel: "ExecutorInboxChannel" }))).toBe("reject_subscription")
    const actor = JSON.stringify({ channel: "ActorChannel", kind: "inferenceRequest", id })
    expect(await subscribe(cable, actor)).toBe("reject_subscription")
    expect(cable.frames.buffered(isType("disconnect"))).toEqual([])
  })
})

// Quiet unless asked for: the stock client logs every step when enabled.
logger.enabled = process.env.ACTIONCABLE_DEBUG === "1"
