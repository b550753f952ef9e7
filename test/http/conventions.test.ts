// The shared HTTP conventions over a real server: the error envelope, request ids, keyset
// pagination, lock_version, Idempotency-Key, Retry-After, concealment, /openapi.json and /docs.
// Rules the real API does not exercise yet go through a test-only API mounted beside it.
import { TroupeApi } from "@troupe/contracts/Api"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { bearer, type JsonResponse, request } from "../support/http.ts"
import { apiToken, createHuman, createOwner, memberCredentials, ownerCredentials } from "../support/people.ts"
import { startTestServer, type TestServer } from "../support/server.ts"
import { ConventionsTestRoutes, defectSecret, listedIds, widgetRuns } from "./support-conventions-api.ts"

let server: TestServer
let ownerToken: string
let memberToken: string

beforeAll(async () => {
  server = await startTestServer({ extraRoutes: ConventionsTestRoutes })
  await createOwner(server)
  await createHuman(server, { ...memberCredentials, displayName: "Mo Member", role: "member" })
  ownerToken = await apiToken(server, ownerCredentials)
  memberToken = await apiToken(server, memberCredentials)
})
afterAll(() => server?.close())

/** A response with its body both verbatim (`text`) and parsed, for rules about exact bytes. */
const send = (
  method: string,
  path: string,
  options: { readonly body?: string; readonly headers?: Record<string, string> } = {}
) => request(server.baseUrl, method, path, { raw: options.body, headers: options.headers })

const expectEnvelope = (response: JsonResponse, status: number, code: string) => {
  expect({ status: response.status, body: response.body }).toEqual({
    status,
    body: { error: { code, message: expect.any(String) } }
  })
  expect(response.headers.get("content-type")).toMatch(/^application\/json/)
}

const json = { "content-type": "application/json" }

