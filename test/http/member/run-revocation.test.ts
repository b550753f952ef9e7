// Runs when their parties go (spec "Member and transport credentials": removing an agent
// force-stops related work asynchronously; a revoked executor's unclaimed inbox rows fail
// executor_revoked, claimed rows settle by their own deadline): revoking a runner on the runners
// page fails its unclaimed dispatched rows and drops it from pool rows; removing the agent that
// created runs on the agents page stops every live run it created.
import * as Repo from "@troupe/storage/repositories/Actors"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { waitForActorState } from "../../support/actors.ts"
import { bearer, csrfTokenIn, request } from "../../support/http.ts"
import { signedIn } from "../../support/members.ts"
import { ownerCredentials } from "../../support/people.ts"
import { type AgentRunWorld, agentRunWorld, untilRun } from "../../support/run-agents.ts"
import { inboxCalls, memberCalls, readOnlyTool } from "../../support/runs.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { decide, machineFields, poll, startDevice } from "../oauth/support-device.ts"

let server: TestServer
let world: AgentRunWorld
let calls: ReturnType<typeof memberCalls>

beforeAll(async () => {
  server = await startTestServer()
  world = await agentRunWorld(server)
  calls = memberCalls(server, world)
})
afterAll(() => server?.close())

const started = async (run: Record<string, unknown>) => {
  const created = await calls.create({ approval_mode: "bypass", ...run })
  expect(created.status, JSON.stringify(created.body)).toBe(201)
  const id = created.body.run.public_id as string
  expect((await calls.call("POST", `/${id}/start`)).status).toBe(200)
  return id
}

const trace = async (id: string) => (await calls.call("GET", `/${id}`)).body.run
const taskOf = async (id: string, key: string) =>
  ((await trace(id)).tasks as Array<any>).find((task) => task.key === key)

/** The owner's browser on a stewardship page, and a post of one of its forms. */
const ownerAction = async (page: "/agents" | "/runners", action: string) => {
  const owner = await signedIn(server, ownerCredentials)
  const csrf = csrfTokenIn((await owner.get(page)).text)
  return owner.post(action, { csrf_token: csrf })
}

/** A tool provider of the account, shared account-wide, announcing `tools`. */
const toolProvider = async (identifier: string, tools: ReadonlyArray<unknown>) => {
  const owner = await signedIn(server, ownerCredentials)
  const device = await startDevice(server, machineFields(identifier, { executor_kind: "tool_provider" }))
  await decide(owner, device.user_code, "approve", "account_wide")
  const token = (await poll(server, device.device_code)).body.access_token as string
  await request(server.baseUrl, "PUT", "/agent_api/v1/executor/announcement", {
    headers: bearer(token),
    body: { tools }
  })
  const self = await request(server.baseUrl, "GET", "/agent_api/v1/executor", { headers: bearer(token) })
  return { token, publicId: self.body.executor.public_id as string }
}

