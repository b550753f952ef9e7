// The device flow end to end over HTTP: branches A, B and A+B, polling answers, approval in the
// browser pages, re-pair fencing, refresh rotation and revocation, and the planes the issued
// credentials open.
import { Inspection } from "@troupe/actors/Inspection"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { waitForMessages } from "../../support/actors.ts"
import { bearer, request } from "../../support/http.ts"
import { createMember, createOwner, memberCredentials, ownerCredentials } from "../../support/people.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import {
  agentFields,
  connector,
  decide,
  form,
  machineFields,
  poll,
  signedInBrowser,
  startDevice
} from "./support-device.ts"

let server: TestServer
let owner: Awaited<ReturnType<typeof signedInBrowser>>

beforeAll(async () => {
  server = await startTestServer()
  await createOwner(server)
  await createMember(server)
  owner = await signedInBrowser(server, ownerCredentials.email, ownerCredentials.password)
})
afterAll(() => server?.close())

const get = (path: string, token: string) => request(server.baseUrl, "GET", path, { headers: bearer(token) })

/** Starts, approves and polls once: the issued token response. */
const connect = async (fields: Record<string, string>, scope?: "user_private" | "account_wide") => {
  const started = await startDevice(server, fields)
  const approved = await decide(owner, started.user_code, "approve", scope)
  expect(approved.status).toBe(200)
  const issued = await poll(server, started.device_code)
  expect(issued.status).toBe(200)
  return issued.body
}

describe("device authorization", () => {
  it("answers a device code, a XXXX-XXXX user code, absolute verification URIs, 900 s and 5 s", async () => {
    const started = await startDevice(server, agentFields("answers-agent"))
    expect(started.device_code).toMatch(/^dc-svc-v1-[A-Za-z0-9_-]+$/)
    expect(started.user_code).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/)
    expect(started.verification_uri).toBe(`${server.baseUrl}/oauth/device`)
    expect(started.verification_uri_complete).toBe(`${server.baseUrl}/oauth/device?user_code=${started.user_code}`)
    expect([started.expires_in, started.interval]).toEqual([900, 5])
    expect(started.verification_uri_complete).not.toContain(started.device_code)
  })

  it("refuses malformed requests and unknown clients with the RFC 6749 error shape", async () => {
    const bad = await form(server, "/oauth/device_authorization", { client_id: connector, agent_identifier: "x" })
    expect(bad.status).toBe(400)
    expect(bad.body).toEqual({ error: "invalid_request", error_description: expect.any(String) })
    const client = await form(server, "/oauth/device_authorization", { client_id: "nope", ...agentFields("x") })
    expect(client.body.error).toBe("invalid_client")
    const media = await request(server.baseUrl, "POST", "/oauth/device_authorization", {
      raw: "client_id=svc-first-party-connector",
      headers: { "content-type": "text/plain" }
    })
    expect(media.body.error).toBe("invalid_request")
  })
})

