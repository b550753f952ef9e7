// Device-flow edges: before first boot, the application client's device flow, expiry by the
// durable timer across a restart, and registration drift of scope or agent binding.

import { Inspection } from "@troupe/actors/Inspection"
import { TimerRunner } from "@troupe/actors/TimerRunner"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freshDatabase, type TestDatabase } from "../../support/database.ts"
import { bearer, request } from "../../support/http.ts"
import { createOwner, ownerCredentials } from "../../support/people.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { agentFields, decide, form, machineFields, poll, signedInBrowser, startDevice } from "./support-device.ts"

describe("before first boot", () => {
  it("both clients are answered 409 initialization_required with an initialization_uri", async () => {
    const server = await startTestServer()
    try {
      for (const clientId of ["svc-first-party-connector", "svc-application"]) {
        const response = await form(server, "/oauth/device_authorization", {
          client_id: clientId,
          ...agentFields("early")
        })
        expect(response.status).toBe(409)
        expect(response.body).toMatchObject({
          error: "initialization_required",
          initialization_uri: `${server.baseUrl}/setup`
        })
      }
    } finally {
      await server.close()
    }
  })
})

describe("after first boot", () => {
  let server: TestServer
  let owner: Awaited<ReturnType<typeof signedInBrowser>>
  beforeAll(async () => {
    server = await startTestServer()
    await createOwner(server)
    owner = await signedInBrowser(server, ownerCredentials.email, ownerCredentials.password)
  })
  afterAll(() => server?.close())

  it("the application client's device flow answers the token response with the human lineage and the agent", async () => {
    const started = await form(server, "/oauth/device_authorization", {
      client_id: "svc-application",
      ...agentFields("app-device")
    })
    await decide(owner, started.body.user_code, "approve")
    const issued = await poll(server, started.body.device_code, "svc-application")
    expect(issued.body).toMatchObject({
      plane: "platform",
      scope: "application",
      user: { role: "owner", display_name: "Olive Owner" },
      agent: { plane: "member" }
    })
    expect(
      (await request(server.baseUrl, "GET", "/api/v1/profile", { headers: bearer(issued.body.access_token) })).status
    ).toBe(200)
    expect((await poll(server, started.body.device_code)).body.error).toBe("invalid_grant")
  })

  it("a refused request names the parameter at fault in error_description", async () => {
    const refused = await form(server, "/oauth/device_authorization", {
      client_id: "svc-first-party-connector",
      ...agentFields("named-fault"),
      agent_display_name: "   "
    })
    expect([refused.status, refused.body]).toEqual([
      400,
      {
        error: "invalid_request",
        error_description: "agent_display_name must be nonblank, printable and at most 100 characters"
      }
    ])
    const unknownClient = await form(server, "/oauth/device_authorization", {
      client_id: "someone-else",
      ...agentFields("named-fault")
    })
    expect([unknownClient.status, unknownClient.body]).toEqual([
      400,
      { error: "invalid_client", error_description: "client_id is not a device-flow client" }
    ])
  })

  it("Device authorization: pending --poll, live match's scope or agent assignment differs--> invalidated: poll answers access_denied", async () => {
    const first = await startDevice(server, machineFields("scoped-2"))
    await decide(owner, first.user_code, "approve", "account_wide")
    expect((await poll(server, first.device_code)).status).toBe(200)
    const bound = await startDevice(server, { ...agentFields("binder"), ...machineFields("scoped-2") })
    await decide(owner, bound.user_code, "approve")
    expect((await poll(server, bound.device_code)).body.error).toBe("access_denied")
  })
})

describe("expiry by the durable timer, across a restart", () => {
  let database: TestDatabase
  beforeAll(async () => {
    database = await freshDatabase()
  })
  afterAll(() => database?.drop())

  it("Device authorization: any --900 seconds elapse--> expired: while the server is down, by the durable timer; expired_token after it starts again", async () => {
    const first = await startTestServer({ database: { ...database, drop: async () => {} } })
    await createOwner(first)
    const started = await startDevice(first, agentFields("sleeper"))
    const id = await first.run(
      Effect.flatMap(Inspection, (inspection) => inspection.list({ kind: "deviceAuthorization", limit: 10 }))
    )
    await first.close()
    const second = await startTestServer({ database: { ...database, drop: async () => {} } })
    try {
      second.clock.advance("901 seconds")
      await second.run(Effect.flatMap(TimerRunner, (runner) => runner.runDue))
      const after = await second.run(
        Effect.flatMap(Inspection, (inspection) => inspection.detail("deviceAuthorization", id[0]!.actor_id))
      )
      expect(after?.row.state_value).toBe("expired")
      expect(after?.journal.at(-1)?.event).toEqual({ type: "device.expire" })
      expect((await poll(second, started.device_code)).body.error).toBe("expired_token")
    } finally {
      await second.close()
    }
  })
})