describe("a runner revoked on the runners page", () => {
  it("its unclaimed dispatched row fails executor_revoked (propagating); the row it claimed stays until its deadline", async () => {
    const runner = await world.runner("revoked-runner", [readOnlyTool("grep")])
    const fan = await started({
      default_runner_executor_public_id: runner.publicId,
      steps: [
        { parallel: [{ tool: { name: "grep", key: "held" } }, { tool: { name: "grep", key: "open" } }] },
        { tool: { name: "grep", key: "after" } }
      ]
    })
    const lone = await started({
      default_runner_executor_public_id: runner.publicId,
      steps: [{ tool: { name: "grep", key: "only" } }]
    })
    expect((await inboxCalls(server, runner.token).claim(fan, "held")).status).toBe(200)

    const revoked = await ownerAction("/runners", `/runners/${runner.publicId}/revoke`)
    expect(revoked.status).toBe(303)

    const open = await untilRun(server, fan, async () => {
      const task = await taskOf(fan, "open")
      return task?.status === "failed" ? task : undefined
    })
    expect(open.error).toMatchObject({ key: "executor_revoked" })
    expect(await taskOf(fan, "held")).toMatchObject({
      status: "dispatched",
      claimed_by: { executor_public_id: runner.publicId }
    })
    expect(await taskOf(fan, "after")).toMatchObject({ status: "skipped" })
    expect((await trace(fan)).status).toBe("running")

    // The run's deliverable failed with nothing left to run: the run needs attention.
    const run = await untilRun(server, lone, async () => {
      const current = await trace(lone)
      return current.status === "needs_attention" ? current : undefined
    })
    expect(run.tasks[0]).toMatchObject({ key: "only", status: "failed", error: { key: "executor_revoked" } })
    expect(run.attention).toMatchObject({ reason: "deliverable_unresolved" })
  })

  it("a pool row drops a revoked tool provider and stays dispatched for the others", async () => {
    const leaving = await toolProvider("pool-leaving", [readOnlyTool("scan")])
    const staying = await toolProvider("pool-staying", [readOnlyTool("scan")])
    const directive = JSON.stringify({ tool_calls: [{ name: "scan", input: {} }] })
    const id = await started({
      steps: [{ model: { prompt: directive, model: { model: "local/script" }, tools: ["scan"] } }]
    })
    const call = "s1-model-1-t0"
    await untilRun(server, id, async () => ((await taskOf(id, call))?.status === "dispatched" ? true : undefined))

    expect((await ownerAction("/runners", `/runners/${leaving.publicId}/revoke`)).status).toBe(303)
    const members = () =>
      server.run(
        Effect.map(Repo.findSnapshotWithParts("run", id), (row) => {
          const tasks = (row!.snapshot as any).context.tasks as Array<any>
          return tasks.find((task) => task.spec.key === call).spec.tool.target.executorIds as Array<string>
        })
      )
    const left = await untilRun(server, id, async () => {
      const now = await members()
      return now.includes(leaving.publicId) ? undefined : now
    })
    expect(left).toContain(staying.publicId)
    expect(await taskOf(id, call)).toMatchObject({ status: "dispatched" })
    expect((await inboxCalls(server, staying.token).claim(id, call)).status).toBe(200)
  })
})

describe("the creating agent removed on the agents page", () => {
  it("Agent application address: active --agent removal--> active, epoch advanced: related work force-stopped asynchronously (running, paused and pending runs end canceled)", async () => {
    const runner = await world.runner("stop-runner", [readOnlyTool("grep")])
    const running = await started({
      default_runner_executor_public_id: runner.publicId,
      steps: [{ tool: { name: "grep", key: "work" } }]
    })
    expect((await inboxCalls(server, runner.token).claim(running, "work")).status).toBe(200)
    const paused = await started({
      default_runner_executor_public_id: runner.publicId,
      steps: [{ tool: { name: "grep", key: "later" } }]
    })
    expect((await calls.call("POST", `/${paused}/pause`, {})).status).toBe(200)
    const pending = (
      await calls.create({
        approval_mode: "bypass",
        default_runner_executor_public_id: runner.publicId,
        steps: [{ tool: { name: "grep" } }]
      })
    ).body.run.public_id as string

    const removed = await ownerAction("/agents", `/agents/${world.agent.publicId}/remove`)
    expect(removed.status).toBe(303)
    expect((await calls.call("GET", `/${running}`)).status).toBe(401)

    for (const id of [running, paused, pending]) await waitForActorState(server, "run", id, "canceled")
    const rows = await server.run(
      Effect.flatMap(
        SqlClient,
        (sql) => sql<{ run: string; status: string; key: string; task_status: string; error: any }>`
          SELECT r.public_id::text AS run, r.status, t.key, t.status AS task_status, t.error
          FROM runs r JOIN run_tasks t ON t.run_id = r.id
          WHERE r.public_id = ANY(${[running, paused, pending]}::uuid[])`
      )
    )
    expect(rows).toHaveLength(3)
    for (const row of rows) {
      expect(row).toMatchObject({ status: "canceled", task_status: "canceled", error: { key: "run_canceled" } })
    }
  })
})
