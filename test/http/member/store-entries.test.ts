// Member: store entries at the profile host over a real server, with agent credentials from the
// device flow (and a human's member token): create, read, list, PATCH, DELETE, their errors, the
// 64-entry and 1 MiB limits, concealment between principals, and the request budget.
import { Credentials } from "@troupe/domain/accounts/Credentials"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { callerKey, spend, spent, startOfWindow } from "../../support/budget.ts"
import { bearer, request } from "../../support/http.ts"
import { type ConnectedAgent, connectAgent, signedIn } from "../../support/members.ts"
import { createOwner, ownerCredentials } from "../../support/people.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
let agent: ConnectedAgent
let other: ConnectedAgent
let filler: ConnectedAgent
let lister: ConnectedAgent
let limited: ConnectedAgent
let humanToken: string

const collection = "/agent_api/v1/profile/store_entries"
const absentId = "01900000-0000-7000-8000-000000000000"

const call = (
  method: string,
  path: string,
  token: string | undefined,
  options: { readonly body?: unknown; readonly raw?: string; readonly headers?: Record<string, string> } = {}
) =>
  request(server.baseUrl, method, path, {
    ...options,
    headers: {
      ...(token === undefined ? {} : bearer(token)),
      ...(options.raw === undefined ? {} : { "content-type": "application/json" }),
      ...options.headers
    }
  })

let keys = 0
const freshKey = () => `key-${++keys}`

/** `idempotencyKey` null sends no Idempotency-Key header. */
const create = (token: string, entry: Record<string, unknown>, idempotencyKey: string | null = freshKey()) =>
  call("POST", collection, token, {
    body: { store_entry: entry },
    headers: idempotencyKey === null ? {} : { "idempotency-key": idempotencyKey }
  })

const created = async (token: string, entry: Record<string, unknown>) => {
  const response = await create(token, entry)
  expect(response.status, JSON.stringify(response.body)).toBe(201)
  return response.body.store_entry as { public_id: string; lock_version: number; value: unknown }
}

const expectError = (response: { status: number; body: any }, status: number, code: string) =>
  expect({ status: response.status, body: response.body }).toEqual({
    status,
    body: { error: { code, message: expect.any(String) } }
  })

beforeAll(async () => {
  server = await startTestServer()
  const owner = await createOwner(server)
  const steward = await signedIn(server, ownerCredentials)
  agent = await connectAgent(server, steward, "store-agent")
  other = await connectAgent(server, steward, "store-other")
  filler = await connectAgent(server, steward, "store-filler")
  lister = await connectAgent(server, steward, "store-lister")
  limited = await connectAgent(server, steward, "store-limited")
  humanToken = await server.run(Effect.flatMap(Credentials, (c) => c.personalToken(owner, "member", "tests")))
})
afterAll(() => server?.close())

describe("authentication", () => {
  it("every route answers 401 unauthorized without a member credential", async () => {
    for (const [method, path] of [
      ["GET", collection],
      ["POST", collection],
      ["GET", `${collection}/${absentId}`],
      ["PATCH", `${collection}/${absentId}`],
      ["DELETE", `${collection}/${absentId}?lock_version=0`]
    ] as const) {
      expectError(await call(method, path, undefined, { headers: { "idempotency-key": "k" } }), 401, "unauthorized")
      expectError(await call(method, path, "sk-svc-api-v1-nonsense"), 401, "unauthorized")
    }
  })
})

