// A run names the uploads it binds (spec "Member: uploads": bytes are readable by the creator or a
// principal who can read a row naming the upload; unbound uploads are reclaimed after a day;
// supplement "Uploads": a named one lives while a naming row does): through the real server, a
// reader of the run reads the bytes of an upload a task attaches or a committed result links,
// others get 404; the reaper keeps what a run binds, and takes it once the run is reaped.
import { Uploads } from "@troupe/domain/uploads/Uploads"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { waitForActorState } from "../../support/actors.ts"
import { bearer, request } from "../../support/http.ts"
import { createMember, personalToken } from "../../support/people.ts"
import { type AgentRunWorld, agentRunWorld } from "../../support/run-agents.ts"
import { inboxCalls, memberCalls, readOnlyTool } from "../../support/runs.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { fileForm, onePixelPng } from "../../support/uploads.ts"

let server: TestServer
/** The runs' creator is an agent of the owner; the owner (its steward) reads its runs. */
let world: AgentRunWorld
let ownerToken: string
/** Another human of the account: it does not see the agent's workspace. */
let outsiderToken: string
let runner: { token: string; publicId: string }
let calls: ReturnType<typeof memberCalls>
let inbox: ReturnType<typeof inboxCalls>

const reap = () => server.run(Effect.flatMap(Uploads, (uploads) => uploads.reap))

/** An upload made at `door` with `token`; answers its public id. */
const upload = async (door: "/agent_api/v1/uploads" | "/agent_api/v1/executor/uploads", token: string) => {
  const form = fileForm(onePixelPng, "look.png")
  const made = await request(server.baseUrl, "POST", door, {
    headers: { ...bearer(token), "content-type": form.contentType },
    raw: form.body
  })
  expect(made.status).toBe(201)
  return made.body.upload.public_id as string
}

const status = async (path: string, token: string) =>
  (await request(server.baseUrl, "GET", `/agent_api/v1${path}`, { headers: bearer(token) })).status

/** A pending run (never started) whose model step attaches `attachments`: answers its public id. */
const attaching = async (attachments: ReadonlyArray<unknown>) => {
  const created = await calls.create({
    approval_mode: "bypass",
    steps: [{ model: { prompt: "Look", model: { model: "local/echo" }, attachments } }]
  })
  expect(created.status, JSON.stringify(created.body)).toBe(201)
  return created.body.run.public_id as string
}

const run = (id: string) => `/workspaces/${world.workspaceId}/runs/${id}`

beforeAll(async () => {
  server = await startTestServer()
  world = await agentRunWorld(server, "run namings")
  ownerToken = await personalToken(server, world.owner)
  outsiderToken = await personalToken(server, await createMember(server))
  runner = await world.runner("namings-runner", [readOnlyTool("grep")])
  calls = memberCalls(server, world)
  inbox = inboxCalls(server, runner.token)
})
afterAll(() => server?.close())

describe("an upload a run binds", () => {
  it("a task's attachment: whoever reads the run reads its bytes and thumbnail; others get 404", async () => {
    const image = await upload("/agent_api/v1/uploads", world.agent.token)
    expect(await status(`/uploads/${image}/bytes`, ownerToken)).toBe(404)
    const id = await attaching([{ upload_public_id: image }])
    expect(await status(run(id), ownerToken)).toBe(200)
    expect(await status(`/uploads/${image}/bytes`, ownerToken)).toBe(200)
    expect(await status(`/uploads/${image}/thumbnail`, ownerToken)).toBe(200)
    // The descriptor stays its creator's.
    expect(await status(`/uploads/${image}`, ownerToken)).toBe(404)
    expect(await status(run(id), outsiderToken)).toBe(404)
    expect(await status(`/uploads/${image}/bytes`, outsiderToken)).toBe(404)
    expect(await status(`/uploads/${image}/thumbnail`, outsiderToken)).toBe(404)
  })

  it("a committed result's link: the run's readers read the executor's upload; others get 404", async () => {
    const created = await calls.create({
      approval_mode: "bypass",
      default_runner_executor_public_id: runner.publicId,
      steps: [{ tool: { name: "grep", key: "find" } }]
    })
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    const id = created.body.run.public_id as string
    expect((await calls.call("POST", `/${id}/start`)).status).toBe(200)
    const claimed = await inbox.claim(id, "find")
    expect(claimed.status, JSON.stringify(claimed.body)).toBe(200)
    const result = await upload("/agent_api/v1/executor/uploads", runner.token)
    expect(await status(`/uploads/${result}/bytes`, world.agent.token)).toBe(404)
    const committed = await inbox.commit(id, "find", {
      claim_token: claimed.body.claim.claim_token,
      content: [{ type: "resource_link", uri: `svc://uploads/${result}`, name: "found.png" }]
    })
    expect(committed.status, JSON.stringify(committed.body)).toBe(200)
    expect(await status(`/uploads/${result}/bytes`, world.agent.token)).toBe(200)
    expect(await status(`/uploads/${result}/preview`, ownerToken)).toBe(200)
    expect(await status(`/uploads/${result}/bytes`, outsiderToken)).toBe(404)
  })

  it("lives past a day while the run binds it; unnamed once the run's tombstone is reaped, it goes", async () => {
    server.clock.advance("25 hours")
    await reap()
    const [kept, loose] = [
      await upload("/agent_api/v1/uploads", world.agent.token),
      await upload("/agent_api/v1/uploads", world.agent.token)
    ]
    const id = await attaching([kept])
    server.clock.advance("25 hours")
    expect((await reap()).uploads).toBe(1)
    expect(await status(`/uploads/${kept}/bytes`, world.agent.token)).toBe(200)
    expect(await status(`/uploads/${loose}/bytes`, world.agent.token)).toBe(404)
    const removed = await calls.call("DELETE", `/${id}`)
    expect(removed.status, JSON.stringify(removed.body)).toBe(204)
    // A tombstone is read by no one: its binding opens nothing more.
    expect(await status(`/uploads/${kept}/bytes`, ownerToken)).toBe(404)
    server.clock.advance("30 days")
    server.clock.advance("1 second")
    await waitForActorState(server, "run", id, "reaped")
    // (The agent's token has expired by now: the rows say what is left.)
    const left = () =>
      server.run(
        Effect.flatMap(SqlClient, (sql) =>
          Effect.all({
            uploads: sql`SELECT 1 FROM uploads WHERE public_id = ${kept}`,
            namings: sql`SELECT 1 FROM upload_namings n JOIN uploads u ON u.id = n.upload_id WHERE u.public_id = ${kept}`
          })
        )
      )
    const before = await left()
    expect([before.uploads.length, before.namings.length]).toEqual([1, 0])
    expect((await reap()).uploads).toBe(1)
    expect((await left()).uploads).toEqual([])
  })
})
