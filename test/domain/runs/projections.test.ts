// The read projections of a run over hand-built rows (runs supplement "Run resource and
// projections"): a tool chain, a race, a model round with its expansion and a delegated task, and
// a run needing attention; each projection is also encoded with the contract's schema.
import {
  RunGraph,
  RunList,
  RunPhases,
  RunResponse,
  RunTaskDetailResponse,
  RunTranscript
} from "@troupe/contracts/member/RunShapes"
import { graphOf } from "@troupe/domain/runs/Graph"
import { phasesOf } from "@troupe/domain/runs/Phases"
import type { TaskFacts, TaskFactsByKey } from "@troupe/domain/runs/Projections"
import { listRowOf, taskReadOf, traceOf } from "@troupe/domain/runs/Trace"
import { transcriptOf } from "@troupe/domain/runs/Transcript"
import type { TaskSpec } from "@troupe/machines/run/context"
import type { RunRow, TaskRow } from "@troupe/storage/repositories/Runs"
import { Result, Schema } from "effect"
import { describe, expect, it } from "vitest"

const at = (minute: number) => new Date(Date.UTC(2025, 0, 1, 0, minute))
const runner = "0190f3a2-0000-7000-8000-00000000000a"
const application = "0190f3a2-0000-7000-8000-00000000000b"

const runRow = (patch: Partial<RunRow> = {}): RunRow => ({
  id: 1n,
  public_id: "0190f3a2-0000-7000-8000-000000000001",
  workspace_id: 1n,
  workspace_public_id: "0190f3a2-0000-7000-8000-000000000002",
  conversation_id: null,
  conversation_public_id: null,
  turn_public_id: null,
  creator_id: 1n,
  creator_public_id: "0190f3a2-0000-7000-8000-000000000003",
  status: "running",
  attention: null,
  approval_mode: "bypass",
  approval_rules: [],
  prompt_mechanism: "raw",
  billing_subject: null,
  requester_speaker_id: null,
  requester_speaker_public_id: null,
  default_runner_id: 9n,
  default_runner_public_id: runner,
  default_runner_display_name: "Build box",
  model_selection: null,
  fallback_models: [],
  revision: 1,
  deliverable_task_key: "",
  created_at: at(0),
  updated_at: at(30),
  started_at: at(1),
  paused_at: null,
  completed_at: null,
  tombstoned_at: null,
  ...patch
})

const taskRow = (key: string, position: number, patch: Partial<TaskRow> = {}): TaskRow => ({
  run_id: 1n,
  key,
  position,
  kind: "tool_task",
  await_kind: null,
  status: "waiting",
  generation: 1,
  origin: "author",
  visibility: "visible",
  mainline: false,
  after: [],
  on_failure: "propagate",
  failure_resolution: null,
  error: null,
  tool_name: null,
  tool_alias: null,
  tool_call_id: null,
  target_executor_id: null,
  target_executor_public_id: null,
  target_display_name: null,
  pool: false,
  inbox_kind: null,
  inbox_executor_id: null,
  inbox_executor_public_id: null,
  claimed_by_executor_id: null,
  claimed_by_public_id: null,
  claim_token_digest: null,
  claimed: false,
  timeout_ms: null,
  deadline_at: null,
  dispatched_at: null,
  approval: null,
  spec: {},
  result: null,
  inference_request_id: null,
  inference_request_public_id: null,
  usage: null,
  created_at: at(0),
  started_at: null,
  completed_at: null,
  updated_at: at(0),
  ...patch
})

/** A tool step run by the runner: claimed, its commit recorded. */
const toolRow = (key: string, position: number, patch: Partial<TaskRow> = {}): TaskRow =>
  taskRow(key, position, {
    tool_name: "build",
    tool_call_id: key,
    target_executor_id: 9n,
    target_executor_public_id: runner,
    target_display_name: "Build box",
    timeout_ms: 120_000,
    spec: { tool_input: { target: key }, timeout_ms: 120_000 },
    ...patch
  })

const specOf = (key: string, patch: Partial<TaskSpec> = {}): TaskSpec => ({
  key,
  kind: "tool_task",
  awaitKind: null,
  origin: "author",
  visibility: "visible",
  mainline: false,
  after: [],
  structural: [],
  results: [],
  onFailure: "propagate",
  revision: 1,
  step: 0,
  expansionParent: null,
  tool: null,
  model: null,
  ask: null,
  wait: null,
  join: null,
  ...patch
})