describe("create", () => {
  it("answers 201 with the full entry: lock_version 0, the value as written", async () => {
    const value = { zebra: 1, apple: [1, "two", null, { nested: true }], é: "ünïcode ✓" }
    const response = await create(agent.token, { namespace: "prefs", key: "theme", value })
    expect(response.status).toBe(201)
    expect(response.body).toEqual({
      store_entry: {
        public_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        namespace: "prefs",
        key: "theme",
        lock_version: 0,
        created_at: expect.any(String),
        updated_at: expect.any(String),
        value
      }
    })
    // Members come back in the order they were written.
    expect(Object.keys(response.body.store_entry.value)).toEqual(["zebra", "apple", "é"])
    expect(response.body.store_entry.created_at).toBe(response.body.store_entry.updated_at)
    expect(new Date(response.body.store_entry.created_at).toISOString()).toBe(response.body.store_entry.created_at)
    // The profile keeps no receipt: no replay header.
    expect(response.headers.get("idempotency-replayed")).toBeNull()
  })

  it("takes any JSON value, null included", async () => {
    for (const [index, value] of [null, 0, -1.5, 1e300, true, false, "", "text", [], {}, [[[]]]].entries()) {
      const entry = await created(agent.token, { namespace: "values", key: `v${index}`, value })
      expect(entry.value).toEqual(value)
      expect((await call("GET", `${collection}/${entry.public_id}`, agent.token)).body.store_entry.value).toEqual(value)
    }
  })

  it("a missing or blank Idempotency-Key answers 400 idempotency_key_required and creates nothing", async () => {
    for (const key of [null, "", "   "]) {
      expectError(
        await create(agent.token, { namespace: "keys", key: "nokey", value: 1 }, key),
        400,
        "idempotency_key_required"
      )
    }
    expectError(
      await create(agent.token, { namespace: "keys", key: "nokey", value: 1 }, "k".repeat(256)),
      400,
      "parameter_invalid"
    )
    const list = await call("GET", `${collection}?limit=100`, agent.token)
    expect(list.body.store_entries.map((entry: { key: string }) => entry.key)).not.toContain("nokey")
    expect((await create(agent.token, { namespace: "keys", key: "nokey", value: 1 }, "k".repeat(255))).status).toBe(201)
  })

  it("a repeat of the same namespace and key answers 409 key_taken, even with the same Idempotency-Key", async () => {
    const first = await create(agent.token, { namespace: "dup", key: "once", value: 1 }, "same-key")
    expect(first.status).toBe(201)
    expectError(await create(agent.token, { namespace: "dup", key: "once", value: 1 }, "same-key"), 409, "key_taken")
    expectError(await create(agent.token, { namespace: "dup", key: "once", value: 2 }, freshKey()), 409, "key_taken")
    // Same key in another namespace, and keys differing only in case, are other entries.
    expect((await create(agent.token, { namespace: "dup2", key: "once", value: 1 })).status).toBe(201)
    expect((await create(agent.token, { namespace: "dup", key: "Once", value: 1 })).status).toBe(201)
  })

  it("absent members answer 400 parameter_missing", async () => {
    const send = (body: unknown) =>
      call("POST", collection, agent.token, { body, headers: { "idempotency-key": freshKey() } })
    expectError(await send({}), 400, "parameter_missing")
    expectError(await send({ namespace: "a", key: "b", value: 1 }), 400, "parameter_missing")
    expectError(await send({ store_entry: { key: "b", value: 1 } }), 400, "parameter_missing")
    expectError(await send({ store_entry: { namespace: "a", value: 1 } }), 400, "parameter_missing")
    const noValue = await send({ store_entry: { namespace: "a", key: "b" } })
    expectError(noValue, 400, "parameter_missing")
    expect(noValue.body.error.message).toContain("value")
  })

  it("a namespace or key that is not a string, empty, too long or not printable is 422 validation_failed naming it", async () => {
    for (const [member, entry] of [
      ["namespace", { namespace: 5, key: "k", value: 1 }],
      ["namespace", { namespace: null, key: "k", value: 1 }],
      ["key", { namespace: "ns", key: ["k"], value: 1 }],
      ["key", { namespace: "ns", key: { k: 1 }, value: 1 }],
      ["namespace", { namespace: "", key: "k", value: 1 }],
      ["namespace", { namespace: "n".repeat(81), key: "k", value: 1 }],
      ["namespace", { namespace: "🗂".repeat(81), key: "k", value: 1 }],
      ["namespace", { namespace: "tab\there", key: "k", value: 1 }],
      ["namespace", { namespace: "rtl\u202eoverride", key: "k", value: 1 }],
      ["key", { namespace: "ns", key: "", value: 1 }],
      ["key", { namespace: "ns", key: "line\nbreak", value: 1 }],
      ["key", { namespace: "ns", key: "next\u0085line", value: 1 }],
      ["key", { namespace: "ns", key: "para\u2029graph", value: 1 }],
      ["key", { namespace: "ns", key: "k".repeat(161), value: 1 }],
      ["key", { namespace: "ns", key: "🔑".repeat(161), value: 1 }]
    ] as const) {
      const response = await create(agent.token, entry)
      expectError(response, 422, "validation_failed")
      expect(response.body.error.message).toContain(`store_entry.${member}`)
    }
  })

  it("format and bidi controls are refused in keys (U+202E, U+200D, U+FEFF), so keys that read alike never differ unseen", async () => {
    for (const key of [
      "invoice\u202eFDP.exe",
      "team\u200dkey",
      "\ufeffbom",
      "iso\u2066late\u2069",
      "zero\u200bwidth"
    ]) {
      expectError(await create(agent.token, { namespace: "format", key, value: 1 }), 422, "validation_failed")
    }
    expect((await call("GET", collection, agent.token)).body.store_entries).not.toContainEqual(
      expect.objectContaining({ namespace: "format" })
    )
  })

  it("a malformed value or body answers 400 parameter_invalid", async () => {
    expectError(
      await call("POST", collection, agent.token, {
        raw: '{"store_entry": {"namespace": "ns", "key": "k", "value": "\\ud800"}}',
        headers: { "idempotency-key": freshKey() }
      }),
      400,
      "parameter_invalid"
    )
    expectError(
      await call("POST", collection, agent.token, {
        raw: '{"store_entry": ',
        headers: { "idempotency-key": freshKey() }
      }),
      400,
      "parameter_invalid"
    )
    expectError(
      await create(agent.token, { namespace: "ns", key: "k", value: 1 }, null),
      400,
      "idempotency_key_required"
    )
  })

  it("no charset rule beyond printable text: the edges of the lengths (code points) are accepted", async () => {
    expect((await create(agent.token, { namespace: "n".repeat(80), key: "k".repeat(160), value: 1 })).status).toBe(201)
    expect((await create(agent.token, { namespace: "Upper Case/ns", key: "user:42/ключ ✓", value: 1 })).status).toBe(
      201
    )
    expect((await create(agent.token, { namespace: "🗂".repeat(80), key: "🔑".repeat(160), value: 1 })).status).toBe(201)
    expect((await create(agent.token, { namespace: "-dash first", key: " padded ", value: 1 })).status).toBe(201)
  })
})