describe("error envelope", () => {
  it("an unknown route answers 404 not_found, and so does a wrong method on a known path", async () => {
    for (const [method, path] of [
      ["GET", "/api/v1/nothing-here"],
      ["GET", "/no/such/page"],
      ["POST", "/api/v1/profile"],
      ["PUT", "/api/v1/session"],
      ["PATCH", "/api/v1/session"],
      ["GET", "/test/echo"]
    ] as const) {
      const response = await request(server.baseUrl, method, path, { headers: bearer(ownerToken) })
      expectEnvelope(response, 404, "not_found")
    }
  })

  it("a required JSON body member that is absent answers 400 parameter_missing", async () => {
    const response = await request(server.baseUrl, "POST", "/test/echo", { body: { count: 1 } })
    expectEnvelope(response, 400, "parameter_missing")
    expect(response.body.error.message).toContain("name")
    const ok = await request(server.baseUrl, "POST", "/test/echo", { body: { name: "a", count: 1 } })
    expect(ok.status).toBe(200)
    expect(ok.body).toEqual({ name: "a", count: 1 })
  })

  it("a body member of the wrong type answers 400 parameter_invalid", async () => {
    for (const body of [
      { name: "a", count: "one" },
      { name: "a", count: 1.5 },
      { name: 42, count: 1 },
      { name: null, count: 1 }
    ]) {
      const response = await request(server.baseUrl, "POST", "/test/echo", { body })
      expectEnvelope(response, 400, "parameter_invalid")
    }
  })

  it("an invalid query parameter answers 400 parameter_invalid", async () => {
    const ok = await request(server.baseUrl, "GET", "/test/echo/5?n=3")
    expect(ok.status).toBe(200)
    expect(ok.body).toEqual({ id: 5, n: 3 })
    for (const query of ["n=abc", "n=1.5", "n="]) {
      expectEnvelope(await request(server.baseUrl, "GET", `/test/echo/5?${query}`), 400, "parameter_invalid")
    }
  })

  it("an invalid path parameter answers 400 parameter_invalid", async () => {
    expect((await request(server.baseUrl, "GET", "/test/echo/7")).body).toEqual({ id: 7 })
    for (const id of ["abc", "1.5"]) {
      expectEnvelope(await request(server.baseUrl, "GET", `/test/echo/${id}`), 400, "parameter_invalid")
    }
  })

  it("malformed JSON at a door other than /api/v1/session answers 400 parameter_invalid", async () => {
    for (const raw of ['{"name": "a", ', "{name: 'a'}", "not json at all"]) {
      const response = await request(server.baseUrl, "POST", "/test/echo", { raw, headers: json })
      expectEnvelope(response, 400, "parameter_invalid")
    }
  })

  it("a body in a media type the endpoint does not take answers 415 in the envelope", async () => {
    for (const contentType of ["text/plain", "application/x-www-form-urlencoded"]) {
      const response = await request(server.baseUrl, "POST", "/test/echo", {
        raw: JSON.stringify({ name: "a", count: 1 }),
        headers: { "content-type": contentType }
      })
      expectEnvelope(response, 415, "unsupported_media_type")
    }
  })

  it("a body over the 4 MiB server cap answers 413 content_too_large", async () => {
    const cap = 4 * 1024 * 1024
    const justUnder = JSON.stringify({ name: "x".repeat(cap - 100), count: 1 })
    expect(Buffer.byteLength(justUnder)).toBeLessThanOrEqual(cap)
    const accepted = await send("POST", "/test/echo", { body: justUnder, headers: json })
    expect(accepted.status).toBe(200)
    const over = JSON.stringify({ name: "x".repeat(cap), count: 1 })
    const response = await send("POST", "/test/echo", { body: over, headers: json })
    expectEnvelope(response, 413, "content_too_large")
  })

  it("a defect answers 500 internal_error and shows neither its message nor a stack", async () => {
    const response = await send("GET", "/test/boom")
    expectEnvelope(response, 500, "internal_error")
    expect(response.text).not.toContain(defectSecret)
    expect(response.text).not.toContain("database refused")
    expect(response.text).not.toMatch(/\bat \S+ \(|\.ts:\d+|Error:/)
  })

  it("every response carries an x-request-id, echoing a sane one the client sent", async () => {
    const answers = [
      await send("GET", "/test/echo/1"),
      await send("GET", "/api/v1/nothing-here"),
      await send("GET", "/test/echo/abc"),
      await send("POST", "/test/echo", { body: "x", headers: { "content-type": "text/plain" } }),
      await send("GET", "/test/boom"),
      await send("POST", "/test/echo", { body: "x".repeat(4 * 1024 * 1024 + 1), headers: json }),
      await send("GET", "/api/v1/session"),
      await send("GET", "/login")
    ]
    expect(answers.map((answer) => answer.status)).toEqual([200, 404, 400, 415, 500, 413, 401, 200])
    const ids = answers.map((answer) => answer.headers.get("x-request-id"))
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9._-]{1,128}$/)
    expect(new Set(ids).size).toBe(ids.length)

    for (const sane of ["req-1", "A.b_C-9", "x".repeat(128)]) {
      for (const path of ["/test/echo/1", "/api/v1/nothing-here", "/test/boom"]) {
        const response = await send("GET", path, { headers: { "x-request-id": sane } })
        expect(response.headers.get("x-request-id")).toBe(sane)
      }
    }
    for (const insane of ["has space", "x".repeat(129), "<script>", "a/b"]) {
      const response = await send("GET", "/test/echo/1", { headers: { "x-request-id": insane } })
      const id = response.headers.get("x-request-id")
      expect(id).not.toBe(insane)
      expect(id).toMatch(/^[A-Za-z0-9._-]{1,128}$/)
    }
  })
})

