// Executor inbox guards through the real server (spec "Executor plane"): a cursor the inbox never
// issued is 400 parameter_invalid (never a 500), and a claim needs the run's creator to still
// have write standing (claim grant conditions; runs supplement: 403 not_authorized, judged last).
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { waitForActorState } from "../../support/actors.ts"
import { type AgentRunWorld, agentRunWorld } from "../../support/run-agents.ts"
import { agentCall, inboxCalls, memberCalls, readOnlyTool } from "../../support/runs.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
let world: AgentRunWorld
let runner: { token: string; publicId: string }
let inbox: ReturnType<typeof inboxCalls>

beforeAll(async () => {
  server = await startTestServer()
  world = await agentRunWorld(server)
  runner = await world.runner("guarded-runner", [readOnlyTool("grep")])
  inbox = inboxCalls(server, runner.token)
})
afterAll(() => server?.close())

const refusal = (answer: { status: number; body: any }) => [answer.status, answer.body?.error?.code]

/** A started run of one grep step keyed `key`, its row dispatched to the runner. */
const dispatched = async (key: string) => {
  const calls = memberCalls(server, world)
  const created = await calls.create({
    approval_mode: "bypass",
    default_runner_executor_public_id: runner.publicId,
    steps: [{ tool: { name: "grep", key } }]
  })
  expect(created.status).toBe(201)
  const id = created.body.run.public_id as string
  expect((await calls.call("POST", `/${id}/start`)).status).toBe(200)
  return id
}

describe("inbox cursors", () => {
  it("a cursor that decodes but was never issued (no instant, no run id) is 400 parameter_invalid", async () => {
    const id = await dispatched("listed")
    const cursor = (members: unknown) => Buffer.from(JSON.stringify(members)).toString("base64url")
    for (const forged of [
      { at: "yesterday", run: id, key: "listed" },
      { at: "", run: id, key: "listed" },
      { at: "2030-01-01T00:00:00.000Z", run: "not-a-run", key: "listed" },
      { at: "2030-01-01T00:00:00.000Z", run: id },
      [1, 2, 3]
    ]) {
      expect(refusal(await inbox.list(`?after=${cursor(forged)}`)), JSON.stringify(forged)).toEqual([
        400,
        "parameter_invalid"
      ])
    }
    const page = await inbox.list("?limit=1")
    expect(page.body.tasks.map((row: { task_key: string }) => row.task_key)).toEqual(["listed"])
    // The only row: nothing follows it, so no cursor is offered.
    expect(page.body.pagination.next_after).toBeNull()
    const issued = cursor({ at: page.body.tasks[0].started_at, run: id, key: "listed" })
    const next = await inbox.list(`?after=${issued}`)
    expect(next.status).toBe(200)
    expect(next.body.tasks).toEqual([])
  })
})

describe("claim: the run's creator still has write standing", () => {
  it("a creator whose workspace is archived cannot have its rows claimed (403 not_authorized); restored, it can", async () => {
    const id = await dispatched("standing")
    const member = agentCall(server, world)
    const workspace = `/workspaces/${world.workspaceId}`
    const before = (await member("GET", workspace)).body.workspace
    const archival = await member("POST", `${workspace}/archival`, { command: { lock_version: before.lock_version } })
    expect(archival.status).toBe(200)
    await waitForActorState(server, "workspace", world.workspaceId, "archived")
    expect(refusal(await inbox.claim(id, "standing"))).toEqual([403, "not_authorized"])
    const archived = (await member("GET", workspace)).body.workspace
    const restoration = await member("POST", `${workspace}/restoration`, {
      command: { lock_version: archived.lock_version }
    })
    expect(restoration.status).toBe(200)
    await waitForActorState(server, "workspace", world.workspaceId, "active")
    const claimed = await inbox.claim(id, "standing")
    expect(claimed.status).toBe(200)
    expect(claimed.body.claim.claim_token).toEqual(expect.any(String))
  })
})
