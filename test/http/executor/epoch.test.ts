// An executor address's epoch is its actor's: a re-pair mints the new credentials at the epoch it
// tells the address (ending the old lineage in the same transaction), and the address's own step
// mirrors it, with the new name, on its row. Held here by quarantining the address, so the told
// message waits: the new credentials already speak, the old ones do not, and the row follows
// once the address steps again.
import { ActorHost } from "@troupe/actors/ActorHost"
import { Inspection } from "@troupe/actors/Inspection"
import * as Actors from "@troupe/storage/repositories/Actors"
import { ExecutorsRepository } from "@troupe/storage/repositories/Executors"
import { Effect } from "effect"
import { afterAll, beforeAll, expect, it } from "vitest"
import { afterMessageOutcome, waitForMessages } from "../../support/actors.ts"
import { bearer, request } from "../../support/http.ts"
import { createOwner, ownerCredentials } from "../../support/people.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { connector, decide, form, machineFields, poll, signedInBrowser, startDevice } from "../oauth/support-device.ts"

let server: TestServer

beforeAll(async () => {
  server = await startTestServer()
  await createOwner(server)
})
afterAll(() => server?.close())

const get = (path: string, token: string) => request(server.baseUrl, "GET", path, { headers: bearer(token) })

const connect = async (fields: Record<string, string>) => {
  const owner = await signedInBrowser(server, ownerCredentials.email, ownerCredentials.password)
  const started = await startDevice(server, fields)
  await decide(owner, started.user_code, "approve", "account_wide")
  return (await poll(server, started.device_code)).body
}

const row = (publicId: string) =>
  server.run(Effect.flatMap(ExecutorsRepository, (executors) => executors.findExecutorByPublicId(publicId)))
const refresh = (refreshToken: string) =>
  form(server, "/oauth/token", { grant_type: "refresh_token", refresh_token: refreshToken, client_id: connector })

it("Executor address: active --connection by the same identifier--> active, epoch advanced: the new credentials speak at once, the old are fenced, the row follows the address's step", async () => {
  const first = await connect(machineFields("held-runner"))
  const before = (await get("/agent_api/v1/executor", first.access_token)).body.executor
  expect(before).toMatchObject({ credential_epoch: 1, display_name: "Runner held-runner" })

  // Quarantined, the address applies nothing: what the re-pair tells it waits.
  await server.run(
    Effect.gen(function* () {
      yield* Actors.setQuarantined("executorAddress", before.public_id, new Date())
      yield* Effect.flatMap(ActorHost, (host) => host.restartKind("executorAddress"))
    })
  )
  let second: any
  await afterMessageOutcome(server, before.public_id, "quarantined", async () => {
    second = await connect({ ...machineFields("held-runner"), runner_display_name: "Renamed runner" })
  })

  expect((await get("/agent_api/v1/executor", first.access_token)).status).toBe(401)
  expect((await refresh(first.refresh_token)).body.error).toBe("invalid_grant")
  const speaking = await get("/agent_api/v1/executor", second.access_token)
  expect(speaking.status).toBe(200)
  expect(speaking.body.executor).toMatchObject({ public_id: before.public_id, credential_epoch: 2 })
  expect(await row(before.public_id)).toMatchObject({ credential_epoch: 1, display_name: "Runner held-runner" })
  const rotated = await refresh(second.refresh_token)
  expect(rotated.status).toBe(200)
  expect((await get("/agent_api/v1/executor", rotated.body.access_token)).status).toBe(200)

  await server.run(Effect.flatMap(ActorHost, (host) => host.restartActor("executorAddress", before.public_id)))
  await waitForMessages(server, "executorAddress", before.public_id)
  expect(await row(before.public_id)).toMatchObject({ credential_epoch: 2, display_name: "Renamed runner" })
  const detail = await server.run(
    Effect.flatMap(Inspection, (inspection) => inspection.detail("executorAddress", before.public_id))
  )
  expect(detail?.journal.at(-1)).toMatchObject({
    event: { type: "executor.repaired", epoch: 2, displayName: "Renamed runner" },
    actions: ["executor.recordEpoch"]
  })
  // The rotation (at the lineage's own epoch) superseded the second pairing's first access token.
  expect((await get("/agent_api/v1/executor", rotated.body.access_token)).body.executor).toMatchObject({
    credential_epoch: 2,
    display_name: "Renamed runner"
  })
  expect((await get("/agent_api/v1/executor", first.access_token)).status).toBe(401)
})

it("Executor address: active --connection by the same identifier, twice before its step--> active, told the epoch past both", async () => {
  const first = await connect(machineFields("quick-runner"))
  const publicId = (await get("/agent_api/v1/executor", first.access_token)).body.executor.public_id
  await server.run(
    Effect.gen(function* () {
      yield* Actors.setQuarantined("executorAddress", publicId, new Date())
      yield* Effect.flatMap(ActorHost, (host) => host.restartKind("executorAddress"))
    })
  )
  const second = await connect(machineFields("quick-runner"))
  const third = await connect(machineFields("quick-runner"))
  expect((await get("/agent_api/v1/executor", second.access_token)).status).toBe(401)
  expect((await get("/agent_api/v1/executor", third.access_token)).body.executor.credential_epoch).toBe(3)
  await server.run(Effect.flatMap(ActorHost, (host) => host.restartActor("executorAddress", publicId)))
  await waitForMessages(server, "executorAddress", publicId)
  expect((await row(publicId))?.credential_epoch).toBe(3)
  expect((await get("/agent_api/v1/executor", third.access_token)).status).toBe(200)
})
