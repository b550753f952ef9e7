// The state visualizer in headless Chromium (test/support/chromium.ts): it
// loads with no external asset, shows an API session actor in `active` with its statechart, and
// turns `revoked` when the session is deleted, live over the cable, without a reload. At a
// 1280×800 window the supervisors' table fits its panel (no horizontal overflow).
import { expect, it } from "vitest"
import { serverBesideChromium } from "../support/browser-pages.ts"
import { bearer, request } from "../support/http.ts"
import { apiToken, createMember, createOwner, ownerCredentials } from "../support/people.ts"

const file = serverBesideChromium(createOwner)

it("shows a session actor active, then revoked live after DELETE /api/v1/session, with no external asset", async () => {
  const watchedToken = await apiToken(file.server)
  const watched = (await request(file.server.baseUrl, "GET", "/api/v1/session", { headers: bearer(watchedToken) })).body
    .session
  const { page, finish } = await file.openPage()
  await page.setViewportSize({ width: 1280, height: 800 })

  await page.goto(`${file.server.baseUrl}/inspector?kind=apiSession&id=${watched.public_id}`)
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
  await page.locator("#supervisors table").waitFor()
  // #supervisors fills the panel's content box, so a table wider than the panel sticks out of it.
  const overflow = await page.locator("#supervisors").evaluate((holder) => {
    const panel = holder.closest("section")!
    const table = holder.querySelector("table")!
    return {
      beyondPanel: table.getBoundingClientRect().right - holder.getBoundingClientRect().right,
      scrolls: panel.scrollWidth > panel.clientWidth
    }
  })
  expect(overflow.beyondPanel).toBeLessThanOrEqual(0)
  expect(overflow.scrolls).toBe(false)

  const revoked = await request(file.server.baseUrl, "DELETE", "/api/v1/session", { headers: bearer(watchedToken) })
  expect(revoked.status).toBe(200)
  await state.filter({ hasText: "revoked" }).waitFor()
  expect(await page.locator("#journal").textContent()).toContain("session.revoke")
  await page.screenshot({ path: "/tmp/troupe-inspector.png", fullPage: true })
  await finish()
})

it("refuses a signed-in member", async () => {
  await createMember(file.server)
  const context = await file.browser.newContext()
  const page = await context.newPage()
  await page.goto(`${file.server.baseUrl}/login?return_to=%2Finspector`)
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
