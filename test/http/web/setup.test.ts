// Web: first boot — GET/POST /setup creates the owner while the instance is uninitialized (with
// the setup secret when SERVICE_SETUP_SECRET is set), signs them in, and refuses afterwards.
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Browser, bearer, csrfTokenIn, request } from "../../support/http.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

const owner = { display_name: "Olive Owner", email: "olive@example.com", password: "correct horse battery" }

/** The humans in the server's database, oldest first. */
const humans = (server: TestServer) =>
  server.run(
    Effect.flatMap(
      SqlClient,
      (sql) => sql<{ email: string; role: string; handle: string }>`
        SELECT email, role, handle FROM users WHERE kind = 'human' ORDER BY id`
    )
  )

/** A browser that has the setup form open: its cookies and the form's CSRF token. */
const openSetupForm = async (server: TestServer) => {
  const browser = new Browser(server.baseUrl)
  const form = await browser.get("/setup")
  expect(form.status).toBe(200)
  return { browser, token: csrfTokenIn(form.text), html: form.text }
}

const sessionCookieLine = (headers: Headers) =>
  headers.getSetCookie().find((line) => line.startsWith("troupe_session="))

const apiSignIn = (server: TestServer, email: string, password: string) =>
  request(server.baseUrl, "POST", "/api/v1/session", { body: { email, password } })

describe("first boot without a setup secret", () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer()
  })
  afterAll(() => server?.close())

  it("GET /setup on an uninitialized instance is a server-rendered form, and / and /login redirect to /setup", async () => {
    const response = await new Browser(server.baseUrl).get("/setup")
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toMatch(/^text\/html/)
    expect(response.text).toMatch(/<form method="post" action="\/setup">/)
    expect(response.text).toMatch(/<input type="hidden" name="csrf_token" value="[A-Za-z0-9_-]{43}">/)
    for (const name of ["display_name", "email", "handle", "password"]) {
      expect(response.text).toContain(`name="${name}"`)
    }
    expect(response.text).not.toContain('name="setup_secret"')
    expect(response.text).not.toMatch(/<script/i)
    expect(response.text).not.toMatch(/<link/i)
    expect(response.text).not.toMatch(/(src|href|action)\s*=\s*["']?(https?:)?\/\//i)
    expect(response.text).not.toMatch(/url\(/i)
    for (const path of ["/", "/login"]) {
      const redirected = await new Browser(server.baseUrl).get(path)
      expect(redirected.status).toBe(303)
      expect(redirected.headers.get("location")).toBe("/setup")
    }
  })

  it("POST /setup without a CSRF token or with a wrong one is 403 and creates no owner", async () => {
    const { browser, token } = await openSetupForm(server)
    const other = await openSetupForm(server)
    const attempts: Array<Record<string, string>> = [
      { ...owner },
      { ...owner, csrf_token: "" },
      // Its last two characters changed, whatever they are.
      { ...owner, csrf_token: `${token.slice(0, -2)}${token.endsWith("AA") ? "BB" : "AA"}` },
      // A valid token, but for another browser's nonce.
      { ...owner, csrf_token: other.token }
    ]
    for (const fields of attempts) {
      const response = await browser.post("/setup", fields)
      expect(response.status).toBe(403)
      expect(response.text).toContain("This form expired")
      expect(sessionCookieLine(response.headers)).toBeUndefined()
    }
    // Without the nonce cookie, the token alone is worthless.
    const noCookie = await fetch(`${server.baseUrl}/setup`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ ...owner, csrf_token: token }).toString(),
      redirect: "manual"
    })
    expect(noCookie.status).toBe(403)
    expect(await humans(server)).toEqual([])
  })

  it("invalid fields (bad email, short password, blank name, bad handle) answer 422 with a message and create nothing", async () => {
    const cases: Array<[Record<string, string>, string]> = [
      [{ email: "not-an-email" }, "Enter a valid email address"],
      [{ password: "short" }, "Use a password of 8 to 1024 characters"],
      [{ display_name: "   " }, "Enter a name of 1 to 100 characters"],
      [{ handle: "Bad Handle!" }, "A handle is 2 to 32 lowercase letters"]
    ]
    for (const [override, message] of cases) {
      const { browser, token } = await openSetupForm(server)
      const response = await browser.post("/setup", { ...owner, ...override, csrf_token: token })
      expect(response.status).toBe(422)
      expect(response.headers.get("content-type")).toMatch(/^text\/html/)
      expect(response.text).toContain('role="alert"')
      expect(response.text).toContain(message)
      expect(sessionCookieLine(response.headers)).toBeUndefined()
      // The form comes back for another try, without the password.
      expect(response.text).toMatch(/name="csrf_token" value="[A-Za-z0-9_-]{43}"/)
      expect(response.text).not.toContain(owner.password)
    }
    // What the user typed comes back escaped.
    const { browser, token } = await openSetupForm(server)
    const escaped = await browser.post("/setup", {
      ...owner,
      email: "bad",
      display_name: '<script>alert("x")</script>',
      csrf_token: token
    })
    expect(escaped.status).toBe(422)
    expect(escaped.text).not.toMatch(/<script/i)
    expect(escaped.text).toContain("&lt;script&gt;")
    expect(await humans(server)).toEqual([])
    expect((await new Browser(server.baseUrl).get("/setup")).status).toBe(200)
  })

  it("POST /setup with a valid token and fields creates the owner, signs them in with an HttpOnly SameSite=Lax cookie, and derives the handle", async () => {
    const { browser, token } = await openSetupForm(server)
    const response = await browser.post("/setup", { ...owner, handle: "", csrf_token: token })
    expect(response.status).toBe(303)
    expect(response.headers.get("location")).toBe("/")
    const cookie = sessionCookieLine(response.headers)
    expect(cookie).toBeDefined()
    expect(cookie).toMatch(/^troupe_session=sk-svc-session-v1-[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+;/)
    expect(cookie).toMatch(/;\s*HttpOnly(;|$)/i)
    expect(cookie).toMatch(/;\s*SameSite=Lax(;|$)/i)
    expect(cookie).toMatch(/;\s*Path=\/(;|$)/i)
    expect(cookie).not.toMatch(/;\s*Secure(;|$)/i)

    expect(await humans(server)).toEqual([{ email: owner.email, role: "owner", handle: "olive-owner" }])
    const session = await request(server.baseUrl, "GET", "/api/v1/session", {
      headers: { cookie: browser.cookieHeader }
    })
    expect(session.status).toBe(200)
    expect(session.body.session.kind).toBe("browser")
    const signedIn = await apiSignIn(server, owner.email, owner.password)
    expect(signedIn.status).toBe(201)
    const profile = await request(server.baseUrl, "GET", "/api/v1/profile", { headers: bearer(signedIn.body.token) })
    expect(profile.status).toBe(200)
    expect(profile.body.member).toMatchObject({
      kind: "human",
      role: "owner",
      display_name: "Olive Owner",
      handle: "olive-owner"
    })
    const home = await browser.get("/")
    expect(home.status).toBe(200)
    expect(home.text).toContain("Olive Owner")
  })

  it("after initialization GET /setup redirects to /login and POST /setup is 403 and creates nothing", async () => {
    const page = await new Browser(server.baseUrl).get("/setup")
    expect(page.status).toBe(303)
    expect(page.headers.get("location")).toBe("/login")

    // A fresh browser with a valid CSRF token (from the sign-in page) trying a second owner,
    // and a takeover attempt reusing the owner's email with a new password.
    const browser = new Browser(server.baseUrl)
    const token = csrfTokenIn((await browser.get("/login")).text)
    for (const fields of [
      { display_name: "Mallory", email: "mallory@example.com", password: "mallory password" },
      { display_name: "Mallory", email: owner.email, password: "mallory password" }
    ]) {
      const response = await browser.post("/setup", { ...fields, csrf_token: token })
      expect(response.status).toBe(403)
      expect(response.text).toContain("already has an owner")
      expect(sessionCookieLine(response.headers)).toBeUndefined()
    }
    expect(await humans(server)).toEqual([{ email: owner.email, role: "owner", handle: "olive-owner" }])
    expect((await apiSignIn(server, owner.email, owner.password)).status).toBe(201)
    expect((await apiSignIn(server, owner.email, "mallory password")).status).toBe(401)
    expect((await apiSignIn(server, "mallory@example.com", "mallory password")).status).toBe(401)
  })
})

