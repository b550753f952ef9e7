// End to end: SIGTERM to `troupe serve` ends the long-lived connections at once (a cable socket
// hears `disconnect {reason: "server_restart", reconnect: true}` and is closed with 1012) while an
// ordinary request in flight keeps the stop's grace and is answered; the server logs the stop's
// beginning, naming the signal, and its end, and exits 0.
import { afterAll, beforeAll, expect, it } from "vitest"
import { isType, openRaw } from "../http/cable/support-cable.ts"
import { freshDatabase, type TestDatabase } from "../support/database.ts"
import { holdRequest } from "../support/held-request.ts"
import { bearer, request } from "../support/http.ts"
import { createOwner, ownerCredentials } from "../support/people.ts"
import { within } from "../support/processes.ts"
import { startTestServer } from "../support/server.ts"
import { killAll, troupeServe } from "../support/troupe-process.ts"

let database: TestDatabase

beforeAll(async () => {
  database = await freshDatabase()
  const preparing = await startTestServer({ database: { ...database, drop: async () => {} } })
  await createOwner(preparing)
  await preparing.close()
})
afterAll(async () => {
  await killAll()
  await database?.drop()
})

it("SIGTERM tells a cable socket disconnect server_restart at once; a request in flight still gets its grace", {
  timeout: 120_000
}, async () => {
  const server = await troupeServe(database.config)
  const signedIn = await request(server.baseUrl, "POST", "/api/v1/session", { body: ownerCredentials })
  expect(signedIn.status).toBe(201)
  const cable = openRaw(server, { headers: bearer(signedIn.body.token) })
  expect(await cable.frames.take()).toEqual({ type: "welcome" })
  const held = await holdRequest(server.baseUrl, "POST", "/api/v1/session", ownerCredentials)

  process.kill(server.serverPid, "SIGTERM")
  expect(await cable.frames.take(isType("disconnect"))).toEqual({
    type: "disconnect",
    reason: "server_restart",
    reconnect: true
  })
  expect(await cable.closed).toEqual({ code: 1012, reason: "server_restart" })
  // The socket did not wait for the grace: the request in flight is still unanswered, the server up.
  expect(held.answeredSoFar()).toBe("")
  expect(server.output()).not.toContain("Troupe stopped")
  expect((await held.release()).status).toBe(201)

  expect(await within(15_000, "the server to exit after SIGTERM", server.exited)).toEqual({ code: 0, signal: null })
  await within(15_000, "the server's output to close", server.closed)
  const lines = server.output().split("\n")
  const stopping = lines.findIndex((line) =>
    /INFO \(#\d+\): Troupe stopping \(SIGTERM\): cable sockets and event streams end now; requests in flight have up to 5s$/.test(
      line
    )
  )
  const stopped = lines.findIndex((line) => /INFO \(#\d+\): Troupe stopped \(\d+ ms\)$/.test(line))
  expect(stopping).toBeGreaterThan(-1)
  expect(stopped).toBeGreaterThan(stopping)
})