/** The snapshot's specs by key (a TaskSpec is what the integrator passes). */
const factsOf = (specs: ReadonlyArray<TaskFacts & { readonly key: string }>): TaskFactsByKey =>
  new Map(specs.map((spec) => [spec.key, spec]))

const model = (continues: string | null, ref = "local/echo") => ({ model: ref, retry: 0, tools: [], continues })

const usage = (input: number, output: number, cost: string, unit: string | null = null) => ({
  usage_record_public_id: "0190f3a2-0000-7000-8000-0000000000ff",
  input_tokens: input,
  cache_read_tokens: input / 2,
  uncached_input_tokens: input / 2,
  cache_creation_tokens: 0,
  cache_hit_rate: 0.5,
  output_tokens: output,
  reasoning_tokens: 0,
  total_tokens: input + output,
  cost_amount: cost,
  cost_unit: unit,
  cost_complete: true
})

const encodeTrace = Schema.encodeSync(RunResponse)
const encodeDetail = Schema.encodeSync(RunTaskDetailResponse)
const encodeGraph = Schema.encodeSync(RunGraph)
const encodePhases = Schema.encodeSync(RunPhases)
const encodeTranscript = Schema.encodeSync(RunTranscript)
const encodeList = Schema.encodeSync(RunList)

describe("a tool chain a → b → c → d", () => {
  const run = runRow({ deliverable_task_key: "d" })
  const tasks = [
    toolRow("a", 0, {
      status: "completed",
      claimed_by_public_id: runner,
      started_at: at(2),
      completed_at: at(3),
      result: { content: "built a", writes: true, metadata: { checkpoint: "ck-a" } }
    }),
    toolRow("b", 1, {
      status: "completed",
      after: ["a"],
      claimed_by_public_id: runner,
      started_at: at(4),
      completed_at: at(5),
      result: {
        content: [{ type: "text", text: "built b" }],
        structured_content: { ok: true },
        title: "Build b",
        writes: true,
        metadata: { checkpoint: "ck-b", lines: 3 },
        result_type: "tool_result"
      }
    }),
    toolRow("c", 2, {
      status: "dispatched",
      after: ["b"],
      inbox_kind: "tool_call",
      inbox_executor_public_id: runner,
      dispatched_at: at(6),
      deadline_at: at(8),
      started_at: at(6)
    }),
    toolRow("d", 3, { after: ["c"] })
  ]
  const specs = factsOf([
    specOf("a"),
    specOf("b", { after: ["a"], structural: ["a"], step: 1 }),
    specOf("c", { after: ["b"], structural: ["b"], step: 2 }),
    specOf("d", { after: ["c"], structural: ["c"], step: 3 })
  ])

  it("traces the run: rows in order, progress, runner effects, turn, queue, default runner", () => {
    const trace = traceOf(run, tasks.toReversed(), specs)
    expect(trace.tasks.map((task) => task.key)).toEqual(["a", "b", "c", "d"])
    expect(trace.task_progress).toEqual({
      waiting: 1,
      needs_approval: 0,
      running: 0,
      dispatched: 1,
      awaiting_input: 0,
      completed: 2,
      failed: 0,
      canceled: 0,
      timed_out: 0,
      uncertain: 0,
      skipped: 0,
      total: 4
    })
    const [a, , c, d] = trace.tasks
    expect(a).toMatchObject({ after: [], result: { resolved: true }, claimed_by: { executor_public_id: runner } })
    expect(a).not.toHaveProperty("waiting_on")
    expect(a).not.toHaveProperty("mainline")
    expect(c).toMatchObject({
      tool_name: "build",
      target: { executor_public_id: runner, display_name: "Build box" },
      addressed_to: { role: "runner", executor_public_id: runner },
      deadline_at: at(8)
    })
    expect(c).not.toHaveProperty("result")
    expect(d).toMatchObject({ waiting_on: ["c"], lifetime: "conversation", wake: "auto" })
    expect(trace.runner_effects).toEqual({
      status: "touched",
      runners: [{ runner_executor_public_id: runner, run_public_id: run.public_id, task_key: "b", checkpoint: "ck-b" }]
    })
    expect(trace.turn).toEqual({ status: "running" })
    expect(trace.input_queue).toEqual({ limit: 16, held: 0 })
    expect(trace.default_runner).toEqual({ executor_public_id: runner, display_name: "Build box" })
    expect(trace.attention).toBeNull()
    const encoded = encodeTrace({ run: trace })
    expect(encoded.run.updated_at).toBe(at(30).toISOString())
    expect(encoded.run.tasks[2]?.deadline_at).toBe(at(8).toISOString())
  })

  it("reads a task: its inputs and its committed result", () => {
    const read = taskReadOf(tasks[1]!, tasks, specs)
    expect(read).toMatchObject({
      key: "b",
      tool_input: { target: "b" },
      timeout_ms: 120_000,
      output: "built b",
      output_preview: "built b",
      content: [{ type: "text", text: "built b" }],
      structured_content: { ok: true },
      title: "Build b",
      metadata: { checkpoint: "ck-b", lines: 3 },
      result_type: "tool_result"
    })
    expect(read).not.toHaveProperty("tool_definitions")
    expect(taskReadOf(tasks[0]!, tasks, specs).content).toEqual([{ type: "text", text: "built a" }])
    const waiting = taskReadOf(tasks[3]!, tasks, specs)
    expect(waiting).not.toHaveProperty("output")
    expect(waiting).not.toHaveProperty("content")
    expect(encodeDetail({ task: read }).task.created_at).toBe(at(0).toISOString())
  })

  it("previews the first 200 characters of a long output", () => {
    const long = taskRow("long", 0, { status: "completed", result: { output: "é".repeat(250) } })
    const read = taskReadOf(long, [long], new Map())
    expect(read.output_preview).toBe("é".repeat(200))
    expect(read.output).toHaveLength(250)
  })

  it("draws the graph: structural edges, the deliverable, status classes", () => {
    const graph = graphOf(run, tasks, specs)
    expect(graph.nodes.map((node) => [node.key, node.deliverable])).toEqual([
      ["a", false],
      ["b", false],
      ["c", false],
      ["d", true]
    ])
    expect(graph.edges).toEqual([
      { from: "a", to: "b", structural: true },
      { from: "b", to: "c", structural: true },
      { from: "c", to: "d", structural: true }
    ])
    expect(graph.mermaid.split("\n")).toEqual([
      "flowchart TD",
      '  n0["a"]:::completed',
      '  n1["b"]:::completed',
      '  n2["c"]:::dispatched',
      '  n3[["d"]]:::waiting',
      "  n0 --> n1",
      "  n1 --> n2",
      "  n2 --> n3",
      "  classDef waiting fill:#f2f4f7,stroke:#98a2b3",
      "  classDef dispatched fill:#d1e9ff,stroke:#1570ef,stroke-dasharray:4 2",
      "  classDef completed fill:#d1fadf,stroke:#039855"
    ])
    encodeGraph(graph)
  })

  it("phases one step each; current is the first not completed", () => {
    const phases = phasesOf(tasks, specs)
    expect(phases.phases.map(({ label, status, done, total }) => [label, status, done, total])).toEqual([
      ["a", "completed", 1, 1],
      ["b", "completed", 1, 1],
      ["c", "running", 0, 1],
      ["d", "waiting", 0, 1]
    ])
    expect(phases.current).toBe("c")
    expect(phases.background).toEqual([])
    expect(phases.spend).toEqual({
      input_tokens: 0,
      output_tokens: 0,
      cache_read_tokens: 0,
      cost_amount: "0",
      cost_unit: null,
      by_model: {}
    })
    encodePhases(phases)
  })

  it("a run with no write-kind commit is untouched", () => {
    const reads = tasks.map((task) => ({ ...task, result: task.result === null ? null : { output: "x" } }))
    expect(traceOf(run, reads, specs).runner_effects).toEqual({ status: "untouched", runners: [] })
  })
})

