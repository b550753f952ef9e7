// Hostile request bodies and targets, through the real server: deep nesting, text PostgreSQL cannot
// store (U+0000, lone surrogates), bytes that are not UTF-8, percent-encoding that is not UTF-8,
// bodies without a Content-Type or with a Content-Encoding, and ids spelled in upper case. Each is
// refused once, at decoding, in its door's envelope (never a 500, never a silent rewrite), and
// nothing is stored.
import { gzipSync } from "node:zlib"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../support/account.ts"
import { bearer, csrfTokenIn, request } from "../support/http.ts"
import type { ConnectedAgent } from "../support/members.ts"
import { ownerCredentials } from "../support/people.ts"
import { startTestServer, type TestServer } from "../support/server.ts"

let server: TestServer
let agent: ConnectedAgent

beforeAll(async () => {
  server = await startTestServer()
  const account = await twoStewards(server, { owner: ["hostile-agent"], member: [] })
  agent = account.ownerAgents[0]!
})
afterAll(() => server?.close())

let keys = 0
const freshKey = () => `hostile-${++keys}`

/** Sends exact bytes (a Buffer body gets no Content-Type unless one is given). */
const send = (method: string, path: string, body: string | Buffer | undefined, headers: Record<string, string>) =>
  request(server.baseUrl, method, path, { raw: typeof body === "string" ? Buffer.from(body) : body, headers })

const jsonType = { "content-type": "application/json" }
const formType = { "content-type": "application/x-www-form-urlencoded" }
const member = (extra: Record<string, string> = {}) => ({ ...bearer(agent.token), ...extra })

/** JSON text with a raw byte spliced in where `@` stands. */
const withByte = (text: string, byte: number) => {
  const at = text.indexOf("@")
  return Buffer.concat([Buffer.from(text.slice(0, at)), Buffer.from([byte]), Buffer.from(text.slice(at + 1))])
}

const expectEnvelope = (response: { status: number; body: any }, status: number, code: string, mentions?: string) => {
  expect({ status: response.status, body: response.body }).toEqual({
    status,
    body: { error: { code, message: expect.any(String) } }
  })
  if (mentions !== undefined) expect(response.body.error.message).toContain(mentions)
}

const expectOAuth = (response: { status: number; body: any }, status: number, error: string) =>
  expect({ status: response.status, body: response.body }).toEqual({
    status,
    body: { error, error_description: expect.any(String) }
  })

const createWorkspace = (raw: string | Buffer, headers: Record<string, string> = jsonType) =>
  send("POST", "/agent_api/v1/workspaces", raw, member({ ...headers, "idempotency-key": freshKey() }))

const workspaceNames = async () =>
  (
    await request(server.baseUrl, "GET", "/agent_api/v1/workspaces?limit=100", { headers: member() })
  ).body.workspaces.map((workspace: { name: string }) => workspace.name)

const storeEntry = (raw: string | Buffer, headers: Record<string, string> = jsonType) =>
  send("POST", "/agent_api/v1/profile/store_entries", raw, member({ ...headers, "idempotency-key": freshKey() }))

const storedNamespaces = async () =>
  (
    await request(server.baseUrl, "GET", "/agent_api/v1/profile/store_entries?limit=100", { headers: member() })
  ).body.store_entries.map((entry: { namespace: string }) => entry.namespace)

const nested = (levels: number) => `${"[".repeat(levels)}${"]".repeat(levels)}`

describe("nesting depth is bounded once, at decoding", () => {
  it("256 levels pass and 257 are 400 parameter_invalid naming the member", async () => {
    // The body is level 1, store_entry 2, so a value of 254 nested arrays reaches level 256.
    const entry = (levels: number, namespace: string) =>
      `{"store_entry": {"namespace": "${namespace}", "key": "k", "value": ${nested(levels)}}}`
    expect((await storeEntry(entry(254, "deepest"))).status).toBe(201)
    expectEnvelope(await storeEntry(entry(255, "too-deep")), 400, "parameter_invalid", "store_entry.value")
    expect(await storedNamespaces()).not.toContain("too-deep")
  })

  it("4,500 levels in workspace metadata or a store value are refused, not a 500", async () => {
    const deep = nested(4500)
    expectEnvelope(
      await createWorkspace(`{"workspace": {"name": "deep", "metadata": {"a": ${deep}}}}`),
      400,
      "parameter_invalid",
      "workspace.metadata.a"
    )
    expectEnvelope(
      await storeEntry(`{"store_entry": {"namespace": "deep", "key": "k", "value": ${deep}}}`),
      400,
      "parameter_invalid"
    )
    expect(await workspaceNames()).not.toContain("deep")
  })

  it("the OAuth doors and the session door refuse it in their own shape", async () => {
    const deep = `{"client_id": "svc-first-party-connector", "x": ${nested(300)}}`
    expectOAuth(await send("POST", "/oauth/token", deep, jsonType), 400, "invalid_request")
    expectOAuth(await send("POST", "/oauth/device_authorization", deep, jsonType), 400, "invalid_request")
    const session = await send("POST", "/api/v1/session", `{"email": ${nested(300)}, "password": "x"}`, jsonType)
    expectEnvelope(session, 400, "bad_request")
  })
})