describe("value size", () => {
  const mib = 1024 * 1024
  /** A string value whose canonical JSON (with its quotes) is exactly `bytes` long. */
  const stringOfBytes = (bytes: number) => "x".repeat(bytes - 2)

  it("a value of exactly 1 MiB canonical JSON is accepted, one byte more answers 413 content_too_large", async () => {
    const exact = await create(other.token, { namespace: "big", key: "exact", value: stringOfBytes(mib) })
    expect(exact.status).toBe(201)
    expect((exact.body.store_entry.value as string).length).toBe(mib - 2)
    expectError(
      await create(other.token, { namespace: "big", key: "over", value: stringOfBytes(mib + 1) }),
      413,
      "content_too_large"
    )
    // Multi-byte characters count in UTF-8 bytes.
    expectError(
      await create(other.token, { namespace: "big", key: "wide", value: "é".repeat(mib / 2) }),
      413,
      "content_too_large"
    )
    const keys = (await call("GET", `${collection}?limit=100`, other.token)).body.store_entries.map(
      (e: { key: string }) => e.key
    )
    expect(keys).toEqual(["exact"])
  })

  it("the bound is on canonical JSON: whitespace in the request does not count", async () => {
    const value = Array.from({ length: 1000 }, () => "y".repeat(1000))
    const canonical = JSON.stringify(value)
    expect(Buffer.byteLength(canonical)).toBeLessThan(mib)
    const spaced = `[${value.map((item) => JSON.stringify(item)).join(` ,${" ".repeat(100)}`)}]`
    const pretty = `{"store_entry": {"namespace": "big", "key": "pretty", "value": ${spaced}}}`
    expect(Buffer.byteLength(pretty)).toBeGreaterThan(mib)
    const response = await call("POST", collection, other.token, {
      raw: pretty,
      headers: { "idempotency-key": freshKey() }
    })
    expect(response.status).toBe(201)
  })

  it("a PATCH over 1 MiB answers 413 content_too_large and leaves the entry as it was", async () => {
    const entry = await created(other.token, { namespace: "big", key: "patched", value: "small" })
    const path = `${collection}/${entry.public_id}`
    expectError(
      await call("PATCH", path, other.token, {
        body: { store_entry: { value: stringOfBytes(mib + 1), lock_version: 0 } }
      }),
      413,
      "content_too_large"
    )
    expect((await call("GET", path, other.token)).body.store_entry).toMatchObject({ value: "small", lock_version: 0 })
    const exact = await call("PATCH", path, other.token, {
      body: { store_entry: { value: stringOfBytes(mib), lock_version: 0 } }
    })
    expect(exact.status).toBe(200)
    expect(exact.body.store_entry.lock_version).toBe(1)
  })
})

