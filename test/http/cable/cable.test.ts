// The cable at /agent_api/v1/cable (spec "Cable"): the Action Cable JSON protocol with the stock
// `@rails/actioncable` client and raw frames, authentication at the upgrade, the recheck on a
// revoked session, and ActorChannel (journal replay after a seq, then live steps).
import { logger } from "@rails/actioncable"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { bearer, request } from "../../support/http.ts"
import { createHuman, createOwner, memberCredentials, ownerCredentials } from "../../support/people.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import {
  about,
  browserCookie,
  isEvent,
  isType,
  openRaw,
  type RawCable,
  signIn,
  stockConsumer,
  stockSubscription
} from "./support-cable.ts"

let server: TestServer
const adminCredentials = { email: "admin@example.com", password: "admin password" }

beforeAll(async () => {
  // The default recheck interval (30 s) is longer than any test here may take: a revoked
  // socket can only be caught by the bus-triggered recheck.
  server = await startTestServer({ trustedProxies: ["127.0.0.1/32"] })
  await createOwner(server)
  await createHuman(server, { ...memberCredentials, displayName: "Mo Member", role: "member" })
  await createHuman(server, { ...adminCredentials, displayName: "Ada Admin", role: "admin" })
})
afterAll(() => server?.close())

const cleanups: Array<() => void> = []
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup()
})

const raw = (options: Parameters<typeof openRaw>[1] = {}): RawCable => {
  const cable = openRaw(server, options)
  cleanups.push(() => cable.socket.close())
  return cable
}

/** A raw socket that has heard its welcome. */
const welcomed = async (token: string) => {
  const cable = raw({ headers: bearer(token) })
  expect(await cable.frames.take()).toEqual({ type: "welcome" })
  return cable
}

const stock = (headers: Record<string, string>) => {
  const made = stockConsumer(server, headers)
  cleanups.push(() => made.consumer.disconnect())
  return made
}

const actorIdentifier = (id: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ channel: "ActorChannel", kind: "apiSession", id, ...extra })

const revoke = async (token: string) => {
  const response = await request(server.baseUrl, "DELETE", "/api/v1/session", { headers: bearer(token) })
  expect(response.status).toBe(200)
}

const journalEntry = (seq: number, from: string | null, to: string) =>
  expect.objectContaining({
    seq,
    from,
    to,
    state: to,
    event: expect.objectContaining({ type: expect.any(String) }),
    actions: expect.any(Array),
    at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  })