describe("keyset pagination", () => {
  const list = (query: string) => request(server.baseUrl, "GET", `/test/list${query === "" ? "" : `?${query}`}`)
  const idsOf = (body: { items: Array<{ id: number }> }) => body.items.map((item) => item.id)

  it("limit defaults to 25", async () => {
    const response = await list("")
    expect(response.status).toBe(200)
    expect(idsOf(response.body)).toEqual(listedIds.slice(0, 25))
    expect(response.body.pagination.next_after).toEqual(expect.any(String))
  })

  it("limit 1 and limit 100 are accepted", async () => {
    const one = await list("limit=1")
    expect(one.status).toBe(200)
    expect(idsOf(one.body)).toEqual([1])
    expect(one.body.pagination.next_after).toEqual(expect.any(String))
    const hundred = await list("limit=100")
    expect(hundred.status).toBe(200)
    expect(idsOf(hundred.body)).toEqual(listedIds)
    expect(hundred.body.pagination.next_after).toBeNull()
  })

  it("limit 0, 101, x and 1.5 answer 400 parameter_invalid", async () => {
    for (const limit of ["0", "101", "x", "1.5", "-1", "1e2"]) {
      expectEnvelope(await list(`limit=${limit}`), 400, "parameter_invalid")
    }
  })

  it("order is asc by default and desc on request; anything else is 400 parameter_invalid", async () => {
    expect(idsOf((await list("limit=3")).body)).toEqual([1, 2, 3])
    expect(idsOf((await list("limit=3&order=asc")).body)).toEqual([1, 2, 3])
    expect(idsOf((await list("limit=3&order=desc")).body)).toEqual([60, 59, 58])
    for (const order of ["ASC", "descending", "random"]) {
      expectEnvelope(await list(`order=${order}`), 400, "parameter_invalid")
    }
  })

  it("walking next_after visits every item exactly once in both directions and ends with null", async () => {
    for (const order of ["asc", "desc"] as const) {
      for (const limit of [7, 20, 25]) {
        const seen: Array<number> = []
        let after: string | null = null
        let pages = 0
        do {
          const query: string = `order=${order}&limit=${limit}${after === null ? "" : `&after=${after}`}`
          const response = await list(query)
          expect(response.status).toBe(200)
          expect(response.body.items.length).toBeLessThanOrEqual(limit)
          expect(response.body.items.length).toBeGreaterThan(0)
          seen.push(...idsOf(response.body))
          after = response.body.pagination.next_after
          pages++
        } while (after !== null && pages <= 60)
        expect(after).toBeNull()
        expect(pages).toBe(Math.ceil(listedIds.length / limit))
        expect(seen).toEqual(order === "asc" ? listedIds : [...listedIds].reverse())
      }
    }
  })

  it("a malformed cursor answers 400 parameter_invalid", async () => {
    const b64 = (text: string) => Buffer.from(text).toString("base64url")
    for (const after of [
      "garbage!!",
      "bm90IGpzb24",
      b64("null"),
      b64("42"),
      b64(JSON.stringify({ k: [5] })),
      b64(JSON.stringify({ k: [], d: "asc" })),
      b64(JSON.stringify({ k: 5, d: "asc" })),
      b64(JSON.stringify({ k: [{}], d: "asc" })),
      b64(JSON.stringify({ k: [5], d: "sideways" }))
    ]) {
      expectEnvelope(await list(`after=${encodeURIComponent(after)}`), 400, "parameter_invalid")
    }
  })

  it("a cursor issued for one order answers 400 parameter_invalid in the other", async () => {
    const asc: string = (await list("limit=5")).body.pagination.next_after
    const desc: string = (await list("limit=5&order=desc")).body.pagination.next_after
    expect(idsOf((await list(`limit=5&after=${asc}`)).body)).toEqual([6, 7, 8, 9, 10])
    expect(idsOf((await list(`limit=5&order=desc&after=${desc}`)).body)).toEqual([55, 54, 53, 52, 51])
    expectEnvelope(await list(`order=desc&after=${asc}`), 400, "parameter_invalid")
    expectEnvelope(await list(`after=${desc}`), 400, "parameter_invalid")
    expectEnvelope(await list(`order=asc&after=${desc}`), 400, "parameter_invalid")
  })
})