describe("read", () => {
  it("answers 200 with the full entry", async () => {
    const entry = await created(agent.token, { namespace: "read", key: "one", value: { a: 1 } })
    const response = await call("GET", `${collection}/${entry.public_id}`, agent.token)
    expect(response.status).toBe(200)
    expect(response.body).toEqual({ store_entry: entry })
  })

  it("an unknown or malformed id answers 404 not_found", async () => {
    expectError(await call("GET", `${collection}/${absentId}`, agent.token), 404, "not_found")
    expectError(await call("GET", `${collection}/not-a-uuid`, agent.token), 404, "not_found")
  })
})

describe("update (PATCH)", () => {
  it("the wrapped form replaces the value and advances lock_version and updated_at", async () => {
    const entry = await created(agent.token, { namespace: "patch", key: "wrapped", value: { before: true } })
    server.clock.advance("2 seconds")
    const response = await call("PATCH", `${collection}/${entry.public_id}`, agent.token, {
      body: { store_entry: { value: { after: [1, 2] }, lock_version: 0 } }
    })
    expect(response.status).toBe(200)
    expect(response.body.store_entry).toMatchObject({
      public_id: entry.public_id,
      namespace: "patch",
      key: "wrapped",
      value: { after: [1, 2] },
      lock_version: 1
    })
    expect(Date.parse(response.body.store_entry.updated_at)).toBeGreaterThan(
      Date.parse(response.body.store_entry.created_at)
    )
    expect((await call("GET", `${collection}/${entry.public_id}`, agent.token)).body).toEqual(response.body)
  })

  it("the same members at top level are accepted; null is a value", async () => {
    const entry = await created(agent.token, { namespace: "patch", key: "flat", value: 1 })
    const response = await call("PATCH", `${collection}/${entry.public_id}`, agent.token, {
      body: { value: null, lock_version: 0 }
    })
    expect(response.status).toBe(200)
    expect(response.body.store_entry).toMatchObject({ value: null, lock_version: 1 })
  })

  it("a stale lock_version answers 409 stale_object and changes nothing", async () => {
    const entry = await created(agent.token, { namespace: "patch", key: "stale", value: "v0" })
    const path = `${collection}/${entry.public_id}`
    expect(
      (await call("PATCH", path, agent.token, { body: { store_entry: { value: "v1", lock_version: 0 } } })).status
    ).toBe(200)
    expectError(
      await call("PATCH", path, agent.token, { body: { store_entry: { value: "v2", lock_version: 0 } } }),
      409,
      "stale_object"
    )
    expectError(
      await call("PATCH", path, agent.token, { body: { store_entry: { value: "v2", lock_version: 7 } } }),
      409,
      "stale_object"
    )
    expect((await call("GET", path, agent.token)).body.store_entry).toMatchObject({ value: "v1", lock_version: 1 })
  })

  it("of two PATCHes presenting the same lock_version, one wins and the other is stale", async () => {
    const entry = await created(agent.token, { namespace: "patch", key: "race", value: 0 })
    const path = `${collection}/${entry.public_id}`
    const answers = await Promise.all(
      [1, 2, 3, 4, 5].map((value) =>
        call("PATCH", path, agent.token, { body: { store_entry: { value, lock_version: 0 } } })
      )
    )
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 409, 409, 409, 409])
    expect((await call("GET", path, agent.token)).body.store_entry.lock_version).toBe(1)
  })

  it("a missing lock_version or value answers 400 parameter_missing", async () => {
    const entry = await created(agent.token, { namespace: "patch", key: "missing", value: 1 })
    const path = `${collection}/${entry.public_id}`
    for (const body of [
      { store_entry: { value: 2 } },
      { value: 2 },
      {},
      { store_entry: {} },
      { store_entry: { value: 2 }, lock_version: 0 }
    ]) {
      const response = await call("PATCH", path, agent.token, { body })
      expectError(response, 400, "parameter_missing")
      expect(response.body.error.message).toContain("lock_version")
    }
    for (const body of [{ store_entry: { lock_version: 0 } }, { lock_version: 0 }]) {
      const response = await call("PATCH", path, agent.token, { body })
      expectError(response, 400, "parameter_missing")
      expect(response.body.error.message).toContain("value")
    }
    expect((await call("GET", path, agent.token)).body.store_entry.lock_version).toBe(0)
  })

  it("a malformed lock_version or wrapper answers 400 parameter_invalid", async () => {
    const entry = await created(agent.token, { namespace: "patch", key: "invalid", value: 1 })
    const path = `${collection}/${entry.public_id}`
    for (const lockVersion of [-1, 2147483648, 1.5, "0", null, true, [], {}]) {
      expectError(
        await call("PATCH", path, agent.token, { body: { store_entry: { value: 2, lock_version: lockVersion } } }),
        400,
        "parameter_invalid"
      )
      expectError(
        await call("PATCH", path, agent.token, { body: { value: 2, lock_version: lockVersion } }),
        400,
        "parameter_invalid"
      )
    }
    for (const wrapper of [null, 5, "x", []]) {
      expectError(await call("PATCH", path, agent.token, { body: { store_entry: wrapper } }), 400, "parameter_invalid")
    }
    expectError(await call("PATCH", path, agent.token, { raw: "{not json" }), 400, "parameter_invalid")
  })

  it("an unknown entry answers 404 not_found", async () => {
    expectError(
      await call("PATCH", `${collection}/${absentId}`, agent.token, {
        body: { store_entry: { value: 1, lock_version: 0 } }
      }),
      404,
      "not_found"
    )
    expectError(
      await call("PATCH", `${collection}/nope`, agent.token, { body: { store_entry: { value: 1, lock_version: 0 } } }),
      404,
      "not_found"
    )
  })
})

