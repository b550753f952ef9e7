// The run step compiler (runs supplement "Create and the step compiler", "Append"): the create
// shell in its check order, one case per invalid_steps code at its path, key minting, the wait
// graph (sequence, fans, races; structural and named waits), the deliverable, appends continuing
// from the run's deliverable and mainline, duplicate keys, the receipt mirror and task rows.
import {
  type CompiledSteps,
  type CreateLookups,
  compileCreate,
  compileSteps,
  type Envelope
} from "@troupe/domain/runs/Compiler"
import { InvalidSteps, StepFaultCode } from "@troupe/domain/runs/CompilerRefusals"
import { firstStepIsModel, namedInSteps } from "@troupe/domain/runs/CompilerScan"
import { judgeAppendShell, judgeShell, type RunnerInfo } from "@troupe/domain/runs/StepShell"
import type { CompiledTaskSpec } from "@troupe/machines/run/context"
import { Result } from "effect"
import { describe, expect, it } from "vitest"

const runner: RunnerInfo = {
  publicId: "0190f3a2-0000-7000-8000-000000000001",
  displayName: "Build box",
  eligible: true,
  tools: [
    { name: "build", timeout_ms: 120_000, effect_profile: { kind: "write", idempotency: "none" } },
    { name: "grep", effect_profile: { kind: "read_only", idempotency: "intrinsic" } },
    { name: "wait", effect_profile: { kind: "write", idempotency: "intrinsic" } }
  ]
}
const other: RunnerInfo = { ...runner, publicId: "0190f3a2-0000-7000-8000-000000000002", displayName: "Other" }
const asleep: RunnerInfo = { ...runner, publicId: "0190f3a2-0000-7000-8000-000000000003", eligible: false }
const runners = new Map([runner, other, asleep].map((r) => [r.publicId, r]))

const lookups: CreateLookups = {
  model: (ref) => ref === "local/echo" || ref === "local/script",
  runner: (id) => runners.get(id),
  otherRunTask: (run, key) => run === "earlier-run" && key === "done",
  controlsSpeaker: (id) => id === "me",
  ownsBillingSubject: (subject) => subject !== "theirs",
  hasPromptTemplate: false
}

const envelope = (overrides: Partial<Envelope> = {}): Envelope => ({
  revision: 1,
  existing: [],
  currentDeliverable: null,
  promptMechanism: "raw",
  firstIsSeed: true,
  defaultRunner: runner,
  lookups,
  ...overrides
})

const model = (prompt = "hi", more: Record<string, unknown> = {}) => ({
  model: { prompt, model: { model: "local/echo" }, ...more }
})
const tool = (name = "build", more: Record<string, unknown> = {}) => ({ tool: { name, ...more } })
const ask = (more: Record<string, unknown> = {}) => ({ ask: { prompt: "ok?", ...more } })
const wait = (task: string, more: Record<string, unknown> = {}) => ({ wait: { task, ...more } })

const compiled = (steps: unknown, overrides: Partial<Envelope> = {}): CompiledSteps => {
  const result = compileSteps(steps, envelope(overrides))
  if (Result.isFailure(result)) throw new Error(`expected to compile: ${JSON.stringify(result.failure)}`)
  return result.success
}

const refusalOf = (steps: unknown, overrides: Partial<Envelope> = {}) => {
  const result = compileSteps(steps, envelope(overrides))
  if (Result.isSuccess(result)) throw new Error("expected a refusal")
  return result.failure
}

const faultsOf = (steps: unknown, overrides: Partial<Envelope> = {}) => {
  const refusal = refusalOf(steps, overrides)
  if (!(refusal instanceof InvalidSteps)) throw new Error(`expected invalid_steps: ${JSON.stringify(refusal)}`)
  expect(refusal.code).toBe("invalid_steps")
  return refusal.steps
}

const task = (result: CompiledSteps, key: string): CompiledTaskSpec => {
  const found = result.tasks.find((t) => t.key === key)
  if (found === undefined) throw new Error(`no task ${key} in ${result.tasks.map((t) => t.key).join(", ")}`)
  return found
}

