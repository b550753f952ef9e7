// The device approval pages in headless Chromium (test/support/chromium.ts):
// the complete verification URL sends a signed-out human through /login and back to the confirm
// page, which shows the code and the machine; choosing "Everyone in this installation" and
// approving makes the next poll issue the transport credential. A code typed by hand (lower
// case, with a dash) reaches the same page; Deny makes the next poll access_denied; a member
// cannot approve an agent the owner stewards. No page request leaves the server's host.
import { ExecutorsRepository } from "@troupe/storage/repositories/Executors"
import { Effect } from "effect"
import type { Page } from "playwright-core"
import { expect, it } from "vitest"
import { agentFields, decide, machineFields, poll, signedInBrowser, startDevice } from "../http/oauth/support-device.ts"
import { serverBesideChromium } from "../support/browser-pages.ts"
import { bearer, request } from "../support/http.ts"
import { createMember, createOwner, memberCredentials, ownerCredentials } from "../support/people.ts"

const file = serverBesideChromium(async (server) => {
  await createOwner(server)
  await createMember(server)
})

/** Fills the /login form the page was sent to; answers the response of the page it returns to. */
const signIn = async (page: Page, credentials: { email: string; password: string }) => {
  expect(new URL(page.url()).pathname).toBe("/login")
  await page.fill("#email", credentials.email)
  await page.fill("#password", credentials.password)
  const [response] = await Promise.all([
    page.waitForResponse((res) => new URL(res.url()).pathname === "/oauth/device"),
    page.click("button[type=submit]")
  ])
  return response
}

it("approves a fresh standalone machine for everyone after signing in; the next poll issues its transport credential", async () => {
  const started = await startDevice(file.server, machineFields("chromium-runner"))
  const { page, finish } = await file.openPage()
  await page.goto(started.verification_uri_complete)
  const back = await signIn(page, ownerCredentials)
  expect(back.status()).toBe(200)
  expect(new URL(page.url()).searchParams.get("user_code")).toBe(started.user_code)

  expect(await page.textContent("#user-code")).toBe(started.user_code)
  expect(await page.locator("table").textContent()).toContain("Runner chromium-runner (chromium-runner)")
  expect(await page.isChecked("input[name=assignment_scope][value=user_private]")).toBe(true)
  await page.getByLabel("Everyone in this installation").check()
  const [decided] = await Promise.all([
    page.waitForResponse((res) => res.request().method() === "POST" && new URL(res.url()).pathname === "/oauth/device"),
    page.click("#approve")
  ])
  expect(decided.status()).toBe(200)
  expect(await page.textContent("#outcome")).toBe("Approved")

  const issued = await poll(file.server, started.device_code)
  expect(issued.status).toBe(200)
  expect(issued.body).toMatchObject({ plane: "executor_transport", token_type: "Bearer" })
  const executor = await request(file.server.baseUrl, "GET", "/agent_api/v1/executor", {
    headers: bearer(issued.body.access_token)
  })
  expect(executor.status).toBe(200)
  expect(executor.body.executor).toMatchObject({
    kind: "runner",
    status: "active",
    display_name: "Runner chromium-runner"
  })
  const row = await file.server.run(
    Effect.flatMap(ExecutorsRepository, (executors) =>
      executors.findExecutorByPublicId(executor.body.executor.public_id)
    )
  )
  expect(row?.assignment_scope).toBe("account_wide")
  await finish()
})

it("a code typed by hand in lower case reaches the same confirm page; Deny makes the next poll access_denied", async () => {
  const started = await startDevice(file.server, machineFields("typed-runner"))
  const { page, finish } = await file.openPage()
  await page.goto(started.verification_uri)
  expect((await signIn(page, ownerCredentials)).status()).toBe(200)
  const typed = started.user_code.toLowerCase()
  expect(typed).toMatch(/^[a-z]{4}-[a-z]{4}$/)
  await page.fill("#user_code", typed)
  await Promise.all([page.waitForURL((url) => url.searchParams.has("user_code")), page.click("button[type=submit]")])
  expect(await page.textContent("#user-code")).toBe(started.user_code)
  expect(await page.locator("table").textContent()).toContain("Runner typed-runner (typed-runner)")
  expect(await page.locator("input[name=assignment_scope]").count()).toBe(2)

  await page.click("#deny")
  await page.locator("#outcome", { hasText: "Denied" }).waitFor()
  expect((await poll(file.server, started.device_code)).body.error).toBe("access_denied")
  await finish()
})

it("refuses a member approving a code for an agent the owner stewards, with a 403 page before any credential exists", async () => {
  const owner = await signedInBrowser(file.server, ownerCredentials.email, ownerCredentials.password)
  const first = await startDevice(file.server, agentFields("owners-agent"))
  expect((await decide(owner, first.user_code, "approve")).status).toBe(200)
  const connected = await poll(file.server, first.device_code)
  expect(connected.status).toBe(200)

  const started = await startDevice(file.server, agentFields("owners-agent"))
  const { page, finish } = await file.openPage()
  await page.goto(started.verification_uri_complete)
  const refused = await signIn(page, memberCredentials)
  expect(refused.status()).toBe(403)
  expect(await page.textContent("h1")).toBe("Not allowed")
  expect(await page.locator("#approve").count()).toBe(0)

  expect((await poll(file.server, started.device_code)).body.error).toBe("authorization_pending")
  const profile = await request(file.server.baseUrl, "GET", "/agent_api/v1/profile", {
    headers: bearer(connected.body.access_token)
  })
  expect(profile.status).toBe(200)
  await finish()
})