describe("delete", () => {
  it("answers 204 with the current lock_version; the entry is gone", async () => {
    const entry = await created(agent.token, { namespace: "delete", key: "gone", value: 1 })
    const path = `${collection}/${entry.public_id}`
    const response = await call("DELETE", `${path}?lock_version=0`, agent.token)
    expect(response.status).toBe(204)
    expect(response.body).toBeUndefined()
    expectError(await call("GET", path, agent.token), 404, "not_found")
    expectError(await call("DELETE", `${path}?lock_version=0`, agent.token), 404, "not_found")
    // The key is free again.
    expect((await create(agent.token, { namespace: "delete", key: "gone", value: 2 })).status).toBe(201)
  })

  it("a stale lock_version answers 409 stale_object and keeps the entry", async () => {
    const entry = await created(agent.token, { namespace: "delete", key: "stale", value: 1 })
    const path = `${collection}/${entry.public_id}`
    expect((await call("PATCH", path, agent.token, { body: { value: 2, lock_version: 0 } })).status).toBe(200)
    expectError(await call("DELETE", `${path}?lock_version=0`, agent.token), 409, "stale_object")
    expectError(await call("DELETE", `${path}?lock_version=2`, agent.token), 409, "stale_object")
    expect((await call("GET", path, agent.token)).status).toBe(200)
    expect((await call("DELETE", `${path}?lock_version=1`, agent.token)).status).toBe(204)
  })

  it("a missing lock_version answers 400 parameter_missing, a malformed one 400 parameter_invalid", async () => {
    const entry = await created(agent.token, { namespace: "delete", key: "params", value: 1 })
    const path = `${collection}/${entry.public_id}`
    expectError(await call("DELETE", path, agent.token), 400, "parameter_missing")
    expectError(await call("DELETE", `${path}?lock_version=`, agent.token), 400, "parameter_missing")
    for (const value of ["abc", "-1", "1.5", "2147483648", "1e2", "0x1", "%200"]) {
      expectError(await call("DELETE", `${path}?lock_version=${value}`, agent.token), 400, "parameter_invalid")
    }
    expectError(await call("DELETE", `${path}?lock_version=0&lock_version=0`, agent.token), 400, "parameter_invalid")
    expect((await call("GET", path, agent.token)).status).toBe(200)
  })

  it("an unknown entry answers 404 not_found", async () => {
    expectError(await call("DELETE", `${collection}/${absentId}?lock_version=0`, agent.token), 404, "not_found")
  })
})

