// The upload doors' request budget through the real server (inference supplement "Uploads":
// "Budgets per caller: uploads 600/min"): every member upload route (ingest and reads) counts
// against one budget of 600 a minute per caller; past it 429 rate_limited with Retry-After.
import { afterAll, beforeAll, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { callerKey, spend, startOfWindow } from "../../support/budget.ts"
import { bearer, request } from "../../support/http.ts"
import type { ConnectedAgent } from "../../support/members.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { fileForm } from "../../support/uploads.ts"

let server: TestServer
let agent: ConnectedAgent
let other: ConnectedAgent

beforeAll(async () => {
  server = await startTestServer()
  const account = await twoStewards(server, { owner: ["budget-uploader", "budget-other"], member: [] })
  agent = account.ownerAgents[0] as ConnectedAgent
  other = account.ownerAgents[1] as ConnectedAgent
})
afterAll(() => server?.close())

const upload = (token: string) => {
  const form = fileForm("some text", "note.txt")
  return request(server.baseUrl, "POST", "/agent_api/v1/uploads", {
    headers: { ...bearer(token), "content-type": form.contentType },
    raw: form.body
  })
}

it("600 upload requests a minute per caller, reads included; the 601st is 429 with Retry-After", async () => {
  const made = await upload(agent.token)
  expect(made.status).toBe(201)
  const id = made.body.upload.public_id as string
  const read = (suffix: string) =>
    request(server.baseUrl, "GET", `/agent_api/v1/uploads/${id}${suffix}`, { headers: bearer(agent.token) })
  await startOfWindow(server)
  await spend(server, "uploads", await callerKey(server, agent.publicId), 598)
  expect((await upload(agent.token)).status).toBe(201)
  expect((await read("")).status).toBe(200)
  for (const refused of [await upload(agent.token), await read(""), await read("/bytes")]) {
    expect([refused.status, refused.body.error.code]).toEqual([429, "rate_limited"])
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
  }
  expect((await upload(other.token)).status).toBe(201)
  const refused = await read("")
  server.clock.advance(`${Number(refused.headers.get("retry-after"))} seconds`)
  expect((await read("")).status).toBe(200)
})