describe("invalid_steps: one entry per fault, at its path in the request's tree", () => {
  const big = { blob: "x".repeat(64 * 1024) }
  const cases: ReadonlyArray<readonly [string, unknown, string, Partial<Envelope>?]> = [
    ["steps_required", [], "steps"],
    ["step_verb_invalid", [{ ...model(), ...tool() }], "steps[0]"],
    ["step_verb_invalid", ["model"], "steps[0]"],
    ["step_verb_invalid", [{ prompt: "no verb" }], "steps[0]"],
    ["unknown_step_option", [tool("build", { colour: "red" })], "steps[0].tool.colour"],
    ["unknown_step_option", [{ ...tool(), key: "outside" }], "steps[0].key"],
    ["unknown_step_option", [model("hi", { retry: 6 })], "steps[0].model.retry"],
    ["edge_authoring_refused", [model("hi", { depends_on: ["x"] })], "steps[0].model.depends_on"],
    ["edge_authoring_refused", [{ ...tool(), kind: "tool_task" }], "steps[0].kind"],
    ["key_invalid", [tool("build", { key: "-lead" })], "steps[0].tool.key"],
    ["key_invalid", [tool("build", { key: "k".repeat(65) })], "steps[0].tool.key"],
    ["invalid_reference", [model("hi", { results: ["nowhere"] })], "steps[0].model.results[0]"],
    ["invalid_reference", [tool("build", { key: "a", after: ["a"] })], "steps[0].tool.after[0]"],
    [
      "invalid_reference",
      [tool("build", { after: ["later"] }), tool("build", { key: "later" })],
      "steps[0].tool.after[0]"
    ],
    [
      "invalid_reference",
      [tool("build", { key: "a" }), tool("build", { after: ["a", "a"] })],
      "steps[1].tool.after[1]"
    ],
    ["invalid_reference", [tool("build", { after: "a" })], "steps[0].tool.after"],
    ["empty_parallel", [{ parallel: [] }, tool()], "steps[0].parallel"],
    ["empty_parallel", [{ parallel: [[], tool()] }, tool()], "steps[0].parallel[0]"],
    ["fan_needs_follower", [tool(), { parallel: [tool(), tool()] }], "steps[1].parallel"],
    ["invalid_until", [{ parallel: [tool(), tool()], until: "most" }, tool()], "steps[0].until"],
    ["invalid_until", [{ parallel: [tool(), tool()], until: 0 }, tool()], "steps[0].until"],
    ["unsatisfiable_until", [{ parallel: [tool(), tool()], until: 3 }], "steps[0].until"],
    ["invalid_losers", [{ parallel: [tool(), tool()], until: "any", losers: "keep" }], "steps[0].losers"],
    ["key_needs_a_race", [{ parallel: [tool(), tool()], key: "fan" }, tool()], "steps[0].key"],
    ["too_wide_a_fan", [{ parallel: Array.from({ length: 33 }, () => tool()), until: "any" }], "steps[0].parallel"],
    ["too_many_steps", Array.from({ length: 65 }, () => tool()), "steps"],
    ["prompt_required", [{ model: { model: { model: "local/echo" } } }], "steps[0].model.prompt"],
    ["prompt_required", [ask({ prompt: " " })], "steps[0].ask.prompt"],
    ["model_required", [{ model: { prompt: "hi" } }], "steps[0].model.model"],
    ["model_required", [{ model: { prompt: "hi", model: "local/echo" } }], "steps[0].model.model"],
    ["unknown_model", [{ model: { prompt: "hi", model: { model: "acme/none" } } }], "steps[0].model.model"],
    ["invalid_tools", [model("hi", { tools: "grep" })], "steps[0].model.tools"],
    ["invalid_tools", [model("hi", { tools: ["grep", "grep"] })], "steps[0].model.tools[1]"],
    ["tool_name_required", [{ tool: { input: {} } }], "steps[0].tool.name"],
    ["reserved_tool_name", [tool("svc.memory.read")], "steps[0].tool.name"],
    ["invalid_tool_input", [tool("build", { input: ["a"] })], "steps[0].tool.input"],
    ["tool_input_too_large", [tool("build", { input: big })], "steps[0].tool.input"],
    ["invalid_tool_route", [tool("build", { route: { kind: "pool" } })], "steps[0].tool.route.kind"],
    ["invalid_tool_route", [tool("build", { route: "runner" })], "steps[0].tool.route"],
    ["invalid_tool_route", [tool("build", { route: { kind: "runner", via: 1 } })], "steps[0].tool.route.via"],
    ["runner_target_required", [tool()], "steps[0].tool.route", { defaultRunner: null }],
    [
      "runner_target_required",
      [tool("build", { route: { kind: "runner" } })],
      "steps[0].tool.route",
      { defaultRunner: null }
    ],
    [
      "runner_not_eligible",
      [tool("build", { route: { kind: "runner", runner_executor_public_id: asleep.publicId } })],
      "steps[0].tool.route.runner_executor_public_id"
    ],
    [
      "runner_not_eligible",
      [tool("build", { route: { kind: "runner", runner_executor_public_id: "unknown" } })],
      "steps[0].tool.route.runner_executor_public_id"
    ],
    ["tool_not_served", [tool("deploy")], "steps[0].tool.name"],
    ["invalid_timeout_ms", [tool("build", { timeout_ms: 0 })], "steps[0].tool.timeout_ms"],
    ["invalid_timeout_ms", [tool("build", { timeout_ms: 1.5 })], "steps[0].tool.timeout_ms"],
    [
      "invalid_timeout_ms",
      [tool("build", { key: "a" }), wait("a", { timeout_ms: 604_800_001 })],
      "steps[1].wait.timeout_ms"
    ],
    ["invalid_timeout_ms", [ask({ timeout_ms: -1 })], "steps[0].ask.timeout_ms"],
    ["invalid_ask_options", [ask({ options: [] })], "steps[0].ask.options"],
    ["invalid_ask_options", [ask({ options: ["a", "a"] })], "steps[0].ask.options"],
    ["invalid_ask_multi", [ask({ multi: true })], "steps[0].ask.multi"],
    ["invalid_ask_multi", [ask({ options: ["a"], multi: "yes" })], "steps[0].ask.multi"],
    ["wait_target_not_found", [wait("ghost")], "steps[0].wait.task"],
    ["wait_target_not_found", [{ wait: {} }], "steps[0].wait.task"],
    ["wait_target_not_found", [wait("ghost", { run_public_id: "earlier-run" })], "steps[0].wait.task"],
    [
      "wait_target_not_found",
      [{ parallel: [wait("b"), tool("build", { key: "b" })] }, tool()],
      "steps[0].parallel[0].wait.task"
    ],
    ["wait_cycle", [wait("b"), tool("build", { key: "b" })], "steps[0].wait.task"],
    ["wait_cycle", [wait("self", { key: "self" })], "steps[0].wait.task"],
    ["wait_cycle", [{ parallel: [wait("race"), tool()], until: "any", key: "race" }], "steps[0].parallel[0].wait.task"],
    ["invalid_on_failure", [tool("build", { on_failure: "retry" })], "steps[0].tool.on_failure"],
    ["seed_not_a_model_step", [tool(), model()], "steps[0]", { promptMechanism: "default" }],
    [
      "seed_not_a_model_step",
      [{ parallel: [model(), model()], until: "any" }],
      "steps[0]",
      { promptMechanism: "assembly" }
    ],
    [
      "instructions_raw_only",
      [model("hi", { instructions: "Be brief." })],
      "steps[0].model.instructions",
      { promptMechanism: "default" }
    ]
  ]
  const table = cases.map(([code, steps, path, overrides]) => ({ code, steps, path, overrides }))
  it("has a case for every code", () => {
    expect(new Set(table.map((row) => row.code))).toEqual(new Set(StepFaultCode.literals))
  })
  it.each(table)("$code at $path", ({ code, steps, path, overrides }) => {
    expect(faultsOf(steps, overrides)).toContainEqual({ code, path })
  })

  it("names nested members by their own path: steps[i].parallel[j][k].<verb>.<member>", () => {
    const steps = [{ parallel: [[tool(), tool("build", { timeout_ms: 0 })], tool("nope")] }, tool()]
    expect(faultsOf(steps)).toEqual([
      { code: "invalid_timeout_ms", path: "steps[0].parallel[0][1].tool.timeout_ms" },
      { code: "tool_not_served", path: "steps[0].parallel[1].tool.name" }
    ])
  })

  it("lists every fault of the envelope in the tree's order, not just the first", () => {
    const steps = [
      tool("build", { after: ["nowhere"] }),
      { model: { model: { model: "acme/none" }, on_failure: "never" } },
      ask({ multi: true })
    ]
    expect(faultsOf(steps)).toEqual([
      { code: "invalid_reference", path: "steps[0].tool.after[0]" },
      { code: "invalid_on_failure", path: "steps[1].model.on_failure" },
      { code: "prompt_required", path: "steps[1].model.prompt" },
      { code: "unknown_model", path: "steps[1].model.model" },
      { code: "invalid_ask_multi", path: "steps[2].ask.multi" }
    ])
  })

  it("refuses instructions only on the seed, and nothing of the kind under raw", () => {
    expect(compiled([model("hi", { instructions: "x" })]).tasks).toHaveLength(1)
    expect(
      compiled([model(), model("again", { instructions: "x" })], { promptMechanism: "default" }).tasks
    ).toHaveLength(2)
    expect(compiled([tool(), model()], { promptMechanism: "default", firstIsSeed: false }).tasks).toHaveLength(2)
  })

  it("treats a wait on a task of an earlier run as that run's business", () => {
    const result = compiled([wait("done", { run_public_id: "earlier-run", timeout_ms: 1000 })])
    expect(task(result, "s1-wait-1")).toMatchObject({
      results: [],
      after: [],
      wait: { task: "done", run: "earlier-run", timeoutMs: 1000 }
    })
  })
})