describe("first boot with SERVICE_SETUP_SECRET", () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer({ setupSecret: "s3cret" })
  })
  afterAll(() => server?.close())

  it("the form asks for the setup secret", async () => {
    const { html } = await openSetupForm(server)
    expect(html).toMatch(/<input id="setup_secret" name="setup_secret" type="password"/)
  })

  it("a missing or wrong setup secret is 403 and creates nothing", async () => {
    for (const secret of [undefined, "", "wrong", "s3cret ", "S3CRET"]) {
      const { browser, token } = await openSetupForm(server)
      const fields: Record<string, string> = { ...owner, csrf_token: token }
      if (secret !== undefined) fields.setup_secret = secret
      const response = await browser.post("/setup", fields)
      expect(response.status).toBe(403)
      expect(response.text).toContain("The setup secret is not correct.")
      expect(sessionCookieLine(response.headers)).toBeUndefined()
    }
    expect(await humans(server)).toEqual([])
  })

  it("the right setup secret creates the owner", async () => {
    const { browser, token } = await openSetupForm(server)
    const response = await browser.post("/setup", {
      ...owner,
      handle: "boss",
      setup_secret: "s3cret",
      csrf_token: token
    })
    expect(response.status).toBe(303)
    expect(sessionCookieLine(response.headers)).toBeDefined()
    expect(response.text).not.toContain("s3cret")
    expect(await humans(server)).toEqual([{ email: owner.email, role: "owner", handle: "boss" }])
    expect((await apiSignIn(server, owner.email, owner.password)).status).toBe(201)
  })
})

describe("first boot under a race", () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer()
  })
  afterAll(() => server?.close())

  it("two concurrent valid POST /setup with different emails create exactly one owner", async () => {
    const first = await openSetupForm(server)
    const second = await openSetupForm(server)
    const people = [
      { display_name: "Ann First", email: "ann@example.com", password: "ann password" },
      { display_name: "Bob Second", email: "bob@example.com", password: "bob password" }
    ]
    const responses = await Promise.all([
      first.browser.post("/setup", { ...people[0]!, csrf_token: first.token }),
      second.browser.post("/setup", { ...people[1]!, csrf_token: second.token })
    ])
    expect(responses.map((response) => response.status).sort()).toEqual([303, 403])
    const winner = responses.findIndex((response) => response.status === 303)
    expect(sessionCookieLine(responses[1 - winner]!.headers)).toBeUndefined()
    expect(await humans(server)).toEqual([
      { email: people[winner]!.email, role: "owner", handle: winner === 0 ? "ann-first" : "bob-second" }
    ])
    const accounts = await server.run(
      Effect.flatMap(SqlClient, (sql) => sql<{ n: number }>`SELECT count(*)::int AS n FROM accounts`)
    )
    expect(accounts[0]!.n).toBe(1)
    expect((await apiSignIn(server, people[winner]!.email, people[winner]!.password)).status).toBe(201)
    expect((await apiSignIn(server, people[1 - winner]!.email, people[1 - winner]!.password)).status).toBe(401)
  })
})
