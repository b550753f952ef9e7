// The application client (svc-application): /oauth/authorize with PKCE S256 and state, exact
// callback matching under the default local/private policy or an explicit list, connect and
// login modes, first-boot resume, and five-minute single-use codes bound to client, callback
// and challenge ("Authorization code: issued --token exchange--> used").
import { createHash, randomBytes } from "node:crypto"
import { Inspection } from "@troupe/actors/Inspection"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { waitForMessages } from "../../support/actors.ts"
import { Browser, bearer, csrfTokenIn, request } from "../../support/http.ts"
import { createOwner, ownerCredentials } from "../../support/people.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { form, signedInBrowser } from "./support-device.ts"

const callback = "http://127.0.0.1:7777/auth/callback"
let server: TestServer

beforeAll(async () => {
  server = await startTestServer()
  await createOwner(server)
})
afterAll(() => server?.close())

const pkce = () => {
  const verifier = randomBytes(32).toString("base64url")
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") }
}

const authorizeUrl = (params: Record<string, string | undefined>) => {
  const query = new URLSearchParams()
  for (const [name, value] of Object.entries({
    client_id: "svc-application",
    response_type: "code",
    redirect_uri: callback,
    state: "state-123",
    code_challenge_method: "S256",
    ...params
  })) {
    if (value !== undefined) query.set(name, value)
  }
  return `/oauth/authorize?${query}`
}

const agent = { agent_identifier: "app-agent", agent_display_name: "App Agent", executor_display_name: "App" }

/** Opens the consent page and approves: the callback URL the browser is sent to. */
const approve = async (browser: Browser, url: string, decision: "approve" | "deny" = "approve") => {
  const consent = await browser.get(url)
  expect(consent.status).toBe(200)
  const action = /action="([^"]+)"/.exec(consent.text)![1]!.replace(/&amp;/g, "&")
  const answered = await browser.post(action, { decision, csrf_token: csrfTokenIn(consent.text) })
  expect(answered.status).toBe(303)
  return new URL(answered.headers.get("location")!)
}

const exchange = (code: string, verifier: string, redirectUri = callback) =>
  form(server, "/oauth/token", {
    grant_type: "authorization_code",
    client_id: "svc-application",
    code,
    redirect_uri: redirectUri,
    code_verifier: verifier
  })