describe("text PostgreSQL cannot store is refused at decoding", () => {
  it("U+0000 in a named agent's system_prompt is 400 parameter_invalid naming it", async () => {
    const response = await send(
      "PUT",
      "/agent_api/v1/profile/agents/nul-prompt",
      JSON.stringify({ scope: "instance", description: "d", configuration: {}, system_prompt: "a\u0000b" }),
      member(jsonType)
    )
    expectEnvelope(response, 400, "parameter_invalid", "system_prompt")
    const read = await request(server.baseUrl, "GET", "/agent_api/v1/profile/agents/nul-prompt", { headers: member() })
    expect(read.status).toBe(404)
  })

  it("U+0000 or a lone surrogate in workspace metadata, in a value or a member name, is refused naming it", async () => {
    for (const [raw, mentions] of [
      ['{"workspace": {"name": "nul", "metadata": {"note": "a\\u0000b"}}}', "workspace.metadata.note"],
      ['{"workspace": {"name": "nul", "metadata": {"a\\u0000b": 1}}}', "workspace.metadata"],
      ['{"workspace": {"name": "nul", "metadata": {"note": "\\ud800"}}}', "workspace.metadata.note"],
      ['{"workspace": {"name": "nul", "metadata": {"list": ["ok", "\\udfff"]}}}', "workspace.metadata.list.1"]
    ] as const) {
      expectEnvelope(await createWorkspace(raw), 400, "parameter_invalid", mentions)
    }
    expect(await workspaceNames()).not.toContain("nul")
  })

  it("an escaped lone surrogate in a workspace name is refused, not stored as U+FFFD", async () => {
    expectEnvelope(await createWorkspace('{"workspace": {"name": "half \\ud83d"}}'), 400, "parameter_invalid")
    expect(await workspaceNames()).not.toContainEqual(expect.stringContaining("half"))
  })
})

describe("a body that is not valid UTF-8 is refused, never rewritten", () => {
  it("store keys that differ only in invalid bytes do not collide: both are 400 parameter_invalid", async () => {
    const body = '{"store_entry": {"namespace": "bytes", "key": "k@", "value": 1}}'
    expectEnvelope(await storeEntry(withByte(body, 0xff)), 400, "parameter_invalid", "UTF-8")
    expectEnvelope(await storeEntry(withByte(body, 0xfe)), 400, "parameter_invalid", "UTF-8")
    expect(await storedNamespaces()).not.toContain("bytes")
  })

  it("the device flow answers invalid_request to raw invalid bytes, in a form or in JSON", async () => {
    const fields = "client_id=svc-first-party-connector&agent_display_name=Bot&executor_display_name=App"
    expectOAuth(
      await send("POST", "/oauth/device_authorization", withByte(`${fields}&agent_identifier=bot@`, 0xff), formType),
      400,
      "invalid_request"
    )
    const json =
      '{"client_id": "svc-first-party-connector", "agent_identifier": "bot@", "agent_display_name": "Bot", "executor_display_name": "App"}'
    expectOAuth(
      await send("POST", "/oauth/device_authorization", withByte(json, 0xfe), jsonType),
      400,
      "invalid_request"
    )
  })

  it("percent-encoding that is not UTF-8 is invalid_request at the OAuth doors", async () => {
    for (const path of ["/oauth/token", "/oauth/revoke", "/oauth/device_authorization/cancellation"]) {
      expectOAuth(await send("POST", path, "client_id=%FF&token=x&device_code=x", formType), 400, "invalid_request")
      expectOAuth(await send("POST", path, "client_id=a%00b&token=x&device_code=x", formType), 400, "invalid_request")
    }
  })

  it("the session door answers bad_request, and invalid_credentials for a null byte in a credential (spec)", async () => {
    const body = `{"email": "${ownerCredentials.email}@", "password": "${ownerCredentials.password}"}`
    expectEnvelope(await send("POST", "/api/v1/session", withByte(body, 0xff), jsonType), 400, "bad_request")
    const nul = JSON.stringify({ email: ownerCredentials.email, password: `${ownerCredentials.password}\u0000` })
    expectEnvelope(await send("POST", "/api/v1/session", nul, jsonType), 401, "invalid_credentials")
  })

  it("a page's form that is not valid percent-encoded UTF-8, or holds U+0000, is 400 parameter_invalid", async () => {
    const page = await fetch(`${server.baseUrl}/login`)
    const cookie = page.headers
      .getSetCookie()
      .map((line) => line.split(";")[0])
      .join("; ")
    const csrf = csrfTokenIn(await page.text())
    for (const email of ["owner%FF%40example.com", "owner%00%40example.com"]) {
      const body = `email=${email}&password=x&csrf_token=${encodeURIComponent(csrf)}`
      expectEnvelope(await send("POST", "/login", body, { ...formType, cookie }), 400, "parameter_invalid")
    }
    const rawBytes = withByte(`email=owner@&password=x&csrf_token=${encodeURIComponent(csrf)}`, 0xff)
    expectEnvelope(await send("POST", "/login", rawBytes, { ...formType, cookie }), 400, "parameter_invalid")
  })
})

