// Runs end to end through the real server: create (compiled, idempotent), start, the inbox rows a
// dispatched tool task makes, claim and commit by the runner, the run's completion, the trace and
// the projections, and the run verbs' refusals.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { waitForActorState } from "../../support/actors.ts"
import { bearer, request } from "../../support/http.ts"
import { inboxCalls, memberCalls, readOnlyTool, runWorld, waitForRun } from "../../support/runs.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
let world: Awaited<ReturnType<typeof runWorld>>
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

  it("a graceful stop of a paused run restarts its frozen clocks, shifted by the pause: the dispatched row times out and the run ends canceled", async () => {
    const id = (await calls.create(toolRun([{ tool: { name: "grep", timeout_ms: 300 } }]))).body.run.public_id
    const started = (await calls.call("POST", `/${id}/start`)).body.run
    const deadline = Date.parse(started.tasks[0].deadline_at)
    const paused = (await calls.call("POST", `/${id}/pause`)).body.run
    const stopping = (await calls.call("POST", `/${id}/stop`, { force: false })).body.run
    expect(stopping).toMatchObject({ status: "canceling", paused_at: null })
    const shifted = Date.parse(stopping.tasks[0].deadline_at)
    expect(shifted).toBeGreaterThan(deadline)
    expect(shifted - deadline).toBeLessThanOrEqual(Date.now() - Date.parse(paused.paused_at))
    await waitForActorState(server, "run", id, "canceled")
    const task = (await calls.call("GET", `/${id}/tasks/s1-tool-1`)).body.task
    expect(task).toMatchObject({ status: "timed_out", error: { key: "tool_timeout" } })
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

  it("a run stopped while it needed attention carries none: no attention, not listed under attention=any, no attention_required", async () => {
    const held = (await calls.create({ approval_mode: "bypass", steps: [{ ask: { prompt: "Go?" } }] })).body.run
      .public_id
    await calls.call("POST", `/${held}/start`)
    await waitForActorState(server, "run", held, "needs_attention")
    const feedTypes = async () =>
      ((await calls.call("GET", `/${held}/events?limit=200`)).body.events as Array<any>).map((item) => item.type)
    const before = (await feedTypes()).filter((type) => type === "attention_required").length
    expect(before).toBe(1)
    expect((await calls.call("POST", `/${held}/stop`, { force: true })).status).toBe(200)
    await waitForActorState(server, "run", held, "canceled")
    expect((await calls.call("GET", `/${held}`)).body.run).toMatchObject({ status: "canceled", attention: null })
    const listed = (await calls.call("GET", "?attention=any")).body.runs as Array<any>
    expect(listed.map((run) => run.public_id)).not.toContain(held)
    expect((await feedTypes()).filter((type) => type === "attention_required")).toHaveLength(before)
  })

  it("the list's limit is 1 to 100 written in decimal digits: 100 passes; 101, 1e2, 0x10, +5 and 5.0 are 400 parameter_invalid", async () => {
    expect((await calls.call("GET", "?limit=100")).status).toBe(200)
    for (const limit of ["101", "1e2", "0x10", "+5", "5.0"]) {
      const refused = await calls.call("GET", `?limit=${encodeURIComponent(limit)}`)
      expect([refused.status, refused.body.error.code], limit).toEqual([400, "parameter_invalid"])
    }
  })

  it("an Idempotency-Key of 36 bytes is taken; 37 bytes is 400 parameter_invalid", async () => {
    const body = toolRun([{ tool: { name: "grep" } }])
    expect((await calls.create(body, "k".repeat(36))).status).toBe(201)
    const long = await calls.create(body, "l".repeat(37))
    expect([long.status, long.body.error.code]).toEqual([400, "parameter_invalid"])
  })

  it("a tool step's input is at most 64 KiB of canonical JSON: 65,536 bytes pass, 65,537 are tool_input_too_large", async () => {
    // {"blob":"…"} is 11 bytes around the text.
    const step = (bytes: number) => ({ tool: { name: "grep", input: { blob: "x".repeat(bytes - 11) } } })
    expect(JSON.stringify(step(65_536).tool.input)).toHaveLength(65_536)
    expect((await calls.create(toolRun([step(65_536)]))).status).toBe(201)
    const over = await calls.create(toolRun([step(65_537)]))
    expect([over.status, over.body.error.code]).toEqual([422, "invalid_steps"])
    expect(JSON.stringify(over.body.error)).toContain("tool_input_too_large")
  })

  it("the step tree is at most 1,000,000 bytes of canonical JSON: exactly that passes, one more is steps_payload_too_large", async () => {
    // Sixteen tool steps of 62,400 characters each come to 999,121 bytes; the last takes the rest.
    const steps = (bytes: number) => {
      const tree = Array.from({ length: 16 }, () => ({ tool: { name: "grep", input: { blob: "x".repeat(62_400) } } }))
      const last = tree[15]!.tool.input
      last.blob += "x".repeat(bytes - JSON.stringify(tree).length)
      return tree
    }
    expect(JSON.stringify(steps(1_000_000))).toHaveLength(1_000_000)
    expect((await calls.create(toolRun(steps(1_000_000)))).status).toBe(201)
    const over = await calls.create(toolRun(steps(1_000_001)))
    expect([over.status, over.body.error.code]).toEqual([422, "steps_payload_too_large"])
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

describe("Create shell refusals through the server (runs supplement, Shell and check order)", () => {
  const seed = { model: { prompt: "hello", model: { model: "local/echo" } } }
  const code = (answer: { status: number; body: any }) => [answer.status, answer.body?.error?.code]

  /** The owner (a human) creating runs in a workspace of its own. */
  const ownerRuns = async () => {
    const made = await request(server.baseUrl, "POST", "/agent_api/v1/workspaces", {
      headers: { ...bearer(world.ownerToken), "idempotency-key": `owner-ws-${Date.now()}` },
      body: { workspace: { name: "owner runs" } }
    })
    expect(made.status, JSON.stringify(made.body)).toBe(201)
    let keys = 0
    return (run: unknown) =>
      request(server.baseUrl, "POST", `/agent_api/v1/workspaces/${made.body.workspace.public_id}/runs`, {
        headers: { ...bearer(world.ownerToken), "idempotency-key": `owner-run-${++keys}` },
        body: { run }
      })
  }
  const publicIdOf = async (token: string) =>
    (await request(server.baseUrl, "GET", "/agent_api/v1/profile", { headers: bearer(token) })).body.member
      .public_id as string

  it("422 graph_authoring_not_available, invalid_prompt_mechanism, prompt_template_missing, steps_payload_too_large", async () => {
    expect(code(await calls.create({ approval_mode: "bypass", steps: [seed], nodes: [] }))).toEqual([
      422,
      "graph_authoring_not_available"
    ])
    expect(code(await calls.create({ approval_mode: "bypass", prompt_mechanism: "fancy", steps: [seed] }))).toEqual([
      422,
      "invalid_prompt_mechanism"
    ])
    expect(code(await calls.create({ approval_mode: "bypass", prompt_mechanism: "assembly", steps: [seed] }))).toEqual([
      422,
      "prompt_template_missing"
    ])
    const big = { model: { prompt: "x".repeat(1_000_001), model: { model: "local/echo" } } }
    expect(code(await calls.create({ approval_mode: "bypass", steps: [big] }))).toEqual([
      422,
      "steps_payload_too_large"
    ])
  })

  it("invalid_steps entries: seed_not_a_model_step, instructions_raw_only, tool_input_too_large at their paths", async () => {
    const entries = async (run: unknown) => {
      const answer = await calls.create(run)
      expect(answer.status, JSON.stringify(answer.body)).toBe(422)
      expect(answer.body.error.code).toBe("invalid_steps")
      return answer.body.error.steps
    }
    expect(await entries({ ...toolRun([{ tool: { name: "grep" } }]), prompt_mechanism: "default" })).toContainEqual({
      code: "seed_not_a_model_step",
      path: "steps[0]"
    })
    const instructed = { model: { ...seed.model, instructions: "be brief" } }
    expect(await entries({ approval_mode: "bypass", prompt_mechanism: "default", steps: [instructed] })).toContainEqual(
      {
        code: "instructions_raw_only",
        path: "steps[0].model.instructions"
      }
    )
    const input = { blob: "y".repeat(64 * 1024 + 1) }
    expect(await entries(toolRun([{ tool: { name: "grep", input } }]))).toContainEqual({
      code: "tool_input_too_large",
      path: "steps[0].tool.input"
    })
  })

  it("422 billing_subject_not_owned: a subject another user's run gave first; its first user and fresh subjects pass", async () => {
    const asOwner = await ownerRuns()
    expect((await asOwner({ approval_mode: "bypass", billing_subject: "team-blue", steps: [seed] })).status).toBe(201)
    expect(code(await calls.create({ approval_mode: "bypass", billing_subject: "team-blue", steps: [seed] }))).toEqual([
      422,
      "billing_subject_not_owned"
    ])
    expect((await asOwner({ approval_mode: "bypass", billing_subject: "team-blue", steps: [seed] })).status).toBe(201)
    for (let again = 0; again < 2; again++) {
      const own = await calls.create({ approval_mode: "bypass", billing_subject: "agent-green", steps: [seed] })
      expect([own.status, own.body.run?.billing_subject]).toEqual([201, "agent-green"])
    }
    expect(code(await asOwner({ approval_mode: "bypass", billing_subject: "agent-green", steps: [seed] }))).toEqual([
      422,
      "billing_subject_not_owned"
    ])
  })

  it("403 not_authorized: a speaker the creator does not control; an agent names itself or its steward", async () => {
    const steward = await publicIdOf(world.ownerToken)
    const agent = world.agent.publicId
    const named = await calls.create({ approval_mode: "bypass", speaker_public_id: steward, steps: [seed] })
    expect([named.status, named.body.run?.requester_speaker_public_id]).toEqual([201, steward])
    const itself = await calls.create({ approval_mode: "bypass", speaker_public_id: agent, steps: [seed] })
    expect([itself.status, itself.body.run?.requester_speaker_public_id]).toEqual([201, agent])
    const nobody = "0190f3a2-0000-7000-8000-00000000beef"
    expect(code(await calls.create({ approval_mode: "bypass", speaker_public_id: nobody, steps: [seed] }))).toEqual([
      403,
      "not_authorized"
    ])
    const asOwner = await ownerRuns()
    expect(code(await asOwner({ approval_mode: "bypass", speaker_public_id: agent, steps: [seed] }))).toEqual([
      403,
      "not_authorized"
    ])
    const plain = await asOwner({ approval_mode: "bypass", speaker_public_id: steward, steps: [seed] })
    expect([plain.status, plain.body.run?.requester_speaker_public_id]).toEqual([201, steward])
  })
})