describe("the stock @rails/actioncable client", () => {
  it("connects with a bearer, hears welcome and pings, and follows an actor live and from its journal", async () => {
    const socketSession = await signIn(server, ownerCredentials)
    const watched = await signIn(server, ownerCredentials)
    const { consumer, frames } = stock(bearer(socketSession.token))

    const live = stockSubscription(consumer, { channel: "ActorChannel", kind: "apiSession", id: watched.actorId })
    expect(await frames.take()).toEqual({ type: "welcome" })
    expect(await live.events.take()).toEqual({ event: "connected", reconnected: false })
    expect(consumer.connection.getProtocol()).toBe("actioncable-v1-json")

    // Revoking the watched session (with its own bearer) is one committed step of its actor.
    await revoke(watched.token)
    const step = await live.events.take(isEvent("received"))
    expect(step.data).toEqual(journalEntry(2, "active", "revoked"))
    expect(step.data.event).toEqual({ type: "session.revoke" })

    // after: 0 replays the journal from seq 1.
    const replay = stockSubscription(consumer, {
      channel: "ActorChannel",
      kind: "apiSession",
      id: watched.actorId,
      after: 0
    })
    expect(await replay.events.take()).toEqual({ event: "connected", reconnected: false })
    expect((await replay.events.take()).data).toEqual(journalEntry(1, null, "active"))
    expect((await replay.events.take()).data).toEqual(journalEntry(2, "active", "revoked"))

    const ping = await frames.take(isType("ping"))
    expect(Object.keys(ping).sort()).toEqual(["message", "type"])
    expect(Math.abs(ping.message - Date.now() / 1000)).toBeLessThan(5)

    // The live subscription saw the step once: nothing doubled by the journal read.
    expect(live.events.buffered(isEvent("received"))).toEqual([])
  })

  it("authenticates with the browser session cookie too", async () => {
    const cookie = await browserCookie(server, ownerCredentials)
    const watched = await signIn(server, ownerCredentials)
    const { consumer } = stock({ cookie })
    const live = stockSubscription(consumer, { channel: "ActorChannel", kind: "apiSession", id: watched.actorId })
    expect(await live.events.take()).toEqual({ event: "connected", reconnected: false })
  })

  it("stops for good when the socket's own session is revoked: disconnect unauthorized, no reconnect", async () => {
    const socketSession = await signIn(server, ownerCredentials)
    const watched = await signIn(server, ownerCredentials)
    const { consumer, frames } = stock(bearer(socketSession.token))
    const live = stockSubscription(consumer, { channel: "ActorChannel", kind: "apiSession", id: watched.actorId })
    expect(await live.events.take()).toEqual({ event: "connected", reconnected: false })

    await revoke(socketSession.token)
    expect(await frames.take(isType("disconnect"))).toEqual({
      type: "disconnect",
      reason: "unauthorized",
      reconnect: false
    })
    expect(await live.events.take(isEvent("disconnected"))).toEqual({
      event: "disconnected",
      willAttemptReconnect: false
    })
    expect(consumer.connection.monitor.isRunning()).toBeFalsy()
  }, 10_000)

  it("is told a rejection for an actor a member may not see", async () => {
    const owner = await signIn(server, ownerCredentials)
    const member = await signIn(server, memberCredentials)
    const { consumer } = stock(bearer(member.token))
    const denied = stockSubscription(consumer, { channel: "ActorChannel", kind: "apiSession", id: owner.actorId })
    expect(await denied.events.take()).toEqual({ event: "rejected" })
  })
})