describe("a race: parallel [m1, m2] until any, losers cancel, then f", () => {
  const run = runRow({ status: "running", deliverable_task_key: "f", default_runner_public_id: null })
  const tasks = [
    toolRow("m1", 0, { status: "completed", completed_at: at(3), result: { output: "one" } }),
    toolRow("m2", 1, {
      status: "canceled",
      failure_resolution: "canceled",
      error: { key: "race_lost" },
      completed_at: at(3)
    }),
    taskRow("race", 2, {
      kind: "join_task",
      origin: "kernel",
      visibility: "hidden",
      status: "completed",
      after: ["m1", "m2"]
    }),
    toolRow("f", 3, { status: "dispatched", after: ["race", "m1"], pool: true, inbox_kind: "tool_call" })
  ]
  const specs = factsOf([
    specOf("m1"),
    specOf("m2"),
    specOf("race", {
      kind: "join_task",
      origin: "kernel",
      visibility: "hidden",
      after: ["m1", "m2"],
      structural: ["m1", "m2"],
      join: { members: ["m1", "m2"], until: 1, losers: "cancel" }
    }),
    specOf("f", { after: ["race", "m1"], structural: ["race"], step: 1 })
  ])

  it("the join is one node with its rule; a named wait is a dotted edge", () => {
    const graph = graphOf(run, tasks, specs)
    expect(graph.nodes.find((node) => node.key === "race")).toMatchObject({
      kind: "join_task",
      visibility: "hidden",
      join: { until: "any", losers: "cancel" },
      input_from: [],
      result_from: []
    })
    expect(graph.nodes.find((node) => node.key === "race")).not.toHaveProperty("mainline")
    expect(graph.edges).toEqual([
      { from: "m1", to: "race", structural: true },
      { from: "m2", to: "race", structural: true },
      { from: "race", to: "f", structural: true },
      { from: "m1", to: "f", structural: false }
    ])
    expect(graph.mermaid).toContain("  n0 -.-> n3")
    expect(graph.mermaid).toContain('  n1["m2"]:::canceled')
    encodeGraph(graph)
  })

  it("a quorum reads as its k", () => {
    const quorum = new Map(specs)
    quorum.set(
      "race",
      specOf("race", { kind: "join_task", join: { members: ["m1", "m2"], until: 2, losers: "run_out" } })
    )
    expect(graphOf(run, tasks, quorum).nodes[2]?.join).toEqual({ until: 2, losers: "run_out" })
  })

  it("the fan is one phase labelled by its members, won even though a loser was canceled", () => {
    const phases = phasesOf(tasks, specs)
    expect(phases.phases).toEqual([
      { label: "m1 · m2", keys: ["m1", "m2", "race"], done: 3, total: 3, status: "completed" },
      { label: "f", keys: ["f"], done: 0, total: 1, status: "running" }
    ])
    expect(phases.current).toBe("f")
    const lostToFailure = tasks.map((task) =>
      task.key === "m2" ? { ...task, status: "failed" as const, failure_resolution: null } : task
    )
    expect(phasesOf(lostToFailure, specs).phases[0]?.status).toBe("completed")
  })

  it("trace rows: a canceled loser is resolved; a pool row is addressed to its role", () => {
    const trace = traceOf(run, tasks, specs)
    expect(trace.tasks[1]).toMatchObject({ failure_resolution: "canceled", result: { resolved: true } })
    expect(trace.tasks[3]?.addressed_to).toEqual({ role: "tool_provider" })
    expect(trace.default_runner).toBeNull()
    encodeTrace({ run: trace })
  })
})