describe("refusals beside invalid_steps", () => {
  it("answers 422 steps_payload_too_large for a tree over 1,000,000 canonical bytes, before any step rule", () => {
    const steps = Array.from({ length: 20 }, () => tool("build", { input: { blob: "x".repeat(60_000) } }))
    expect(refusalOf(steps)).toMatchObject({ _tag: "Invalid", code: "steps_payload_too_large" })
  })

  it("answers 409 duplicate_task_key for a key twice in the envelope", () => {
    const refusal = refusalOf([tool("build", { key: "a" }), tool("build", { key: "a" })])
    expect(refusal).toMatchObject({ _tag: "StateConflict", code: "duplicate_task_key" })
  })

  it("answers 409 duplicate_task_key for a key already in the run, and for an authored key a mint takes", () => {
    const existing = [{ key: "a", kind: "tool_task", mainline: false }] as const
    expect(refusalOf([tool("build", { key: "a" })], { existing, revision: 2 })).toMatchObject({
      code: "duplicate_task_key"
    })
    expect(refusalOf([tool("build", { key: "s1-tool-2" }), tool()])).toMatchObject({ code: "duplicate_task_key" })
  })

  it("judges invalid_steps before duplicate keys", () => {
    expect(refusalOf([tool("build", { key: "a" }), tool("build", { key: "a", on_failure: 1 })])).toBeInstanceOf(
      InvalidSteps
    )
  })
})