describe("raw frames", () => {
  it("ignores frames that are not commands and keeps answering", async () => {
    const owner = await signIn(server, ownerCredentials)
    const cable = await welcomed(owner.token)
    cable.send("{not json")
    cable.send("[1, 2]")
    cable.send("null")
    cable.send({ command: "dance", identifier: "{}" })
    cable.send({ command: "subscribe" })
    cable.send({ command: "subscribe", identifier: 42 })
    cable.send({ command: "message", identifier: actorIdentifier(owner.actorId), data: "{}" })
    cable.socket.send(new Uint8Array([0xff, 0x00, 0x7b]))
    const identifier = JSON.stringify({ channel: "NoSuchChannel" })
    cable.subscribe(identifier)
    expect(await cable.frames.take(about(identifier))).toEqual({ type: "reject_subscription", identifier })
    expect(cable.frames.buffered((frame) => frame.type !== "ping")).toEqual([])
    expect(cable.socket.readyState).toBe(WebSocket.OPEN)
  })

  it("rejects an unknown channel and an identifier that is not a JSON object", async () => {
    const owner = await signIn(server, ownerCredentials)
    const cable = await welcomed(owner.token)
    for (const identifier of ['{"channel":"Nope"}', "{}", "not json", '"ActorChannel"', '{"channel":42}']) {
      cable.subscribe(identifier)
      expect(await cable.frames.take(about(identifier))).toEqual({ type: "reject_subscription", identifier })
    }
  })

  it("rejects a member's ActorChannel subscription exactly like an unknown actor", async () => {
    const owner = await signIn(server, ownerCredentials)
    const member = await signIn(server, memberCredentials)
    const admin = await signIn(server, adminCredentials)
    const rejectionFor = async (token: string, identifier: string) => {
      const cable = await welcomed(token)
      cable.subscribe(identifier)
      return cable.frames.take(about(identifier))
    }
    const identifier = actorIdentifier(owner.actorId)
    const unknownActor = actorIdentifier("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b")
    const unknownKind = JSON.stringify({ channel: "ActorChannel", kind: "noSuchKind", id: owner.actorId })
    const notAUuid = actorIdentifier("not-a-uuid")
    const badAfter = actorIdentifier(owner.actorId, { after: -1 })
    expect(await rejectionFor(member.token, identifier)).toEqual({ type: "reject_subscription", identifier })
    for (const other of [unknownActor, unknownKind, notAUuid, badAfter]) {
      expect(await rejectionFor(owner.token, other)).toEqual({ type: "reject_subscription", identifier: other })
    }
    // The same subscription is confirmed for an owner and an admin.
    expect(await rejectionFor(owner.token, identifier)).toEqual({ type: "confirm_subscription", identifier })
    expect(await rejectionFor(admin.token, identifier)).toEqual({ type: "confirm_subscription", identifier })
  })

  it("echoes the identifier verbatim, key order and spacing included", async () => {
    const owner = await signIn(server, ownerCredentials)
    const watched = await signIn(server, ownerCredentials)
    const cable = await welcomed(owner.token)
    const identifier = `{ "id": "${watched.actorId}",  "kind": "apiSession", "after": 0, "channel": "ActorChannel" }`
    cable.subscribe(identifier)
    expect(await cable.frames.take(about(identifier))).toEqual({ type: "confirm_subscription", identifier })
    const replayed = await cable.frames.take(about(identifier))
    expect(Object.keys(replayed)).toEqual(["identifier", "message"])
    expect(replayed.message).toEqual(journalEntry(1, null, "active"))
  })

  it("stops a subscription's messages on unsubscribe", async () => {
    const owner = await signIn(server, ownerCredentials)
    const watched = await signIn(server, ownerCredentials)
    const cable = await welcomed(owner.token)
    const first = actorIdentifier(watched.actorId)
    const second = actorIdentifier(watched.actorId, { again: true })
    cable.subscribe(first)
    expect(await cable.frames.take(about(first))).toEqual({ type: "confirm_subscription", identifier: first })
    cable.unsubscribe(first)
    // Commands are handled in order: once `second` is confirmed, `first` is gone.
    cable.subscribe(second)
    expect(await cable.frames.take(about(second))).toEqual({ type: "confirm_subscription", identifier: second })
    await revoke(watched.token)
    expect((await cable.frames.take(about(second))).message).toEqual(journalEntry(2, "active", "revoked"))
    expect(cable.frames.buffered(about(first))).toEqual([])
    // Unsubscribing something never subscribed is harmless.
    cable.unsubscribe(first)
    cable.subscribe(first)
    expect(await cable.frames.take(about(first))).toEqual({ type: "confirm_subscription", identifier: first })
  })

  it("answers a duplicate subscribe once", async () => {
    const owner = await signIn(server, ownerCredentials)
    const watched = await signIn(server, ownerCredentials)
    const cable = await welcomed(owner.token)
    const identifier = actorIdentifier(watched.actorId, { after: 0 })
    cable.subscribe(identifier)
    cable.subscribe(identifier)
    expect(await cable.frames.take(about(identifier))).toEqual({ type: "confirm_subscription", identifier })
    expect((await cable.frames.take(about(identifier))).message).toEqual(journalEntry(1, null, "active"))
    // Frames are handled in order: by the marker's answer, a second confirmation would be here.
    const marker = JSON.stringify({ channel: "Marker" })
    cable.subscribe(marker)
    await cable.frames.take(about(marker))
    expect(cable.frames.buffered(about(identifier))).toEqual([])
  })

  it("disconnects a socket whose own session is revoked, at once (not at the next periodic recheck)", async () => {
    const owner = await signIn(server, ownerCredentials)
    const cable = await welcomed(owner.token)
    await revoke(owner.token)
    expect(await cable.frames.take(isType("disconnect"))).toEqual({
      type: "disconnect",
      reason: "unauthorized",
      reconnect: false
    })
    expect((await cable.closed).code).toBe(1000)
  }, 10_000)
})