describe("a model round r with an expansion, a delegated task, then r2", () => {
  const run = runRow({ status: "running", deliverable_task_key: "r2", revision: 2 })
  const roundBase = { kind: "model_task", mainline: true, on_failure: "halt" } as const
  const tasks = [
    taskRow("r", 0, {
      ...roundBase,
      status: "completed",
      started_at: at(1),
      completed_at: at(2),
      spec: { prompt: "look around", model: { model: "local/script" }, instructions: "be brief" },
      result: { output: "", content: [{ type: "text", text: "" }], tool_calls: [{ name: "g" }] },
      usage: usage(100, 10, "0.5")
    }),
    taskRow("r-t0", 2, {
      origin: "model",
      visibility: "collapsed",
      status: "completed",
      on_failure: "absorb",
      tool_name: "g",
      tool_alias: "grep",
      tool_call_id: "call_0",
      started_at: at(2),
      completed_at: at(3),
      result: { content: "found it", is_error: false, title: "grep", metadata: { hits: 1 } }
    }),
    taskRow("r-t1", 3, {
      origin: "model",
      visibility: "collapsed",
      status: "completed",
      on_failure: "absorb",
      tool_name: "delegate_task",
      tool_call_id: "call_1",
      completed_at: at(3),
      result: { output: "r-t1-model-1" }
    }),
    taskRow("r-c", 4, {
      ...roundBase,
      origin: "kernel",
      status: "completed",
      after: ["r-t0", "r-t1"],
      started_at: at(3),
      completed_at: at(4),
      result: { output: "done" },
      usage: usage(200, 20, "1.25")
    }),
    taskRow("r-t1-model-1", 5, {
      kind: "model_task",
      origin: "kernel",
      visibility: "collapsed",
      status: "running",
      on_failure: "absorb",
      started_at: at(3),
      usage: { ...usage(50, 5, "2", "EUR"), model: "local/echo" }
    }),
    taskRow("r2", 6, {
      ...roundBase,
      status: "running",
      after: ["r-c"],
      started_at: at(5)
    })
  ]
  const specs = factsOf([
    specOf("r", { kind: "model_task", mainline: true, onFailure: "halt", model: model(null, "local/script") }),
    specOf("r-t0", {
      origin: "model",
      visibility: "collapsed",
      onFailure: "absorb",
      after: ["r"],
      structural: ["r"],
      expansionParent: "r"
    }),
    specOf("r-t1", {
      origin: "model",
      visibility: "collapsed",
      onFailure: "absorb",
      after: ["r"],
      structural: ["r"],
      expansionParent: "r"
    }),
    specOf("r-c", {
      kind: "model_task",
      origin: "kernel",
      mainline: true,
      onFailure: "halt",
      after: ["r-t0", "r-t1"],
      structural: ["r-t0", "r-t1"],
      expansionParent: "r",
      model: model("r", "local/script")
    }),
    {
      ...specOf("r-t1-model-1", { kind: "model_task", origin: "kernel", visibility: "collapsed", model: model(null) }),
      lifetime: "turn" as const,
      wake: "passive" as const,
      resultDeliveredAt: at(6).getTime()
    },
    specOf("r2", {
      kind: "model_task",
      mainline: true,
      onFailure: "halt",
      revision: 2,
      after: ["r-c"],
      structural: ["r-c"],
      model: model("r-c")
    })
  ])

  it("the graph: expansion parents, what continuations read, the snapshot's lifetime and wake", () => {
    const graph = graphOf(run, tasks, specs)
    const node = (key: string) => graph.nodes.find((each) => each.key === key)
    expect(graph.nodes.map((each) => each.key)).toEqual(["r", "r-t0", "r-t1", "r-c", "r-t1-model-1", "r2"])
    expect(node("r")).toMatchObject({ mainline: true, input_from: [] })
    expect(node("r")).not.toHaveProperty("expansion_parent")
    expect(node("r-t0")).toMatchObject({ expansion_parent: "r", visibility: "collapsed" })
    expect(node("r-t0")).not.toHaveProperty("mainline")
    expect(node("r-c")).toMatchObject({ expansion_parent: "r", input_from: ["r", "r-t0", "r-t1"], mainline: true })
    expect(node("r2")).toMatchObject({ input_from: ["r-c"], deliverable: true })
    expect(node("r-t1-model-1")).toMatchObject({ lifetime: "turn", wake: "passive", mainline: false })
    expect(graph.mermaid).toContain('  n5[["r2"]]:::running')
    expect(graph.mermaid).toContain("  n3 --> n5")
    encodeGraph(graph)
  })

  it("phases: the round's step holds what it grew; the delegated task runs in the background; spend", () => {
    const phases = phasesOf(tasks, specs)
    expect(phases.phases).toEqual([
      { label: "r", keys: ["r", "r-t0", "r-t1", "r-c", "r-t1-model-1"], done: 4, total: 5, status: "running" },
      { label: "r2", keys: ["r2"], done: 0, total: 1, status: "running" }
    ])
    expect(phases.current).toBe("r")
    expect(phases.background).toEqual([{ key: "r-t1-model-1", status: "running", result_delivered_at: at(6) }])
    expect(phases.spend).toEqual({
      input_tokens: 350,
      output_tokens: 35,
      cache_read_tokens: 175,
      cache_hit_rate: 0.5,
      cost_amount: null,
      cost_unit: null,
      by_model: {
        "local/echo": { input_tokens: 50, output_tokens: 5, cache_read_tokens: 25, cost_amount: "2", cost_unit: "EUR" },
        "local/script": {
          input_tokens: 300,
          output_tokens: 30,
          cache_read_tokens: 150,
          cost_amount: "1.75",
          cost_unit: null
        }
      }
    })
    encodePhases(phases)
  })

  it("the transcript pages mainline rounds newest first, in reading order, with their calls", () => {
    const first = Result.getOrThrow(transcriptOf(tasks, specs, { limit: "2" }))
    expect(first.rounds.map((round) => round.task_key)).toEqual(["r-c", "r2"])
    expect(first.pagination.has_older).toBe(true)
    expect(first.rounds[0]).toMatchObject({ text_preview: "done", text_bytes: 4, calls: { count: 0, items: [] } })
    expect(first.rounds[1]).not.toHaveProperty("text_preview")
    const older = Result.getOrThrow(transcriptOf(tasks, specs, { before: first.pagination.next_before!, limit: "2" }))
    expect(older.pagination).toEqual({ next_before: null, has_older: false })
    const [round] = older.rounds
    expect(round).toMatchObject({
      task_key: "r",
      mainline: true,
      status: "completed",
      visibility: "visible",
      text_preview: "",
      text_bytes: 0,
      usage: { input_tokens: 100 },
      started_at: at(1),
      completed_at: at(2),
      branches: ["r-t1-model-1"]
    })
    expect(round?.calls.count).toBe(2)
    expect(round?.calls.items[0]).toEqual({
      task_key: "r-t0",
      tool_call_id: "call_0",
      name: "g",
      tool: "grep",
      status: "completed",
      is_error: false,
      title: "grep",
      metadata: { hits: 1 },
      output_preview: "found it",
      output_bytes: 8,
      started_at: at(2),
      completed_at: at(3)
    })
    encodeTranscript(first)
    encodeTranscript(older)
    const all = Result.getOrThrow(transcriptOf(tasks, specs, {}))
    expect(all.rounds.map((each) => each.task_key)).toEqual(["r", "r-c", "r2"])
    expect(all.pagination).toEqual({ next_before: null, has_older: false })
  })

  it("a round lists its first 24 calls and counts them all", () => {
    const calls = Array.from({ length: 30 }, (_, i) =>
      taskRow(`r-t${i}`, 10 + i, { origin: "model", tool_name: "g", status: "waiting" })
    )
    const callSpecs = new Map(specs)
    for (const call of calls) callSpecs.set(call.key, specOf(call.key, { expansionParent: "r" }))
    const page = Result.getOrThrow(transcriptOf([tasks[0]!, ...calls], callSpecs, {}))
    expect(page.rounds[0]?.calls.count).toBe(30)
    expect(page.rounds[0]?.calls.items).toHaveLength(24)
  })

  it("a bad cursor or limit is parameter_invalid", () => {
    for (const page of [
      { before: "not-a-cursor" },
      { before: Buffer.from(JSON.stringify(["transcript", "r-t0"])).toString("base64url") },
      { limit: "0" },
      { limit: "101" },
      { limit: "ten" }
    ]) {
      const refused = transcriptOf(tasks, specs, page)
      expect(Result.isFailure(refused) && refused.failure).toMatchObject({
        _tag: "BadParameter",
        code: "parameter_invalid"
      })
    }
  })

  it("a model task's read shows its prompt, model, usage, the definitions offered and the sealed size", () => {
    const definitions = [{ type: "function", function: { name: "grep", description: "find", parameters: {} } }]
    const read = taskReadOf(tasks[0]!, tasks, specs, { toolDefinitions: definitions, requestBytes: 512 })
    expect(read).toMatchObject({
      mainline: true,
      prompt: "look around",
      instructions: "be brief",
      model: { model: "local/script" },
      output: "",
      content: [{ type: "text", text: "" }],
      usage: { input_tokens: 100 },
      tool_definitions: definitions,
      request_bytes: 512
    })
    expect(taskReadOf(tasks[5]!, tasks, specs).tool_definitions).toEqual([])
    expect(taskReadOf(tasks[5]!, tasks, specs)).not.toHaveProperty("request_bytes")
    encodeDetail({ task: read })
  })
})