describe("keys", () => {
  it("mints s<revision>-<verb>-<n>, counting each verb in the envelope in written order, nested members included", () => {
    const steps = [
      model(),
      tool(),
      { parallel: [model(), [tool("grep"), ask({ key: "mine" })]], until: "any" },
      model(),
      ask(),
      { parallel: [tool(), wait("mine")] },
      model()
    ]
    expect(compiled(steps).tasks.map((t) => t.key)).toEqual([
      "s1-model-1",
      "s1-tool-1",
      "s1-model-2",
      "s1-tool-2",
      "mine",
      "s1-parallel-1",
      "s1-model-3",
      "s1-ask-2",
      "s1-tool-3",
      "s1-wait-1",
      "s1-model-4"
    ])
  })

  it("mints with the envelope's revision on an append", () => {
    const existing = [{ key: "s1-model-1", kind: "model_task", mainline: true }] as const
    const result = compiled([model(), tool()], { revision: 3, existing, currentDeliverable: "s1-model-1" })
    expect(result.tasks.map((t) => [t.key, t.revision])).toEqual([
      ["s3-model-1", 3],
      ["s3-tool-1", 3]
    ])
  })
})

describe("the wait graph", () => {
  it("chains the written order: each step waits on the previous step's tip", () => {
    const result = compiled([model(), tool(), ask()])
    expect(result.tasks.map((t) => [t.key, t.after, t.structural, t.step])).toEqual([
      ["s1-model-1", [], [], 0],
      ["s1-tool-1", ["s1-model-1"], ["s1-model-1"], 1],
      ["s1-ask-1", ["s1-tool-1"], ["s1-tool-1"], 2]
    ])
    expect(result.deliverable).toBe("s1-ask-1")
  })

  it("starts every member of an all fan after the previous step, runs array members in sequence, and has the follower wait on every tip", () => {
    const result = compiled([
      model(),
      { parallel: [tool("build", { key: "a" }), [tool("grep", { key: "b" }), ask({ key: "c" })]] },
      model()
    ])
    expect(task(result, "a").structural).toEqual(["s1-model-1"])
    expect(task(result, "b").structural).toEqual(["s1-model-1"])
    expect(task(result, "c").structural).toEqual(["b"])
    expect(task(result, "s1-model-2").structural).toEqual(["a", "c"])
    expect(result.tasks.some((t) => t.kind === "join_task")).toBe(false)
    expect(result.deliverable).toBe("s1-model-2")
  })

  it("gives a race a hidden kernel join task over its members' tips; the follower waits on the join", () => {
    const race = {
      parallel: [tool("build", { key: "a" }), [tool("grep", { key: "b" }), ask({ key: "c" })]],
      until: "any",
      key: "pick"
    }
    const result = compiled([model(), race, model()])
    expect(task(result, "pick")).toMatchObject({
      kind: "join_task",
      awaitKind: null,
      origin: "kernel",
      visibility: "hidden",
      mainline: false,
      after: ["a", "c"],
      structural: ["a", "c"],
      step: 1,
      join: { members: ["a", "c"], until: 1, losers: "cancel" }
    })
    expect(result.tasks.map((t) => t.key)).toEqual(["s1-model-1", "a", "b", "c", "pick", "s1-model-2"])
    expect(task(result, "s1-model-2").structural).toEqual(["pick"])
    expect(result.rows.get("pick")).toEqual({})
  })

  it("takes until k and losers run_out", () => {
    const result = compiled([{ parallel: [tool(), tool(), tool()], until: 2, losers: "run_out" }])
    expect(task(result, "s1-parallel-1").join).toEqual({
      members: ["s1-tool-1", "s1-tool-2", "s1-tool-3"],
      until: 2,
      losers: "run_out"
    })
    expect(result.deliverable).toBe("s1-parallel-1")
  })

  it("adds after and results as waits the written order did not make, and a wait's target as what it reads", () => {
    const steps = [
      tool("build", { key: "a" }),
      tool("grep", { key: "b" }),
      model("sum up", { after: ["a"], results: ["a", "b"] }),
      wait("a", { key: "w" }),
      { parallel: [tool("build", { key: "m1" }), tool("build", { key: "m2", after: ["m1"] })] },
      ask()
    ]
    const result = compiled(steps)
    expect(task(result, "s1-model-1")).toMatchObject({ structural: ["b"], after: ["b", "a"], results: ["a", "b"] })
    expect(task(result, "w")).toMatchObject({ structural: ["s1-model-1"], after: ["s1-model-1"], results: ["a"] })
    expect(task(result, "m2")).toMatchObject({ structural: ["w"], after: ["w", "m1"] })
  })

  it("marks top-level model steps mainline, each continuing the previous mainline round; fan members are fresh agents", () => {
    const result = compiled([model(), tool(), model(), { parallel: [model(), model()], until: "any" }, model()])
    const view = (key: string) => [task(result, key).mainline, task(result, key).model?.continues]
    expect(view("s1-model-1")).toEqual([true, null])
    expect(view("s1-model-2")).toEqual([true, "s1-model-1"])
    expect(view("s1-model-3")).toEqual([false, null])
    expect(view("s1-model-4")).toEqual([false, null])
    expect(view("s1-model-5")).toEqual([true, "s1-model-2"])
  })
})

