// Await tasks over HTTP (runs supplement "Task kinds and statuses", task verb resolution,
// "Executor inbox" rows): an authored ask parks with a resolution token, holds its run at
// needs_attention awaiting_human, is listed on the creator's agent application inbox and leaves
// it once answered; wait steps complete with their target's result or time out alone.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { waitForActorState } from "../../support/actors.ts"
import { type AgentRunWorld, agentRunWorld, untilRun } from "../../support/run-agents.ts"
import { inboxCalls, memberCalls, readOnlyTool } from "../../support/runs.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
let world: AgentRunWorld
let runner: { token: string; publicId: string }
let calls: ReturnType<typeof memberCalls>

beforeAll(async () => {
  server = await startTestServer()
  world = await agentRunWorld(server)
  runner = await world.runner("await-runner", [readOnlyTool("grep"), readOnlyTool("lint")])
  calls = memberCalls(server, world)
})
afterAll(() => server?.close())

const create = async (steps: ReadonlyArray<unknown>) => {
  const answer = await calls.create({
    approval_mode: "bypass",
    default_runner_executor_public_id: runner.publicId,
    steps
  })
  expect(answer.status).toBe(201)
  return { id: answer.body.run.public_id as string, receipt: answer.body.receipt }
}

const started = async (steps: ReadonlyArray<unknown>) => {
  const run = await create(steps)
  expect((await calls.call("POST", `/${run.id}/start`)).status).toBe(200)
  return run
}

const trace = async (id: string) => (await calls.call("GET", `/${id}`)).body.run
const taskOf = async (id: string, key: string) =>
  (await trace(id)).tasks.find((each: { key: string }) => each.key === key)
const resolve = (id: string, key: string, body: unknown) => calls.call("POST", `/${id}/tasks/${key}/resolution`, body)

const applicationRows = async (id: string) =>
  (await inboxCalls(server, world.application.token).list()).body.tasks.filter(
    (row: { run_public_id: string }) => row.run_public_id === id
  )

/** Claims and commits a dispatched tool task as the runner. */
const settle = async (id: string, key: string, content: string, outcome = "completed") => {
  const inbox = inboxCalls(server, runner.token)
  const claimed = await inbox.claim(id, key)
  expect(claimed.status).toBe(200)
  const committed = await inbox.commit(id, key, { claim_token: claimed.body.claim.claim_token, content, outcome })
  expect(committed.status).toBe(200)
}