describe("lock_version", () => {
  const present = (body: unknown, current = 0) =>
    request(server.baseUrl, "POST", `/test/lock?current=${current}`, { body })

  it("a missing lock_version answers 400 parameter_missing", async () => {
    expectEnvelope(await present({}), 400, "parameter_missing")
  })

  it("a lock_version that is not an integer from 0 to 2147483647 answers 400 parameter_invalid", async () => {
    for (const value of [-1, 2147483648, 1.5, "abc", true, "-1", "1.5", [], {}]) {
      expectEnvelope(await present({ lock_version: value }), 400, "parameter_invalid")
    }
  })

  it("lock_version 0 and 2147483647 are accepted", async () => {
    const zero = await present({ lock_version: 0 }, 0)
    expect(zero.status).toBe(200)
    expect(zero.body).toEqual({ lock_version: 0 })
    const max = await present({ lock_version: 2147483647 }, 2147483647)
    expect(max.status).toBe(200)
    expect(max.body).toEqual({ lock_version: 2147483647 })
  })

  it("a stale lock_version answers 409 stale_object", async () => {
    expectEnvelope(await present({ lock_version: 3 }, 4), 409, "stale_object")
    expectEnvelope(await present({ lock_version: 5 }, 4), 409, "stale_object")
    expect((await present({ lock_version: 4 }, 4)).status).toBe(200)
  })
})

