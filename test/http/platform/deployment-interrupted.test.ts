// An upgrade the installation's updater reports interrupted (its own process stopped mid-walk, a
// status the reference updater never reaches), through the real server: a scripted updater on a
// temporary socket answers the protocol's lines, and the receipt, its log and the deployment
// carry the status as the updater said it.
import { mkdtemp, rm } from "node:fs/promises"
import { createServer, type Server } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { uuidv7 } from "uuidv7"
import { afterAll, beforeAll, expect, it } from "vitest"
import { bearer, request } from "../../support/http.ts"
import { apiToken, createOwner } from "../../support/people.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

const base = "/api/v1/admin/deployment"
const release = (name: string) => ({ release: name, images: [{ name: "troupe", reference: `troupe:${name}` }] })
const receipt = {
  id: uuidv7(),
  idempotency_key: uuidv7(),
  actor_public_id: null,
  target: release("2601010000"),
  previous: release("2512150000"),
  phase: "migrating",
  status: "interrupted",
  accepted_at: "2026-01-01T00:00:00.000Z",
  updated_at: "2026-01-01T00:00:05.000Z",
  backup: true,
  database_backup: null
}
const entries = [
  { cursor: "1", text: "preparing: started" },
  { cursor: "2", text: "migrating: started" }
]
const results: Record<string, unknown> = {
  describe: {
    sources: [{ name: "troupe", reference: "troupe" }],
    installed: release("2512150000"),
    candidate: null,
    preflight: null,
    active_operation: null,
    last_operation: receipt
  },
  operation: { operation: receipt },
  log: { entries, next_cursor: "2", operation: receipt }
}

let dir: string
let updater: Server
let server: TestServer
let owner: string

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "troupe-updater-"))
  const path = join(dir, "updater.sock")
  updater = createServer((socket) => {
    let buffer = ""
    socket.setEncoding("utf8")
    socket.on("data", (chunk: string) => {
      buffer += chunk
      if (!buffer.includes("\n")) return
      const { id, op } = JSON.parse(buffer.slice(0, buffer.indexOf("\n")))
      socket.end(`${JSON.stringify({ id, ok: true, result: results[op] })}\n`)
    })
  })
  await new Promise<void>((resolve) => updater.listen(path, resolve))
  server = await startTestServer({ deploymentSocket: path })
  await createOwner(server)
  owner = await apiToken(server)
})
afterAll(async () => {
  await server?.close()
  await new Promise((resolve) => updater?.close(resolve))
  await rm(dir, { recursive: true, force: true })
})

const get = (path: string) => request(server.baseUrl, "GET", path, { headers: bearer(owner) })

it("Upgrade receipt: accepted --progress--> preparing … migrating: status interrupted, as the updater reports it", async () => {
  const shown = await get(`${base}/upgrades/${receipt.id}`)
  expect(shown.status).toBe(200)
  expect(shown.body.upgrade).toMatchObject({ id: receipt.id, phase: "migrating", status: "interrupted" })
  const log = await get(`${base}/upgrades/${receipt.id}/log`)
  expect(log.body.log).toMatchObject({ entries, operation: { status: "interrupted" } })
  const deployment = await get(base)
  expect(deployment.body.deployment.last_operation).toMatchObject({ id: receipt.id, status: "interrupted" })
})
