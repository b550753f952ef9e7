// InferenceRequest: terminal --DELETE--> tombstoned, reaped by a durable timer 30 days later: the
// row goes with the upload namings it wrote. Its own server: the clock moves a month.
import { TimerRunner } from "@troupe/actors/TimerRunner"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { waitForActorState } from "../../support/actors.ts"
import { bearer, request } from "../../support/http.ts"
import type { ConnectedAgent } from "../../support/members.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { fileForm, onePixelPng } from "../../support/uploads.ts"

let server: TestServer
let agent: ConnectedAgent
let workspaceId: string

const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, { headers: { ...bearer(agent.token), ...headers }, body })

const requests = () => `/workspaces/${workspaceId}/inference_requests`

const text = (model: string, input: string, more: Record<string, unknown>) =>
  call(
    "POST",
    requests(),
    { inference_request: { workload: "text_generation", model: { model }, input, ...more } },
    { "idempotency-key": `reap-${input}` }
  )

const settled = async (id: string, state: string) => {
  await waitForActorState(server, "inferenceRequest", id, state)
}

beforeAll(async () => {
  server = await startTestServer()
  const account = await twoStewards(server, { owner: ["reap-agent"], member: [] })
  agent = account.ownerAgents[0] as ConnectedAgent
  const made = await call("POST", "/workspaces", { workspace: { name: "reap" } }, { "idempotency-key": "ws-reap" })
  workspaceId = made.body.workspace.public_id
})
afterAll(() => server?.close())

describe("InferenceRequest reap", () => {
  it("InferenceRequest: terminal --DELETE--> tombstoned: the 30-day reap clock (a durable timer) takes the row and its upload namings", async () => {
    const form = fileForm(onePixelPng, "dot.png")
    const uploaded = await request(server.baseUrl, "POST", "/agent_api/v1/uploads", {
      headers: { ...bearer(agent.token), "content-type": form.contentType },
      raw: form.body
    })
    const created = await text("local/echo", "to be reaped", { upload_public_ids: [uploaded.body.upload.public_id] })
    const id = created.body.inference_request.public_id
    await settled(id, "completed")
    const rows = () =>
      server.run(
        Effect.flatMap(SqlClient, (sql) =>
          Effect.all({
            requests: sql`SELECT 1 FROM inference_requests WHERE public_id = ${id}`,
            namings: sql`SELECT 1 FROM upload_namings n JOIN inference_requests r ON r.id = n.holder_id
                         WHERE n.holder_kind = 'inference_request' AND r.public_id = ${id}`
          })
        )
      )
    expect((await rows()).namings).toHaveLength(1)
    expect((await call("DELETE", `${requests()}/${id}`)).status).toBe(204)
    expect((await rows()).requests).toHaveLength(1)
    server.clock.advance("29 days")
    await server.run(Effect.flatMap(TimerRunner, (runner) => runner.runDue))
    expect((await rows()).requests).toHaveLength(1)
    server.clock.advance("1 day")
    server.clock.advance("1 second")
    await waitForActorState(server, "inferenceRequest", id, "reaped")
    expect(await rows()).toEqual({ requests: [], namings: [] })
  })
})
