// Runs end to end through the real server: create (compiled, idempotent), start, the inbox rows a
// dispatched tool task makes, claim and commit by the runner, the run's completion, the trace and
// the projections, and the run verbs' refusals.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { waitForActorState } from "../../support/actors.ts"
import { bearer, request } from "../../support/http.ts"
import { inboxCalls, memberCalls, type RunWorld, readOnlyTool, runWorld, waitForRun } from "../../support/runs.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
let world: RunWorld
let runner: { token: string; publicId: string }
let calls: ReturnType<typeof memberCalls>

beforeAll(async () => {
  server = await startTestServer()
  world = await runWorld(server)
  runner = await runner_("run-runner")
  calls = memberCalls(server, world)
})
afterAll(() => server?.close())

const runner_ = (identifier: string) => world.runner(identifier, [readOnlyTool("grep"), readOnlyTool("lint")])

const toolRun = (steps: ReadonlyArray<unknown>) => ({
  approval_mode: "bypass",
  default_runner_executor_public_id: runner.publicId,
  steps
})

describe("Run lifecycle over HTTP", () => {
  it("create → 201 {run, receipt}; a replay answers the same; start dispatches the tool task to the runner", async () => {
    const body = toolRun([{ tool: { name: "grep", input: { pattern: "x" } } }])
    const created = await calls.create(body, "create-once")
    expect(created.status).toBe(201)
    expect(created.body.run).toMatchObject({
      status: "pending",
      approval_mode: "bypass",
      deliverable_task_key: "s1-tool-1"
    })
    expect(created.body.receipt).toMatchObject({ accepted_task_keys: ["s1-tool-1"], revision: 1 })
    const replay = await calls.create(body, "create-once")
    expect(replay.status).toBe(201)
    expect(replay.headers.get("idempotency-replayed")).toBe("true")
    expect(replay.body.run.public_id).toBe(created.body.run.public_id)

    const id = created.body.run.public_id
    const started = await calls.call("POST", `/${id}/start`)
    expect(started.status).toBe(200)
    expect(started.body.run.status).toBe("running")
    expect(started.body.run.tasks[0]).toMatchObject({ key: "s1-tool-1", status: "dispatched", tool_name: "grep" })

    const inbox = inboxCalls(server, runner.token)
    const rows = (await inbox.list()).body.tasks
    const row = rows.find((each: any) => each.run_public_id === id)
    expect(row).toMatchObject({
      kind: "tool_call",
      task_key: "s1-tool-1",
      tool_name: "grep",
      tool_input: { pattern: "x" },
      tool_call_id: "s1-tool-1",
      claimed: false,
      addressed_to: { role: "runner", executor_public_id: runner.publicId },
      workspace_public_id: world.workspaceId,
      conversation_public_id: null
    })

    const claimed = await inbox.claim(id, "s1-tool-1")
    expect(claimed.status).toBe(200)
    expect(claimed.body.task.claimed).toBe(true)
    const token = claimed.body.claim.claim_token as string
    expect((await inbox.claim(id, "s1-tool-1")).body.error.code).toBe("already_claimed")
    expect((await inbox.check(id, "s1-tool-1", token)).body).toEqual({ claim: { active: true } })
    expect((await inbox.check(id, "s1-tool-1", "wrong")).body.error.code).toBe("not_claimant")

    const wrong = await inbox.commit(id, "s1-tool-1", { claim_token: "wrong", content: "nope" })
    expect([wrong.status, wrong.body.error.code]).toEqual([409, "not_claimant"])
    const committed = await inbox.commit(id, "s1-tool-1", { claim_token: token, content: "found 3" })
    expect(committed.status).toBe(200)
    expect(committed.body.task).toMatchObject({ key: "s1-tool-1", status: "completed" })
    const again = await inbox.commit(id, "s1-tool-1", { claim_token: token, content: "found 3" })
    expect(again.status).toBe(200)

    await waitForActorState(server, "run", id, "completed")
    const trace = (await calls.call("GET", `/${id}`)).body.run
    expect(trace.status).toBe("completed")
    expect(trace.task_progress).toMatchObject({ completed: 1, total: 1 })
    const read = (await calls.call("GET", `/${id}/tasks/s1-tool-1`)).body.task
    expect(read).toMatchObject({ output: "found 3", content: [{ type: "text", text: "found 3" }] })
    expect((await inbox.list()).body.tasks.some((each: any) => each.run_public_id === id)).toBe(false)
  })

  it("a chain runs in written order; the graph draws it and a failed halt step holds needs_attention until retried", async () => {
    const created = await calls.create(
      toolRun([{ tool: { name: "grep", on_failure: "halt" } }, { tool: { name: "lint" } }])
    )
    const id = created.body.run.public_id
    await calls.call("POST", `/${id}/start`)
    const inbox = inboxCalls(server, runner.token)
    const first = await inbox.claim(id, "s1-tool-1")
    await inbox.commit(id, "s1-tool-1", {
      claim_token: first.body.claim.claim_token,
      content: "bad",
      outcome: "failed"
    })
    await waitForActorState(server, "run", id, "needs_attention")
    const held = (await calls.call("GET", `/${id}`)).body.run
    expect(held.attention).toEqual({ reason: "halt_failure", blocked_task_keys: ["s1-tool-1"] })
    const graph = (await calls.call("GET", `/${id}/graph`)).body
    expect(graph.edges).toEqual([{ from: "s1-tool-1", to: "s1-tool-2", structural: true }])
    expect(graph.mermaid).toContain("flowchart TD")

    const retried = await calls.call("POST", `/${id}/tasks/s1-tool-1/retry`)
    expect(retried.status).toBe(200)
    expect(retried.body.task.status).toBe("dispatched")
    const second = await inbox.claim(id, "s1-tool-1")
    await inbox.commit(id, "s1-tool-1", { claim_token: second.body.claim.claim_token, content: "ok" })
    const lint = await inbox.claim(id, "s1-tool-2")
    await inbox.commit(id, "s1-tool-2", { claim_token: lint.body.claim.claim_token, content: "clean" })
    await waitForActorState(server, "run", id, "completed")
  })

  it("verbs refuse by state: not_startable, not_resumable, already_terminal, run_live; DELETE tombstones", async () => {
    const id = (await calls.create(toolRun([{ tool: { name: "grep" } }]))).body.run.public_id
    expect((await calls.call("POST", `/${id}/resume`)).body.error.code).toBe("not_resumable")
    await calls.call("POST", `/${id}/start`)
    expect((await calls.call("POST", `/${id}/start`)).body.error.code).toBe("not_startable")
    expect((await calls.call("DELETE", `/${id}`)).body.error.code).toBe("run_live")
    const paused = await calls.call("POST", `/${id}/pause`, { force: false })
    expect(paused.body.run.status).toBe("paused")
    const stopped = await calls.call("POST", `/${id}/stop`)
    expect(stopped.body.run.status).toBe("canceled")
    expect((await calls.call("POST", `/${id}/stop`)).body.error.code).toBe("already_terminal")
    expect((await calls.call("DELETE", `/${id}`)).status).toBe(204)
    expect((await calls.call("GET", `/${id}`)).status).toBe(404)
  })

  it("list: filters by status and attention, pages by cursor, never lists tombstones; bad words are 400", async () => {
    const pending = (await calls.create(toolRun([{ tool: { name: "grep" } }]))).body.run.public_id
    const held = (await calls.create({ approval_mode: "bypass", steps: [{ ask: { prompt: "Go?" } }] })).body.run
      .public_id
    await calls.call("POST", `/${held}/start`)
    await waitForActorState(server, "run", held, "needs_attention")
    const gone = (await calls.create(toolRun([{ tool: { name: "grep" } }]))).body.run.public_id
    expect((await calls.call("DELETE", `/${gone}`)).status).toBe(204)
    const ids = async (query: string) =>
      ((await calls.call("GET", query)).body.runs as Array<any>).map((run) => run.public_id)
    expect(await ids("?status=pending")).toContain(pending)
    expect(await ids("?status=pending")).not.toContain(held)
    expect(await ids("?status=needs_attention,running")).toContain(held)
    const attention = (await calls.call("GET", "?attention=any")).body.runs as Array<any>
    expect(attention.every((run) => run.attention !== null)).toBe(true)
    expect(attention.find((run) => run.public_id === held)).toMatchObject({
      status: "needs_attention",
      attention: { reason: "awaiting_human" }
    })
    expect(attention.map((run) => run.public_id)).not.toContain(pending)
    expect(await ids("")).not.toContain(gone)
    const first = (await calls.call("GET", "?limit=1&order=asc")).body
    expect(first.runs).toHaveLength(1)
    const second = (await calls.call("GET", `?limit=1&order=asc&after=${first.pagination.next_after}`)).body
    expect(second.runs[0].public_id).not.toBe(first.runs[0].public_id)
    for (const bad of ["?status=finished", "?attention=some", "?limit=0", "?order=up", "?after=nope"]) {
      const refused = await calls.call("GET", bad)
      expect([refused.status, refused.body.error.code], bad).toEqual([400, "parameter_invalid"])
    }
  })

  it("compile refusals carry their members: invalid_steps entries, a raw graph name's path", async () => {
    const invalid = await calls.create({ approval_mode: "bypass", steps: [{ tool: {} }] })
    expect(invalid.status).toBe(422)
    expect(invalid.body.error).toMatchObject({
      code: "invalid_steps",
      steps: [
        { code: "tool_name_required", path: "steps[0].tool.name" },
        { code: "runner_target_required", path: "steps[0].tool.route" }
      ]
    })
    const raw = await calls.create({ approval_mode: "bypass", steps: [], depends_on: [] })
    expect(raw.body.error).toMatchObject({ code: "edge_authoring_refused", path: "run.depends_on" })
    const mode = await calls.create({ steps: [{ tool: { name: "grep" } }] })
    expect(mode.body.error.code).toBe("invalid_approval_mode")
  })

  it("a model step runs through the inference engine: local/echo answers echo: <prompt>", async () => {
    const created = await calls.create({
      approval_mode: "bypass",
      steps: [{ model: { prompt: "hello run", model: { model: "local/echo" } } }]
    })
    const id = created.body.run.public_id
    await calls.call("POST", `/${id}/start`)
    await waitForActorState(server, "run", id, "completed")
    const task = (await calls.call("GET", `/${id}/tasks/s1-model-1`)).body.task
    expect(task.output).toBe("echo: hello run")
    const sealed = (await calls.call("GET", `/${id}/tasks/s1-model-1/request`)).body.request
    expect(sealed.entries.at(-1)).toEqual({ role: "user", parts: [{ type: "text", text: "hello run" }] })
  })

  it("what a round's reply settles is stamped when it happened: the round's end, the next step's dispatch and deadline", async () => {
    const created = await calls.create({
      approval_mode: "bypass",
      default_runner_executor_public_id: runner.publicId,
      steps: [
        { model: { prompt: JSON.stringify({ reply: "done", delay_ms: 120 }), model: { model: "local/script" } } },
        { tool: { name: "grep", timeout_ms: 60_000 } }
      ]
    })
    const id = created.body.run.public_id
    await calls.call("POST", `/${id}/start`)
    let tasks: Array<any> = []
    await waitForRun(server, id, async () => {
      tasks = (await calls.call("GET", `/${id}`)).body.run.tasks
      return tasks[1]?.status === "dispatched"
    })
    const [round, tool] = tasks
    expect(Date.parse(round.completed_at) - Date.parse(round.started_at)).toBeGreaterThanOrEqual(100)
    expect(Date.parse(tool.started_at)).toBeGreaterThanOrEqual(Date.parse(round.completed_at))
    expect(Date.parse(tool.deadline_at) - Date.parse(tool.started_at)).toBe(60_000)
  })

  it("prompt_mechanism default puts the built-in order's slots before the seed round's prompt; raw adds nothing", async () => {
    const document = await request(server.baseUrl, "PUT", "/agent_api/v1/profile/prompt_documents/system_prompt", {
      headers: bearer(world.agent.token),
      body: { prompt_document: { content: "You are {{agent}}.", role: "system" } }
    })
    expect(document.status).toBe(200)
    const sealedOf = async (mechanism: string) => {
      const created = await calls.create({
        approval_mode: "bypass",
        prompt_mechanism: mechanism,
        steps: [{ model: { prompt: "hi", model: { model: "local/echo" } } }]
      })
      const id = created.body.run.public_id
      expect(created.body.run.prompt_mechanism).toBe(mechanism)
      await calls.call("POST", `/${id}/start`)
      await waitForActorState(server, "run", id, "completed")
      return (await calls.call("GET", `/${id}/tasks/s1-model-1/request`)).body.request
    }
    const byDefault = await sealedOf("default")
    expect(byDefault.request_options.instructions).toBe("You are Agent run-agent.")
    expect(byDefault.entries).toEqual([{ role: "user", parts: [{ type: "text", text: "hi" }] }])
    const raw = await sealedOf("raw")
    expect(raw.request_options.instructions).toBeUndefined()
  })

  it("a model's tool calls expand into tool tasks the runner serves, then a continuation answers", async () => {
    const directive = JSON.stringify({ tool_calls: [{ name: "grep", input: { pattern: "y" } }] })
    const created = await calls.create({
      approval_mode: "bypass",
      default_runner_executor_public_id: runner.publicId,
      steps: [{ model: { prompt: directive, model: { model: "local/script" }, tools: ["grep"] } }]
    })
    const id = created.body.run.public_id
    await calls.call("POST", `/${id}/start`)
    const inbox = inboxCalls(server, runner.token)
    let row: any
    await waitForRun(server, id, async () => {
      row = (await inbox.list()).body.tasks.find((each: any) => each.run_public_id === id)
      return row !== undefined
    })
    expect(row).toMatchObject({ task_key: "s1-model-1-t0", tool_name: "grep", tool_input: { pattern: "y" } })
    const claimed = await inbox.claim(id, row.task_key)
    await inbox.commit(id, row.task_key, { claim_token: claimed.body.claim.claim_token, content: "3 matches" })
    await waitForActorState(server, "run", id, "completed")
    const run = (await calls.call("GET", `/${id}`)).body.run
    expect(run.deliverable_task_key).toBe("s1-model-1-c")
    const answer = (await calls.call("GET", `/${id}/tasks/s1-model-1-c`)).body.task
    expect(answer.output).toBe("echo: 3 matches")
  })
})
