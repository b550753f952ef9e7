// Platform: session — POST/GET/DELETE /api/v1/session and GET /api/v1/profile, every rule of the
// spec's "Platform: session", "Platform plane" and Limits rows, over a real server.
import { sessionLoginLimit } from "@troupe/domain/kernel/RateLimiter"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startOfWindow } from "../../support/budget.ts"
import { Browser, bearer, csrfTokenIn, request } from "../../support/http.ts"
import { apiToken, createHuman, createOwner, memberCredentials, ownerCredentials } from "../../support/people.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
// Each test signs in from its own source address so the per-IP login budget does not spill over.
let nextAddress = 1
const fromNewAddress = () => ({ "x-forwarded-for": `198.51.100.${nextAddress++}` })

beforeAll(async () => {
  server = await startTestServer({ trustedProxies: ["127.0.0.1/32"] })
  await createOwner(server)
  await createHuman(server, {
    email: "member@example.com",
    password: "member password",
    displayName: "Mo Member",
    role: "member"
  })
})
afterAll(() => server?.close())

const signIn = (body: unknown, headers: Record<string, string> = fromNewAddress()) =>
  request(server.baseUrl, "POST", "/api/v1/session", { body, headers })

describe("POST /api/v1/session", () => {
  it("creates an API session and shows the token once", async () => {
    const response = await signIn(ownerCredentials)
    expect(response.status).toBe(201)
    expect(response.body.token_type).toBe("Bearer")
    expect(response.body.token).toMatch(/^sk-svc-session-v1-[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/)
    expect(response.body.session.kind).toBe("api")
    expect(response.body.session.public_id).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
    )
    const expiresAt = Date.parse(response.body.session.expires_at)
    expect(Math.abs(expiresAt - Date.now() - 30 * 24 * 3600 * 1000)).toBeLessThan(60_000)
    expect(response.headers.get("cache-control")).toBe("no-store")
    const shown = await request(server.baseUrl, "GET", "/api/v1/session", { headers: bearer(response.body.token) })
    expect(shown.body.token).toBeUndefined()
  })

  it("accepts the email case-insensitively", async () => {
    const response = await signIn({ ...ownerCredentials, email: "OWNER@Example.com" })
    expect(response.status).toBe(201)
  })

  const failures: Array<[string, unknown]> = [
    ["unknown email", { email: "nobody@example.com", password: ownerCredentials.password }],
    ["wrong password", { email: ownerCredentials.email, password: "wrong password" }],
    ["missing password", { email: ownerCredentials.email }],
    ["missing email", { password: ownerCredentials.password }],
    ["email not a string", { email: 42, password: ownerCredentials.password }],
    ["password not a string", { email: ownerCredentials.email, password: ["x"] }],
    ["null values", { email: null, password: null }],
    ["empty strings", { email: "", password: "" }],
    ["a JSON array body", [ownerCredentials.email, ownerCredentials.password]],
    ["a JSON string body", "owner@example.com"]
  ]
  for (const [name, body] of failures) {
    it(`answers 401 invalid_credentials for ${name}`, async () => {
      const response = await signIn(body)
      expect(response.status).toBe(401)
      expect(response.body).toEqual({
        error: { code: "invalid_credentials", message: expect.any(String) }
      })
    })
  }

  it("answers the same 401 for an inactive member", async () => {
    const { Effect } = await import("effect")
    const { SqlClient } = await import("effect/sql/SqlClient")
    await server.run(
      Effect.flatMap(SqlClient, (sql) => sql`UPDATE users SET status = 'inactive' WHERE email = 'member@example.com'`)
    )
    const response = await signIn(memberCredentials)
    expect(response.status).toBe(401)
    expect(response.body.error.code).toBe("invalid_credentials")
  })

  it("never accepts credentials in the query string", async () => {
    const query = new URLSearchParams(ownerCredentials).toString()
    const onlyQuery = await request(server.baseUrl, "POST", `/api/v1/session?${query}`, {
      body: {},
      headers: fromNewAddress()
    })
    expect(onlyQuery.status).toBe(401)
    expect(onlyQuery.body.error.code).toBe("invalid_credentials")
    const both = await request(server.baseUrl, "POST", `/api/v1/session?${query}`, {
      body: ownerCredentials,
      headers: fromNewAddress()
    })
    expect(both.status).toBe(401)
  })

  it("answers 400 bad_request for malformed JSON", async () => {
    const response = await request(server.baseUrl, "POST", "/api/v1/session", {
      raw: '{"email": "owner@example.com", ',
      headers: { "content-type": "application/json", ...fromNewAddress() }
    })
    expect(response.status).toBe(400)
    expect(response.body.error.code).toBe("bad_request")
  })

  it("answers the same 401 invalid_credentials for credential values holding a null byte or a lone surrogate", async () => {
    const wrongPassword = await signIn({ email: ownerCredentials.email, password: "wrong password" })
    for (const body of [
      { email: ownerCredentials.email, password: `${ownerCredentials.password}\u0000` },
      { email: `${ownerCredentials.email}\u0000`, password: ownerCredentials.password },
      { email: ownerCredentials.email, password: `${ownerCredentials.password}\ud800` },
      { ...ownerCredentials, "note\u0000": "x" }
    ]) {
      const response = await signIn(body)
      expect([response.status, response.body]).toEqual([401, wrongPassword.body])
    }
  })

  it("answers 400 bad_request for a body that is not JSON", async () => {
    const response = await request(server.baseUrl, "POST", "/api/v1/session", {
      raw: new URLSearchParams(ownerCredentials).toString(),
      headers: { "content-type": "application/x-www-form-urlencoded", ...fromNewAddress() }
    })
    expect(response.status).toBe(400)
    expect(response.body.error.code).toBe("bad_request")
  })

  it("allows 10 attempts per 3-minute window per source IP, then 429 with Retry-After", async () => {
    const address = fromNewAddress()
    // Windows are fixed since the epoch: the 11 attempts must not straddle two of them.
    await startOfWindow(server, sessionLoginLimit.windowSeconds)
    for (let attempt = 1; attempt <= 10; attempt++) {
      const response = await signIn({ email: ownerCredentials.email, password: "wrong" }, address)
      expect(response.status).toBe(401)
    }
    const limited = await signIn(ownerCredentials, address)
    expect(limited.status).toBe(429)
    expect(limited.body.error.code).toBe("rate_limited")
    const retryAfter = Number(limited.headers.get("retry-after"))
    expect(Number.isInteger(retryAfter)).toBe(true)
    expect(retryAfter).toBeGreaterThanOrEqual(1)
    expect(retryAfter).toBeLessThanOrEqual(180)
    const otherAddress = await signIn(ownerCredentials)
    expect(otherAddress.status).toBe(201)
    server.clock.advance(`${retryAfter} seconds`)
    const nextWindow = await signIn(ownerCredentials, address)
    expect(nextWindow.status).toBe(201)
  })
})