describe("authorize request", () => {
  it("an unknown client or a callback outside the policy gets an error page, never a redirect", async () => {
    const browser = await signedInBrowser(server, ownerCredentials.email, ownerCredentials.password)
    const { challenge } = pkce()
    for (const params of [
      { client_id: "svc-first-party-connector", code_challenge: challenge },
      { redirect_uri: "https://evil.example/auth/callback", code_challenge: challenge },
      { redirect_uri: "http://127.0.0.1:7777/other", code_challenge: challenge },
      { redirect_uri: "http://8.8.8.8/auth/callback", code_challenge: challenge }
    ]) {
      const page = await browser.get(authorizeUrl(params))
      expect(page.status).toBe(400)
      expect(page.headers.get("location")).toBeNull()
    }
  })

  it("accepts loopback, localhost, private IPv4 and IPv6 unique-local callbacks at /auth/callback", async () => {
    const browser = await signedInBrowser(server, ownerCredentials.email, ownerCredentials.password)
    const { challenge } = pkce()
    for (const redirectUri of [
      "http://localhost:3000/auth/callback",
      "https://192.168.1.20/auth/callback",
      "http://10.1.2.3:8080/auth/callback",
      "http://[fd00::1]:9000/auth/callback"
    ]) {
      expect(
        (await browser.get(authorizeUrl({ redirect_uri: redirectUri, code_challenge: challenge, ...agent }))).status
      ).toBe(200)
    }
  })

  it("the consent page's form may be sent on to its callback's origin (CSP form-action), and nowhere else", async () => {
    const browser = await signedInBrowser(server, ownerCredentials.email, ownerCredentials.password)
    const { challenge } = pkce()
    const policyFor = async (redirectUri: string) =>
      (await browser.get(authorizeUrl({ redirect_uri: redirectUri, code_challenge: challenge, ...agent }))).headers
        .get("content-security-policy")
        ?.split(";")
        .map((directive) => directive.trim())
    expect(await policyFor("http://localhost:3000/auth/callback")).toContain("form-action 'self' http://localhost:3000")
    expect(await policyFor("https://192.168.1.20/auth/callback")).toContain("form-action 'self' https://192.168.1.20")
    // CSP has no IPv6 host source: the page lifts form-action rather than block its own callback.
    const ipv6 = await policyFor("http://[fd00::1]:9000/auth/callback")
    expect(ipv6?.some((directive) => directive.startsWith("form-action"))).toBe(false)
    expect(ipv6).toContain("default-src 'none'")
  })

  it("a missing PKCE challenge or state goes back to the callback as invalid_request", async () => {
    const browser = await signedInBrowser(server, ownerCredentials.email, ownerCredentials.password)
    const noPkce = await browser.get(authorizeUrl({ code_challenge_method: undefined }))
    const location = new URL(noPkce.headers.get("location")!)
    expect(`${location.origin}${location.pathname}`).toBe(callback)
    expect(location.searchParams.get("error")).toBe("invalid_request")
    expect(location.searchParams.get("state")).toBe("state-123")
    const plain = await browser.get(authorizeUrl({ code_challenge_method: "plain", code_challenge: pkce().challenge }))
    expect(new URL(plain.headers.get("location")!).searchParams.get("error")).toBe("invalid_request")
  })

  it("a repeated parameter is refused (RFC 6749 §3.1): client_id or redirect_uri on an error page, others at the callback", async () => {
    const browser = await signedInBrowser(server, ownerCredentials.email, ownerCredentials.password)
    const url = authorizeUrl({
      code_challenge: pkce().challenge,
      scope: "application",
      connection_mode: "connect",
      ...agent
    })
    for (const [name, value] of [
      ["client_id", "svc-application"],
      ["redirect_uri", callback],
      ["redirect_uri", "http://127.0.0.1:7778/auth/callback"]
    ]) {
      const page = await browser.get(`${url}&${name}=${encodeURIComponent(value!)}`)
      expect([name, page.status, page.headers.get("location")]).toEqual([name, 400, null])
    }
    for (const [name, value] of [
      ["code_challenge", pkce().challenge],
      ["code_challenge_method", "S256"],
      ["response_type", "code"],
      ["agent_identifier", "another-agent"],
      ["connection_mode", "login"],
      ["scope", "application"]
    ]) {
      const refused = new URL((await browser.get(`${url}&${name}=${value}`)).headers.get("location")!)
      expect([name, `${refused.origin}${refused.pathname}`, refused.searchParams.get("error")]).toEqual([
        name,
        callback,
        "invalid_request"
      ])
      expect(refused.searchParams.get("state")).toBe("state-123")
    }
    const twoStates = new URL((await browser.get(`${url}&state=other`)).headers.get("location")!)
    expect(twoStates.searchParams.get("error")).toBe("invalid_request")
    expect(twoStates.searchParams.has("state")).toBe(false)
    expect((await browser.get(`${url}&unknown=1&unknown=2`)).status).toBe(200)
  })

  it("needs a human browser session: it sends the browser to sign in and back", async () => {
    const browser = new Browser(server.baseUrl)
    const url = authorizeUrl({ code_challenge: pkce().challenge, ...agent })
    const first = await browser.get(url)
    expect(first.status).toBe(303)
    expect(first.headers.get("location")).toBe(`/login?return_to=${encodeURIComponent(url)}`)
  })
})