describe("authentication at the upgrade", () => {
  const refusedLikeRails = async (cable: RawCable) => {
    await cable.opened
    expect(await cable.frames.take()).toEqual({ type: "disconnect", reason: "unauthorized", reconnect: false })
    await cable.closed
    expect(cable.frames.buffered()).toEqual([])
  }

  it("tells an unauthenticated socket `disconnect unauthorized` (no reconnect) and closes it", async () => {
    await refusedLikeRails(raw())
    await refusedLikeRails(raw({ headers: bearer("sk-svc-session-v1-nope.nope") }))
    await refusedLikeRails(raw({ headers: { authorization: "Basic b3duZXI6cGFzcw==" } }))
  })

  it("refuses a revoked bearer, and a browser session presented as a bearer", async () => {
    const revoked = await signIn(server, ownerCredentials)
    await revoke(revoked.token)
    await refusedLikeRails(raw({ headers: bearer(revoked.token) }))
    const cookie = await browserCookie(server, ownerCredentials)
    const browserToken = decodeURIComponent(cookie.split("troupe_session=")[1]!.split(";")[0]!)
    await refusedLikeRails(raw({ headers: bearer(browserToken) }))
  })

  it("accepts the browser cookie from the same origin only, and a present Authorization header wins", async () => {
    const cookie = await browserCookie(server, ownerCredentials)
    const sameOrigin = raw({ headers: { cookie, origin: server.baseUrl, "sec-fetch-site": "same-origin" } })
    expect(await sameOrigin.frames.take()).toEqual({ type: "welcome" })
    await refusedLikeRails(raw({ headers: { cookie, origin: "https://evil.example", "sec-fetch-site": "cross-site" } }))
    await refusedLikeRails(raw({ headers: { cookie, "sec-fetch-site": "same-site" } }))
    await refusedLikeRails(raw({ headers: { cookie, origin: "https://evil.example" } }))
    await refusedLikeRails(raw({ headers: { cookie, authorization: "Bearer sk-svc-session-v1-nope.nope" } }))
  })

  it("answers a plain GET (no upgrade) with the 401 envelope, or 426 when authenticated", async () => {
    const response = await request(server.baseUrl, "GET", "/agent_api/v1/cable")
    expect(response.status).toBe(401)
    expect(response.body).toEqual({ error: { code: "unauthorized", message: expect.any(String) } })
    const owner = await signIn(server, ownerCredentials)
    const signedIn = await request(server.baseUrl, "GET", "/agent_api/v1/cable", { headers: bearer(owner.token) })
    expect(signedIn.status).toBe(426)
    expect(signedIn.body.error.code).toBe("upgrade_required")
  })
})

describe("subprotocols", () => {
  it("settles on actioncable-v1-json wherever the client offers it, like Rails", async () => {
    const owner = await signIn(server, ownerCredentials)
    for (const protocols of [
      ["actioncable-v1-json", "actioncable-unsupported"],
      ["something-else", "actioncable-v1-json"]
    ]) {
      const cable = raw({ headers: bearer(owner.token), protocols })
      await cable.opened
      expect(cable.socket.protocol).toBe("actioncable-v1-json")
      expect(await cable.frames.take()).toEqual({ type: "welcome" })
    }
  })

  it("answers actioncable-unsupported when that is what the client offers first", async () => {
    const owner = await signIn(server, ownerCredentials)
    const cable = raw({ headers: bearer(owner.token), protocols: ["actioncable-unsupported"] })
    await cable.opened
    expect(cable.socket.protocol).toBe("actioncable-unsupported")
  })

  it("answers without a subprotocol when none offered is spoken (a WHATWG client then gives up)", async () => {
    const owner = await signIn(server, ownerCredentials)
    const plain = raw({ headers: bearer(owner.token), protocols: [] })
    await plain.opened
    expect(plain.socket.protocol).toBe("")
    expect(await plain.frames.take()).toEqual({ type: "welcome" })
    const foreign = raw({ headers: bearer(owner.token), protocols: ["graphql-ws"] })
    await expect(foreign.opened).rejects.toThrow("the handshake failed")
  })
})

// Quiet unless asked for: the stock client logs every step when enabled.
logger.enabled = process.env.ACTIONCABLE_DEBUG === "1"
