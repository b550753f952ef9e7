// End to end: the README's start command (`npm start`) really starts Troupe on the embedded
// database when DATABASE_URL is unset, answers every request from the moment its port accepts
// connections, stops cleanly on SIGTERM, and keeps its data across runs.
import { existsSync } from "node:fs"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Browser, bearer, csrfTokenIn, request } from "../support/http.ts"
import { freePort, within } from "../support/processes.ts"
import { probeStartup } from "../support/startup-probe.ts"
import { killAll, npmStart, type ServerChild } from "../support/troupe-process.ts"

const owner = { display_name: "Olive Owner", email: "olive@example.com", password: "correct horse battery" }

let dataRoot: string
beforeAll(async () => {
  dataRoot = await mkdtemp(join(tmpdir(), "troupe-start-"))
})
afterAll(async () => {
  await killAll()
  await rm(dataRoot, { recursive: true, force: true })
})

describe("npm start on the embedded database", { timeout: 120_000 }, () => {
  let dataDir: string
  let first: ServerChild

  // The port listens seconds before the application is ready (the embedded database opens,
  // migrations run, supervisors start): a request in that window used to be read and never
  // answered. Now every accepted request is answered: 503 with Retry-After, /health 200.
  it("answers every request from the first accepted connection until /ready answers 200", async () => {
    dataDir = await mkdtemp(join(dataRoot, "data-"))
    const port = await freePort()
    const probing = probeStartup(port, { answerMs: 15_000, totalMs: 90_000 })
    first = await npmStart(dataDir, port)
    const { answers, failures } = await probing
    expect(failures).toEqual([])
    const starting = answers.filter((answer) => answer.status === 503)
    expect(starting.length).toBeGreaterThan(0)
    for (const answer of starting) {
      expect(answer.headers["retry-after"]).toBe("1")
      expect(answer.headers["content-type"]).toBe("application/json")
      expect(JSON.parse(answer.body)).toEqual(
        answer.path.startsWith("/oauth/")
          ? { error: "not_ready", error_description: "Troupe is starting; retry shortly" }
          : { error: { code: "not_ready", message: "Troupe is starting; retry shortly" } }
      )
    }
    for (const answer of answers.filter((answer) => answer.path === "/health")) {
      expect({ status: answer.status, body: JSON.parse(answer.body) }).toEqual({ status: 200, body: { status: "ok" } })
    }
    expect(answers.some((answer) => answer.path === "/ready" && answer.status === 200)).toBe(true)
    const ready = await request(first.baseUrl, "GET", "/ready")
    expect({ status: ready.status, body: ready.body }).toEqual({ status: 200, body: { status: "ready" } })
  })

  it("serves /openapi.json and the first-boot page with DATABASE_URL unset", async () => {
    expect(first).toBeDefined()
    expect(first.output()).toContain(`database: embedded (${join(dataDir, "pg")})`)
    expect(first.output()).toMatch(/GET \/openapi\.json|POST \/oauth\/token/)
    expect(first.output()).not.toMatch(/GET \/(ready|health) /)
    expect(existsSync(join(dataDir, "pg.lock"))).toBe(true)
    const openapi = await request(first.baseUrl, "GET", "/openapi.json")
    expect(openapi.status).toBe(200)
    expect(openapi.body.openapi).toMatch(/^3\./)
    expect(openapi.body.paths["/api/v1/session"]).toBeDefined()
    const browser = new Browser(first.baseUrl)
    const setup = await browser.get("/setup")
    expect(setup.status).toBe(200)
    expect(setup.headers.get("content-type")).toMatch(/^text\/html/)
    const created = await browser.post("/setup", { ...owner, csrf_token: csrfTokenIn(setup.text) })
    expect(created.status).toBe(303)
    expect((await browser.get("/")).text).toContain("Olive Owner")
  })

  // npm runs the script under `sh -c`; the script execs the server so the SIGTERM npm forwards
  // reaches it (a plain `troupe serve` would leave it running as an orphan holding pg.lock).
  it("SIGTERM to npm start exits 0 within a bounded time and releases the data dir's lock file", async () => {
    expect(first).toBeDefined()
    first.child.kill("SIGTERM")
    const exit = await within(15_000, "npm start to exit after SIGTERM", first.exited)
    expect(exit).toEqual({ code: 0, signal: null })
    await within(15_000, "the server to exit after SIGTERM", first.closed)
    expect(first.output()).not.toMatch(/error|defect/i)
    expect(existsSync(join(dataDir, "pg.lock"))).toBe(false)
  })

  it("a second npm start on the same data dir keeps the data: the owner created before signs in", async () => {
    expect(first).toBeDefined()
    // Whatever the previous test left running is stopped first.
    await first.stop()
    expect(existsSync(join(dataDir, "pg.lock"))).toBe(false)
    const second = await npmStart(dataDir)
    const setup = await new Browser(second.baseUrl).get("/setup")
    expect(setup.status).toBe(303)
    expect(setup.headers.get("location")).toBe("/login")
    const session = await request(second.baseUrl, "POST", "/api/v1/session", {
      body: { email: owner.email, password: owner.password }
    })
    expect(session.status).toBe(201)
    const profile = await request(second.baseUrl, "GET", "/api/v1/profile", { headers: bearer(session.body.token) })
    expect(profile.body.member).toMatchObject({ role: "owner", handle: "olive-owner" })
    await second.stop()
    expect(existsSync(join(dataDir, "pg.lock"))).toBe(false)
  })

  // The lock file `<dataDir>.lock` lives beside the database: its directory is created first.
  it("starts on a data dir that does not exist yet, as the default ./.troupe/data on a fresh checkout", async () => {
    const dataDir = join(dataRoot, "fresh", "data")
    const run = await npmStart(dataDir)
    expect((await request(run.baseUrl, "GET", "/openapi.json")).status).toBe(200)
    await run.stop()
  })
})