describe("Authored asks", () => {
  it("an authored ask is dispatched on start with its resolution token in the receipt", async () => {
    const { id, receipt } = await started([{ ask: { prompt: "Ship it?", options: ["yes", "no"] } }])
    expect(receipt.resolution_tokens).toEqual({ "s1-ask-1": expect.any(String) })
    expect(await taskOf(id, "s1-ask-1")).toMatchObject({ kind: "await_task", status: "dispatched" })
    const read = (await calls.call("GET", `/${id}/tasks/s1-ask-1`)).body.task
    expect(read).toMatchObject({ prompt: "Ship it?", options: ["yes", "no"] })
  })

  it("the run holds needs_attention awaiting_human while the ask is the only open thing", async () => {
    const { id } = await started([{ ask: { prompt: "Hold?" } }])
    await waitForActorState(server, "run", id, "needs_attention")
    const run = await trace(id)
    expect(run.attention).toEqual({ reason: "awaiting_human", blocked_task_keys: ["s1-ask-1"] })
    expect(run.turn).toMatchObject({ status: "failed" })
  })

  it("resolution without the token is 400 parameter_missing; a wrong token 409 not_claimant; nothing settles", async () => {
    const { id } = await started([{ ask: { prompt: "Token?" } }])
    const missing = await resolve(id, "s1-ask-1", { content: "yes" })
    expect([missing.status, missing.body.error.code]).toEqual([400, "parameter_missing"])
    const wrong = await resolve(id, "s1-ask-1", { resolution_token: "not-the-token", content: "yes" })
    expect([wrong.status, wrong.body.error.code]).toEqual([409, "not_claimant"])
    expect((await taskOf(id, "s1-ask-1")).status).toBe("dispatched")
  })

  it("resolution with a bad outcome is 422 validation_failed", async () => {
    const { id, receipt } = await started([{ ask: { prompt: "Outcome?" } }])
    const token = receipt.resolution_tokens["s1-ask-1"]
    const bad = await resolve(id, "s1-ask-1", { resolution_token: token, outcome: "maybe" })
    expect([bad.status, bad.body.error.code]).toEqual([422, "validation_failed"])
  })

  it("a bad outcome is judged after the task's own rules: 404 for an unknown key, 400 for a missing token, 409 not_adjudicable once the run is over", async () => {
    const { id } = await started([{ ask: { prompt: "Order?" } }])
    const unknown = await resolve(id, "nope", { outcome: "maybe" })
    expect([unknown.status, unknown.body.error.code]).toEqual([404, "not_found"])
    const tokenless = await resolve(id, "s1-ask-1", { outcome: "maybe" })
    expect([tokenless.status, tokenless.body.error.code]).toEqual([400, "parameter_missing"])
    expect((await calls.call("POST", `/${id}/stop`)).body.run.status).toBe("canceled")
    const over = await resolve(id, "s1-ask-1", { outcome: "maybe" })
    expect([over.status, over.body.error.code]).toEqual([409, "not_adjudicable"])
  })

  it("the right token completes the ask with content as output, and the run goes on", async () => {
    const { id, receipt } = await started([{ ask: { prompt: "Deploy?" } }])
    const token = receipt.resolution_tokens["s1-ask-1"]
    const answered = await resolve(id, "s1-ask-1", { resolution_token: token, content: "yes, deploy" })
    expect(answered.status).toBe(200)
    expect(answered.body.task).toMatchObject({ key: "s1-ask-1", status: "completed", result: { resolved: true } })
    await waitForActorState(server, "run", id, "completed")
    expect((await calls.call("GET", `/${id}/tasks/s1-ask-1`)).body.task.output).toBe("yes, deploy")
  })

  it("a settled ask answers 200 with the task unchanged (the run still live)", async () => {
    const { id, receipt } = await started([{ ask: { prompt: "Twice?" } }, { tool: { name: "grep" } }])
    const token = receipt.resolution_tokens["s1-ask-1"]
    await resolve(id, "s1-ask-1", { resolution_token: token, content: "first" })
    expect((await taskOf(id, "s1-tool-1")).status).toBe("dispatched")
    const again = await resolve(id, "s1-ask-1", { resolution_token: token, content: "second" })
    expect(again.status).toBe(200)
    expect(again.body.task).toMatchObject({ key: "s1-ask-1", status: "completed" })
    expect((await calls.call("GET", `/${id}/tasks/s1-ask-1`)).body.task.output).toBe("first")
  })

  it("resolution with outcome failed fails the ask (propagate: the run needs attention)", async () => {
    const { id, receipt } = await started([{ ask: { prompt: "Fail?" } }, { tool: { name: "grep" } }])
    const token = receipt.resolution_tokens["s1-ask-1"]
    const failed = await resolve(id, "s1-ask-1", { resolution_token: token, outcome: "failed" })
    expect(failed.body.task.status).toBe("failed")
    await waitForActorState(server, "run", id, "needs_attention")
    expect((await taskOf(id, "s1-tool-1")).status).toBe("skipped")
  })

  it("resolution of a task that is not an ask is 422 await_not_resolvable; an unknown key 404", async () => {
    const { id } = await started([{ tool: { name: "grep" } }])
    const tool = await resolve(id, "s1-tool-1", { resolution_token: "x" })
    expect([tool.status, tool.body.error.code]).toEqual([422, "await_not_resolvable"])
    const unknown = await resolve(id, "nope", { resolution_token: "x" })
    expect([unknown.status, unknown.body.error.code]).toEqual([404, "not_found"])
  })

  it("resolution on a completed run is 409 not_adjudicable, judged before every other rule", async () => {
    const { id } = await started([{ model: { prompt: "done", model: { model: "local/echo" } } }])
    await waitForActorState(server, "run", id, "completed")
    const late = await resolve(id, "s1-model-1", {})
    expect([late.status, late.body.error.code]).toEqual([409, "not_adjudicable"])
  })

  it("an ask past its timeout settles timed_out await_timeout", async () => {
    const { id } = await started([{ ask: { prompt: "Quick?", timeout_ms: 300 } }])
    const task = await untilRun(server, id, async () => {
      const row = await taskOf(id, "s1-ask-1")
      return row.status === "timed_out" ? row : undefined
    })
    expect(task.error).toEqual({ key: "await_timeout" })
  })
})