describe("polling", () => {
  it("the first poll is never throttled; a poll before the interval is slow_down, one near it is accepted", async () => {
    const started = await startDevice(server, agentFields("polling-agent"))
    expect((await poll(server, started.device_code)).body.error).toBe("authorization_pending")
    const early = await poll(server, started.device_code)
    expect(early.body).toMatchObject({ error: "slow_down", interval: 10 })
    server.clock.advance("9.5 seconds")
    expect((await poll(server, started.device_code)).body.error).toBe("authorization_pending")
  })

  it("an approved grant is picked up at once, even by a poll right after the last", async () => {
    const started = await startDevice(server, agentFields("eager-agent"))
    expect((await poll(server, started.device_code)).body.error).toBe("authorization_pending")
    await decide(owner, started.user_code, "approve")
    const issued = await poll(server, started.device_code)
    expect(issued.status).toBe(200)
    expect((await poll(server, started.device_code)).body.error).toBe("invalid_grant")
  })

  it("a denied connection answers access_denied; an unknown device code invalid_grant", async () => {
    const started = await startDevice(server, agentFields("denied-agent"))
    expect((await decide(owner, started.user_code, "deny")).status).toBe(200)
    expect((await poll(server, started.device_code)).body.error).toBe("access_denied")
    expect((await poll(server, "dc-svc-v1-nonsense")).body.error).toBe("invalid_grant")
  })

  it("a device authorization is still pending at 899 seconds and can be approved then", async () => {
    const started = await startDevice(server, agentFields("just-in-time-agent"))
    server.clock.advance("899 seconds")
    expect((await poll(server, started.device_code)).body.error).toBe("authorization_pending")
    expect((await decide(owner, started.user_code, "approve")).status).toBe(200)
    expect((await poll(server, started.device_code)).status).toBe(200)
  })

  it("Device authorization: any --900 seconds elapse--> expired: the poll answers expired_token, the page 404", async () => {
    const started = await startDevice(server, agentFields("late-agent"))
    server.clock.advance("901 seconds")
    expect((await poll(server, started.device_code)).body.error).toBe("expired_token")
    expect((await decide(owner, started.user_code, "approve")).status).toBe(404)
  })

  it("Device authorization: pending --cancellation call--> canceled: polls answer access_denied; a consumed one answers consumed", async () => {
    const started = await startDevice(server, agentFields("cancel-agent"))
    const canceled = await form(server, "/oauth/device_authorization/cancellation", {
      client_id: connector,
      device_code: started.device_code
    })
    expect(canceled.body).toEqual({ status: "canceled" })
    expect((await poll(server, started.device_code)).body.error).toBe("access_denied")
    const other = await startDevice(server, agentFields("consumed-agent"))
    await decide(owner, other.user_code, "approve")
    expect((await poll(server, other.device_code)).status).toBe(200)
    const late = await form(server, "/oauth/device_authorization/cancellation", {
      client_id: connector,
      device_code: other.device_code
    })
    expect(late.body).toEqual({ status: "consumed" })
  })
})

describe("branch A: an agent", () => {
  it("Device authorization: pending --human approves in the browser--> consumed on the winning poll: credentials issued once", async () => {
    const started = await startDevice(server, agentFields("agent-a"))
    expect((await decide(owner, started.user_code, "approve")).status).toBe(200)
    const winning = await poll(server, started.device_code)
    expect(winning.status).toBe(200)
    const again = await poll(server, started.device_code)
    expect([again.status, again.body.error]).toEqual([400, "invalid_grant"])
    const issued = winning.body
    expect(issued).toMatchObject({ token_type: "Bearer", expires_in: 1209600, plane: "member" })
    expect(issued.access_token).toMatch(/^sk-svc-api-v1-/)
    expect(issued.refresh_token).toMatch(/^rt-svc-api-v1-/)
    expect(issued.executor_access_token).toMatch(/^sk-svc-api-v1-/)
    expect(issued.scope).toBeUndefined()
    const profile = await get("/agent_api/v1/profile", issued.access_token)
    expect(profile.status).toBe(200)
    expect(profile.body).toMatchObject({
      member: { kind: "agent", role: "member", display_name: "Agent agent-a", handle: "agent-agent-a" },
      credential: { plane: "member" },
      configuration: { tool_definitions: [], default_model: null }
    })
    expect(JSON.stringify(profile.body)).not.toMatch(/email|sk-svc|rt-svc/)
    const executor = await get("/agent_api/v1/executor", issued.executor_access_token)
    expect(executor.body.executor).toMatchObject({ kind: "agent_application", status: "active", credential_epoch: 1 })
  })

  it("Executor address: active --connection by the same identifier--> active, same public_id, epoch advanced: previous credentials fenced", async () => {
    const first = await connect(agentFields("agent-repair"))
    const before = (await get("/agent_api/v1/executor", first.executor_access_token)).body.executor
    const second = await connect({ ...agentFields("agent-repair"), agent_display_name: "Renamed agent" })
    for (const [path, token] of [
      ["/agent_api/v1/profile", first.access_token],
      ["/agent_api/v1/executor", first.executor_access_token]
    ] as const) {
      const refused = await get(path, token)
      expect(refused.status).toBe(401)
      expect(refused.body.error.code).toBe("unauthorized")
    }
    const after = (await get("/agent_api/v1/executor", second.executor_access_token)).body.executor
    expect(after.public_id).toBe(before.public_id)
    expect(after.credential_epoch).toBe(before.credential_epoch + 1)
    await waitForMessages(server, "executorAddress", after.public_id)
    const actor = await server.run(
      Effect.flatMap(Inspection, (inspection) => inspection.detail("executorAddress", after.public_id))
    )
    expect(actor?.journal.at(-1)?.event).toEqual({
      type: "executor.repaired",
      epoch: after.credential_epoch,
      displayName: "agent-repair app"
    })
    expect((await get("/agent_api/v1/profile", second.access_token)).body.member.display_name).toBe("Renamed agent")
    const refresh = await form(server, "/oauth/token", {
      grant_type: "refresh_token",
      refresh_token: first.refresh_token,
      client_id: connector
    })
    expect(refresh.body.error).toBe("invalid_grant")
  })

  it("Device authorization: pending --human approves in the browser, not the steward--> refused (403), still pending", async () => {
    await connect(agentFields("owned-agent"))
    const member = await signedInBrowser(server, memberCredentials.email, memberCredentials.password)
    const started = await startDevice(server, agentFields("owned-agent"))
    const refused = await decide(member, started.user_code, "approve")
    expect(refused.status).toBe(403)
    expect((await poll(server, started.device_code)).body.error).toBe("authorization_pending")
  })
})

