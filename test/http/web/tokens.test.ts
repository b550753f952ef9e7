// The personal access tokens page (SUPPLEMENT "Human member-plane credentials"): signed-in
// humans only; lists a human's own tokens without their secrets; mints one per plane whose secret
// is shown once (no-store) and works at once; revocation ends it for the API at once; every form
// needs its CSRF token.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Browser, bearer, csrfTokenIn, request } from "../../support/http.ts"
import {
  apiToken,
  createMember,
  createOwner,
  memberCredentials,
  ownerCredentials,
  personalToken
} from "../../support/people.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { signedInBrowser } from "../oauth/support-device.ts"

let server: TestServer
let owner: Browser
let member: Browser
let memberRow: Awaited<ReturnType<typeof createMember>>

beforeAll(async () => {
  server = await startTestServer()
  await createOwner(server)
  memberRow = await createMember(server)
  owner = await signedInBrowser(server, ownerCredentials.email, ownerCredentials.password)
  member = await signedInBrowser(server, memberCredentials.email, memberCredentials.password)
})
afterAll(() => server?.close())

const status = async (path: string, token: string) =>
  (await request(server.baseUrl, "GET", path, { headers: bearer(token) })).status

/** Submits the mint form of /tokens as `browser`. */
const mint = async (browser: Browser, name: string, plane: string) => {
  const page = await browser.get("/tokens")
  return browser.post("/tokens", { name, plane, csrf_token: csrfTokenIn(page.text) })
}

const shownToken = (html: string) => {
  const match = /<code id="token"[^>]*>([^<]+)<\/code>/.exec(html)
  if (!match) throw new Error("the answer shows no token")
  return match[1]!
}

/** The row of the token named `name` on the /tokens page. */
const rowOf = (html: string, name: string) => html.split("<tr").find((row) => row.includes(`<td>${name}</td>`))

const publicIdOf = (html: string, name: string) => /data-token="([^"]+)"/.exec(rowOf(html, name) ?? "")?.[1]

describe("signed out", () => {
  it("GET and POST /tokens send the visitor to sign in and mint nothing", async () => {
    const visitor = await request(server.baseUrl, "GET", "/tokens")
    expect(visitor.status).toBe(303)
    expect(visitor.headers.get("location")).toBe("/login?return_to=%2Ftokens")
    const posted = await request(server.baseUrl, "POST", "/tokens", {
      raw: "name=sneaky&plane=platform",
      headers: { "content-type": "application/x-www-form-urlencoded" }
    })
    expect(posted.status).toBe(303)
    expect(posted.headers.get("location")).toBe("/login?return_to=%2Ftokens")
    expect((await owner.get("/tokens")).text).not.toContain("sneaky")
  })
})

