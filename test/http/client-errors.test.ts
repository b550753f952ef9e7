// Every error a client can cause answers its door's envelope: what Node's HTTP parser refuses
// (raw sockets), an oversized body at /oauth/*, a malformed cable handshake, and the OAuth doors'
// invalid_client (400, as the spec's Errors table says) and empty requests (invalid_request).
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { request } from "../support/http.ts"
import { createOwner } from "../support/people.ts"
import { type RawRequest, sendRaw } from "../support/raw-http.ts"
import { startTestServer, type TestServer } from "../support/server.ts"
import { agentFields, form } from "./oauth/support-device.ts"

let server: TestServer

beforeAll(async () => {
  server = await startTestServer()
  await createOwner(server)
})
afterAll(() => server?.close())

/** Writes a request on a fresh connection; answers every response (bodies parsed as JSON). */
const exchange = async (raw: RawRequest) =>
  (await sendRaw(server.baseUrl, raw)).map((answer) => ({
    ...answer,
    body: answer.body === "" ? "" : JSON.parse(answer.body)
  }))

type RawResponse = Awaited<ReturnType<typeof exchange>>[number]

const expectEnvelope = (response: RawResponse, status: number, code: string) => {
  expect({ status: response.status, body: response.body }).toEqual({
    status,
    body: { error: { code, message: expect.any(String) } }
  })
  expect(response.headers["content-type"]).toMatch(/^application\/json/)
}

const expectOAuth = (response: { status: number; body: any }, status: number, error: string) =>
  expect({ status: response.status, body: response.body }).toEqual({
    status,
    body: { error, error_description: expect.any(String) }
  })

describe("answers written for Node's HTTP parser", () => {
  const bigHeader = { "x-big": "a".repeat(17 * 1024) }

  it("a header block over 16 KB is 431 request_header_fields_too_large, in OAuth's shape under /oauth/", async () => {
    const [api] = await exchange({ method: "GET", target: "/api/v1/profile", headers: bigHeader })
    expectEnvelope(api!, 431, "request_header_fields_too_large")
    expect(api!.headers.connection).toBe("close")
    const [oauth] = await exchange({ method: "POST", target: "/oauth/token", headers: bigHeader })
    expectOAuth(oauth!, 431, "request_header_fields_too_large")
  })

  it("raw non-ASCII bytes in the path and an unknown method are 400 bad_request", async () => {
    const nonAscii = Buffer.from([...Buffer.from("/caf"), 0xc3, 0xa9]).toString("latin1")
    expectEnvelope((await exchange({ method: "GET", target: nonAscii }))[0]!, 400, "bad_request")
    expectEnvelope((await exchange({ method: "FROB", target: "/" }))[0]!, 400, "bad_request")
  })

  it("bytes past a body's Content-Length: the request is answered, then the garbage is 400 bad_request", async () => {
    const answers = await exchange({
      method: "POST",
      target: "/api/v1/session",
      headers: { "content-type": "application/json", connection: "keep-alive" },
      body: "{}",
      trailing: Buffer.from("NOT HTTP\r\n\r\n")
    })
    expect(answers.map((answer) => answer.status)).toEqual([401, 400])
    expectEnvelope(answers[0]!, 401, "invalid_credentials")
    expectEnvelope(answers[1]!, 400, "bad_request")
  })
})

describe("/oauth/* answers in OAuth's shape", () => {
  it("a body over 4 MiB is 413 content_too_large as {error, error_description}", async () => {
    const response = await request(server.baseUrl, "POST", "/oauth/token", {
      raw: `grant_type=refresh_token&refresh_token=${"x".repeat(4 * 1024 * 1024)}`,
      headers: { "content-type": "application/x-www-form-urlencoded" }
    })
    expectOAuth(response, 413, "content_too_large")
  })

  it("an unknown client is 400 invalid_client at every door", async () => {
    expectOAuth(
      await form(server, "/oauth/device_authorization", { client_id: "nope", ...agentFields("x") }),
      400,
      "invalid_client"
    )
    expectOAuth(
      await form(server, "/oauth/token", { client_id: "nope", grant_type: "refresh_token", refresh_token: "x" }),
      400,
      "invalid_client"
    )
    expectOAuth(await form(server, "/oauth/revoke", { client_id: "nope", token: "x" }), 400, "invalid_client")
    expectOAuth(
      await form(server, "/oauth/device_authorization/cancellation", { client_id: "nope", device_code: "x" }),
      400,
      "invalid_client"
    )
  })

  it("an omitted client_id is invalid_client saying it is required, a wrong one that it is unknown", async () => {
    for (const [path, fields] of [
      ["/oauth/token", { grant_type: "refresh_token", refresh_token: "x" }],
      ["/oauth/revoke", { token: "x" }],
      ["/oauth/device_authorization/cancellation", { device_code: "x" }]
    ] as const) {
      const omitted = await form(server, path, fields)
      expectOAuth(omitted, 400, "invalid_client")
      expect(omitted.body.error_description).toBe("client_id is required")
      const wrong = await form(server, path, { ...fields, client_id: "nope" })
      expect(wrong.body.error_description).toBe("Unknown client_id")
    }
  })

  it("an empty token request is invalid_request, with or without a Content-Type", async () => {
    expectOAuth(await form(server, "/oauth/token", {}), 400, "invalid_request")
    const untyped = await fetch(`${server.baseUrl}/oauth/token`, { method: "POST" })
    expectOAuth({ status: untyped.status, body: await untyped.json() }, 400, "invalid_request")
  })
})

describe("the cable's handshake", () => {
  const handshake = (headers: Record<string, string>) =>
    exchange({ method: "GET", target: "/agent_api/v1/cable", headers })
  const upgrade = { connection: "Upgrade", upgrade: "websocket", "sec-websocket-version": "13" }

  it("a bad Sec-WebSocket-Key is 400 parameter_invalid in the envelope", async () => {
    for (const key of ["not-a-key", "", "dGhlIHNhbXBsZSBub25jZQ"]) {
      expectEnvelope((await handshake({ ...upgrade, "sec-websocket-key": key }))[0]!, 400, "parameter_invalid")
    }
  })

  it("a missing key, an unknown version or no Connection: Upgrade is refused the same way", async () => {
    const key = "dGhlIHNhbXBsZSBub25jZQ=="
    expectEnvelope((await handshake(upgrade))[0]!, 400, "parameter_invalid")
    const version = (await handshake({ ...upgrade, "sec-websocket-key": key, "sec-websocket-version": "12" }))[0]!
    expectEnvelope(version, 400, "parameter_invalid")
    expect(version.headers["sec-websocket-version"]).toBe("13")
    const noConnection = await handshake({ ...upgrade, connection: "close", "sec-websocket-key": key })
    expectEnvelope(noConnection[0]!, 400, "parameter_invalid")
  })
})
