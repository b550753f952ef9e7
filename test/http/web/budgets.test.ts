// The budget pages in headless Chromium: a signed-in owner sets the cost unit, opens a member's
// budget, credits, debits (a debit beyond the headroom is refused on the page) and revokes it,
// seeing each user's budgets and ledger; a member is refused the pages.
import type { Page } from "playwright-core"
import { expect, it } from "vitest"
import { serverBesideChromium } from "../../support/browser-pages.ts"
import { createHuman, createMember, createOwner, memberCredentials, ownerCredentials } from "../../support/people.ts"
import { serverNow } from "../../support/schedules.ts"

let memberId: string
const adminCredentials = { email: "admin@example.com", password: "admin password" }

const file = serverBesideChromium(async (server) => {
  await createOwner(server)
  await createHuman(server, { ...adminCredentials, displayName: "Ada Admin", role: "admin" })
  memberId = (await createMember(server)).public_id
})

const signIn = async (page: Page, credentials: { email: string; password: string }) => {
  await page.goto(`${file.server.baseUrl}/budgets`)
  expect(new URL(page.url()).pathname).toBe("/login")
  await page.fill("#email", credentials.email)
  await page.fill("#password", credentials.password)
  const [response] = await Promise.all([
    page.waitForResponse((res) => new URL(res.url()).pathname === "/budgets"),
    page.click("button[type=submit]")
  ])
  return response
}

/** Submits the form around `button` and waits for the page it lands on. */
const submit = async (page: Page, button: string) => {
  await Promise.all([page.waitForNavigation(), page.click(button)])
}

it("an owner sets the unit, opens, credits, debits and revokes a member's budget, seeing its ledger", async () => {
  const { page, finish } = await file.openPage()
  expect((await signIn(page, ownerCredentials)).status()).toBe(200)
  expect(await page.textContent("h1")).toBe("Budgets")

  await page.fill("form[action='/budgets/cost_unit'] input[name=cost_unit]", "USD")
  await submit(page, "form[action='/budgets/cost_unit'] button")
  expect(await page.textContent(".cost-unit")).toBe("USD")

  const user = `section[data-user="${memberId}"]`
  await page.click(`${user} details summary`)
  await page.fill(`${user} details input[name=amount]`, "25.50")
  await page.fill(`${user} details input[name=reason]`, "November")
  await submit(page, `${user} details button`)
  const budget = `${user} section[data-budget]`
  expect(await page.textContent(`${budget} .credited`)).toBe("25.5")

  const adjust = async (kind: "credit" | "debit", amount: string) => {
    await page.selectOption(`${budget} form[action$='/adjust'] select[name=kind]`, kind)
    await page.fill(`${budget} form[action$='/adjust'] input[name=amount]`, amount)
    await page.fill(`${budget} form[action$='/adjust'] input[name=reason]`, `${kind} ${amount}`)
    await submit(page, `${budget} form[action$='/adjust'] button`)
  }
  await adjust("credit", "0.000000000000000001")
  await adjust("debit", "0.3")
  expect(await page.textContent(`${budget} .credited`)).toBe("25.500000000000000001")
  expect(await page.textContent(`${budget} .debited`)).toBe("0.3")
  expect(
    await page.$$eval(`${budget} tr[data-sequence] .kind`, (cells) => cells.map((cell) => cell.textContent))
  ).toEqual(["credit", "credit", "debit"])

  await adjust("debit", "100")
  expect(await page.textContent("[role=alert]")).toContain("credited − debited")
  expect(await page.textContent(`${budget} .debited`)).toBe("0.3")

  await page.fill(`${budget} form[action$='/revoke'] input[name=reason]`, "done")
  await submit(page, `${budget} form[action$='/revoke'] button`)
  expect(await page.textContent(`${budget} .state`)).toBe("revoked")
  expect(await page.$(`${budget} form[action$='/revoke']`)).toBeNull()
  await finish()
})

it("an admin opens a budget; a form without its CSRF token or outside the grammar is refused on the page", async () => {
  const { page, finish } = await file.openPage()
  expect((await signIn(page, adminCredentials)).status()).toBe(200)
  const user = `section[data-user="${memberId}"]`
  await page.click(`${user} details summary`)
  const open = `${user} details form`
  await page.fill(`${open} input[name=starts_at]`, "2040-02-30T00:00:00Z")
  await page.fill(`${open} input[name=amount]`, "5")
  await page.fill(`${open} input[name=reason]`, "admin")
  const [refused] = await Promise.all([page.waitForNavigation(), page.click(`${open} button`)])
  expect(refused?.status()).toBe(422)
  expect(await page.textContent("[role=alert]")).toContain("starts_at")

  await page.click(`${user} details summary`)
  await page.fill(`${open} input[name=amount]`, "5")
  await page.fill(`${open} input[name=reason]`, "admin")
  await page.$eval(`${open} input[name=csrf_token]`, (field) => field.remove())
  const [forged] = await Promise.all([page.waitForNavigation(), page.click(`${open} button`)])
  expect(forged?.status()).toBe(403)
  expect(await page.textContent("[role=alert]")).toContain("expired")
  expect(await page.getAttribute("#try-again", "href")).toBe("/budgets")

  // Next year's first instant: after the owner's budget (opened now), so listed after it, in any year.
  const nextYear = new Date(await serverNow(file.server)).getUTCFullYear() + 1
  await page.goto(`${file.server.baseUrl}/budgets`)
  await page.click(`${user} details summary`)
  await page.fill(`${open} input[name=starts_at]`, `${nextYear}-01-01T00:00:00Z`)
  await page.fill(`${open} input[name=amount]`, "5")
  await page.fill(`${open} input[name=reason]`, "admin")
  await submit(page, `${open} button`)
  expect(
    await page.$$eval(`${user} section[data-budget] .credited`, (cells) => cells.map((cell) => cell.textContent))
  ).toEqual(["25.500000000000000001", "5"])
  await finish()
})

it("a member is refused the budget pages", async () => {
  const { page, finish } = await file.openPage()
  expect((await signIn(page, memberCredentials)).status()).toBe(403)
  expect(await page.textContent("[role=alert]")).toContain("owner or admin")
  await finish()
})
