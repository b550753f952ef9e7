// Web: browser sign-in and sign-out — GET/POST /login sets the session cookie (kind browser),
// POST /logout revokes it; both forms need the CSRF token; sign-in shares the session login budget.
import { sessionLoginLimit } from "@troupe/domain/kernel/RateLimiter"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startOfWindow } from "../../support/budget.ts"
import { Browser, bearer, csrfTokenIn, request } from "../../support/http.ts"
import { createOwner, ownerCredentials } from "../../support/people.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
// Each browser signs in from its own source address so the per-IP login budget does not spill over.
let nextAddress = 1

/** A browser behind the trusted proxy, with a source address of its own. */
class AddressedBrowser extends Browser {
  readonly address = { "x-forwarded-for": `203.0.113.${nextAddress++}` }
  override get(path: string, headers: Record<string, string> = {}) {
    return super.get(path, { ...this.address, ...headers })
  }
  override post(path: string, fields: Record<string, string>, headers: Record<string, string> = {}) {
    return super.post(path, fields, { ...this.address, ...headers })
  }
}

beforeAll(async () => {
  server = await startTestServer({ trustedProxies: ["127.0.0.1/32"] })
  await createOwner(server)
})
afterAll(() => server?.close())

const sessionCookieLine = (headers: Headers) =>
  headers.getSetCookie().find((line) => line.startsWith("troupe_session="))

/** Opens the sign-in page and submits it; answers the browser and the POST's response. */
const signIn = async (
  fields: Record<string, string> = ownerCredentials,
  into = new AddressedBrowser(server.baseUrl)
) => {
  const form = await into.get("/login")
  expect(form.status).toBe(200)
  const response = await into.post("/login", { ...fields, csrf_token: csrfTokenIn(form.text) })
  return { browser: into, response }
}

const sessionWithCookie = (cookie: string) => request(server.baseUrl, "GET", "/api/v1/session", { headers: { cookie } })

describe("GET /login", () => {
  it("shows a server-rendered sign-in form with a CSRF field", async () => {
    const response = await new AddressedBrowser(server.baseUrl).get("/login")
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toMatch(/^text\/html/)
    expect(response.text).toMatch(/<form method="post" action="\/login">/)
    expect(response.text).toMatch(/<input type="hidden" name="csrf_token" value="[A-Za-z0-9_-]{43}">/)
    expect(response.text).toContain('name="email"')
    expect(response.text).toContain('name="password"')
    expect(response.text).not.toMatch(/<script/i)
    const csrfCookie = response.headers.getSetCookie().find((line) => line.startsWith("troupe_csrf="))
    expect(csrfCookie).toMatch(/;\s*HttpOnly(;|$)/i)
    expect(csrfCookie).toMatch(/;\s*SameSite=Lax(;|$)/i)
  })

  it("carries a safe return_to into the form and drops an unsafe one", async () => {
    const safe = await new AddressedBrowser(server.baseUrl).get("/login?return_to=%2Fdocs")
    expect(safe.text).toContain('<input type="hidden" name="return_to" value="/docs">')
    const unsafe = await new AddressedBrowser(server.baseUrl).get("/login?return_to=%2F%2Fevil.example")
    expect(unsafe.text).toContain('<input type="hidden" name="return_to" value="/">')
    expect(unsafe.text).not.toContain("evil.example")
  })
})

