// Printable text over a real server: wherever the spec asks for printable text (store keys,
// memory paths, workspace names, a named agent's display_name and description, a device flow's
// agent_identifier), format and bidi controls are refused like control characters, so two values
// that read alike never differ by something invisible, and nothing is stored.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../support/account.ts"
import { bearer, request } from "../support/http.ts"
import type { ConnectedAgent } from "../support/members.ts"
import { startTestServer, type TestServer } from "../support/server.ts"
import { agentFields, form } from "./oauth/support-device.ts"

let server: TestServer
let agent: ConnectedAgent
let ownerToken: string

/** RIGHT-TO-LEFT OVERRIDE, ZERO WIDTH JOINER, the byte order mark, and an isolate. */
const invisible = { rlo: "\u202e", zwj: "\u200d", bom: "\ufeff", isolate: "\u2066" } as const

const call = (method: string, path: string, token: string, body?: unknown, headers: Record<string, string> = {}) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, { headers: { ...bearer(token), ...headers }, body })

let keys = 0
const idempotencyKey = () => ({ "idempotency-key": `printable-${++keys}` })

const expectError = (response: { status: number; body: any }, status: number, code: string) =>
  expect({ status: response.status, code: response.body?.error?.code }).toEqual({ status, code })

beforeAll(async () => {
  server = await startTestServer()
  const account = await twoStewards(server, { owner: ["printable-agent"], member: [] })
  agent = account.ownerAgents[0]!
  ownerToken = account.ownerToken
})
afterAll(() => server?.close())

describe("format and bidi controls are refused where the spec asks for printable text", () => {
  for (const [name, character] of Object.entries(invisible)) {
    it(`${name} (U+${character.codePointAt(0)!.toString(16).toUpperCase()})`, async () => {
      // A store entry key and namespace.
      for (const entry of [
        { namespace: "ns", key: `report${character}.txt`, value: 1 },
        { namespace: `ns${character}`, key: "k", value: 1 }
      ]) {
        const stored = await call(
          "POST",
          "/profile/store_entries",
          agent.token,
          { store_entry: entry },
          idempotencyKey()
        )
        expectError(stored, 422, "validation_failed")
      }
      expect((await call("GET", "/profile/store_entries", agent.token)).body.store_entries).toEqual([])

      // A memory path.
      const memory = await call("POST", "/profile/memory", agent.token, {
        memory: {
          path: `user/notes${character}.md`,
          content: "x",
          expected_public_id: null,
          expected_lock_version: null
        }
      })
      expectError(memory, 422, "memory_path_invalid")

      // A workspace name, on create and on rename.
      const named = await call(
        "POST",
        "/workspaces",
        ownerToken,
        { workspace: { name: `Plans${character}` } },
        idempotencyKey()
      )
      expectError(named, 422, "validation_failed")
      const workspace = (
        await call("POST", "/workspaces", ownerToken, { workspace: { name: `Room ${name}` } }, idempotencyKey())
      ).body.workspace
      const renamed = await call("PATCH", `/workspaces/${workspace.public_id}`, ownerToken, {
        workspace: { name: `Room${character}`, lock_version: workspace.lock_version }
      })
      expectError(renamed, 422, "validation_failed")

      // A named agent's display_name and description.
      for (const definition of [
        { display_name: `Helper${character}`, description: "Helps" },
        { display_name: "Helper", description: `Helps${character}` }
      ]) {
        const put = await call("PUT", `/profile/agents/helper-${name}`, agent.token, {
          scope: "instance",
          configuration: {},
          ...definition
        })
        expectError(put, 422, "validation_failed")
      }
      expectError(await call("GET", `/profile/agents/helper-${name}`, agent.token), 404, "not_found")

      // A device flow's agent_identifier (and its display names).
      for (const fields of [
        agentFields(`device${character}agent`),
        { ...agentFields(`device-${name}`), agent_display_name: `Device${character}` },
        { ...agentFields(`device-${name}`), executor_display_name: `Laptop${character}` }
      ]) {
        const started = await form(server, "/oauth/device_authorization", {
          client_id: "svc-first-party-connector",
          ...fields
        })
        expect([started.status, started.body.error]).toEqual([400, "invalid_request"])
      }
    })
  }

  it("the same texts without the invisible character are accepted", async () => {
    const entry = { namespace: "ns", key: "report.txt", value: 1 }
    expect(
      (await call("POST", "/profile/store_entries", agent.token, { store_entry: entry }, idempotencyKey())).status
    ).toBe(201)
    const memory = await call("POST", "/profile/memory", agent.token, {
      memory: { path: "user/notes.md", content: "x", expected_public_id: null, expected_lock_version: null }
    })
    expect(memory.status).toBe(201)
    expect(
      (await call("POST", "/workspaces", ownerToken, { workspace: { name: "Plans ✓" } }, idempotencyKey())).status
    ).toBe(201)
    const put = await call("PUT", "/profile/agents/helper", agent.token, {
      scope: "instance",
      configuration: {},
      display_name: "Helper 🤖",
      description: "Helps, in one line — with ünïcödé"
    })
    expect(put.status).toBe(201)
    const started = await form(server, "/oauth/device_authorization", {
      client_id: "svc-first-party-connector",
      ...agentFields("device-agent/ключ")
    })
    expect(started.status).toBe(200)
  })
})
