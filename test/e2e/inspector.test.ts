// The state visualizer in headless Chromium (test/support/chromium.ts): it
// loads with no external asset, shows an API session actor in `active` with its statechart, and
// turns `revoked` when the session is deleted, live over the cable, without a reload.
import type { Browser } from "playwright-core"
import { afterAll, beforeAll, expect, it } from "vitest"
import { launchChromium } from "../support/chromium.ts"
import { bearer, request } from "../support/http.ts"
import { apiToken, createMember, createOwner, ownerCredentials } from "../support/people.ts"
import { startTestServer, type TestServer } from "../support/server.ts"

let server: TestServer
let browser: Browser

beforeAll(async () => {
  server = await startTestServer()
  await createOwner(server)
  browser = await launchChromium()
})
afterAll(async () => {
  await browser?.close()
  await server?.close()
})

it("shows a session actor active, then revoked live after DELETE /api/v1/session, with no external asset", async () => {
  const watchedToken = await apiToken(server)
  const watched = (await request(server.baseUrl, "GET", "/api/v1/session", { headers: bearer(watchedToken) })).body
    .session
  const context = await browser.newContext()
  const page = await context.newPage()
  const requested: Array<string> = []
  page.on("request", (req) => requested.push(req.url()))
  page.on("websocket", (socket) => requested.push(socket.url()))
  const errors: Array<string> = []
  page.on("pageerror", (error) => errors.push(error.message))

  await page.goto(`${server.baseUrl}/inspector?kind=apiSession&id=${watched.public_id}`)
  expect(new URL(page.url()).pathname).toBe("/login")
  await page.fill("#email", ownerCredentials.email)
  await page.fill("#password", ownerCredentials.password)
  await page.click("button[type=submit]")
  await page.waitForURL((url) => url.pathname === "/inspector")

  const state = page.locator("#actor-state")
  await state.filter({ hasText: "active" }).waitFor()
  await page.locator("#diagram svg").waitFor()
  await page.locator("#live", { hasText: "live" }).waitFor()
  expect(await page.locator("#actors").textContent()).toContain(watched.public_id)

  const revoked = await request(server.baseUrl, "DELETE", "/api/v1/session", { headers: bearer(watchedToken) })
  expect(revoked.status).toBe(200)
  await state.filter({ hasText: "revoked" }).waitFor()
  expect(await page.locator("#journal").textContent()).toContain("session.revoke")
  await page.screenshot({ path: "/tmp/troupe-inspector.png", fullPage: true })

  const origin = new URL(server.baseUrl)
  const external = requested.filter((url) => new URL(url).host !== origin.host)
  expect(external).toEqual([])
  expect(errors).toEqual([])
  await context.close()
})

it("refuses a signed-in member", async () => {
  await createMember(server)
  const context = await browser.newContext()
  const page = await context.newPage()
  await page.goto(`${server.baseUrl}/login?return_to=%2Finspector`)
  await page.fill("#email", "member@example.com")
  await page.fill("#password", "member password")
  const [response] = await Promise.all([
    page.waitForResponse((res) => new URL(res.url()).pathname === "/inspector"),
    page.click("button[type=submit]")
  ])
  expect(response.status()).toBe(403)
  expect(await page.textContent("h1")).toBe("Not allowed")
  await context.close()
})