describe("a run that needs attention", () => {
  const attention = { reason: "halt_failure", blocked_task_keys: ["m", "p", "q"] }
  const run = runRow({ status: "needs_attention", attention, deliverable_task_key: "y", approval_mode: "rules" })
  const tasks = [
    taskRow("m", 0, {
      kind: "model_task",
      mainline: true,
      on_failure: "halt",
      status: "failed",
      error: { key: "provider_error", detail: "upstream said no" },
      completed_at: at(4)
    }),
    taskRow("y", 1, { kind: "model_task", mainline: true, on_failure: "halt", after: ["m"] }),
    toolRow("p", 2, {
      status: "needs_approval",
      after: ["w"],
      inbox_kind: "approval",
      inbox_executor_public_id: application,
      dispatched_at: at(2),
      deadline_at: at(100)
    }),
    taskRow("q", 3, {
      kind: "await_task",
      await_kind: "ask",
      status: "dispatched",
      inbox_kind: "ask",
      inbox_executor_public_id: application,
      dispatched_at: at(2),
      spec: { prompt: "which one?", options: ["left", "right"], multi: false, timeout_ms: 60_000 },
      timeout_ms: 60_000
    }),
    toolRow("w", 4, {
      status: "completed",
      approval: { origin: "human", decided_by: "0190f3a2-0000-7000-8000-000000000003", decided_at: at(1).getTime() },
      result: { output: "ok" }
    })
  ]
  const specs = factsOf([
    specOf("m", { kind: "model_task", mainline: true, onFailure: "halt", model: model(null) }),
    specOf("y", { kind: "model_task", mainline: true, onFailure: "halt", after: ["m"], structural: ["m"], step: 1 }),
    specOf("p", { after: ["w"], results: [], step: 2 }),
    specOf("q", { kind: "await_task", awaitKind: "ask", step: 3 }),
    specOf("w", { step: 4 })
  ])

  it("traces attention, the failed turn, unresolved failures and addressed rows", () => {
    const trace = traceOf(run, tasks, specs)
    expect(trace.attention).toEqual(attention)
    expect(trace.turn).toEqual({ status: "failed", failure_reason_key: "halt_failure" })
    const [m, y, p, q, w] = trace.tasks
    expect(m).toMatchObject({
      result: { resolved: false },
      error: { key: "provider_error", detail: "upstream said no" },
      mainline: true
    })
    expect(y).toMatchObject({ waiting_on: [], status: "waiting" })
    expect(p).toMatchObject({
      waiting_on: [],
      addressed_to: { role: "agent_application", executor_public_id: application },
      deadline_at: at(100)
    })
    expect(q?.addressed_to).toEqual({ role: "agent_application", executor_public_id: application })
    expect(w?.approval).toEqual({
      origin: "human",
      decided_by: "0190f3a2-0000-7000-8000-000000000003",
      decided_at: at(1)
    })
    expect(encodeTrace({ run: trace }).run.tasks[4]?.approval?.decided_at).toBe(at(1).toISOString())
  })

  it("lists the run with its attention reason", () => {
    const row = listRowOf(run)
    expect(row).toEqual({
      public_id: run.public_id,
      status: "needs_attention",
      conversation_public_id: null,
      attention: { reason: "halt_failure" },
      created_at: at(0)
    })
    expect(listRowOf(runRow()).attention).toBeNull()
    encodeList({ runs: [row], pagination: { next_after: null } })
  })

  it("an ask's read shows its prompt and options", () => {
    expect(taskReadOf(tasks[3]!, tasks, specs)).toMatchObject({
      prompt: "which one?",
      options: ["left", "right"],
      multi: false,
      timeout_ms: 60_000
    })
  })

  it("phases judge each step: failed, waiting, needs_approval, awaiting_human, completed", () => {
    const phases = phasesOf(tasks, specs)
    expect(phases.phases.map(({ label, status }) => [label, status])).toEqual([
      ["m", "failed"],
      ["y", "waiting"],
      ["p", "needs_approval"],
      ["q", "awaiting_human"],
      ["w", "completed"]
    ])
    expect(phases.current).toBe("m")
    const absorbed = tasks.map((task) => (task.key === "m" ? { ...task, on_failure: "absorb" } : task))
    expect(phasesOf(absorbed, specs).phases[0]?.status).toBe("completed")
  })

  it("a hosted run's turn is the one its conversation shows", () => {
    const hosted = runRow({ conversation_public_id: "c-1", turn_public_id: "t-1", status: "running" })
    expect(traceOf(hosted, tasks, specs).turn).toEqual({
      status: "running",
      public_id: "t-1",
      conversation_public_id: "c-1"
    })
    const model = { provider_id: "local", model_ref: "local/echo", reasoning_enabled: false, reasoning_effort: null }
    const hostTurn = { answering_user_public_id: "u-1", model }
    expect(traceOf(hosted, tasks, specs, { hostTurn, held: 3 })).toMatchObject({
      turn: {
        status: "running",
        public_id: "t-1",
        conversation_public_id: "c-1",
        answering_user_public_id: "u-1",
        model
      },
      input_queue: { limit: 16, held: 3 }
    })
  })
})
