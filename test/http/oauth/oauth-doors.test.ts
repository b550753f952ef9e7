// The OAuth doors' answers over a real server: every device-grant poll answer in RFC 8628's shape,
// the token endpoint's refusal of a grant its client may not use, RFC 7009 revocation of an access
// token and its edges, and the per-IP rate limits of device_authorization, cancellation and revoke
// (SUPPLEMENT "OAuth and device connection").
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { bearer, type JsonResponse, request } from "../../support/http.ts"
import { createOwner, ownerCredentials } from "../../support/people.ts"
import { serverNow } from "../../support/schedules.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { agentFields, connector, decide, deviceGrant, machineFields, poll, signedInBrowser } from "./support-device.ts"

let server: TestServer
let owner: Awaited<ReturnType<typeof signedInBrowser>>
// Each test sends from its own source address so the per-IP budgets do not spill over.
let nextAddress = 1
const newAddress = () => `198.51.100.${nextAddress++}`

beforeAll(async () => {
  server = await startTestServer({ trustedProxies: ["127.0.0.1/32"] })
  await createOwner(server)
  owner = await signedInBrowser(server, ownerCredentials.email, ownerCredentials.password)
})
afterAll(() => server?.close())

const post = (path: string, fields: Record<string, string>, address = newAddress()) =>
  request(server.baseUrl, "POST", path, {
    raw: new URLSearchParams(fields).toString(),
    headers: { "content-type": "application/x-www-form-urlencoded", "x-forwarded-for": address }
  })

const start = async (fields: Record<string, string>) => {
  const started = await post("/oauth/device_authorization", { client_id: connector, ...fields })
  expect(started.status).toBe(200)
  return started.body as { device_code: string; user_code: string }
}

const connect = async (fields: Record<string, string>, scope?: "user_private") => {
  const started = await start(fields)
  expect((await decide(owner, started.user_code, "approve", scope)).status).toBe(200)
  const issued = await poll(server, started.device_code)
  expect(issued.status).toBe(200)
  return issued.body
}

/** RFC 6749 §5.2 as RFC 8628 §3.5 uses it: 400, {error, error_description}, never cached. */
const expectOAuthError = (response: JsonResponse, error: string, extra: Record<string, unknown> = {}) => {
  expect([response.status, response.body]).toEqual([400, { error, error_description: expect.any(String), ...extra }])
  expect(response.headers.get("cache-control")).toBe("no-store")
}

describe("device-grant poll answers (RFC 8628 §3.5)", () => {
  it("authorization_pending, slow_down with the new interval, access_denied, expired_token, invalid_grant", async () => {
    const pending = await start(agentFields("shape-pending"))
    expectOAuthError(await poll(server, pending.device_code), "authorization_pending")
    expectOAuthError(await poll(server, pending.device_code), "slow_down", { interval: 10 })

    const denied = await start(agentFields("shape-denied"))
    await decide(owner, denied.user_code, "deny")
    expectOAuthError(await poll(server, denied.device_code), "access_denied")

    server.clock.advance("900 seconds")
    expectOAuthError(await poll(server, pending.device_code), "expired_token")
    expectOAuthError(await poll(server, "dc-svc-v1-unknown"), "invalid_grant")
  })

  it("a device code polled by the other client is invalid_grant, and stays good for its own", async () => {
    const started = await start(agentFields("shape-client"))
    expectOAuthError(await poll(server, started.device_code, "svc-application"), "invalid_grant")
    await decide(owner, started.user_code, "approve")
    expect((await poll(server, started.device_code)).status).toBe(200)
  })
})

describe("answers are never cached (SUPPLEMENT: Cache-Control no-store)", () => {
  it("device authorization (form or JSON), the token response, its refresh, cancellation and revoke", async () => {
    const noStore = (response: JsonResponse) => {
      expect(response.status, response.text).toBe(200)
      expect(response.headers.get("cache-control")).toBe("no-store")
    }
    const viaJson = await request(server.baseUrl, "POST", "/oauth/device_authorization", {
      body: { client_id: connector, ...agentFields("uncached-json") },
      headers: { "x-forwarded-for": newAddress() }
    })
    noStore(viaJson)
    expect(viaJson.body).toMatchObject({ device_code: expect.any(String), expires_in: 900, interval: 5 })
    const viaForm = await post("/oauth/device_authorization", { client_id: connector, ...agentFields("uncached") })
    noStore(viaForm)
    await decide(owner, viaForm.body.user_code, "approve")
    const issued = await poll(server, viaForm.body.device_code)
    noStore(issued)
    const refreshed = await post("/oauth/token", {
      grant_type: "refresh_token",
      refresh_token: issued.body.refresh_token,
      client_id: connector
    })
    noStore(refreshed)
    const canceled = await post("/oauth/device_authorization/cancellation", {
      client_id: connector,
      device_code: viaJson.body.device_code
    })
    noStore(canceled)
    expect(canceled.body).toEqual({ status: "canceled" })
    noStore(await post("/oauth/revoke", { client_id: connector, token: refreshed.body.refresh_token }))
  })
})

