// Which credentials open the cable (SUPPLEMENT "Cable": a member or transport credential, an API
// session bearer or the same-origin browser cookie) and what ends them while open: a platform-plane
// access token and a refresh token are told unauthorized at the upgrade; a human's member token
// opens the cable but not the executor inbox; removing an agent ends its member socket and its
// application's inbox socket at once (spec "Agent application address: agent removal").
import { afterAll, afterEach, beforeAll, expect, it } from "vitest"
import { bearer, csrfTokenIn, request } from "../../support/http.ts"
import { createOwner, ownerCredentials, personalToken } from "../../support/people.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { agentFields, decide, poll, signedInBrowser, startDevice } from "../oauth/support-device.ts"
import { about, isType, openRaw, type RawCable } from "./support-cable.ts"

let server: TestServer
let owner: Awaited<ReturnType<typeof createOwner>>
let browser: Awaited<ReturnType<typeof signedInBrowser>>

beforeAll(async () => {
  server = await startTestServer()
  owner = await createOwner(server)
  browser = await signedInBrowser(server, ownerCredentials.email, ownerCredentials.password)
})
afterAll(() => server?.close())

const sockets: Array<RawCable> = []
afterEach(() => {
  for (const cable of sockets.splice(0)) cable.socket.close()
})

const open = (token: string) => {
  const cable = openRaw(server, { headers: bearer(token) })
  sockets.push(cable)
  return cable
}

const unauthorized = { type: "disconnect", reason: "unauthorized", reconnect: false }
const inbox = JSON.stringify({ channel: "ExecutorInboxChannel" })

const connectAgent = async (identifier: string) => {
  const started = await startDevice(server, agentFields(identifier))
  await decide(browser, started.user_code, "approve")
  return (await poll(server, started.device_code)).body
}

it("a platform-plane access token and a refresh token are told unauthorized at the upgrade", async () => {
  const agent = await connectAgent("cable-refresh")
  for (const token of [await personalToken(server, owner, "platform"), agent.refresh_token]) {
    const cable = open(token)
    expect(await cable.frames.take()).toEqual(unauthorized)
    await cable.closed
  }
})

it("a human's member token opens the cable, but not the executor inbox", async () => {
  const cable = open(await personalToken(server, owner, "member"))
  expect(await cable.frames.take()).toEqual({ type: "welcome" })
  cable.subscribe(inbox)
  expect((await cable.frames.take(about(inbox))).type).toBe("reject_subscription")
})

it("removing an agent tells its member socket and its application's inbox socket unauthorized at once", async () => {
  const agent = await connectAgent("cable-removed")
  const member = open(agent.access_token)
  expect(await member.frames.take()).toEqual({ type: "welcome" })
  const application = open(agent.executor_access_token)
  expect(await application.frames.take()).toEqual({ type: "welcome" })
  application.subscribe(inbox)
  expect((await application.frames.take(about(inbox))).type).toBe("confirm_subscription")

  const agentId = (
    await request(server.baseUrl, "GET", "/agent_api/v1/profile", { headers: bearer(agent.access_token) })
  ).body.member.public_id
  const page = await browser.get("/agents")
  expect((await browser.post(`/agents/${agentId}/remove`, { csrf_token: csrfTokenIn(page.text) })).status).toBe(303)

  expect(await member.frames.take(isType("disconnect"))).toEqual(unauthorized)
  expect(await application.frames.take(isType("disconnect"))).toEqual(unauthorized)
  await Promise.all([member.closed, application.closed])
})