describe("branch B: a machine", () => {
  it("issues a transport credential only; a fresh standalone machine takes the scope the human chose", async () => {
    const issued = await connect(machineFields("runner-b"), "account_wide")
    expect(issued).toMatchObject({ plane: "executor_transport", token_type: "Bearer" })
    expect(issued.executor_access_token).toBeUndefined()
    const executor = await get("/agent_api/v1/executor", issued.access_token)
    expect(executor.body.executor).toMatchObject({ kind: "runner", display_name: "Runner runner-b" })
    expect((await get("/agent_api/v1/profile", issued.access_token)).status).toBe(401)
  })

  it("Device authorization: pending --poll, live machine registration kind differs--> invalidated: poll answers access_denied", async () => {
    await connect(machineFields("drift-machine"), "user_private")
    const started = await startDevice(server, machineFields("drift-machine", { executor_kind: "tool_provider" }))
    await decide(owner, started.user_code, "approve")
    expect((await poll(server, started.device_code)).body.error).toBe("access_denied")
  })

  it("Executor address: active --explicit revocation (its actor)--> revoked: transport fenced at once; a new connection creates a new address", async () => {
    const issued = await connect(machineFields("revoked-runner"), "user_private")
    const executor = (await get("/agent_api/v1/executor", issued.access_token)).body.executor
    const { ActorHost } = await import("@troupe/actors/ActorHost")
    const { Effect } = await import("effect")
    const outcome = await server.run(
      Effect.flatMap(ActorHost, (host) => host.send("executorAddress", executor.public_id, { type: "executor.revoke" }))
    )
    expect(outcome).toMatchObject({ _tag: "Accepted", state: "revoked" })
    expect((await get("/agent_api/v1/executor", issued.access_token)).status).toBe(401)
    const fresh = await connect(machineFields("revoked-runner"), "account_wide")
    const next = (await get("/agent_api/v1/executor", fresh.access_token)).body.executor
    expect(next.public_id).not.toBe(executor.public_id)
  })
})

describe("branch A+B: an agent and its runner", () => {
  it("commits both halves with two refresh lineages", async () => {
    const issued = await connect({ ...agentFields("combined-agent"), ...machineFields("combined-runner") })
    expect(issued.plane).toBe("member")
    expect(issued.runner).toMatchObject({ token_type: "Bearer", expires_in: 1209600 })
    expect(issued.runner.refresh_token).not.toBe(issued.refresh_token)
    expect((await get("/agent_api/v1/executor", issued.runner.access_token)).body.executor.kind).toBe("runner")
    const rotatedRunner = await form(server, "/oauth/token", {
      grant_type: "refresh_token",
      refresh_token: issued.runner.refresh_token,
      client_id: connector
    })
    expect(rotatedRunner.status).toBe(200)
    expect((await get("/agent_api/v1/profile", issued.access_token)).status).toBe(200)
  })
})

