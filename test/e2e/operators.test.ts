// The operator commands of the `troupe` CLI against a running server's admin API.
import { execFile } from "node:child_process"
import { promisify } from "node:util"
import { Redacted } from "effect"
import { afterAll, beforeAll, expect, it } from "vitest"
import { postgresReachable } from "../support/database.ts"
import { bearer, request } from "../support/http.ts"
import { apiToken, createOwner } from "../support/people.ts"
import { startTestServer, type TestServer } from "../support/server.ts"

const run = promisify(execFile)
const troupe = new URL("../../node_modules/.bin/troupe", import.meta.url).pathname
let server: TestServer
let token: string

beforeAll(async () => {
  server = await startTestServer()
  await createOwner(server)
  token = await apiToken(server)
})
afterAll(() => server?.close())

const cli = (...args: Array<string>) =>
  run(troupe, args, { env: { ...process.env, TROUPE_URL: server.baseUrl, TROUPE_TOKEN: token } })

it("troupe supervisors lists the kinds, and restart restarts one", async () => {
  const listed = await cli("supervisors")
  expect(listed.stdout).toMatch(/^KIND\s+ACTORS/m)
  expect(listed.stdout).toMatch(/^apiSession\s+1\s+1\s/m)
  const restarted = await cli("supervisors", "restart", "apiSession")
  expect(restarted.stdout).toContain("Restarted the apiSession supervisor.")
})

it("troupe actors lists actors and shows one with its journal; restart reloads it", async () => {
  const session = (await request(server.baseUrl, "GET", "/api/v1/session", { headers: bearer(token) })).body.session
  const listed = await cli("actors", "--kind", "apiSession")
  expect(listed.stdout).toContain(session.public_id)
  const shown = await cli("actors", "show", "apiSession", session.public_id)
  expect(shown.stdout).toContain("state: active (active)  seq: 1")
  expect(shown.stdout).toContain("timers: expiry at")
  expect(shown.stdout).toContain("xstate.init: - -> active")
  const restarted = await cli("actors", "restart", "apiSession", session.public_id)
  expect(restarted.stdout).toContain(`Restarted apiSession ${session.public_id}: active at seq 1.`)
})

it("fails clearly without a token or for an unknown kind", async () => {
  const noToken = await run(troupe, ["supervisors"], {
    env: { ...process.env, TROUPE_URL: server.baseUrl, TROUPE_TOKEN: "" }
  }).catch((error: { code: number; stderr: string; stdout: string }) => error)
  expect("code" in noToken && noToken.code).toBe(1)
  expect(`${noToken.stderr}${noToken.stdout}`).toContain("TROUPE_TOKEN")
  const unknown = await cli("supervisors", "restart", "nope").catch((error: { code: number; stderr: string }) => error)
  expect("code" in unknown && unknown.code).toBe(1)
  expect(`${(unknown as { stderr: string }).stderr}`).toContain("404")
})

// The CLI opens the database itself: on the embedded one the running server holds its lock.
it.runIf(await postgresReachable())(
  "troupe token create mints a platform personal token that works for administration",
  async () => {
    const { database } = server
    if (database.config._tag !== "postgres") throw new Error("expected PostgreSQL")
    const env = { ...process.env, DATABASE_URL: Redacted.value(database.config.url) }
    const minted = await run(troupe, ["token", "create", "--user", "owner@example.com", "--plane", "platform"], { env })
    const pat = minted.stdout.trim()
    expect(pat).toMatch(/^sk-svc-api-v1-/)
    const supervisors = await request(server.baseUrl, "GET", "/api/v1/admin/supervisors", { headers: bearer(pat) })
    expect(supervisors.status).toBe(200)
    const session = await request(server.baseUrl, "GET", "/api/v1/session", { headers: bearer(pat) })
    expect(session.status).toBe(404)
    const unknown = await run(troupe, ["token", "create", "--user", "nobody@example.com"], { env }).catch(
      (error: { code: number; stderr: string }) => error
    )
    expect("code" in unknown && unknown.code).toBe(1)
  }
)