describe("Idempotency-Key", () => {
  let keyCounter = 0
  const freshKey = () => `key-${Date.now()}-${++keyCounter}`
  let nameCounter = 0
  const freshName = () => `widget-${++nameCounter}`
  const create = (body: unknown, key: string | undefined, token = ownerToken) =>
    send("POST", "/test/widgets", {
      body: typeof body === "string" ? body : JSON.stringify(body),
      headers: { ...json, ...bearer(token), ...(key === undefined ? {} : { "idempotency-key": key }) }
    })

  it("a missing or blank key answers 400 idempotency_key_required and runs nothing", async () => {
    const name = freshName()
    for (const key of [undefined, "", "   "]) {
      expectEnvelope(await create({ name }, key), 400, "idempotency_key_required")
    }
    expect(widgetRuns.get(name)).toBeUndefined()
  })

  it("a key over 255 bytes answers 400 parameter_invalid", async () => {
    const name = freshName()
    expectEnvelope(await create({ name }, "k".repeat(256)), 400, "parameter_invalid")
    expectEnvelope(await create({ name }, `${freshKey()}-${"k".repeat(300)}`), 400, "parameter_invalid")
    expect(widgetRuns.get(name)).toBeUndefined()
    const longest = await create({ name }, "k".repeat(255))
    expect(longest.status).toBe(201)
    expect(widgetRuns.get(name)).toBe(1)
  })

  it("a key is measured in the bytes sent: 200 bytes with non-ASCII bytes are accepted", async () => {
    const name = freshName()
    // fetch sends each U+00E9 as the single byte 0xE9: 100 + 100 = 200 bytes on the wire.
    const response = await create({ name }, `${"k".repeat(100)}${"\u00e9".repeat(100)}`)
    expect(response.status).toBe(201)
  })

  it("the first request runs and answers 201 with Idempotency-Replayed: false", async () => {
    const name = freshName()
    const response = await create({ name }, freshKey())
    expect(response.status).toBe(201)
    expect(response.headers.get("idempotency-replayed")).toBe("false")
    expect(response.body).toEqual({ widget: { id: expect.any(Number), name }, run: 1 })
    expect(response.headers.get("content-type")).toMatch(/^application\/json/)
    expect(widgetRuns.get(name)).toBe(1)
  })

  it("the same key and body replay the first answer verbatim without running again", async () => {
    const name = freshName()
    const key = freshKey()
    const first = await create({ name, refuse: false }, key)
    expect(first.status).toBe(201)
    const again = await create(`{"refuse": false, "name": ${JSON.stringify(name)}}`, key)
    expect(again.status).toBe(first.status)
    expect(again.text).toBe(first.text)
    expect(again.headers.get("idempotency-replayed")).toBe("true")
    expect(again.headers.get("content-type")).toBe(first.headers.get("content-type"))
    expect(widgetRuns.get(name)).toBe(1)
  })

  it("the same key with a different body answers 409 idempotency_envelope_mismatch", async () => {
    const name = freshName()
    const key = freshKey()
    expect((await create({ name }, key)).status).toBe(201)
    const other = freshName()
    expectEnvelope(await create({ name: other }, key), 409, "idempotency_envelope_mismatch")
    expectEnvelope(await create({ name, refuse: false }, key), 409, "idempotency_envelope_mismatch")
    expect(widgetRuns.get(name)).toBe(1)
    expect(widgetRuns.get(other)).toBeUndefined()
  })

  it("different callers use the same key independently", async () => {
    const name = freshName()
    const key = freshKey()
    const owner = await create({ name }, key, ownerToken)
    const member = await create({ name }, key, memberToken)
    expect([owner.status, member.status]).toEqual([201, 201])
    expect(owner.headers.get("idempotency-replayed")).toBe("false")
    expect(member.headers.get("idempotency-replayed")).toBe("false")
    expect(member.body.widget.id).not.toBe(owner.body.widget.id)
    expect(widgetRuns.get(name)).toBe(2)
    const ownerAgain = await create({ name }, key, ownerToken)
    const memberAgain = await create({ name }, key, memberToken)
    expect(ownerAgain.text).toBe(owner.text)
    expect(memberAgain.text).toBe(member.text)
    expect(widgetRuns.get(name)).toBe(2)
  })

  it("10 concurrent requests with one key and one body run the handler exactly once", async () => {
    const name = freshName()
    const key = freshKey()
    const answers = await Promise.all(Array.from({ length: 10 }, () => create({ name }, key)))
    expect(widgetRuns.get(name)).toBe(1)
    expect(answers.map((answer) => answer.status)).toEqual(Array(10).fill(201))
    expect(new Set(answers.map((answer) => answer.text)).size).toBe(1)
    const replayed = answers.map((answer) => answer.headers.get("idempotency-replayed"))
    expect(replayed.filter((value) => value === "false")).toHaveLength(1)
    expect(replayed.filter((value) => value === "true")).toHaveLength(9)
  })

  it("after the 24 h replay window the same key runs anew", async () => {
    const name = freshName()
    const key = freshKey()
    const first = await create({ name }, key)
    expect(first.status).toBe(201)
    server.clock.advance("23 hours")
    server.clock.advance("59 minutes")
    const inside = await create({ name }, key)
    expect(inside.headers.get("idempotency-replayed")).toBe("true")
    expect(inside.text).toBe(first.text)
    server.clock.advance("2 minutes")
    const after = await create({ name }, key)
    expect(after.status).toBe(201)
    expect(after.headers.get("idempotency-replayed")).toBe("false")
    expect(after.body.run).toBe(2)
    expect(widgetRuns.get(name)).toBe(2)
  })

  it("a request that failed is not kept, so a retry with the same key runs", async () => {
    const name = freshName()
    const key = freshKey()
    expectEnvelope(await create({ nam: name }, key), 400, "parameter_missing")
    expectEnvelope(await create(`{"name": ${JSON.stringify(name)},`, key), 400, "parameter_invalid")
    expectEnvelope(await create({ name, refuse: true }, key), 422, "widget_refused")
    expectEnvelope(await create({ name, refuse: true }, key), 422, "widget_refused")
    expect(widgetRuns.get(name)).toBe(2)
    const corrected = await create({ name, refuse: false }, key)
    expect(corrected.status).toBe(201)
    expect(corrected.headers.get("idempotency-replayed")).toBe("false")
    expect(widgetRuns.get(name)).toBe(3)
  })

  it("a request refused for its media type is not kept, so the corrected retry runs", async () => {
    const name = freshName()
    const key = freshKey()
    const body = JSON.stringify({ name })
    const refused = await send("POST", "/test/widgets", {
      body,
      headers: { "content-type": "text/plain", ...bearer(ownerToken), "idempotency-key": key }
    })
    expectEnvelope(refused, 415, "unsupported_media_type")
    const corrected = await create(body, key)
    expect(corrected.status).toBe(201)
    expect(widgetRuns.get(name)).toBe(1)
  })
})