describe("appends", () => {
  const existing = [
    { key: "s1-model-1", kind: "model_task", mainline: true },
    { key: "s1-model-1-t0", kind: "tool_task", mainline: false },
    { key: "s1-model-1-c", kind: "model_task", mainline: true },
    { key: "s1-tool-1", kind: "tool_task", mainline: false }
  ] as const

  it("starts from the run's current deliverable and continues its last mainline round", () => {
    const result = compiled([model("next", { results: ["s1-model-1-t0"] }), { parallel: [tool(), tool()] }, ask()], {
      revision: 2,
      existing,
      currentDeliverable: "s1-tool-1",
      firstIsSeed: false,
      promptMechanism: "default"
    })
    expect(task(result, "s2-model-1")).toMatchObject({
      structural: ["s1-tool-1"],
      after: ["s1-tool-1", "s1-model-1-t0"],
      results: ["s1-model-1-t0"],
      mainline: true,
      model: { continues: "s1-model-1-c" },
      revision: 2,
      step: 0
    })
    expect(task(result, "s2-tool-1").structural).toEqual(["s2-model-1"])
    expect(task(result, "s2-ask-1").structural).toEqual(["s2-tool-1", "s2-tool-2"])
    expect(result.deliverable).toBe("s2-ask-1")
  })

  it("has a fan opening the append wait, member by member, on the deliverable", () => {
    const result = compiled([{ parallel: [tool(), tool()], until: "any" }], {
      revision: 2,
      existing,
      currentDeliverable: "s1-tool-1"
    })
    expect(task(result, "s2-tool-1").structural).toEqual(["s1-tool-1"])
    expect(task(result, "s2-tool-2").structural).toEqual(["s1-tool-1"])
    expect(result.deliverable).toBe("s2-parallel-1")
  })

  it("lets a wait name a task of an earlier envelope", () => {
    const result = compiled([wait("s1-model-1-t0")], { revision: 2, existing, currentDeliverable: "s1-tool-1" })
    expect(task(result, "s2-wait-1")).toMatchObject({ results: ["s1-model-1-t0"], after: ["s1-tool-1"] })
  })
})

