// The conversation page in headless Chromium (test/support/chromium.ts): the owner signs in and
// opens a conversation of a workspace they can see, with no external asset; it shows the timeline
// and the queue as they are, then a slow reply's text arriving live over the cable (the stock
// client over the browser cookie), the settled turn, and the queued message draining into a turn.
// A message queued while the page is open shows its text live (read from the page's queue route).
// Someone who may not read the conversation gets the same 404 as for no conversation at all.
import type { Page } from "playwright-core"
import { expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { serverBesideChromium } from "../../support/browser-pages.ts"
import { waitForConversation } from "../../support/conversations.ts"
import { bearer, request } from "../../support/http.ts"
import type { ConnectedAgent } from "../../support/members.ts"
import { memberCredentials, ownerCredentials } from "../../support/people.ts"
import type { TestServer } from "../../support/server.ts"

let agent: ConnectedAgent
let keys = 0

const call = (server: TestServer, method: string, path: string, body?: unknown) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, {
    headers: { ...bearer(agent.token), ...(method === "POST" ? { "idempotency-key": `page-${++keys}` } : {}) },
    body
  })

const file = serverBesideChromium(async (server) => {
  agent = (await twoStewards(server, { owner: ["page-agent"], member: [] })).ownerAgents[0] as ConnectedAgent
})

/** A conversation of the agent's workspace with one settled reply ("echo: hello"). */
const conversation = async () => {
  const { server } = file
  const workspace = (await call(server, "POST", "/workspaces", { workspace: { name: "on the page" } })).body.workspace
  const base = `/workspaces/${workspace.public_id}/conversations`
  const id = (await call(server, "POST", base, { conversation: { title: "Talk with an agent" } })).body.conversation
    .public_id as string
  const input = (body: Record<string, unknown>) => call(server, "POST", `${base}/${id}/inputs`, { input: body })
  expect((await input({ kind: "direct_reply", text: "hello", model: { model: "local/echo" } })).status).toBe(202)
  const turns = async () => (await call(server, "GET", `${base}/${id}/turns`)).body.turns as Array<any>
  await waitForConversation(server, id, async () => (await turns())[0]?.status === "completed")
  return { id, input }
}

/** Fills the sign-in form the page was sent to; answers the response to the page it returns to. */
const signIn = async (page: Page, credentials: { email: string; password: string }, returnTo: string) => {
  expect(new URL(page.url()).pathname).toBe("/login")
  await page.fill("#email", credentials.email)
  await page.fill("#password", credentials.password)
  const [response] = await Promise.all([
    page.waitForResponse((res) => new URL(res.url()).pathname === returnTo),
    page.click("button[type=submit]")
  ])
  return response
}

it("shows the timeline and the queue, then a reply's text arriving live, with no external asset", async () => {
  const { id, input } = await conversation()
  const { page, finish } = await file.openPage()
  await page.goto(`${file.server.baseUrl}/conversations/${id}`)
  expect((await signIn(page, ownerCredentials, `/conversations/${id}`)).status()).toBe(200)
  expect(await page.textContent("h1")).toBe("Talk with an agent")

  // A slow reply starts, and a message waits in the queue behind it.
  const reply = Array.from({ length: 24 }, (_, index) => `word${index + 1}`).join(" ")
  const slow = JSON.stringify({ reply, pace_ms: 200 })
  expect((await input({ kind: "direct_reply", text: slow, model: { model: "local/script" } })).status).toBe(202)
  expect((await input({ kind: "message", text: "queued note" })).status).toBe(202)
  await page.reload()

  const turns = page.locator("#turns > li")
  await expect.poll(() => turns.count()).toBe(2)
  expect(await turns.nth(0).locator(".content").textContent()).toBe("echo: hello")
  expect(await turns.nth(0).getAttribute("data-status")).toBe("completed")
  expect(await page.locator("#inputs > li .content").allTextContents()).toEqual(["queued note"])
  await page.locator("#live", { hasText: "live" }).waitFor()

  // Part of the reply is on the page while its turn still runs.
  const streaming = page.locator('#turns > li[data-status="running"] .content')
  await streaming.filter({ hasText: /\S/ }).waitFor()
  const partial = (await streaming.textContent()) ?? ""
  expect(partial.length).toBeGreaterThan(0)
  expect(partial.length).toBeLessThan(reply.length)
  expect(reply.startsWith(partial)).toBe(true)

  // Then the whole reply, settled; the queued message drains into the next turn.
  const answered = turns.nth(1)
  await page.locator('#turns > li:nth-child(2)[data-status="completed"]').waitFor()
  expect(await answered.locator(".content").textContent()).toBe(reply)
  await page.locator("#turns > li:nth-child(3) .content", { hasText: "queued note" }).waitFor()
  await expect.poll(() => page.locator("#inputs > li").count()).toBe(0)
  await page.screenshot({ path: "/tmp/troupe-conversation.png", fullPage: true })
  await finish()
})

it("shows the text of a message queued while the page is open, without a reload", async () => {
  const { id, input } = await conversation()
  const { page, finish } = await file.openPage()
  await page.goto(`${file.server.baseUrl}/conversations/${id}`)
  expect((await signIn(page, ownerCredentials, `/conversations/${id}`)).status()).toBe(200)
  await page.locator("#live", { hasText: "live" }).waitFor()

  // A slow reply holds the queue, so the message waits in it while the page watches.
  const reply = Array.from({ length: 30 }, (_, index) => `word${index + 1}`).join(" ")
  const slow = JSON.stringify({ reply, pace_ms: 200 })
  expect((await input({ kind: "direct_reply", text: slow, model: { model: "local/script" } })).status).toBe(202)
  expect((await input({ kind: "message", text: "arrived live" })).status).toBe(202)

  const queued = page.locator("#inputs > li", { has: page.locator(".content", { hasText: "arrived live" }) })
  await queued.waitFor()
  expect(await queued.locator(".kind").textContent()).toBe("message")
  expect(((await queued.locator(".who").textContent()) ?? "").length).toBeGreaterThan(0)
  await page.locator("#turns > li .content", { hasText: "arrived live" }).waitFor()
  await expect.poll(() => page.locator("#inputs > li").count()).toBe(0)
  await finish()
})

it("answers 404 to a human who may not read the conversation, as for an unknown one", async () => {
  const { id } = await conversation()
  const context = await file.browser.newContext()
  const page = await context.newPage()
  await page.goto(`${file.server.baseUrl}/conversations/${id}`)
  expect((await signIn(page, memberCredentials, `/conversations/${id}`)).status()).toBe(404)
  expect(await page.textContent("h1")).toBe("Not found")
  const unknown = await page.goto(`${file.server.baseUrl}/conversations/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b`)
  expect(unknown?.status()).toBe(404)
  expect((await page.goto(`${file.server.baseUrl}/conversations/not-an-id`))?.status()).toBe(404)
  // The page's queue route keeps the same rules: 404 for this human, 401 without a session.
  const queue = await context.request.get(`${file.server.baseUrl}/conversations/${id}/queue`)
  expect(queue.status()).toBe(404)
  expect((await queue.json()).error.code).toBe("not_found")
  expect((await request(file.server.baseUrl, "GET", `/conversations/${id}/queue`)).status).toBe(401)
  await context.close()
})