describe("refresh and revoke", () => {
  it("rotates a lineage; reusing a superseded refresh token ends the lineage", async () => {
    const issued = await connect(agentFields("rotating-agent"))
    const rotated = await form(server, "/oauth/token", {
      grant_type: "refresh_token",
      refresh_token: issued.refresh_token,
      client_id: connector
    })
    expect(rotated.status).toBe(200)
    expect(rotated.body.access_token).not.toBe(issued.access_token)
    expect((await get("/agent_api/v1/profile", issued.access_token)).status).toBe(401)
    expect((await get("/agent_api/v1/profile", rotated.body.access_token)).status).toBe(200)
    const reused = await form(server, "/oauth/token", {
      grant_type: "refresh_token",
      refresh_token: issued.refresh_token,
      client_id: connector
    })
    expect(reused.body.error).toBe("invalid_grant")
    expect((await get("/agent_api/v1/profile", rotated.body.access_token)).status).toBe(401)
  })

  it("revoking a refresh token ends its lineage; the answer is always 200 and empty", async () => {
    const issued = await connect(agentFields("revoked-agent"))
    const revoked = await form(server, "/oauth/revoke", { client_id: connector, token: issued.refresh_token })
    expect(revoked.status).toBe(200)
    expect(revoked.body).toBeUndefined()
    expect((await get("/agent_api/v1/profile", issued.access_token)).status).toBe(401)
    expect((await form(server, "/oauth/revoke", { client_id: connector, token: "whatever" })).status).toBe(200)
  })

  it("access tokens are unusable at or after 1209600 seconds and never extended", async () => {
    const issued = await connect(agentFields("expiring-agent"))
    server.clock.advance("1209599 seconds")
    expect((await get("/agent_api/v1/profile", issued.access_token)).status).toBe(200)
    server.clock.advance("1 second")
    expect((await get("/agent_api/v1/profile", issued.access_token)).status).toBe(401)
  })
})

it("serves RFC 8414 metadata", async () => {
  const metadata = await request(server.baseUrl, "GET", "/.well-known/oauth-authorization-server")
  expect(metadata.body).toMatchObject({
    token_endpoint: `${server.baseUrl}/oauth/token`,
    device_authorization_endpoint: `${server.baseUrl}/oauth/device_authorization`,
    revocation_endpoint: `${server.baseUrl}/oauth/revoke`,
    code_challenge_methods_supported: ["S256"]
  })
})

describe("PUBLIC_BASE_URL with a path (behind a proxy that strips the prefix)", () => {
  it("keeps the path in the metadata, the verification URIs and the setup link", async () => {
    const prefixed = await startTestServer({ publicBasePath: "/troupe" })
    try {
      const at = `${prefixed.baseUrl}/troupe`
      const uninitialized = await form(prefixed, "/oauth/device_authorization", {
        client_id: connector,
        ...agentFields("prefixed-agent")
      })
      expect([uninitialized.status, uninitialized.body.initialization_uri]).toEqual([409, `${at}/setup`])
      const metadata = await request(prefixed.baseUrl, "GET", "/.well-known/oauth-authorization-server")
      expect(metadata.body).toMatchObject({
        issuer: at,
        authorization_endpoint: `${at}/oauth/authorize`,
        token_endpoint: `${at}/oauth/token`,
        device_authorization_endpoint: `${at}/oauth/device_authorization`,
        revocation_endpoint: `${at}/oauth/revoke`
      })
      await createOwner(prefixed)
      const started = await startDevice(prefixed, agentFields("prefixed-agent"))
      expect(started.verification_uri).toBe(`${at}/oauth/device`)
      expect(started.verification_uri_complete).toBe(`${at}/oauth/device?user_code=${started.user_code}`)
    } finally {
      await prefixed.close()
    }
  })
})
