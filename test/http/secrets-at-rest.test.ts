// "Secrets are stored as digests and never logged" (spec "Credential formats"), over a real
// server: every credential the doors issue (API and browser sessions, the device flow's codes and
// both lineages, a rotation, an authorization code and its exchange, personal tokens) and the
// password that signed in are looked for in every row of every table and in every line logged at
// the finest level. Only a token's lookup identifier may be kept; its secret part never is.
import { createHash, randomBytes } from "node:crypto"
import { sessionCookie } from "@troupe/http/web/Cookies"
import { Effect, Logger, References } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, expect, it } from "vitest"
import { bearer, csrfTokenIn, request } from "../support/http.ts"
import { apiToken, createOwner, ownerCredentials, personalToken } from "../support/people.ts"
import { startTestServer, type TestServer } from "../support/server.ts"
import {
  agentFields,
  connector,
  decide,
  form,
  machineFields,
  poll,
  signedInBrowser,
  startDevice
} from "./oauth/support-device.ts"

const logged: Array<string> = []
const recordingLogger = Logger.make(({ message, fiber }) => {
  logged.push(JSON.stringify({ message, annotations: fiber.getRef(References.CurrentLogAnnotations) }))
})

let server: TestServer
beforeAll(async () => {
  server = await startTestServer({ logger: { logger: recordingLogger, level: "Trace" } })
})
afterAll(() => server?.close())

/** What must never be stored or logged of a token: all of it, and its secret part alone. */
const secretParts = (token: string) => {
  const secret = token.includes(".") ? token.slice(token.lastIndexOf(".") + 1) : token.slice(-43)
  return [token, secret]
}

/** Every row of every table of the public schema, as JSON text (bytea shows as hex). */
const everyRow = () =>
  server.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient
      const tables = yield* sql<{ name: string }>`
        SELECT table_name AS name FROM information_schema.tables
        WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`
      const rows: Array<string> = []
      for (const { name } of tables) {
        const found = yield* sql<{ row: string }>`SELECT row_to_json(t)::text AS row FROM ${sql(name)} t`
        rows.push(...found.map((found) => found.row))
      }
      return rows.join("\n")
    })
  )

it("keeps no credential's secret and no password in the database or the log", async () => {
  const owner = await createOwner(server)
  const issued: Array<string> = []
  issued.push(await apiToken(server))
  const browser = await signedInBrowser(server, ownerCredentials.email, ownerCredentials.password)
  issued.push(decodeURIComponent(browser.cookies.get(sessionCookie)!))

  const started = await startDevice(server, { ...agentFields("secret-agent"), ...machineFields("secret-runner") })
  issued.push(started.device_code)
  await decide(browser, started.user_code, "approve")
  const connected = (await poll(server, started.device_code)).body
  issued.push(
    connected.access_token,
    connected.refresh_token,
    connected.executor_access_token,
    connected.runner.access_token,
    connected.runner.refresh_token
  )
  const rotated = (
    await form(server, "/oauth/token", {
      grant_type: "refresh_token",
      refresh_token: connected.refresh_token,
      client_id: connector
    })
  ).body
  issued.push(rotated.access_token, rotated.refresh_token, rotated.executor_access_token)

  const verifier = randomBytes(32).toString("base64url")
  const authorize = `/oauth/authorize?${new URLSearchParams({
    client_id: "svc-application",
    response_type: "code",
    redirect_uri: "http://127.0.0.1:7777/auth/callback",
    state: "s",
    code_challenge_method: "S256",
    code_challenge: createHash("sha256").update(verifier).digest("base64url"),
    connection_mode: "login"
  })}`
  const consent = await browser.get(authorize)
  const action = /action="([^"]+)"/.exec(consent.text)![1]!.replace(/&amp;/g, "&")
  const answered = await browser.post(action, { decision: "approve", csrf_token: csrfTokenIn(consent.text) })
  const code = new URL(answered.headers.get("location")!).searchParams.get("code")!
  issued.push(code)
  const exchanged = await form(server, "/oauth/token", {
    grant_type: "authorization_code",
    client_id: "svc-application",
    code,
    redirect_uri: "http://127.0.0.1:7777/auth/callback",
    code_verifier: verifier
  })
  expect(exchanged.status).toBe(200)
  issued.push(exchanged.body.access_token, exchanged.body.refresh_token)
  issued.push(await personalToken(server, owner, "platform"), await personalToken(server, owner, "member"))

  // Each credential works (so none above is a refusal's text), then some are used and revoked.
  expect(
    (await request(server.baseUrl, "GET", "/agent_api/v1/profile", { headers: bearer(rotated.access_token) })).status
  ).toBe(200)
  expect((await form(server, "/oauth/revoke", { client_id: connector, token: rotated.refresh_token })).status).toBe(200)
  expect((await request(server.baseUrl, "DELETE", "/api/v1/session", { headers: bearer(issued[0]!) })).status).toBe(200)

  const stored = await everyRow()
  const log = logged.join("\n")
  // The dump and the log are the real ones: a lookup identifier is kept, the token endpoint logged.
  expect(stored).toContain(rotated.access_token.slice("sk-svc-api-v1-".length, -43))
  expect(log).toContain("POST /oauth/token 200")
  for (const secret of [...issued.flatMap(secretParts), ownerCredentials.password, verifier]) {
    const hex = Buffer.from(secret).toString("hex")
    expect([secret, stored.includes(secret) || stored.includes(hex)]).toEqual([secret, false])
    expect([secret, log.includes(secret)]).toEqual([secret, false])
  }
})