describe("request targets", () => {
  it("a path or query that is not valid percent-encoded UTF-8, or holds U+0000, is 400 parameter_invalid", async () => {
    for (const target of [
      "/agent_api/v1/workspaces/%FF",
      "/agent_api/v1/workspaces/%00",
      "/agent_api/v1/profile/store_entries/%C3%28",
      "/agent_api/v1/workspaces?state=%00",
      "/agent_api/v1/workspaces?after=%E0%80"
    ]) {
      expectEnvelope(await send("GET", target, undefined, member()), 400, "parameter_invalid")
    }
    expectOAuth(await send("POST", "/oauth/token?x=%FF", "grant_type=x", formType), 400, "invalid_request")
  })

  it("an upper-case id in the path is the same resource and the same idempotency envelope", async () => {
    const workspace = (await createWorkspace('{"workspace": {"name": "cased"}}')).body.workspace
    const entries = (id: string) => `/agent_api/v1/workspaces/${id}/store_entries`
    const body = '{"store_entry": {"namespace": "cased", "key": "k", "value": 1}}'
    const headers = member({ ...jsonType, "idempotency-key": freshKey() })
    const first = await send("POST", entries(workspace.public_id), body, headers)
    expect(first.status).toBe(201)
    const again = await send("POST", entries(workspace.public_id.toUpperCase()), body, headers)
    expect(again.status).toBe(201)
    expect(again.headers.get("idempotency-replayed")).toBe("true")
    expect(again.body).toEqual(first.body)
    const read = await send("GET", `/agent_api/v1/workspaces/${workspace.public_id.toUpperCase()}`, undefined, member())
    expect(read.body.workspace.public_id).toBe(workspace.public_id)
  })
})

describe("media types and encodings", () => {
  it("a JSON body without a Content-Type is 415 unsupported_media_type and nothing is created", async () => {
    const response = await createWorkspace('{"workspace": {"name": "untyped"}}', {})
    expectEnvelope(response, 415, "unsupported_media_type")
    expect(await workspaceNames()).not.toContain("untyped")
  })

  it("the session door answers bad_request to a body without a Content-Type", async () => {
    const response = await send("POST", "/api/v1/session", JSON.stringify(ownerCredentials), {})
    expectEnvelope(response, 400, "bad_request")
  })

  it("a Content-Encoding other than identity is 415 (bad_request, invalid_request at the other doors)", async () => {
    const gzip = { ...jsonType, "content-encoding": "gzip" }
    const workspace = await createWorkspace(gzipSync('{"workspace": {"name": "zipped"}}'), gzip)
    expectEnvelope(workspace, 415, "unsupported_media_type", "Content-Encoding")
    expect(await workspaceNames()).not.toContain("zipped")
    const session = await send("POST", "/api/v1/session", gzipSync(JSON.stringify(ownerCredentials)), gzip)
    expectEnvelope(session, 400, "bad_request")
    const token = gzipSync("grant_type=refresh_token&client_id=svc-first-party-connector&refresh_token=x")
    expectOAuth(
      await send("POST", "/oauth/token", token, { ...formType, "content-encoding": "gzip" }),
      400,
      "invalid_request"
    )
    const identity = await createWorkspace('{"workspace": {"name": "plain"}}', {
      ...jsonType,
      "content-encoding": "identity"
    })
    expect(identity.status).toBe(201)
  })
})
