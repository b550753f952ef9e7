// Store entries at the workspace host: creates replay their acceptance (Idempotency-Replayed),
// reads need sight of the workspace, writes need write standing.
import { Effect } from "effect"
import { afterAll, beforeAll, expect, it } from "vitest"
import { waitForActorState } from "../../support/actors.ts"
import { bearer, request } from "../../support/http.ts"
import { type ConnectedAgent, connectAgent, signedIn } from "../../support/members.ts"
import { createHuman, createOwner, ownerCredentials } from "../../support/people.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
let agent: ConnectedAgent
let otherAgent: ConnectedAgent
let memberToken: string
let ownerToken: string

const call = (method: string, path: string, token: string, body?: unknown, headers: Record<string, string> = {}) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, { headers: { ...bearer(token), ...headers }, body })

beforeAll(async () => {
  server = await startTestServer()
  const owner = await createOwner(server)
  const member = await createHuman(server, {
    email: "member@example.com",
    password: "member password",
    displayName: "Mo",
    role: "member"
  })
  const browser = await signedIn(server, ownerCredentials)
  agent = await connectAgent(server, browser, "store-agent")
  otherAgent = await connectAgent(server, browser, "other-store-agent")
  const { Credentials } = await import("@troupe/domain/Credentials")
  ownerToken = await server.run(Effect.flatMap(Credentials, (c) => c.personalToken(owner, "member", "tests")))
  memberToken = await server.run(Effect.flatMap(Credentials, (c) => c.personalToken(member, "member", "tests")))
})
afterAll(() => server?.close())

const workspace = async (token: string, name: string) =>
  (await call("POST", "/workspaces", token, { workspace: { name } }, { "idempotency-key": `ws-${name}` })).body
    .workspace

it("a create replays verbatim within the window and refuses the key with another body", async () => {
  const ws = await workspace(agent.token, "Store room")
  const path = `/workspaces/${ws.public_id}/store_entries`
  const body = { store_entry: { namespace: "prefs", key: "theme", value: { dark: true } } }
  const first = await call("POST", path, agent.token, body, { "idempotency-key": "entry-1" })
  expect(first.status).toBe(201)
  expect(first.headers.get("idempotency-replayed")).toBe("false")
  const again = await call("POST", path, agent.token, body, { "idempotency-key": "entry-1" })
  expect([again.status, again.headers.get("idempotency-replayed")]).toEqual([201, "true"])
  expect(again.body).toEqual(first.body)
  const other = await call(
    "POST",
    path,
    agent.token,
    { store_entry: { namespace: "prefs", key: "font", value: 1 } },
    { "idempotency-key": "entry-1" }
  )
  expect(other.body.error.code).toBe("idempotency_envelope_mismatch")
  const listed = await call("GET", path, agent.token)
  expect(listed.body.store_entries.map((e: { key: string }) => e.key)).toEqual(["theme"])
  const shown = await call("GET", `${path}/${first.body.store_entry.public_id}`, ownerToken)
  expect(shown.body.store_entry.value).toEqual({ dark: true })
})

it("writes need write standing: the dedication fence and an active workspace; unseen workspaces are 404", async () => {
  const ws = await workspace(agent.token, "Fenced store")
  const path = `/workspaces/${ws.public_id}/store_entries`
  const body = { store_entry: { namespace: "n", key: "k", value: 1 } }
  const fenced = await call("POST", path, otherAgent.token, body, { "idempotency-key": "fenced" })
  expect([fenced.status, fenced.body.error.code]).toEqual([403, "workspace_agent_identifier_mismatch"])
  expect((await call("GET", path, otherAgent.token)).status).toBe(200)
  const hidden = await call("GET", path, memberToken)
  const absent = await call("GET", "/workspaces/01900000-0000-7000-8000-000000000000/store_entries", memberToken)
  expect([hidden.status, hidden.body]).toEqual([absent.status, absent.body])
  await call("POST", `/workspaces/${ws.public_id}/archival`, ownerToken, { command: { lock_version: 0 } })
  await waitForActorState(server, "workspace", ws.public_id, "archived")
  const archived = await call("POST", path, agent.token, body, { "idempotency-key": "archived" })
  expect([archived.status, archived.body.error.code]).toEqual([409, "workspace_not_active"])
  expect((await call("GET", path, agent.token)).status).toBe(200)
})