describe("Ask rows on the creator's agent application inbox", () => {
  it("an open ask is listed to the creator's agent application (not to runners) and leaves once answered", async () => {
    const { id, receipt } = await started([{ ask: { prompt: "Listed?", options: ["a", "b"], multi: true } }])
    const [row, ...rest] = await applicationRows(id)
    expect(rest).toEqual([])
    expect(row).toMatchObject({
      kind: "ask",
      run_public_id: id,
      workspace_public_id: world.workspaceId,
      conversation_public_id: null,
      parent_public_id: null,
      task_key: "s1-ask-1",
      prompt: "Listed?",
      options: ["a", "b"],
      multi: true,
      claimed: false,
      timeout_ms: 86_400_000,
      addressed_to: { role: "agent_application", executor_public_id: world.application.publicId }
    })
    expect(Date.parse(row.deadline_at) - Date.parse(row.started_at)).toBe(86_400_000)
    const runnerRows = (await inboxCalls(server, runner.token).list()).body.tasks
    expect(runnerRows.some((each: { run_public_id: string }) => each.run_public_id === id)).toBe(false)
    await resolve(id, "s1-ask-1", { resolution_token: receipt.resolution_tokens["s1-ask-1"], content: "a" })
    expect(await applicationRows(id)).toEqual([])
  })

  it("nothing is listed for an ask that has not started (a pending run)", async () => {
    const { id } = await create([{ ask: { prompt: "Not yet" } }])
    expect(await applicationRows(id)).toEqual([])
  })
})

describe("Wait steps", () => {
  it("a wait completes with its target's result once the target settles", async () => {
    const { id } = await started([
      { tool: { name: "grep", key: "a" } },
      { tool: { name: "lint", key: "b" } },
      { wait: { task: "a", key: "w" } }
    ])
    await settle(id, "a", "A found 3")
    expect((await taskOf(id, "w")).status).toBe("waiting")
    await settle(id, "b", "B clean")
    await waitForActorState(server, "run", id, "completed")
    const wait = (await calls.call("GET", `/${id}/tasks/w`)).body.task
    expect(wait).toMatchObject({ kind: "await_task", status: "completed", output: "A found 3" })
    const graph = (await calls.call("GET", `/${id}/graph`)).body
    expect(graph.nodes.find((node: { key: string }) => node.key === "w").result_from).toEqual(["a"])
    expect(graph.edges).toEqual(
      expect.arrayContaining([
        { from: "b", to: "w", structural: true },
        { from: "a", to: "w", structural: false }
      ])
    )
  })

  it("a wait dispatched before its target waits on it, then completes with the target's result", async () => {
    const { id } = await started([
      { parallel: [{ tool: { name: "grep", key: "a" } }, { wait: { task: "a", key: "w" } }] },
      { tool: { name: "lint", key: "after" } }
    ])
    expect(await taskOf(id, "w")).toMatchObject({ status: "dispatched" })
    await settle(id, "a", "target says hi")
    expect((await calls.call("GET", `/${id}/tasks/w`)).body.task).toMatchObject({
      status: "completed",
      output: "target says hi"
    })
    expect((await taskOf(id, "after")).status).toBe("dispatched")
  })

  it("a wait past its timeout settles timed_out alone (absorb: its dependents go on)", async () => {
    const { id } = await started([
      { parallel: [{ tool: { name: "grep", key: "a" } }, { wait: { task: "a", key: "w", timeout_ms: 300 } }] },
      { tool: { name: "lint", key: "after" } }
    ])
    const wait = await untilRun(server, id, async () => {
      const row = await taskOf(id, "w")
      return row.status === "timed_out" ? row : undefined
    })
    expect(wait).toMatchObject({ on_failure: "absorb", result: { resolved: true } })
    expect((await taskOf(id, "a")).status).toBe("dispatched")
    await settle(id, "a", "late")
    expect((await taskOf(id, "after")).status).toBe("dispatched")
  })
})