describe("list", () => {
  const namespaces = ["alpha", "beta", "gamma"]
  const entryKeys = ["A", "a", "b", "b/1", "b0", "z", "é", "ü", "🔑"]
  /** (namespace, key) in byte order. */
  const expected = namespaces.flatMap((namespace) => [...entryKeys].sort().map((key) => `${namespace}:${key}`))

  beforeAll(async () => {
    // Created out of order, so the listing's order is its own.
    for (const key of [...entryKeys].reverse()) {
      for (const namespace of [...namespaces].reverse()) {
        await created(lister.token, { namespace, key, value: { namespace, key } })
      }
    }
  })

  const list = (query: string) => call("GET", `${collection}${query === "" ? "" : `?${query}`}`, lister.token)
  const named = (body: { store_entries: Array<{ namespace: string; key: string }> }) =>
    body.store_entries.map((entry) => `${entry.namespace}:${entry.key}`)

  it("lists the basic projection in (namespace, key) byte order, 25 by default", async () => {
    const response = await list("")
    expect(response.status).toBe(200)
    expect(named(response.body)).toEqual(expected.slice(0, 25))
    expect(response.body.pagination.next_after).toEqual(expect.any(String))
    for (const entry of response.body.store_entries) {
      expect(Object.keys(entry).sort()).toEqual([
        "created_at",
        "key",
        "lock_version",
        "namespace",
        "public_id",
        "updated_at"
      ])
    }
    const all = await list("limit=100")
    expect(named(all.body)).toEqual(expected)
    expect(all.body.pagination.next_after).toBeNull()
  })

  it("walking next_after visits every entry once in both directions", async () => {
    for (const order of ["asc", "desc"] as const) {
      for (const limit of [1, 4, 10, 27]) {
        const seen: Array<string> = []
        let after: string | null = null
        let pages = 0
        do {
          const response: { status: number; body: any } = await list(
            `order=${order}&limit=${limit}${after === null ? "" : `&after=${after}`}`
          )
          expect(response.status).toBe(200)
          seen.push(...named(response.body))
          after = response.body.pagination.next_after
          pages++
        } while (after !== null && pages <= expected.length)
        expect(seen).toEqual(order === "asc" ? expected : [...expected].reverse())
        expect(pages).toBe(Math.ceil(expected.length / limit))
      }
    }
  })

  it("a cursor continues only in its own direction; bad cursors, limits and orders answer 400 parameter_invalid", async () => {
    const asc = (await list("limit=5")).body.pagination.next_after
    const desc = (await list("limit=5&order=desc")).body.pagination.next_after
    expect(named((await list(`limit=2&after=${asc}`)).body)).toEqual(expected.slice(5, 7))
    expect(named((await list(`limit=2&order=desc&after=${desc}`)).body)).toEqual([...expected].reverse().slice(5, 7))
    expectError(await list(`order=desc&after=${asc}`), 400, "parameter_invalid")
    expectError(await list(`after=${desc}`), 400, "parameter_invalid")
    const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url")
    for (const after of [
      "garbage!!",
      b64({ k: [5], d: "asc" }),
      b64({ k: ["alpha"], d: "asc" }),
      b64({ k: ["a", 1], d: "asc" })
    ]) {
      expectError(await list(`after=${encodeURIComponent(after)}`), 400, "parameter_invalid")
    }
    for (const limit of ["0", "101", "x", "1.5"]) expectError(await list(`limit=${limit}`), 400, "parameter_invalid")
    expectError(await list("order=sideways"), 400, "parameter_invalid")
  })

  it("an empty profile lists nothing", async () => {
    const response = await call("GET", collection, limited.token)
    expect(response.body).toEqual({ store_entries: [], pagination: { next_after: null } })
  })
})