describe("task specs and rows", () => {
  it("freezes a tool step's target, timeout, replayability, call id and input", () => {
    const steps = [
      tool("build", { input: { target: "all" } }),
      tool("grep", { route: { kind: "runner", runner_executor_public_id: other.publicId }, timeout_ms: 5000 }),
      tool("wait")
    ]
    const result = compiled(steps)
    expect(task(result, "s1-tool-1")).toMatchObject({
      kind: "tool_task",
      onFailure: "propagate",
      origin: "author",
      visibility: "visible",
      tool: {
        name: "build",
        alias: null,
        target: { kind: "runner", executor: { executorId: runner.publicId, displayName: "Build box" } },
        timeoutMs: 120_000,
        replayable: false,
        toolCallId: "s1-tool-1",
        input: { target: "all" }
      }
    })
    expect(task(result, "s1-tool-2").tool).toMatchObject({
      target: { kind: "runner", executor: { executorId: other.publicId, displayName: "Other" } },
      timeoutMs: 5000,
      replayable: true,
      input: {}
    })
    expect(task(result, "s1-tool-3").tool).toMatchObject({ name: "wait", timeoutMs: 600_000, replayable: true })
    expect(result.rows.get("s1-tool-1")).toEqual({ tool_input: { target: "all" }, timeout_ms: 120_000 })
  })

  it("falls back to 600000 ms when neither the step nor the announcement gives a timeout", () => {
    expect(task(compiled([tool("grep")]), "s1-tool-1").tool?.timeoutMs).toBe(600_000)
  })

  it("defaults on_failure per verb and takes the step's own", () => {
    const result = compiled([model(), tool(), ask(), wait("s1-model-1"), tool("build", { on_failure: "absorb" })])
    expect(result.tasks.map((t) => t.onFailure)).toEqual(["halt", "propagate", "propagate", "absorb", "absorb"])
  })

  it("clamps an ask's timeout to 24 h (the default), leaves its token to the domain, and lists it", () => {
    const result = compiled([ask({ timeout_ms: 999_999_999, options: ["yes", "no"], multi: false }), ask({ key: "q" })])
    expect(task(result, "s1-ask-1")).toMatchObject({
      kind: "await_task",
      awaitKind: "ask",
      ask: { authored: true, timeoutMs: 86_400_000, tokenDigest: null }
    })
    expect(result.rows.get("s1-ask-1")).toEqual({
      prompt: "ok?",
      options: ["yes", "no"],
      multi: false,
      timeout_ms: 86_400_000
    })
    expect(result.askKeys).toEqual(["s1-ask-1", "q"])
  })

  it("keeps a model step's ref, retry, tools and the members its read shows", () => {
    const step = model("hello", {
      model: { model: "local/script", reasoning_enabled: false },
      tools: ["grep"],
      retry: 2,
      instructions: "Be brief.",
      configuration: { temperature: 0 },
      attachments: ["u1"]
    })
    const result = compiled([step])
    expect(task(result, "s1-model-1").model).toEqual({
      model: "local/script",
      retry: 2,
      tools: ["grep"],
      continues: null
    })
    expect(result.rows.get("s1-model-1")).toEqual({
      prompt: "hello",
      model: { model: "local/script", reasoning_enabled: false },
      instructions: "Be brief.",
      configuration: { temperature: 0 },
      attachments: ["u1"]
    })
  })

  it("mirrors the request in the receipt with every key filled in, a race with its join key", () => {
    const steps = [tool("build", { input: { a: 1 } }), { parallel: [ask(), [model(), tool()]], until: "any" }, model()]
    expect(compiled(steps).receiptSteps).toEqual([
      { tool: { name: "build", input: { a: 1 }, key: "s1-tool-1" } },
      {
        parallel: [
          { ask: { prompt: "ok?", key: "s1-ask-1" } },
          [
            { model: { prompt: "hi", model: { model: "local/echo" }, key: "s1-model-1" } },
            { tool: { name: "build", key: "s1-tool-2" } }
          ]
        ],
        until: "any",
        key: "s1-parallel-1"
      },
      { model: { prompt: "hi", model: { model: "local/echo" }, key: "s1-model-2" } }
    ])
  })
})