describe("GET /api/v1/session", () => {
  it("shows the bearer's session", async () => {
    const created = await signIn(ownerCredentials)
    const shown = await request(server.baseUrl, "GET", "/api/v1/session", { headers: bearer(created.body.token) })
    expect(shown.status).toBe(200)
    expect(shown.body).toEqual({ session: created.body.session })
  })

  it("answers 401 unauthorized without a credential, with a malformed one, and with a forged secret", async () => {
    const token: string = (await signIn(ownerCredentials)).body.token
    const forged = `${token.slice(0, -4)}AAAA`
    for (const headers of [
      {},
      { authorization: "Bearer nonsense" },
      { authorization: `Basic ${token}` },
      bearer(forged)
    ]) {
      const response = await request(server.baseUrl, "GET", "/api/v1/session", { headers })
      expect(response.status).toBe(401)
      expect(response.body.error.code).toBe("unauthorized")
    }
  })

  it("never accepts the token in the query string", async () => {
    const token: string = (await signIn(ownerCredentials)).body.token
    for (const name of ["token", "access_token", "session"]) {
      const response = await request(server.baseUrl, "GET", `/api/v1/session?${name}=${encodeURIComponent(token)}`)
      expect(response.status).toBe(401)
    }
  })

  it("accepts the same-site browser cookie for reads, and a present Authorization header wins with no fallback", async () => {
    const browser = new Browser(server.baseUrl)
    const form = await browser.get("/login")
    await browser.post("/login", { ...ownerCredentials, csrf_token: csrfTokenIn(form.text) })
    const viaCookie = await request(server.baseUrl, "GET", "/api/v1/session", {
      headers: { cookie: browser.cookieHeader }
    })
    expect(viaCookie.status).toBe(200)
    expect(viaCookie.body.session.kind).toBe("browser")
    const badBearer = await request(server.baseUrl, "GET", "/api/v1/session", {
      headers: { cookie: browser.cookieHeader, authorization: "Bearer sk-svc-session-v1-nope" }
    })
    expect(badBearer.status).toBe(401)
    const crossSite = await request(server.baseUrl, "GET", "/api/v1/session", {
      headers: { cookie: browser.cookieHeader, "sec-fetch-site": "cross-site" }
    })
    expect(crossSite.status).toBe(401)
    const cookieDelete = await request(server.baseUrl, "DELETE", "/api/v1/session", {
      headers: { cookie: browser.cookieHeader }
    })
    expect(cookieDelete.status).toBe(401)
    const stillThere = await request(server.baseUrl, "GET", "/api/v1/session", {
      headers: { cookie: browser.cookieHeader }
    })
    expect(stillThere.status).toBe(200)
  })

  it("API session: active --time, 30 days from issuance--> expired: no longer authenticates", async () => {
    const token: string = (await signIn(ownerCredentials)).body.token
    server.clock.advance("29 days")
    expect((await request(server.baseUrl, "GET", "/api/v1/session", { headers: bearer(token) })).status).toBe(200)
    server.clock.advance("1 day")
    const expired = await request(server.baseUrl, "GET", "/api/v1/session", { headers: bearer(token) })
    expect(expired.status).toBe(401)
    expect(expired.body.error.code).toBe("unauthorized")
  })
})