describe("POST /login", () => {
  it("good credentials redirect 303 to / and set troupe_session HttpOnly SameSite=Lax, which then works for the API and the home page", async () => {
    const { browser, response } = await signIn()
    expect(response.status).toBe(303)
    expect(response.headers.get("location")).toBe("/")
    const cookie = sessionCookieLine(response.headers)
    expect(cookie).toMatch(/^troupe_session=sk-svc-session-v1-[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+;/)
    expect(cookie).toMatch(/;\s*HttpOnly(;|$)/i)
    expect(cookie).toMatch(/;\s*SameSite=Lax(;|$)/i)
    expect(cookie).toMatch(/;\s*Path=\/(;|$)/i)
    expect(cookie).not.toMatch(/;\s*Secure(;|$)/i)

    const session = await sessionWithCookie(browser.cookieHeader)
    expect(session.status).toBe(200)
    expect(session.body.session.kind).toBe("browser")
    const home = await browser.get("/")
    expect(home.status).toBe(200)
    expect(home.text).toContain("Signed in as <strong>Olive Owner</strong>")
    expect(home.text).toContain("@olive-owner")
    // A signed-in browser visiting /login is sent on.
    const again = await browser.get("/login")
    expect(again.status).toBe(303)
    expect(again.headers.get("location")).toBe("/")
  })

  it("redirects to a safe return_to", async () => {
    const { response } = await signIn({ ...ownerCredentials, return_to: "/docs" })
    expect(response.status).toBe(303)
    expect(response.headers.get("location")).toBe("/docs")
  })

  for (const returnTo of [
    "//evil.example",
    "https://evil.example",
    "/\\evil.example",
    "evil.example",
    "/docs\r\nx: y",
    "/\t/evil.example",
    "/\t\\evil.example"
  ]) {
    it(`falls back to / for an unsafe return_to ${JSON.stringify(returnTo)}`, async () => {
      const { response } = await signIn({ ...ownerCredentials, return_to: returnTo })
      expect(response.status).toBe(303)
      expect(response.headers.get("location")).toBe("/")
      expect(sessionCookieLine(response.headers)).toBeDefined()
    })
  }

  it("a wrong password is a 401 page with an error and no session cookie", async () => {
    const { browser, response } = await signIn({ email: ownerCredentials.email, password: "wrong password" })
    expect(response.status).toBe(401)
    expect(response.headers.get("content-type")).toMatch(/^text\/html/)
    expect(response.text).toContain("The email or password is not correct.")
    expect(response.text).toContain(`value="${ownerCredentials.email}"`)
    expect(response.text).not.toContain("wrong password")
    expect(sessionCookieLine(response.headers)).toBeUndefined()
    expect(browser.cookies.has("troupe_session")).toBe(false)
    expect((await sessionWithCookie(browser.cookieHeader)).status).toBe(401)
  })

  it("a missing or wrong CSRF token is 403 and signs nobody in", async () => {
    const browser = new AddressedBrowser(server.baseUrl)
    const token = csrfTokenIn((await browser.get("/login")).text)
    // The wrong token differs from the real one in its last two characters, whatever they are.
    const wrong = `${token.slice(0, -2)}${token.endsWith("AA") ? "BB" : "AA"}`
    for (const fields of [{ ...ownerCredentials }, { ...ownerCredentials, csrf_token: wrong }]) {
      const response = await browser.post("/login", fields)
      expect(response.status).toBe(403)
      expect(response.text).toContain("This form expired")
      expect(sessionCookieLine(response.headers)).toBeUndefined()
    }
    expect(browser.cookies.has("troupe_session")).toBe(false)
  })
})

describe("the session login budget", () => {
  let fresh: TestServer
  beforeAll(async () => {
    fresh = await startTestServer()
    await createOwner(fresh)
  })
  afterAll(() => fresh?.close())

  it("browser sign-in shares the 10-per-3-minutes per-IP budget with the API: the 11th attempt is 429 with Retry-After", async () => {
    const browser = new Browser(fresh.baseUrl)
    const token = csrfTokenIn((await browser.get("/login")).text)
    // Windows are fixed since the epoch: the 11 attempts and the API's 12th must not straddle two.
    await startOfWindow(fresh, sessionLoginLimit.windowSeconds)
    for (let attempt = 1; attempt <= 5; attempt++) {
      const api = await request(fresh.baseUrl, "POST", "/api/v1/session", {
        body: { email: ownerCredentials.email, password: "wrong" }
      })
      expect(api.status).toBe(401)
    }
    for (let attempt = 6; attempt <= 10; attempt++) {
      const page = await browser.post("/login", { email: ownerCredentials.email, password: "wrong", csrf_token: token })
      expect(page.status).toBe(401)
    }
    const limited = await browser.post("/login", { ...ownerCredentials, csrf_token: token })
    expect(limited.status).toBe(429)
    expect(limited.text).toContain("Too many sign-in attempts")
    expect(sessionCookieLine(limited.headers)).toBeUndefined()
    const retryAfter = Number(limited.headers.get("retry-after"))
    expect(Number.isInteger(retryAfter)).toBe(true)
    expect(retryAfter).toBeGreaterThanOrEqual(1)
    expect(retryAfter).toBeLessThanOrEqual(180)
    const api = await request(fresh.baseUrl, "POST", "/api/v1/session", { body: ownerCredentials })
    expect(api.status).toBe(429)
    // The next window opens the door again.
    fresh.clock.advance(`${retryAfter} seconds`)
    const nextWindow = await browser.post("/login", { ...ownerCredentials, csrf_token: token })
    expect(nextWindow.status).toBe(303)
  })
})

describe("POST /logout", () => {
  it("with the CSRF token redirects 303 to /login, clears the cookie, and revokes the session", async () => {
    const { browser } = await signIn()
    const oldCookie = `troupe_session=${browser.cookies.get("troupe_session")}`
    expect((await sessionWithCookie(oldCookie)).status).toBe(200)
    const home = await browser.get("/")
    const response = await browser.post("/logout", { csrf_token: csrfTokenIn(home.text) })
    expect(response.status).toBe(303)
    expect(response.headers.get("location")).toBe("/login")
    const cleared = sessionCookieLine(response.headers)
    expect(cleared).toMatch(/^troupe_session=;/)
    expect(cleared).toMatch(/;\s*Max-Age=0(;|$)/i)
    expect(browser.cookies.has("troupe_session")).toBe(false)
    const after = await sessionWithCookie(oldCookie)
    expect(after.status).toBe(401)
    expect(after.body.error.code).toBe("unauthorized")
    const homeAfter = await new Browser(server.baseUrl).get("/", { cookie: oldCookie })
    expect(homeAfter.status).toBe(303)
    expect(homeAfter.headers.get("location")).toBe("/login")
  })

  it("without the CSRF token is 403 (linking back home) and the session still works", async () => {
    const { browser } = await signIn()
    const response = await browser.post("/logout", {})
    expect(response.status).toBe(403)
    expect(response.text).toContain('<a id="try-again" href="/">')
    expect(sessionCookieLine(response.headers)).toBeUndefined()
    expect(browser.cookies.has("troupe_session")).toBe(true)
    expect((await sessionWithCookie(browser.cookieHeader)).status).toBe(200)
    expect((await browser.get("/")).status).toBe(200)
  })

  it("only ends the browser's own session", async () => {
    const api = await request(server.baseUrl, "POST", "/api/v1/session", {
      body: ownerCredentials,
      headers: { "x-forwarded-for": `203.0.113.${nextAddress++}` }
    })
    expect(api.status).toBe(201)
    const { browser } = await signIn()
    await browser.post("/logout", { csrf_token: csrfTokenIn((await browser.get("/")).text) })
    expect((await request(server.baseUrl, "GET", "/api/v1/session", { headers: bearer(api.body.token) })).status).toBe(
      200
    )
  })
})