describe("the 64-entry limit", () => {
  it("the 65th entry answers 409 entry_limit_reached; deleting one makes room", async () => {
    for (let index = 0; index < 64; index++) {
      await created(filler.token, { namespace: "fill", key: `k${String(index).padStart(2, "0")}`, value: index })
    }
    expectError(await create(filler.token, { namespace: "fill", key: "k64", value: 64 }), 409, "entry_limit_reached")
    expectError(await create(filler.token, { namespace: "other", key: "x", value: 0 }), 409, "entry_limit_reached")
    // A repeated key is still key_taken.
    expectError(await create(filler.token, { namespace: "fill", key: "k00", value: 0 }), 409, "key_taken")
    // Another principal's profile is another host.
    expect((await create(other.token, { namespace: "fill", key: "k64", value: 64 })).status).toBe(201)

    const first = (await call("GET", `${collection}?limit=1`, filler.token)).body.store_entries[0]
    expect((await call("DELETE", `${collection}/${first.public_id}?lock_version=0`, filler.token)).status).toBe(204)
    expect((await create(filler.token, { namespace: "fill", key: "k64", value: 64 })).status).toBe(201)
    expectError(await create(filler.token, { namespace: "fill", key: "k65", value: 65 }), 409, "entry_limit_reached")
    expect((await call("GET", `${collection}?limit=100`, filler.token)).body.store_entries).toHaveLength(64)
  })

  it("concurrent creates never pass 64", async () => {
    const first = (await call("GET", `${collection}?limit=4`, filler.token)).body.store_entries
    for (const entry of first) {
      expect((await call("DELETE", `${collection}/${entry.public_id}?lock_version=0`, filler.token)).status).toBe(204)
    }
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, index) =>
        create(filler.token, { namespace: "race", key: `r${index}`, value: index })
      )
    )
    const statuses = answers.map((answer) => answer.status)
    expect(statuses.filter((status) => status === 201)).toHaveLength(4)
    for (const answer of answers.filter((a) => a.status !== 201)) expectError(answer, 409, "entry_limit_reached")
    expect((await call("GET", `${collection}?limit=100`, filler.token)).body.store_entries).toHaveLength(64)
  })

  it("concurrent creates of one key make one entry", async () => {
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => create(other.token, { namespace: "race", key: "same", value: 1 }))
    )
    expect(answers.map((answer) => answer.status).sort()).toEqual([201, 409, 409, 409, 409, 409])
    for (const answer of answers.filter((a) => a.status === 409)) expectError(answer, 409, "key_taken")
  })
})