describe("Retry-After", () => {
  it("a 429 rate_limited answer carries Retry-After in whole seconds", async () => {
    const response = await request(server.baseUrl, "GET", "/test/limited")
    expectEnvelope(response, 429, "rate_limited")
    expect(response.headers.get("retry-after")).toBe("7")
  })
})

describe("concealment", () => {
  it("an existing resource the caller cannot see answers exactly like an absent one: 404 not_found", async () => {
    const visible = await send("GET", "/test/things/1", { headers: bearer(ownerToken) })
    expect(visible.status).toBe(200)
    expect(visible.body).toEqual({ thing: { id: 1 } })
    const invisible = await send("GET", "/test/things/2", { headers: bearer(ownerToken) })
    const absent = await send("GET", "/test/things/999", { headers: bearer(ownerToken) })
    expectEnvelope(invisible, 404, "not_found")
    expect(invisible.text).toBe(absent.text)
    expect(invisible.status).toBe(absent.status)
    expect(invisible.headers.get("content-type")).toBe(absent.headers.get("content-type"))
    const memberView = await send("GET", "/test/things/1", { headers: bearer(memberToken) })
    expect(memberView.text).toBe(absent.text)
    expect((await send("GET", "/test/things/2", { headers: bearer(memberToken) })).status).toBe(200)
  })
})

describe("API documentation", () => {
  it("/openapi.json documents every JSON route of the API", async () => {
    const response = await request(server.baseUrl, "GET", "/openapi.json")
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toMatch(/^application\/json/)
    const paths: Record<string, Record<string, unknown>> = response.body.paths
    expect(response.body.openapi).toEqual(expect.any(String))
    expect(Object.keys(paths["/api/v1/session"] ?? {})).toEqual(expect.arrayContaining(["post", "get", "delete"]))
    expect(Object.keys(paths["/api/v1/profile"] ?? {})).toEqual(expect.arrayContaining(["get"]))
    for (const group of Object.values(TroupeApi.groups)) {
      for (const endpoint of Object.values(group.endpoints)) {
        const path = endpoint.path.replace(/:(\w+)/g, "{$1}")
        expect(Object.keys(paths[path] ?? {}), `${endpoint.method} ${endpoint.path}`).toContain(
          endpoint.method.toLowerCase()
        )
      }
    }
    expect(Object.keys(paths).filter((path) => path.startsWith("/test/"))).toEqual([])
  })

  it("/docs answers HTML that embeds the spec and loads nothing from elsewhere", async () => {
    const response = await send("GET", "/docs")
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toMatch(/^text\/html/)
    const embedded = /<script id="swagger-spec" type="application\/json">([\s\S]*?)<\/script>/.exec(response.text)
    expect(embedded).not.toBeNull()
    const spec = JSON.parse(embedded![1]!)
    expect(spec).toEqual((await request(server.baseUrl, "GET", "/openapi.json")).body)
    expect(Object.keys(spec.paths)).toEqual(expect.arrayContaining(["/api/v1/session", "/api/v1/profile"]))
    const external = /(?:src|href)\s*=\s*["']?\s*(?:https?:)?\/\/|url\(\s*["']?\s*(?:https?:)?\/\//gi
    const offHost = [...response.text.matchAll(external)].map((match) =>
      response.text.slice(match.index, match.index + 80)
    )
    expect(offHost).toEqual([])
  })
})
