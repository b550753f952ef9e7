// Platform: operators — the actors listing's state filter on a machine with nested states: the
// inference request's compound `live` names the requests in any of its states (queued, waiting,
// running), as the machine's states list offers it.
import { afterAll, beforeAll, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { waitForActorState } from "../../support/actors.ts"
import { bearer, request } from "../../support/http.ts"
import type { ConnectedAgent } from "../../support/members.ts"
import { apiToken } from "../../support/people.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
let agent: ConnectedAgent
let admin: string
let workspaceId: string

const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, { headers: { ...bearer(agent.token), ...headers }, body })
const listed = async (query: string) =>
  (await request(server.baseUrl, "GET", `/api/v1/admin/actors?${query}`, { headers: bearer(admin) })).body.actors.map(
    (actor: { id: string }) => actor.id
  )

beforeAll(async () => {
  server = await startTestServer()
  const account = await twoStewards(server, { owner: ["states-agent"], member: [] })
  agent = account.ownerAgents[0] as ConnectedAgent
  admin = await apiToken(server)
  const made = await call("POST", "/workspaces", { workspace: { name: "states" } }, { "idempotency-key": "ws" })
  workspaceId = made.body.workspace.public_id
})
afterAll(() => server?.close())

it("state=live lists the requests in live.running; state=live.running too; a sibling state does not", async () => {
  const requests = `/workspaces/${workspaceId}/inference_requests`
  const created = await call(
    "POST",
    requests,
    {
      inference_request: {
        workload: "text_generation",
        model: { model: "local/script" },
        input: JSON.stringify({ delay_ms: 60_000 })
      }
    },
    { "idempotency-key": "slow" }
  )
  const id = created.body.inference_request.public_id as string
  await waitForActorState(server, "inferenceRequest", id, "live.running")
  const machines = (await request(server.baseUrl, "GET", "/api/v1/admin/machines", { headers: bearer(admin) })).body
  const states = machines.machines.find((machine: { kind: string }) => machine.kind === "inferenceRequest").states
  expect(states).toEqual(expect.arrayContaining(["live", "live.running", "live.queued"]))
  expect(await listed("kind=inferenceRequest&state=live")).toEqual([id])
  expect(await listed("state=live")).toEqual([id])
  expect(await listed("kind=inferenceRequest&state=live.running")).toEqual([id])
  expect(await listed("kind=inferenceRequest&state=live.queued")).toEqual([])
  expect((await call("POST", `${requests}/${id}/cancellation`)).body.inference_request.status).toBe("canceled")
})