describe("codes", () => {
  it("connect mode: the code exchanges once for the human lineage and the application's agent", async () => {
    const browser = await signedInBrowser(server, ownerCredentials.email, ownerCredentials.password)
    const { verifier, challenge } = pkce()
    const landed = await approve(browser, authorizeUrl({ code_challenge: challenge, ...agent }))
    expect(landed.searchParams.get("state")).toBe("state-123")
    const code = landed.searchParams.get("code")!
    const issued = await exchange(code, verifier)
    expect(issued.status).toBe(200)
    expect(issued.body).toMatchObject({
      token_type: "Bearer",
      plane: "platform",
      expires_in: 1209600,
      scope: "application",
      user: { display_name: "Olive Owner", role: "owner" },
      agent: { plane: "member", token_type: "Bearer" }
    })
    const platform = await request(server.baseUrl, "GET", "/api/v1/profile", {
      headers: bearer(issued.body.access_token)
    })
    expect(platform.body).toMatchObject({ member: { role: "owner" }, credential_plane: "platform" })
    const member = await request(server.baseUrl, "GET", "/agent_api/v1/profile", {
      headers: bearer(issued.body.agent.access_token)
    })
    expect(member.body.member).toMatchObject({ kind: "agent", display_name: "App Agent" })
    expect((await exchange(code, verifier)).body.error).toBe("invalid_grant")
  })

  it("connect mode again re-pairs the application's address, which hears its new epoch by message", async () => {
    const browser = await signedInBrowser(server, ownerCredentials.email, ownerCredentials.password)
    const connectOnce = async () => {
      const { verifier, challenge } = pkce()
      const landed = await approve(browser, authorizeUrl({ code_challenge: challenge, ...agent }))
      return (await exchange(landed.searchParams.get("code")!, verifier)).body
    }
    const first = await connectOnce()
    const executor = async (token: string) =>
      (await request(server.baseUrl, "GET", "/agent_api/v1/executor", { headers: bearer(token) })).body.executor
    const before = await executor(first.agent.executor_access_token)
    const second = await connectOnce()
    const after = await executor(second.agent.executor_access_token)
    expect([after.public_id, after.credential_epoch]).toEqual([before.public_id, before.credential_epoch + 1])
    await waitForMessages(server, "executorAddress", after.public_id)
    const actor = await server.run(
      Effect.flatMap(Inspection, (inspection) => inspection.detail("executorAddress", after.public_id))
    )
    expect(actor?.journal.at(-1)?.event).toEqual({
      type: "executor.repaired",
      epoch: after.credential_epoch,
      displayName: "App"
    })
    expect(actor?.context).toMatchObject({ epoch: after.credential_epoch })
  })

  it("a used code presented again is invalid_grant and ends every lineage it issued (RFC 6749 §4.1.2)", async () => {
    const browser = await signedInBrowser(server, ownerCredentials.email, ownerCredentials.password)
    const { verifier, challenge } = pkce()
    const replayed = { ...agent, agent_identifier: "replayed-agent", agent_display_name: "Replayed Agent" }
    const landed = await approve(browser, authorizeUrl({ code_challenge: challenge, ...replayed }))
    const code = landed.searchParams.get("code")!
    const issued = (await exchange(code, verifier)).body
    const rotated = await form(server, "/oauth/token", {
      grant_type: "refresh_token",
      client_id: "svc-application",
      refresh_token: issued.refresh_token
    })
    expect(rotated.status).toBe(200)
    const get = (path: string, token: string) => request(server.baseUrl, "GET", path, { headers: bearer(token) })
    const answers = async () => [
      (await get("/api/v1/profile", rotated.body.access_token)).status,
      (await get("/agent_api/v1/profile", issued.agent.access_token)).status,
      (await get("/agent_api/v1/executor", issued.agent.executor_access_token)).status
    ]
    expect(await answers()).toEqual([200, 200, 200])
    // Whoever presents it again (here with another verifier), the code's tokens end.
    const again = await exchange(code, pkce().verifier)
    expect([again.status, again.body.error]).toEqual([400, "invalid_grant"])
    expect(await answers()).toEqual([401, 401, 401])
    for (const refreshToken of [rotated.body.refresh_token, issued.agent.refresh_token]) {
      const refreshed = await form(server, "/oauth/token", {
        grant_type: "refresh_token",
        client_id: "svc-application",
        refresh_token: refreshToken
      })
      expect(refreshed.body.error).toBe("invalid_grant")
    }
    expect((await exchange(code, verifier)).body.error).toBe("invalid_grant")
  })

  it("login mode returns the human lineage alone", async () => {
    const browser = await signedInBrowser(server, ownerCredentials.email, ownerCredentials.password)
    const { verifier, challenge } = pkce()
    const landed = await approve(
      browser,
      authorizeUrl({ code_challenge: challenge, connection_mode: "login", ...agent })
    )
    const issued = await exchange(landed.searchParams.get("code")!, verifier)
    expect(issued.status).toBe(200)
    expect(issued.body.plane).toBe("platform")
    expect(issued.body.agent).toBeUndefined()
    expect(issued.body.runner).toBeUndefined()
  })

  it("Authorization code: issued --token exchange, within 5 minutes, verifier matches--> used: single use; denial goes back as access_denied", async () => {
    const browser = await signedInBrowser(server, ownerCredentials.email, ownerCredentials.password)
    const wrongVerifier = pkce()
    const first = await approve(browser, authorizeUrl({ code_challenge: wrongVerifier.challenge, ...agent }))
    expect((await exchange(first.searchParams.get("code")!, pkce().verifier)).body.error).toBe("invalid_grant")
    const otherCallback = pkce()
    const second = await approve(browser, authorizeUrl({ code_challenge: otherCallback.challenge, ...agent }))
    const mismatch = await exchange(
      second.searchParams.get("code")!,
      otherCallback.verifier,
      "http://127.0.0.1:7778/auth/callback"
    )
    expect(mismatch.body.error).toBe("invalid_grant")
    const onTime = pkce()
    const fourth = await approve(browser, authorizeUrl({ code_challenge: onTime.challenge, ...agent }))
    server.clock.advance("299 seconds")
    expect((await exchange(fourth.searchParams.get("code")!, onTime.verifier)).status).toBe(200)
    expect((await exchange(fourth.searchParams.get("code")!, onTime.verifier)).body.error).toBe("invalid_grant")
    const late = pkce()
    const third = await approve(browser, authorizeUrl({ code_challenge: late.challenge, ...agent }))
    server.clock.advance("300 seconds")
    expect((await exchange(third.searchParams.get("code")!, late.verifier)).body.error).toBe("invalid_grant")
    const denied = await approve(browser, authorizeUrl({ code_challenge: pkce().challenge, ...agent }), "deny")
    expect(denied.searchParams.get("error")).toBe("access_denied")
    expect(denied.searchParams.get("state")).toBe("state-123")
  })
})

