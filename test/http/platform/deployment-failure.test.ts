// An upgrade that fails (the reference updater run with --fail-at migrating), through the real
// server: the receipt ends failed at that phase with its error and recovery, the log stops there,
// the installed release is unchanged, and the next upgrade is the updater's recovery_required.
import { uuidv7 } from "uuidv7"
import { afterAll, beforeAll, expect, it, vi } from "vitest"
import { bearer, request } from "../../support/http.ts"
import { apiToken, createOwner } from "../../support/people.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { type ReferenceUpdaterProcess, startReferenceUpdater } from "../../support/updater.ts"

const base = "/api/v1/admin/deployment"
let updater: ReferenceUpdaterProcess
let server: TestServer
let owner: string

beforeAll(async () => {
  updater = await startReferenceUpdater({ failAt: "migrating" })
  server = await startTestServer({ deploymentSocket: updater.path })
  await createOwner(server)
  owner = await apiToken(server)
})
afterAll(async () => {
  await server?.close()
  await updater?.close()
})

const call = (method: string, path: string, options: { body?: unknown; key?: string } = {}) =>
  request(server.baseUrl, method, path, {
    headers: { ...bearer(owner), ...(options.key ? { "idempotency-key": options.key } : {}) },
    ...(options.body === undefined ? {} : { body: options.body })
  })

it("Upgrade receipt: accepted --progress--> preparing … migrating: status failed, with its error and recovery", async () => {
  const { candidate } = (await call("POST", `${base}/release_check`)).body.deployment
  const accepted = await call("POST", `${base}/upgrades`, { key: uuidv7(), body: { candidate } })
  expect(accepted.status).toBe(202)
  const id = accepted.body.upgrade.id
  await vi.waitFor(
    async () => expect((await call("GET", `${base}/upgrades/${id}`)).body.upgrade.status).not.toBe("running"),
    { timeout: 10_000, interval: 100 }
  )
  const receipt = (await call("GET", `${base}/upgrades/${id}`)).body.upgrade
  expect(receipt).toMatchObject({
    phase: "migrating",
    status: "failed",
    error: { code: "migrating_failed", message: expect.any(String) },
    recovery: expect.any(String),
    database_backup: { available: true }
  })
  const log = (await call("GET", `${base}/upgrades/${id}/log`)).body.log
  expect(log.entries.map((entry: { text: string }) => entry.text.split(":")[0])).toEqual([
    "preparing",
    "draining",
    "stopping",
    "backing_up",
    "migrating"
  ])
  const deployment = (await call("GET", base)).body.deployment
  expect(deployment).toMatchObject({ installed: { release: "2512150000" }, last_operation: { id, status: "failed" } })
  const again = await call("POST", `${base}/upgrades`, { key: uuidv7(), body: { candidate } })
  expect(again.status).toBe(409)
  expect(again.body.error.code).toBe("recovery_required")
})