describe("the token endpoint's grants", () => {
  it("the connector has no authorization code; an unknown grant is unsupported; a lineage refreshes for its own client only", async () => {
    const code = await post("/oauth/token", {
      grant_type: "authorization_code",
      client_id: connector,
      code: "ac-svc-v1-whatever",
      redirect_uri: "http://127.0.0.1:7777/auth/callback",
      code_verifier: "a".repeat(43)
    })
    expectOAuthError(code, "unauthorized_client")
    expectOAuthError(
      await post("/oauth/token", { grant_type: "password", client_id: connector }),
      "unsupported_grant_type"
    )
    expectOAuthError(await post("/oauth/token", { client_id: connector }), "invalid_request")
    // RFC 6749 §3.2: a parameter sent without a value is treated as omitted.
    expectOAuthError(await post("/oauth/token", { grant_type: "", client_id: connector }), "invalid_request")
    expectOAuthError(await post("/oauth/token", { grant_type: deviceGrant, client_id: "nope" }), "invalid_client")

    const issued = await connect(agentFields("grant-lineage"))
    const refresh = (clientId: string) =>
      post("/oauth/token", { grant_type: "refresh_token", refresh_token: issued.refresh_token, client_id: clientId })
    expectOAuthError(await refresh("svc-application"), "invalid_grant")
    expect((await refresh(connector)).status).toBe(200)
  })
})

describe("a parameter given twice is invalid_request (RFC 6749 §3.1)", () => {
  const json = (path: string, text: string) =>
    request(server.baseUrl, "POST", path, {
      raw: text,
      headers: { "content-type": "application/json", "x-forwarded-for": newAddress() }
    })

  it("in a JSON body at the token, cancellation and revoke doors, as in a form", async () => {
    const issued = await connect(agentFields("twice-json"))
    const refresh = `"grant_type": "refresh_token", "client_id": "${connector}"`
    expectOAuthError(
      await json(
        "/oauth/token",
        `{${refresh}, "refresh_token": "rt-svc-api-v1-other", "refresh_token": "${issued.refresh_token}"}`
      ),
      "invalid_request"
    )
    const pending = await start(agentFields("twice-cancel"))
    expectOAuthError(
      await json(
        "/oauth/device_authorization/cancellation",
        `{"client_id": "${connector}", "device_code": "dc-svc-v1-other", "device_code": "${pending.device_code}"}`
      ),
      "invalid_request"
    )
    expectOAuthError(
      await json("/oauth/revoke", `{"client_id": "${connector}", "token": "x", "token": "${issued.refresh_token}"}`),
      "invalid_request"
    )
    expectOAuthError(
      await post("/oauth/token", { grant_type: "refresh_token", client_id: connector, refresh_token: "" }),
      "invalid_request"
    )
    // Nothing above took effect: the lineage still rotates, and the authorization is still pending.
    const rotated = await json("/oauth/token", `{${refresh}, "refresh_token": "${issued.refresh_token}"}`)
    expect(rotated.status).toBe(200)
    expectOAuthError(await poll(server, pending.device_code), "authorization_pending")
  })
})

describe("another method at a POST-only door is 405 with Allow: POST (RFC 9110 §15.5.6)", () => {
  it("GET, HEAD, PUT, PATCH, DELETE and OPTIONS, in the OAuth error shape; POST still answers", async () => {
    const doors = [
      "/oauth/token",
      "/oauth/revoke",
      "/oauth/device_authorization",
      "/oauth/device_authorization/cancellation"
    ]
    for (const path of doors) {
      for (const method of ["GET", "HEAD", "PUT", "PATCH", "DELETE", "OPTIONS"]) {
        const answer = await request(server.baseUrl, method, path)
        expect([path, method, answer.status, answer.headers.get("allow")]).toEqual([path, method, 405, "POST"])
        expect(answer.headers.get("cache-control")).toBe("no-store")
        if (method !== "HEAD") expect(answer.body).toEqual({ error: "invalid_request", error_description: "Use POST" })
      }
      expect((await post(path, {})).status).toBe(400)
    }
    expect((await request(server.baseUrl, "GET", "/oauth/tokens")).status).toBe(404)
  })
})