describe("code verifiers (RFC 7636 §4.1: 43 to 128 unreserved characters)", () => {
  const challengeOf = (verifier: string) => createHash("sha256").update(verifier).digest("base64url")

  it("a verifier outside the grammar is refused even when its S256 matches the challenge", async () => {
    const browser = await signedInBrowser(server, ownerCredentials.email, ownerCredentials.password)
    for (const verifier of ["a".repeat(42), "a".repeat(129), `${"a".repeat(42)}+`, `${"a".repeat(42)} `]) {
      const landed = await approve(browser, authorizeUrl({ code_challenge: challengeOf(verifier), ...agent }))
      const refused = await exchange(landed.searchParams.get("code")!, verifier)
      expect([verifier, refused.status, refused.body.error]).toEqual([verifier, 400, "invalid_grant"])
    }
    for (const verifier of ["a".repeat(43), `${"A0-._~".repeat(21)}zz`]) {
      const landed = await approve(browser, authorizeUrl({ code_challenge: challengeOf(verifier), ...agent }))
      expect([verifier, (await exchange(landed.searchParams.get("code")!, verifier)).status]).toEqual([verifier, 200])
    }
  })
})

describe("deployment callbacks", () => {
  it("SERVICE_OAUTH_REDIRECT_URIS replaces the default policy; http outside private ranges needs SERVICE_OAUTH_ALLOW_HTTP", async () => {
    const strict = await startTestServer({
      redirectUris: ["https://app.example/cb", "http://app.example/cb", "http://127.0.0.1:7777/auth/callback"]
    })
    const relaxed = await startTestServer({ redirectUris: ["http://app.example/cb"], allowHttpRedirects: true })
    try {
      for (const target of [strict, relaxed]) await createOwner(target)
      const strictBrowser = await signedInBrowser(strict, ownerCredentials.email, ownerCredentials.password)
      const relaxedBrowser = await signedInBrowser(relaxed, ownerCredentials.email, ownerCredentials.password)
      const challenge = pkce().challenge
      const status = (browser: Browser, redirectUri: string) =>
        browser
          .get(authorizeUrl({ redirect_uri: redirectUri, code_challenge: challenge, ...agent }))
          .then((r) => r.status)
      expect(await status(strictBrowser, "https://app.example/cb")).toBe(200)
      expect(await status(strictBrowser, "http://127.0.0.1:7777/auth/callback")).toBe(200)
      expect(await status(strictBrowser, "http://app.example/cb")).toBe(400)
      expect(await status(strictBrowser, "http://localhost:3000/auth/callback")).toBe(400)
      expect(await status(relaxedBrowser, "http://app.example/cb")).toBe(200)
      expect(await status(relaxedBrowser, "http://app.example/cb/")).toBe(400)
    } finally {
      await strict.close()
      await relaxed.close()
    }
  })
})

describe("first boot", () => {
  it("a validated request waits behind /setup and resumes after the owner is created", async () => {
    const fresh = await startTestServer()
    try {
      const browser = new Browser(fresh.baseUrl)
      const { verifier, challenge } = pkce()
      const url = authorizeUrl({ code_challenge: challenge, ...agent })
      const toSetup = await browser.get(url)
      expect(toSetup.headers.get("location")).toBe(`/setup?return_to=${encodeURIComponent(url)}`)
      const setup = await browser.get(toSetup.headers.get("location")!)
      const created = await browser.post("/setup", {
        display_name: "First Owner",
        email: "first@example.com",
        password: "first owner password",
        return_to: url,
        csrf_token: csrfTokenIn(setup.text)
      })
      expect(created.headers.get("location")).toBe(url)
      const consent = await browser.get(url)
      const action = /action="([^"]+)"/.exec(consent.text)![1]!.replace(/&amp;/g, "&")
      const answered = await browser.post(action, { decision: "approve", csrf_token: csrfTokenIn(consent.text) })
      const code = new URL(answered.headers.get("location")!).searchParams.get("code")!
      const issued = await form(fresh, "/oauth/token", {
        grant_type: "authorization_code",
        client_id: "svc-application",
        code,
        redirect_uri: callback,
        code_verifier: verifier
      })
      expect(issued.body.user).toMatchObject({ display_name: "First Owner", role: "owner" })
    } finally {
      await fresh.close()
    }
  })
})