describe("concealment", () => {
  it("one principal's entries are 404 to another, and never listed", async () => {
    const mine = await created(agent.token, { namespace: "secret", key: "mine", value: "agent's" })
    const path = `${collection}/${mine.public_id}`
    for (const token of [other.token, humanToken]) {
      expectError(await call("GET", path, token), 404, "not_found")
      expectError(
        await call("PATCH", path, token, { body: { store_entry: { value: "stolen", lock_version: 0 } } }),
        404,
        "not_found"
      )
      expectError(await call("DELETE", `${path}?lock_version=0`, token), 404, "not_found")
      const listed = await call("GET", `${collection}?limit=100`, token)
      expect(listed.body.store_entries.map((entry: { public_id: string }) => entry.public_id)).not.toContain(
        mine.public_id
      )
    }
    expect((await call("GET", path, agent.token)).body.store_entry).toMatchObject({ value: "agent's", lock_version: 0 })
  })

  it("the steward's own member token is its own profile host", async () => {
    const own = await created(humanToken, { namespace: "secret", key: "mine", value: "human's" })
    expect((await call("GET", `${collection}/${own.public_id}`, humanToken)).body.store_entry.value).toBe("human's")
    expectError(await call("GET", `${collection}/${own.public_id}`, agent.token), 404, "not_found")
  })
})

describe("request budget", () => {
  it("counts every store-entry request of a caller, whatever the route", async () => {
    await startOfWindow(server)
    const subject = await callerKey(server, limited.publicId)
    expect(await spent(server, "store_entries", subject)).toBe(0)
    const entry = await created(limited.token, { namespace: "budget", key: "counted", value: 1 })
    await call("GET", collection, limited.token)
    await call("GET", `${collection}/${entry.public_id}`, limited.token)
    await call("PATCH", `${collection}/${entry.public_id}`, limited.token, { raw: "{broken" })
    await call("DELETE", `${collection}/${entry.public_id}`, limited.token)
    expect(await spent(server, "store_entries", subject)).toBe(5)
  })

  it("the 6,001st request in a minute answers 429 rate_limited with Retry-After; the next window serves again", async () => {
    await startOfWindow(server)
    const subject = await callerKey(server, limited.publicId)
    await spend(server, "store_entries", subject, 5_999)
    expect((await call("GET", collection, limited.token)).status).toBe(200)
    for (const [method, path] of [
      ["GET", collection],
      ["POST", collection],
      ["GET", `${collection}/${absentId}`],
      ["PATCH", `${collection}/${absentId}`],
      ["DELETE", `${collection}/${absentId}`]
    ] as const) {
      const refused = await call(method, path, limited.token, {
        body: method === "POST" || method === "PATCH" ? {} : undefined
      })
      expectError(refused, 429, "rate_limited")
      const retryAfter = refused.headers.get("retry-after")
      expect(retryAfter).toMatch(/^\d+$/)
      expect(Number(retryAfter)).toBeGreaterThanOrEqual(1)
      expect(Number(retryAfter)).toBeLessThanOrEqual(60)
    }
    // Other callers have their own budgets.
    expect((await call("GET", collection, agent.token)).status).toBe(200)
    // Unauthenticated requests are refused before the budget is asked.
    expectError(await call("GET", collection, undefined), 401, "unauthorized")

    const retryAfter = Number((await call("GET", collection, limited.token)).headers.get("retry-after"))
    server.clock.advance(`${retryAfter} seconds`)
    expect((await call("GET", collection, limited.token)).status).toBe(200)
  })
})