describe("the create shell, in the supplement's check order", () => {
  const shell = (more: Record<string, unknown> = {}) => ({ approval_mode: "bypass", steps: [model()], ...more })
  const refusal = (body: Record<string, unknown>) => {
    const result = judgeShell(body, lookups)
    if (Result.isSuccess(result)) throw new Error("expected a refusal")
    return result.failure
  }

  const cases: ReadonlyArray<readonly [Record<string, unknown>, Record<string, unknown>]> = [
    [shell({ tasks: [] }), { _tag: "AuthoringRefused", code: "edge_authoring_refused", path: "run.tasks" }],
    [shell({ window: 3, approval_mode: null }), { code: "edge_authoring_refused", path: "run.window" }],
    [shell({ nodes: [] }), { _tag: "AuthoringRefused", code: "graph_authoring_not_available", path: "run.nodes" }],
    [shell({ approval_mode: undefined }), { _tag: "Invalid", code: "invalid_approval_mode" }],
    [shell({ approval_mode: "sometimes" }), { code: "invalid_approval_mode" }],
    [shell({ approval_rules: [{ tool: "build" }] }), { code: "invalid_approval_rules" }],
    [shell({ approval_rules: [{ tool: "a|b", verdict: "allow", match: "x*" }] }), { code: "invalid_approval_rules" }],
    [shell({ approval_rules: [{ tool: "a", verdict: "allow", colour: 1 }] }), { code: "invalid_approval_rules" }],
    [shell({ approval_rules: {} }), { code: "invalid_approval_rules" }],
    [shell({ prompt_mechanism: "fancy" }), { code: "invalid_prompt_mechanism" }],
    [shell({ billing_subject: "" }), { code: "billing_subject_too_long" }],
    [shell({ billing_subject: "é".repeat(65) }), { code: "billing_subject_too_long" }],
    [shell({ billing_subject: "theirs" }), { code: "billing_subject_not_owned" }],
    [shell({ default_runner_executor_public_id: "nobody" }), { _tag: "Absent", code: "runner_not_found" }],
    [
      shell({ default_runner_executor_public_id: asleep.publicId }),
      { _tag: "StateConflict", code: "runner_not_eligible" }
    ],
    [shell({ speaker_public_id: "someone" }), { _tag: "NotPermitted", code: "not_authorized" }],
    [shell({ fallback_models: ["local/echo", "local/echo"] }), { code: "validation_failed" }],
    [shell({ fallback_models: Array.from({ length: 17 }, () => "local/echo") }), { code: "validation_failed" }],
    [shell({ fallback_models: ["acme/none"] }), { code: "validation_failed" }],
    [shell({ model_selection: { prefer: "cheap" } }), { code: "validation_failed" }],
    [shell({ approval_mode: "nope", billing_subject: "theirs" }), { code: "invalid_approval_mode" }],
    [
      shell({ billing_subject: "theirs", default_runner_executor_public_id: "nobody" }),
      { code: "billing_subject_not_owned" }
    ]
  ]
  it.each(cases.map(([body, expected]) => ({ body, expected })))("$expected.code for $body", ({ body, expected }) => {
    expect(refusal(body)).toMatchObject(expected)
  })

  it("answers the judged shell with defaults", () => {
    const result = judgeShell(
      shell({
        approval_mode: "rules",
        approval_rules: [{ tool: "memory_*|ask", path: "path", match: "notes/*", verdict: "ask", origin: "author" }],
        billing_subject: "team-a",
        default_runner_executor_public_id: runner.publicId,
        speaker_public_id: "me",
        fallback_models: ["local/script"],
        model_selection: null
      }),
      lookups
    )
    expect(Result.getOrThrow(result)).toEqual({
      approvalMode: "rules",
      approvalRules: [{ tool: "memory_*|ask", path: "path", match: "notes/*", verdict: "ask", origin: "author" }],
      promptMechanism: "raw",
      billingSubject: "team-a",
      defaultRunner: runner,
      speakerId: "me",
      fallbackModels: ["local/script"]
    })
    expect(Result.getOrThrow(judgeShell(shell(), lookups))).toMatchObject({
      approvalRules: [],
      defaultRunner: null,
      speakerId: null,
      billingSubject: null,
      fallbackModels: null
    })
  })

  it("compiles a create: shell, steps, then the prompt template", () => {
    const created = compileCreate(
      shell({ default_runner_executor_public_id: runner.publicId, steps: [model(), tool()] }),
      lookups
    )
    expect(Result.getOrThrow(created).compiled.deliverable).toBe("s1-tool-1")
    const unserved = compileCreate(shell({ steps: [tool()] }), lookups)
    expect(Result.isFailure(unserved) && unserved.failure).toMatchObject({
      steps: [{ code: "runner_target_required", path: "steps[0].tool.route" }]
    })
    const badSteps = compileCreate(shell({ prompt_mechanism: "assembly", steps: [] }), lookups)
    expect(Result.isFailure(badSteps) && badSteps.failure).toMatchObject({ code: "invalid_steps" })
    const noTemplate = compileCreate(shell({ prompt_mechanism: "assembly" }), lookups)
    expect(Result.isFailure(noTemplate) && noTemplate.failure).toMatchObject({ code: "prompt_template_missing" })
    const withTemplate = compileCreate(shell({ prompt_mechanism: "assembly" }), { ...lookups, hasPromptTemplate: true })
    expect(Result.isSuccess(withTemplate)).toBe(true)
  })

  it("refuses raw graph names at the root of an append body by their bare path", () => {
    expect(judgeAppendShell({ steps: [], depends_on: [] })).toMatchObject({
      code: "edge_authoring_refused",
      path: "depends_on"
    })
    expect(judgeAppendShell({ steps: [], edges: [] })).toMatchObject({ code: "graph_authoring_not_available" })
    expect(judgeAppendShell({ steps: [], expected_revision: 1 })).toBeUndefined()
  })
})

describe("what the steps name", () => {
  it("lists the runners, models and foreign tasks to load before compiling", () => {
    const steps = [
      model(),
      { parallel: [[tool("a", { route: { kind: "runner", runner_executor_public_id: "r1" } })], model("x")] },
      wait("done", { run_public_id: "earlier-run" }),
      "junk"
    ]
    expect(namedInSteps(steps)).toEqual({
      runners: ["r1"],
      models: ["local/echo"],
      foreignTasks: [{ run: "earlier-run", task: "done" }]
    })
    expect(firstStepIsModel(steps)).toBe(true)
    expect(firstStepIsModel([tool()])).toBe(false)
  })
})