describe("DELETE /api/v1/session", () => {
  it("API session: active --DELETE /api/v1/session, bearer presented--> revoked: bearer stops at once", async () => {
    const token: string = (await signIn(ownerCredentials)).body.token
    const other: string = (await signIn(ownerCredentials)).body.token
    const revoked = await request(server.baseUrl, "DELETE", "/api/v1/session", { headers: bearer(token) })
    expect(revoked.status).toBe(200)
    expect(revoked.body).toEqual({ revoked: true })
    const after = await request(server.baseUrl, "GET", "/api/v1/session", { headers: bearer(token) })
    expect(after.status).toBe(401)
    const again = await request(server.baseUrl, "DELETE", "/api/v1/session", { headers: bearer(token) })
    expect(again.status).toBe(401)
    expect((await request(server.baseUrl, "GET", "/api/v1/session", { headers: bearer(other) })).status).toBe(200)
  })

  it("needs the bearer", async () => {
    const response = await request(server.baseUrl, "DELETE", "/api/v1/session")
    expect(response.status).toBe(401)
    expect(response.body.error.code).toBe("unauthorized")
  })
})

describe("GET /api/v1/profile", () => {
  it("returns the human platform identity of the credential: no e-mail, no credential material", async () => {
    const token = await apiToken(server, ownerCredentials).catch(
      async () => (await signIn(ownerCredentials)).body.token
    )
    const response = await request(server.baseUrl, "GET", "/api/v1/profile", { headers: bearer(token) })
    expect(response.status).toBe(200)
    expect(response.body).toEqual({
      member: {
        public_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        kind: "human",
        role: "owner",
        handle: "olive-owner",
        display_name: "Olive Owner"
      },
      credential_plane: null
    })
    expect(JSON.stringify(response.body)).not.toContain(token)
  })

  it("answers 401 without a credential", async () => {
    expect((await request(server.baseUrl, "GET", "/api/v1/profile")).status).toBe(401)
  })
})
