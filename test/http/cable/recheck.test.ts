// The cable's periodic recheck of authority (spec "Cable": at least every 30 s), with the
// interval shortened so the tests need not wait: changes that no bus step announces (a
// deactivated user, a changed role, an expired session or access token) still end the socket.
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { bearer } from "../../support/http.ts"
import { createHuman, createOwner, ownerCredentials, personalToken } from "../../support/people.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { isType, openRaw, type RawCable, signIn } from "./support-cable.ts"

let server: TestServer

beforeAll(async () => {
  server = await startTestServer({
    trustedProxies: ["127.0.0.1/32"],
    cableTiming: { recheckInterval: "200 millis", pingInterval: "100 millis" }
  })
  await createOwner(server)
})
afterAll(() => server?.close())

const sockets: Array<RawCable> = []
afterEach(() => {
  for (const cable of sockets.splice(0)) cable.socket.close()
})

const welcomed = async (token: string) => {
  const cable = openRaw(server, { headers: bearer(token) })
  sockets.push(cable)
  expect(await cable.frames.take()).toEqual({ type: "welcome" })
  return cable
}

const sql = (run: (sql: SqlClient) => Effect.Effect<unknown, unknown>) => server.run(Effect.flatMap(SqlClient, run))

let people = 0
const newPerson = async (role: "admin" | "member") => {
  const credentials = { email: `person${++people}@example.com`, password: "a long password" }
  await createHuman(server, { ...credentials, displayName: `Person ${people}`, role })
  return credentials
}

describe("the periodic recheck", () => {
  it("pings on the configured interval", async () => {
    const owner = await signIn(server, ownerCredentials)
    const cable = await welcomed(owner.token)
    const first = await cable.frames.take(isType("ping"))
    const second = await cable.frames.take(isType("ping"))
    expect(second.message).toBeGreaterThanOrEqual(first.message)
  })

  it("disconnects a socket whose user was deactivated (no reconnect)", async () => {
    const person = await signIn(server, await newPerson("admin"))
    const cable = await welcomed(person.token)
    await sql((sql) => sql`UPDATE users SET status = 'inactive' WHERE email = ${`person${people}@example.com`}`)
    expect(await cable.frames.take(isType("disconnect"))).toEqual({
      type: "disconnect",
      reason: "unauthorized",
      reconnect: false
    })
    await cable.closed
  })

  it("disconnects a socket whose session expired (no reconnect)", async () => {
    const owner = await signIn(server, ownerCredentials)
    const cable = await welcomed(owner.token)
    await sql(
      (sql) => sql`UPDATE sessions SET expires_at = now() - interval '1 second' WHERE public_id = ${owner.actorId}`
    )
    expect(await cable.frames.take(isType("disconnect"))).toEqual({
      type: "disconnect",
      reason: "unauthorized",
      reconnect: false
    })
  })

  it("asks a socket whose role changed to reconnect, and the new role no longer sees actors", async () => {
    const credentials = await newPerson("admin")
    const person = await signIn(server, credentials)
    const owner = await signIn(server, ownerCredentials)
    const cable = await welcomed(person.token)
    const identifier = JSON.stringify({ channel: "ActorChannel", kind: "apiSession", id: owner.actorId })
    cable.subscribe(identifier)
    expect(await cable.frames.take((frame) => frame.identifier === identifier)).toEqual({
      type: "confirm_subscription",
      identifier
    })
    await sql((sql) => sql`UPDATE users SET role = 'member' WHERE email = ${credentials.email}`)
    expect(await cable.frames.take(isType("disconnect"))).toEqual({
      type: "disconnect",
      reason: "unauthorized",
      reconnect: true
    })
    const again = await welcomed(person.token)
    again.subscribe(identifier)
    expect(await again.frames.take((frame) => frame.identifier === identifier)).toEqual({
      type: "reject_subscription",
      identifier
    })
  })

  it("disconnects a socket whose access token reached its 1209600 seconds (no reconnect)", async () => {
    const member = await createHuman(server, {
      email: "tess@example.com",
      password: "a long password",
      displayName: "Tess",
      role: "member"
    })
    const cable = await welcomed(await personalToken(server, member, "member"))
    server.clock.advance("1209600 seconds")
    expect(await cable.frames.take(isType("disconnect"))).toEqual({
      type: "disconnect",
      reason: "unauthorized",
      reconnect: false
    })
  })
})
