// The personal access tokens page in headless Chromium (test/support/chromium.ts): a signed-out
// visit goes through /login and back to /tokens; the mint form shows a member token once, which
// works on /agent_api/v1 at once and is then listed without its secret; Revoke ends it for the API
// at once. No page request leaves the server's host, and no page throws.
import { expect, it } from "vitest"
import { serverBesideChromium } from "../support/browser-pages.ts"
import { bearer, request } from "../support/http.ts"
import { createOwner, ownerCredentials } from "../support/people.ts"

const file = serverBesideChromium(createOwner)

const memberProfile = async (token: string) =>
  (await request(file.server.baseUrl, "GET", "/agent_api/v1/profile", { headers: bearer(token) })).status

it("mints a member token shown once, lists it without its secret and revokes it", async () => {
  const { page, finish } = await file.openPage()

  await page.goto(`${file.server.baseUrl}/tokens`)
  expect(new URL(page.url()).pathname).toBe("/login")
  await page.fill("#email", ownerCredentials.email)
  await page.fill("#password", ownerCredentials.password)
  await Promise.all([page.waitForURL((url) => url.pathname === "/tokens"), page.click("button[type=submit]")])
  expect(await page.textContent("h1")).toBe("Personal access tokens")

  await page.fill("#name", "laptop agent")
  await page.getByLabel("Member API (/agent_api/v1)").check()
  const [minted] = await Promise.all([
    page.waitForResponse((res) => res.request().method() === "POST" && new URL(res.url()).pathname === "/tokens"),
    page.click("text=Create token")
  ])
  expect(minted.status()).toBe(200)
  expect(minted.headers()["cache-control"]).toBe("no-store")
  const token = (await page.textContent("#token"))!
  expect(token).toMatch(/^sk-svc-api-v1-/)
  expect(await memberProfile(token)).toBe(200)

  await Promise.all([page.waitForURL((url) => url.pathname === "/tokens"), page.click("text=Back to your tokens")])
  const row = page.locator("tr", { hasText: "laptop agent" })
  expect(await row.locator("td").nth(1).textContent()).toBe("member")
  expect(await row.locator(".state").textContent()).toBe("active")
  expect(await page.content()).not.toContain(token)

  await Promise.all([
    page.waitForResponse((res) => res.request().method() === "GET" && new URL(res.url()).pathname === "/tokens"),
    row.getByRole("button", { name: "Revoke" }).click()
  ])
  expect(await page.locator("tr", { hasText: "laptop agent" }).locator(".state").textContent()).toBe("revoked")
  expect(await memberProfile(token)).toBe(401)
  await finish()
})