describe("POST /oauth/revoke (RFC 7009)", () => {
  const get = (path: string, token: string) => request(server.baseUrl, "GET", path, { headers: bearer(token) })

  it("an access token ends itself at once; its lineage still rotates", async () => {
    const issued = await connect(agentFields("revoked-access"))
    const revoked = await post("/oauth/revoke", {
      client_id: connector,
      token: issued.access_token,
      token_type_hint: "refresh_token"
    })
    expect([revoked.status, revoked.text]).toEqual([200, ""])
    expect((await get("/agent_api/v1/profile", issued.access_token)).status).toBe(401)
    expect((await get("/agent_api/v1/executor", issued.executor_access_token)).status).toBe(200)
    const runner = await connect(machineFields("revoked-transport"), "user_private")
    expect((await post("/oauth/revoke", { client_id: connector, token: runner.access_token })).status).toBe(200)
    expect((await get("/agent_api/v1/executor", runner.access_token)).status).toBe(401)
    const rotated = await post("/oauth/token", {
      grant_type: "refresh_token",
      refresh_token: issued.refresh_token,
      client_id: connector
    })
    expect(rotated.status).toBe(200)
    expect((await get("/agent_api/v1/profile", rotated.body.access_token)).status).toBe(200)
  })

  it("a token issued to the other client is not revoked (RFC 7009 §2.1), yet answered 200 like an unknown one", async () => {
    const issued = await connect(agentFields("revoked-elsewhere"))
    for (const token of [issued.refresh_token, issued.access_token]) {
      const answer = await post("/oauth/revoke", { client_id: "svc-application", token })
      expect([answer.status, answer.text]).toEqual([200, ""])
    }
    expect((await get("/agent_api/v1/profile", issued.access_token)).status).toBe(200)
    const rotated = await post("/oauth/token", {
      grant_type: "refresh_token",
      refresh_token: issued.refresh_token,
      client_id: connector
    })
    expect(rotated.status).toBe(200)
    expect((await post("/oauth/revoke", { client_id: connector, token: rotated.body.refresh_token })).status).toBe(200)
    expect((await get("/agent_api/v1/profile", rotated.body.access_token)).status).toBe(401)
  })

  it("an unknown or already revoked token is 200; a request without client or token is refused", async () => {
    const issued = await connect(agentFields("revoked-twice"))
    for (const token of [issued.refresh_token, issued.refresh_token, "rt-svc-api-v1-unknown", "anything"]) {
      const answer = await post("/oauth/revoke", { client_id: connector, token })
      expect([answer.status, answer.text]).toEqual([200, ""])
    }
    expectOAuthError(await post("/oauth/revoke", { token: issued.access_token }), "invalid_client")
    expectOAuthError(await post("/oauth/revoke", { client_id: connector }), "invalid_request")
    expect((await get("/agent_api/v1/profile", issued.access_token)).status).toBe(401)
  })
})

describe("per-IP rate limits: then 429 rate_limited with Retry-After, until the window passes", () => {
  const exhaust = async (path: string, limit: number, fields: () => Record<string, string>) => {
    // Windows are fixed minutes since the epoch: start the burst at a window's start, so it cannot
    // straddle two windows however slowly the requests go.
    const now = await serverNow(server)
    server.clock.advance(`${60_000 - (now % 60_000)} millis`)
    const address = newAddress()
    for (let attempt = 1; attempt <= limit; attempt++) {
      expect((await post(path, fields(), address)).status).not.toBe(429)
    }
    const limited = await post(path, fields(), address)
    expect([limited.status, limited.body]).toEqual([
      429,
      { error: "rate_limited", error_description: expect.any(String) }
    ])
    const retryAfter = Number(limited.headers.get("retry-after"))
    expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60).toBe(true)
    expect((await post(path, fields())).status).not.toBe(429)
    server.clock.advance(`${retryAfter} seconds`)
    expect((await post(path, fields(), address)).status).not.toBe(429)
  }

  it("device_authorization: 30 starts a minute", async () => {
    let n = 0
    await exhaust("/oauth/device_authorization", 30, () => ({ client_id: connector, ...agentFields(`burst-${n++}`) }))
  })

  it("cancellation: 60 a minute", async () => {
    await exhaust("/oauth/device_authorization/cancellation", 60, () => ({
      client_id: connector,
      device_code: "dc-svc-v1-unknown"
    }))
  })

  it("revoke: 60 a minute", async () => {
    await exhaust("/oauth/revoke", 60, () => ({ client_id: connector, token: "unknown" }))
  })
})
