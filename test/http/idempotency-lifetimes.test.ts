// Idempotency-Key across node lifetimes (issue 8, item 5): a pending receipt whose node lifetime
// is over (its process stopped or died) is taken over by the retry at once; another live node's
// answers 429 with Retry-After until that node dies or five minutes pass.
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { postgresReachable } from "../support/database.ts"
import { bearer, request } from "../support/http.ts"
import { pendingReceipt, receiptOf, requestDigest, startLiveNode } from "../support/lifetimes.ts"
import { createOwner, personalToken } from "../support/people.ts"
import { startTestServer, type TestServer } from "../support/server.ts"

const onPostgres = await postgresReachable()
const path = "/agent_api/v1/workspaces"

let server: TestServer
let token: string
let caller: string

beforeAll(async () => {
  server = await startTestServer()
  const owner = await createOwner(server)
  token = await personalToken(server, owner, "member")
  caller = `user:${owner.id}`
})
afterAll(() => server.close())

const body = (name: string) => JSON.stringify({ workspace: { name } })

const create = (key: string, name: string) =>
  request(server.baseUrl, "POST", path, {
    raw: body(name),
    headers: { ...bearer(token), "content-type": "application/json", "idempotency-key": key }
  })

/** The receipt a node that started this create and never finished it leaves behind. */
const leftPending = (key: string, name: string, lifetime: bigint) =>
  server.run(
    pendingReceipt({ caller, route: `POST ${path}`, key, digest: requestDigest("POST", path, body(name)) }, lifetime)
  )

const expectRunOnce = async (key: string, name: string) => {
  const retry = await create(key, name)
  expect(retry.status).toBe(201)
  expect(retry.headers.get("idempotency-replayed")).toBe("false")
  expect(retry.body.workspace.name).toBe(name)
  const again = await create(key, name)
  expect(again.status).toBe(201)
  expect(again.headers.get("idempotency-replayed")).toBe("true")
  expect(again.body).toEqual(retry.body)
}

describe("a pending receipt whose node lifetime is over", () => {
  it("is taken over by the retry at once: 201, then replayed", async () => {
    // A lifetime that began and never ended, with no process behind it: a node killed mid-request.
    const [killed] = await server.run(
      Effect.flatMap(
        SqlClient,
        (sql) => sql<{ id: bigint }>`
        INSERT INTO node_lifetimes (started_at) VALUES (now()) RETURNING id`
      )
    )
    await leftPending("after-a-crash", "Recovered", killed!.id)
    await expectRunOnce("after-a-crash", "Recovered")
  })
})

// Several processes share one PostgreSQL; the embedded database has one, so no other live node.
describe.skipIf(!onPostgres)("a pending receipt of another live node", () => {
  it("answers 429 rate_limited with Retry-After: 1 and runs nothing; once that node dies the retry runs", async () => {
    if (server.database.config._tag !== "postgres") return
    const node = await startLiveNode(server.database.config.url)
    await leftPending("busy-elsewhere", "Elsewhere", node.lifetime)
    const refused = await create("busy-elsewhere", "Elsewhere")
    expect(refused.status).toBe(429)
    expect(refused.body.error.code).toBe("rate_limited")
    expect(refused.headers.get("retry-after")).toBe("1")
    expect(await server.run(receiptOf("busy-elsewhere"))).toEqual({ state: "pending", lifetime_id: node.lifetime })
    await node.kill()
    await expectRunOnce("busy-elsewhere", "Elsewhere")
  })

  it("is taken over once it is five minutes old (its request died on a node that lives on)", async () => {
    if (server.database.config._tag !== "postgres") return
    const node = await startLiveNode(server.database.config.url)
    try {
      await leftPending("stuck-elsewhere", "Stuck", node.lifetime)
      expect((await create("stuck-elsewhere", "Stuck")).status).toBe(429)
      server.clock.advance("4 minutes")
      expect((await create("stuck-elsewhere", "Stuck")).status).toBe(429)
      server.clock.advance("61 seconds")
      await expectRunOnce("stuck-elsewhere", "Stuck")
    } finally {
      await node.kill()
    }
  })
})
