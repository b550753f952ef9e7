// The agents and runners pages: what a human stewards, agent removal ("Agent application
// address: active --agent removal--> active, epoch advanced") and machine revocation ("Executor
// address: active --explicit revocation--> revoked").

import { Inspection } from "@troupe/actors/Inspection"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { waitForMessages } from "../../support/actors.ts"
import { bearer, csrfTokenIn, request } from "../../support/http.ts"
import { createMember, createOwner, memberCredentials, ownerCredentials } from "../../support/people.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { agentFields, decide, machineFields, poll, signedInBrowser, startDevice } from "../oauth/support-device.ts"

let server: TestServer
let owner: Awaited<ReturnType<typeof signedInBrowser>>
let member: Awaited<ReturnType<typeof signedInBrowser>>

const connect = async (fields: Record<string, string>, scope?: "user_private" | "account_wide") => {
  const started = await startDevice(server, fields)
  await decide(owner, started.user_code, "approve", scope)
  return (await poll(server, started.device_code)).body
}
const get = (path: string, token: string) => request(server.baseUrl, "GET", path, { headers: bearer(token) })

beforeAll(async () => {
  server = await startTestServer()
  await createOwner(server)
  await createMember(server)
  owner = await signedInBrowser(server, ownerCredentials.email, ownerCredentials.password)
  member = await signedInBrowser(server, memberCredentials.email, memberCredentials.password)
})
afterAll(() => server?.close())

describe("agents page", () => {
  it("lists the agents a human stewards, and only theirs", async () => {
    const issued = await connect(agentFields("listed-agent"))
    const id = (await get("/agent_api/v1/profile", issued.access_token)).body.member.public_id
    const page = await owner.get("/agents")
    expect(page.text).toContain("Agent listed-agent")
    expect(page.text).toContain(`data-agent="${id}"`)
    expect((await member.get("/agents")).text).not.toContain("listed-agent")
    expect((await owner.get("/")).text).toContain('href="/agents"')
  })

  it("Agent application address: active --agent removal--> active, epoch advanced: member credentials fenced at once", async () => {
    const issued = await connect(agentFields("removed-agent"))
    const agentId = (await get("/agent_api/v1/profile", issued.access_token)).body.member.public_id
    const address = (await get("/agent_api/v1/executor", issued.executor_access_token)).body.executor
    const page = await owner.get("/agents")
    const removed = await owner.post(`/agents/${agentId}/remove`, { csrf_token: csrfTokenIn(page.text) })
    expect(removed.status).toBe(303)
    expect((await get("/agent_api/v1/profile", issued.access_token)).status).toBe(401)
    expect((await get("/agent_api/v1/executor", issued.executor_access_token)).status).toBe(401)
    await waitForMessages(server, "executorAddress", address.public_id)
    const actor = await server.run(
      Effect.flatMap(Inspection, (inspection) => inspection.detail("executorAddress", address.public_id))
    )
    expect(actor?.row.state_value).toBe("active")
    expect(actor?.journal.at(-1)?.event).toEqual({ type: "executor.agentRemoved", epoch: address.credential_epoch + 1 })
    expect((await owner.get("/agents")).text).toMatch(/removed-agent[\s\S]*removed/)
    const restored = await connect(agentFields("removed-agent"))
    expect((await get("/agent_api/v1/profile", restored.access_token)).body.member.public_id).toBe(agentId)
    expect((await get("/agent_api/v1/profile", issued.access_token)).status).toBe(401)
  })

  it("another human cannot remove it, and the form needs its CSRF token (the refusal links back to the agents page)", async () => {
    const issued = await connect(agentFields("guarded-agent"))
    const agentId = (await get("/agent_api/v1/profile", issued.access_token)).body.member.public_id
    const memberPage = await member.get("/")
    expect((await member.post(`/agents/${agentId}/remove`, { csrf_token: csrfTokenIn(memberPage.text) })).status).toBe(
      404
    )
    const forged = await owner.post(`/agents/${agentId}/remove`, { csrf_token: "forged" })
    expect(forged.status).toBe(403)
    expect(forged.text).toContain('<a id="try-again" href="/agents">')
    expect((await get("/agent_api/v1/profile", issued.access_token)).status).toBe(200)
  })
})

describe("runners page", () => {
  it("Executor address: active --explicit revocation--> revoked on the runners page (listing what a human connected): transport fenced synchronously; a new connection later creates a new address", async () => {
    const issued = await connect(machineFields("page-runner"), "account_wide")
    const executor = (await get("/agent_api/v1/executor", issued.access_token)).body.executor
    const page = await owner.get("/runners")
    expect(page.text).toContain("Runner page-runner")
    expect(page.text).toContain("account_wide")
    expect(page.text).toContain("not_yet_seen")
    expect((await member.get("/runners")).text).not.toContain("page-runner")
    const memberPage = await member.get("/")
    expect(
      (await member.post(`/runners/${executor.public_id}/revoke`, { csrf_token: csrfTokenIn(memberPage.text) })).status
    ).toBe(404)
    const revoked = await owner.post(`/runners/${executor.public_id}/revoke`, { csrf_token: csrfTokenIn(page.text) })
    expect(revoked.status).toBe(303)
    expect((await get("/agent_api/v1/executor", issued.access_token)).status).toBe(401)
    // The address's revoking step ended its runner lineage in the same transaction.
    const lineages = await server.run(
      Effect.flatMap(
        SqlClient,
        (sql) => sql<{ revoked: boolean }>`
          SELECT l.revoked_at IS NOT NULL AS revoked FROM credential_lineages l
          JOIN executors e ON e.id = l.executor_id WHERE e.public_id = ${executor.public_id}`
      )
    )
    expect(lineages.map((lineage) => lineage.revoked)).toEqual([true])
    expect((await owner.get("/runners")).text).toMatch(/page-runner[\s\S]*revoked/)
    const again = await connect(machineFields("page-runner"), "account_wide")
    const next = (await get("/agent_api/v1/executor", again.access_token)).body.executor
    expect(next.public_id).not.toBe(executor.public_id)
    expect(next.status).toBe("active")
  })
})