describe("minting", () => {
  it("the home page links to /tokens, which starts empty", async () => {
    expect((await owner.get("/")).text).toContain('href="/tokens"')
    const page = await owner.get("/tokens")
    expect(page.status).toBe(200)
    expect(page.headers.get("cache-control")).toBe("no-store")
    expect(page.text).toContain("You have no personal access tokens.")
  })

  it("a platform token is shown once, works on /api/v1 at once and is listed without its secret", async () => {
    const answer = await mint(owner, "deploy script", "platform")
    expect(answer.status).toBe(200)
    expect(answer.headers.get("cache-control")).toBe("no-store")
    const token = shownToken(answer.text)
    expect(token).toMatch(/^sk-svc-api-v1-/)
    expect(await status("/api/v1/profile", token)).toBe(200)
    expect(await status("/agent_api/v1/profile", token)).toBe(401)
    const list = await owner.get("/tokens")
    const row = rowOf(list.text, "deploy script")
    expect(row).toContain("<td>platform</td>")
    expect(row).toContain('<td class="state">active</td>')
    expect(row).toMatch(/<time datetime="[^"]+">/)
    expect(list.text).not.toContain(token)
    expect(list.text).not.toContain(token.slice(-43))
  })

  it("a member token works on /agent_api/v1 and not on /api/v1", async () => {
    const token = shownToken((await mint(owner, "member access", "member")).text)
    expect(await status("/agent_api/v1/profile", token)).toBe(200)
    expect(await status("/api/v1/profile", token)).toBe(401)
    expect(rowOf((await owner.get("/tokens")).text, "member access")).toContain("<td>member</td>")
  })

  it("a blank or unprintable name or an unknown plane is refused with the form again, and nothing is minted", async () => {
    for (const [name, plane] of [
      ["   ", "platform"],
      ["evil\u202Ename", "platform"],
      ["x".repeat(101), "member"],
      ["no plane", "executor_transport"]
    ] as const) {
      const answer = await mint(owner, name, plane)
      expect(answer.status).toBe(422)
      expect(answer.text).toContain('role="alert"')
      expect(answer.text).not.toContain('id="token"')
    }
    expect((await owner.get("/tokens")).text.match(/data-token=/g)).toHaveLength(2)
  })

  it("the mint form needs its CSRF token; the refusal links back to the tokens page", async () => {
    const forged = await owner.post("/tokens", { name: "forged", plane: "platform", csrf_token: "forged" })
    expect(forged.status).toBe(403)
    expect(forged.text).not.toContain('id="token"')
    expect(forged.text).toContain('<a id="try-again" href="/tokens">')
    expect((await owner.get("/tokens")).text).not.toContain("forged")
  })

  it("a human sees only their own tokens; tokens minted elsewhere are listed, sessions are not", async () => {
    expect((await member.get("/tokens")).text).not.toContain("deploy script")
    await personalToken(server, memberRow, "platform", "from the command line")
    await apiToken(server, memberCredentials)
    const page = await member.get("/tokens")
    expect(page.text).toContain("from the command line")
    expect(page.text.match(/data-token=/g)).toHaveLength(1)
  })
})

describe("revoking", () => {
  it("ends the token for the API at once and shows it revoked", async () => {
    const token = shownToken((await mint(owner, "short lived", "platform")).text)
    const page = await owner.get("/tokens")
    const id = publicIdOf(page.text, "short lived")!
    const revoked = await owner.post(`/tokens/${id}/revoke`, { csrf_token: csrfTokenIn(page.text) })
    expect(revoked.status).toBe(303)
    expect(revoked.headers.get("location")).toBe("/tokens")
    expect(await status("/api/v1/profile", token)).toBe(401)
    const row = rowOf((await owner.get("/tokens")).text, "short lived")
    expect(row).toContain('<td class="state">revoked</td>')
    expect(row).not.toContain("Revoke")
  })

  it("needs the CSRF token, and nobody else's token or an unknown id can be revoked", async () => {
    const token = shownToken((await mint(owner, "guarded", "member")).text)
    const page = await owner.get("/tokens")
    const id = publicIdOf(page.text, "guarded")!
    expect((await owner.post(`/tokens/${id}/revoke`, { csrf_token: "forged" })).status).toBe(403)
    const memberPage = await member.get("/tokens")
    expect((await member.post(`/tokens/${id}/revoke`, { csrf_token: csrfTokenIn(memberPage.text) })).status).toBe(404)
    for (const unknown of ["not-a-uuid", "0190f0f0-0000-7000-8000-000000000000"]) {
      expect((await owner.post(`/tokens/${unknown}/revoke`, { csrf_token: csrfTokenIn(page.text) })).status).toBe(404)
    }
    expect(await status("/agent_api/v1/profile", token)).toBe(200)
    expect(rowOf((await owner.get("/tokens")).text, "guarded")).toContain('<td class="state">active</td>')
  })
})

describe("expiry", () => {
  it("a token past its 14 days is listed as expired and refused", async () => {
    const token = shownToken((await mint(owner, "fortnight", "platform")).text)
    server.clock.advance("1209601 seconds")
    expect(await status("/api/v1/profile", token)).toBe(401)
    const row = rowOf((await owner.get("/tokens")).text, "fortnight")
    expect(row).toContain('<td class="state">expired</td>')
    expect(row).not.toContain("Revoke")
  })
})
