// ExecutorInboxChannel: an executor's transport credential on the cable, presence marks while
// subscribed (online, then offline), pongs, and fencing: a re-pair or a revocation of the
// address closes the old socket at once.
import { ActorHost } from "@troupe/actors/ActorHost"
import { Effect } from "effect"
import { afterAll, beforeAll, expect, it } from "vitest"
import { bearer, request } from "../../support/http.ts"
import { createOwner, ownerCredentials } from "../../support/people.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { agentFields, decide, machineFields, poll, signedInBrowser, startDevice } from "../oauth/support-device.ts"
import { about, isType, openRaw } from "./support-cable.ts"

let server: TestServer
let owner: Awaited<ReturnType<typeof signedInBrowser>>
let agentToken: string

const connect = async (fields: Record<string, string>, scope?: "user_private" | "account_wide") => {
  const started = await startDevice(server, fields)
  await decide(owner, started.user_code, "approve", scope)
  return (await poll(server, started.device_code)).body
}

const discovered = async (publicId: string) =>
  (await request(server.baseUrl, "GET", `/agent_api/v1/executors/${publicId}`, { headers: bearer(agentToken) })).body
    .executor

const inbox = JSON.stringify({ channel: "ExecutorInboxChannel" })

beforeAll(async () => {
  server = await startTestServer()
  await createOwner(server)
  owner = await signedInBrowser(server, ownerCredentials.email, ownerCredentials.password)
  agentToken = (await connect(agentFields("watcher"))).access_token
})
afterAll(() => server?.close())

const subscribed = async (token: string) => {
  const cable = openRaw(server, { headers: bearer(token) })
  await cable.frames.take(isType("welcome"))
  cable.subscribe(inbox)
  await cable.frames.take((frame: { type?: string }) => about(inbox)(frame) && frame.type === "confirm_subscription")
  return cable
}

it("a subscribed executor is online; pongs mark it seen; it is offline after it leaves", async () => {
  const runner = await connect(machineFields("inbox-runner"), "account_wide")
  const self = (
    await request(server.baseUrl, "GET", "/agent_api/v1/executor", { headers: bearer(runner.access_token) })
  ).body.executor
  expect((await discovered(self.public_id)).presence).toBe("not_yet_seen")
  const cable = await subscribed(runner.access_token)
  const online = await discovered(self.public_id)
  expect(online.presence).toBe("online")
  expect(online.connected_at).toEqual(expect.any(String))
  cable.send({ command: "message", identifier: inbox, data: JSON.stringify({ action: "pong" }) })
  cable.unsubscribe(inbox)
  cable.socket.close()
  await cable.closed
  await expect.poll(async () => (await discovered(self.public_id)).presence, { timeout: 5000 }).toBe("offline")
})

it("a subscribed executor stays online while it was heard from within 30 seconds, then reads offline", async () => {
  const runner = await connect(machineFields("quiet-runner"), "account_wide")
  const self = (
    await request(server.baseUrl, "GET", "/agent_api/v1/executor", { headers: bearer(runner.access_token) })
  ).body.executor
  const cable = await subscribed(runner.access_token)
  server.clock.advance("29 seconds")
  expect((await discovered(self.public_id)).presence).toBe("online")
  server.clock.advance("2 seconds")
  expect((await discovered(self.public_id)).presence).toBe("offline")
  cable.socket.close()
  await cable.closed
})

it("the inbox is for executors: a human session is rejected, and an executor may not watch actors", async () => {
  const runner = await connect(machineFields("curious-runner"), "account_wide")
  const cable = await subscribed(runner.access_token)
  const actor = JSON.stringify({
    channel: "ActorChannel",
    kind: "apiSession",
    id: "01900000-0000-7000-8000-000000000000"
  })
  cable.subscribe(actor)
  expect((await cable.frames.take(about(actor))).type).toBe("reject_subscription")
  cable.socket.close()
  const session = (await request(server.baseUrl, "POST", "/api/v1/session", { body: ownerCredentials })).body.token
  const human = openRaw(server, { headers: bearer(session) })
  await human.frames.take(isType("welcome"))
  human.subscribe(inbox)
  expect((await human.frames.take(about(inbox))).type).toBe("reject_subscription")
  human.socket.close()
})

it("a re-pair fences the previous device: its socket is told unauthorized, no reconnect", async () => {
  const first = await connect(machineFields("repaired-runner"), "user_private")
  const cable = await subscribed(first.access_token)
  await connect(machineFields("repaired-runner"), "user_private")
  const frame = await cable.frames.take(isType("disconnect"))
  expect(frame).toMatchObject({ reason: "unauthorized", reconnect: false })
  await cable.closed
})

it("revoking the address closes its subscription at once", async () => {
  const runner = await connect(machineFields("revoked-inbox-runner"), "user_private")
  const self = (
    await request(server.baseUrl, "GET", "/agent_api/v1/executor", { headers: bearer(runner.access_token) })
  ).body.executor
  const cable = await subscribed(runner.access_token)
  await server.run(
    Effect.flatMap(ActorHost, (host) => host.send("executorAddress", self.public_id, { type: "executor.revoke" }))
  )
  expect(await cable.frames.take(isType("disconnect"))).toMatchObject({ reason: "unauthorized", reconnect: false })
})

it("a member credential opens the cable for the member channels, not as an executor", async () => {
  const cable = openRaw(server, { headers: bearer(agentToken) })
  expect(await cable.frames.take()).toEqual({ type: "welcome" })
  cable.subscribe(inbox)
  expect((await cable.frames.take(about(inbox))).type).toBe("reject_subscription")
  cable.socket.close()
})

it("an executor stays online while any of its inbox subscriptions is open: an older socket closing never clears a newer one's mark", async () => {
  const runner = await connect(machineFields("overlapping-runner"), "account_wide")
  const self = (
    await request(server.baseUrl, "GET", "/agent_api/v1/executor", { headers: bearer(runner.access_token) })
  ).body.executor
  const pong = (cable: Awaited<ReturnType<typeof subscribed>>) =>
    cable.send({ command: "message", identifier: inbox, data: JSON.stringify({ action: "pong" }) })
  /** Closes the socket and waits until the server recorded it (its mark moves last_seen_at to now). */
  const leave = async (cable: Awaited<ReturnType<typeof subscribed>>) => {
    const before = (await discovered(self.public_id)).last_seen_at
    server.clock.advance("1 second")
    cable.socket.close()
    await cable.closed
    await expect.poll(async () => (await discovered(self.public_id)).last_seen_at, { timeout: 5000 }).not.toBe(before)
  }

  // A reconnection overlapping the old socket (the client saw it stale before the server did).
  const stale = await subscribed(runner.access_token)
  server.clock.advance("1 second")
  const fresh = await subscribed(runner.access_token)
  await leave(stale)
  expect((await discovered(self.public_id)).presence).toBe("online")
  pong(fresh)
  await expect.poll(async () => (await discovered(self.public_id)).presence, { timeout: 5000 }).toBe("online")

  // The newer of two sockets goes first: the older one, still answering, reads online again.
  server.clock.advance("1 second")
  const newer = await subscribed(runner.access_token)
  await leave(newer)
  pong(fresh)
  await expect.poll(async () => (await discovered(self.public_id)).connected_at, { timeout: 5000 }).not.toBeNull()
  expect((await discovered(self.public_id)).presence).toBe("online")

  await leave(fresh)
  expect((await discovered(self.public_id)).presence).toBe("offline")
})
