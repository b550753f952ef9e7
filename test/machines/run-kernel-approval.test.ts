// The approval stage of a model's kernel tool calls (runs supplement "Task kinds and statuses":
// "Approval stage (tool calls only)"; "Tool catalog": rules match wire names): every call of an
// imported kernel tool obeys the run's mode and rules as a runner tool's call does, parks
// needs_approval for 24 h as an approval row (its input and catalog effect profile), goes on as its
// kind does once approved (a job, an ask, a wait, a delegation) and fails approval_denied, read by
// the model, when denied or refused.

import type { ApprovalMode, ApprovalRule, CompiledTaskSpec, TaskSpec } from "@troupe/machines/run/context"
import { runMachine } from "@troupe/machines/run/run.machine"
import { describe, expect, it } from "vitest"
import { initialTransition, transition } from "xstate"

type Snapshot = ReturnType<typeof initialTransition<typeof runMachine>>[0]
type Event = Parameters<typeof transition<typeof runMachine>>[2]
type Action = { type: string; params?: any }

const day = 24 * 60 * 60 * 1000

const round: CompiledTaskSpec = {
  key: "m",
  kind: "model_task",
  awaitKind: null,
  origin: "author",
  visibility: "visible",
  mainline: true,
  after: [],
  structural: [],
  results: [],
  onFailure: "halt",
  revision: 1,
  step: 0,
  expansionParent: null,
  tool: null,
  model: { model: "local/script", retry: 0, tools: [], continues: null },
  ask: null,
  wait: null,
  join: null
}

const kernelTools = {
  memory_write: "svc.memory.write",
  memory_read: "svc.memory.read",
  skill: "svc.skill.load",
  remember: "svc.memory.write",
  ask: "svc.human.ask",
  wait: "svc.graph.wait",
  delegate_task: "svc.graph.delegate_task",
  tool_call: "svc.tools.call"
}
const write = {
  kind: "write",
  destructive: true,
  effect_scope: "closed",
  idempotency: "intrinsic",
  reconciliation: "lookup"
}
const read = {
  kind: "read_only",
  destructive: false,
  effect_scope: "closed",
  idempotency: "intrinsic",
  reconciliation: "none"
}
const general = { ...write, destructive: false }
const kernelProfiles = {
  "svc.memory.write": write,
  "svc.memory.read": read,
  "svc.skill.load": read,
  "svc.human.ask": general,
  "svc.graph.wait": general,
  "svc.graph.delegate_task": general
}

const step = (snapshot: Snapshot, event: Event) => transition(runMachine, snapshot, event) as [Snapshot, Array<Action>]

/** A run whose round `m` answered `toolCalls` (call ids call-0…), under `mode` and `rules`. */
const expanded = (
  mode: ApprovalMode,
  rules: ReadonlyArray<ApprovalRule>,
  toolCalls: ReadonlyArray<Record<string, unknown>>,
  creatorApplicationId: string | null = "app-1"
) => {
  const [created] = initialTransition(runMachine, {
    publicId: "run-1",
    conversationId: null,
    turnId: null,
    creatorId: "creator",
    creatorApplicationId,
    approvalMode: mode,
    approvalRules: rules,
    tasks: [round],
    deliverable: "m",
    kernelTools,
    kernelAliases: { remember: "memory_write" },
    kernelProfiles,
    at: 0
  })
  const [running] = step(created, { type: "run.start", at: 1_000 })
  return step(running, {
    type: "inference.replied",
    requestId: "r",
    status: "completed",
    errorCode: null,
    declined: false,
    usage: null,
    ref: "m#1#1",
    toolCalls: toolCalls.map((call, index) => ({
      call_id: `call-${index}`,
      ...call,
      arguments: JSON.stringify(call.arguments ?? {})
    }))
  })
}

const memoryWrite = { name: "memory_write", arguments: { path: "user/a.md", content: "x" } }

const taskOf = (snapshot: Snapshot, key: string) => snapshot.context.tasks.find((t) => t.spec.key === key)
const statusOf = (snapshot: Snapshot, key: string) => taskOf(snapshot, key)?.status
const named = (actions: ReadonlyArray<Action>, type: string) => actions.filter((action) => action.type === type)
const resultOf = (actions: ReadonlyArray<Action>, key: string) =>
  named(actions, "run.recordResult").find((action) => action.params.key === key)?.params.result
const approve = (snapshot: Snapshot, key: string, at = 5_000) =>
  step(snapshot, { type: "task.approve", key, by: { userId: "creator", origin: "agent" }, at })
const deny = (snapshot: Snapshot, key: string, reason: string | null, at = 5_000) =>
  step(snapshot, { type: "task.deny", key, by: { userId: "creator", origin: "agent" }, reason, at })

describe("approval_mode ask over kernel calls", () => {
  it("a model's kernel call parks needs_approval for 24 h as an approval row to the creator's application, carrying its input and effect profile", () => {
    const [snapshot, actions] = expanded("ask", [], [memoryWrite])
    expect(statusOf(snapshot, "m-t0")).toBe("needs_approval")
    expect(taskOf(snapshot, "m-t0")!.deadlineAt).toBe(1_000 + day)
    expect(named(actions, "run.callKernel")).toEqual([])
    expect(named(actions, "run.insertTasks")[0]!.params.details["m-t0"]).toMatchObject({
      tool_input: { path: "user/a.md", content: "x" },
      effect_profile: write
    })
    const row = named(actions, "run.recordTasks")
      .flatMap((action) => action.params.tasks)
      .find((task: any) => task.key === "m-t0")
    expect(row).toMatchObject({ inboxKind: "approval", inboxExecutorId: "app-1", timeoutMs: day })
    expect(named(actions, "run.notifyExecutors").map((action) => action.params.messages[0])).toContainEqual({
      executorIds: ["app-1"],
      message: { type: "work_available", kind: "approval", run_public_id: "run-1", task_key: "m-t0" }
    })
    expect(snapshot.context.attention).toMatchObject({ reason: "approval_required", blockedTaskKeys: ["m-t0"] })
  })

  it("ask parks read-only kernel tools too: only an allow rule grants", () => {
    const reads = [
      { name: "memory_read", arguments: { path: "user/a.md" } },
      { name: "skill", arguments: { name: "style" } }
    ]
    const [parked] = expanded("ask", [], reads)
    expect([statusOf(parked, "m-t0"), statusOf(parked, "m-t1")]).toEqual(["needs_approval", "needs_approval"])
    const [allowed, actions] = expanded("ask", [{ tool: "memory_read|skill", verdict: "allow" }], reads)
    expect([statusOf(allowed, "m-t0"), statusOf(allowed, "m-t1")]).toEqual(["dispatched", "dispatched"])
    expect(named(actions, "run.callKernel").map((action) => action.params.key)).toEqual(["m-t0", "m-t1"])
  })

  it("approve lets a parked call proceed: the kernel carries it out, approval {origin, decided_by, decided_at} kept", () => {
    const [parked] = expanded("ask", [], [memoryWrite])
    const [approved, actions] = approve(parked, "m-t0")
    expect(statusOf(approved, "m-t0")).toBe("dispatched")
    expect(taskOf(approved, "m-t0")!.approval).toEqual({ origin: "agent", decidedBy: "creator", decidedAt: 5_000 })
    expect(named(actions, "run.callKernel").map((action) => action.params)).toEqual([
      { key: "m-t0", generation: 1, canonical: "svc.memory.write" }
    ])
    const [answered] = step(approved, {
      type: "task.kernelAnswered",
      key: "m-t0",
      generation: 1,
      outcome: "completed",
      result: { output: "wrote user/a.md" },
      errorKey: null,
      at: 6_000
    })
    expect(statusOf(answered, "m-t0")).toBe("completed")
    expect(statusOf(answered, "m-c")).toBe("running")
  })

  it("deny fails the call approval_denied with the reason; the continuation reads the denial", () => {
    const [parked] = expanded("ask", [], [memoryWrite])
    const [denied, actions] = deny(parked, "m-t0", "not my notes")
    expect(taskOf(denied, "m-t0")).toMatchObject({
      status: "failed",
      error: { key: "approval_denied", detail: "not my notes" },
      absorbed: true
    })
    expect(resultOf(actions, "m-t0")).toEqual({
      output: "Approval denied: not my notes",
      content: [{ type: "text", text: "Approval denied: not my notes" }],
      is_error: true
    })
    expect(named(actions, "run.callKernel")).toEqual([])
    expect(statusOf(denied, "m-c")).toBe("running")
    expect(named(actions, "run.openRound")[0]!.params).toMatchObject({ key: "m-c", calls: ["m-t0"] })
  })

  it("a denial's reason is kept to its first 256 bytes, cut between characters", () => {
    const [parked] = expanded("ask", [], [memoryWrite])
    const [denied] = deny(parked, "m-t0", "é".repeat(200))
    expect(taskOf(denied, "m-t0")!.error).toEqual({ key: "approval_denied", detail: "é".repeat(128) })
    const [ascii] = deny(parked, "m-t0", `${"r".repeat(255)}€`)
    expect(taskOf(ascii, "m-t0")!.error!.detail).toBe("r".repeat(255))
  })

  it("the 24 h hold: an undecided call times out approval_expired, and a late approve is refused not_awaiting_approval", () => {
    const [parked] = expanded("ask", [], [memoryWrite])
    const [expired, actions] = step(parked, {
      type: "task.deadline",
      key: "m-t0",
      generation: 1,
      deadlineAt: 1_000 + day
    })
    expect(taskOf(expired, "m-t0")).toMatchObject({ status: "timed_out", error: { key: "approval_expired" } })
    expect(resultOf(actions, "m-t0")).toMatchObject({ output: "Approval expired: no one decided within 24 hours" })
    const [late, refused] = approve(parked, "m-t0", 2_000 + day)
    expect(taskOf(late, "m-t0")).toMatchObject({ status: "timed_out", error: { key: "approval_expired" } })
    expect(named(refused, "run.answer")[0]!.params).toEqual({ reason: "not_awaiting_approval" })
    expect(named(refused, "run.callKernel")).toEqual([])
  })

  it("a human creator's parked call is needs_approval with no inbox row", () => {
    const [snapshot, actions] = expanded("ask", [], [memoryWrite], null)
    expect(statusOf(snapshot, "m-t0")).toBe("needs_approval")
    const row = named(actions, "run.recordTasks")
      .flatMap((action) => action.params.tasks)
      .find((task: any) => task.key === "m-t0")
    expect(row).toMatchObject({ inboxKind: null })
  })
})

describe("approval_mode bypass and rules over kernel calls", () => {
  it("bypass runs kernel calls without parking, an ask rule included; a deny rule fails the call", () => {
    const [granted, actions] = expanded("bypass", [{ tool: "memory_*", verdict: "ask" }], [memoryWrite])
    expect(statusOf(granted, "m-t0")).toBe("dispatched")
    expect(named(actions, "run.callKernel")).toHaveLength(1)
    const [refused, refusal] = expanded("bypass", [{ tool: "memory_*", verdict: "deny" }], [memoryWrite])
    expect(taskOf(refused, "m-t0")).toMatchObject({
      status: "failed",
      error: { key: "approval_denied", detail: "no approval rule allows memory_write" }
    })
    expect(resultOf(refusal, "m-t0")).toMatchObject({ output: "Approval denied: no approval rule allows memory_write" })
    expect(named(refusal, "run.callKernel")).toEqual([])
  })

  it("rules: allow grants, ask parks, deny or no matching rule fails 'no approval rule allows NAME'", () => {
    const rules: ReadonlyArray<ApprovalRule> = [
      { tool: "memory_read|skill", verdict: "allow" },
      { tool: "memory_w*", verdict: "ask" },
      { tool: "skill", verdict: "deny", reason: "no skills today" }
    ]
    const [snapshot] = expanded("rules", rules, [
      { name: "memory_read", arguments: { path: "user/a.md" } },
      memoryWrite,
      { name: "skill", arguments: { name: "style" } },
      { name: "ask", arguments: { prompt: "Go?" } }
    ])
    expect(["m-t0", "m-t1", "m-t2", "m-t3"].map((key) => statusOf(snapshot, key))).toEqual([
      "dispatched",
      "needs_approval",
      "failed",
      "failed"
    ])
    expect(taskOf(snapshot, "m-t2")!.error).toEqual({ key: "approval_denied", detail: "no skills today" })
    expect(taskOf(snapshot, "m-t3")!.error).toEqual({ key: "approval_denied", detail: "no approval rule allows ask" })
  })

  it("rules match the name the model called (an alias) and the catalog wire name behind it", () => {
    const remember = { name: "remember", arguments: { path: "user/a.md", content: "x" } }
    const [byAlias, actions] = expanded("rules", [{ tool: "remember", verdict: "ask" }], [remember])
    expect(statusOf(byAlias, "m-t0")).toBe("needs_approval")
    expect(named(actions, "run.insertTasks")[0]!.params.details["m-t0"]).toMatchObject({ effect_profile: write })
    const [byWire] = expanded("rules", [{ tool: "memory_*", verdict: "ask" }], [remember])
    expect(statusOf(byWire, "m-t0")).toBe("needs_approval")
    const [unmatched] = expanded("rules", [{ tool: "skill", verdict: "allow" }], [remember])
    expect(taskOf(unmatched, "m-t0")!.error).toEqual({
      key: "approval_denied",
      detail: "no approval rule allows remember"
    })
  })

  it("a kernel call made through a tool_call is judged under its own name, and a rule on tool_call may deny or ask, never grant", () => {
    const through = { name: "tool_call", arguments: { name: "remember", input: { path: "user/a.md" } } }
    const allowRemember: ApprovalRule = { tool: "remember", verdict: "allow" }
    const [granted] = expanded("rules", [allowRemember], [through])
    expect(taskOf(granted, "m-t0")).toMatchObject({ status: "dispatched", spec: { kernel: "svc.memory.write" } })
    const [parked] = expanded("rules", [allowRemember, { tool: "tool_call", verdict: "ask" }], [through])
    expect(statusOf(parked, "m-t0")).toBe("needs_approval")
    const [denied] = expanded(
      "rules",
      [allowRemember, { tool: "tool_call", path: "name", match: "rem*", verdict: "deny", reason: "no detours" }],
      [through]
    )
    expect(taskOf(denied, "m-t0")!.error).toEqual({ key: "approval_denied", detail: "no detours" })
    const [notGranted] = expanded("rules", [{ tool: "tool_call", verdict: "allow" }], [through])
    expect(taskOf(notGranted, "m-t0")!.error).toEqual({
      key: "approval_denied",
      detail: "no approval rule allows remember"
    })
  })

  it("path and match judge the kernel call's input", () => {
    const rules: ReadonlyArray<ApprovalRule> = [
      { tool: "memory_write", path: "path", match: "user/*", verdict: "allow" }
    ]
    const [inside] = expanded("rules", rules, [memoryWrite])
    expect(statusOf(inside, "m-t0")).toBe("dispatched")
    const [outside] = expanded("rules", rules, [{ name: "memory_write", arguments: { path: "workspace/a.md" } }])
    expect(statusOf(outside, "m-t0")).toBe("failed")
  })
})

describe("approved kernel calls go on as their kind does", () => {
  it("a parked ask parks for a person only once approved (awaiting_input, its own 24 h clock)", () => {
    const [parked, actions] = expanded("ask", [], [{ name: "ask", arguments: { prompt: "Go?" } }])
    expect(statusOf(parked, "m-t0")).toBe("needs_approval")
    expect(named(actions, "run.insertTasks")[0]!.params.details["m-t0"]).toMatchObject({
      prompt: "Go?",
      tool_input: { prompt: "Go?" },
      effect_profile: general
    })
    const [approved, after] = approve(parked, "m-t0")
    expect(taskOf(approved, "m-t0")).toMatchObject({ status: "awaiting_input", deadlineAt: 5_000 + day })
    expect(named(after, "run.notifyExecutors").map((action) => action.params.messages[0].message.kind)).toEqual(["ask"])
  })

  it("a parked wait waits once approved", () => {
    const [parked] = expanded(
      "ask",
      [{ tool: "memory_write", verdict: "allow" }],
      [memoryWrite, { name: "wait", arguments: { task: "m-t0" } }]
    )
    expect([statusOf(parked, "m-t0"), statusOf(parked, "m-t1")]).toEqual(["dispatched", "needs_approval"])
    const [approved] = approve(parked, "m-t1")
    expect(statusOf(approved, "m-t1")).toBe("dispatched")
    const [settled] = step(approved, {
      type: "task.kernelAnswered",
      key: "m-t0",
      generation: 1,
      outcome: "completed",
      result: { output: "wrote" },
      errorKey: null,
      at: 6_000
    })
    expect(statusOf(settled, "m-t1")).toBe("completed")
  })

  it("a parked delegate_task starts its task only once approved; an unwaited call then answers its key", () => {
    const [parked, actions] = expanded("ask", [], [{ name: "delegate_task", arguments: { prompt: "sub" } }])
    expect(statusOf(parked, "m-t0")).toBe("needs_approval")
    expect(taskOf(parked, "m-t0-model-1")).toBeUndefined()
    expect(named(actions, "run.insertTasks")[0]!.params.tasks.map((task: TaskSpec) => task.key)).toEqual([
      "m-t0",
      "m-c"
    ])
    const [approved, after] = approve(parked, "m-t0")
    expect(taskOf(approved, "m-t0-model-1")).toMatchObject({
      status: "running",
      spec: { delegated: "unwaited", expansionParent: "m-t0", mainline: false }
    })
    expect(named(after, "run.insertTasks")[0]!.params).toMatchObject({
      tasks: [{ key: "m-t0-model-1" }],
      details: { "m-t0-model-1": { prompt: "sub", delegated_by: "m-t0" } }
    })
    expect(statusOf(approved, "m-t0")).toBe("completed")
    expect(resultOf(after, "m-t0")).toEqual({ output: "m-t0-model-1" })
  })

  it("a parked waited delegate_task, approved, waits on the task it starts", () => {
    const [parked] = expanded("ask", [], [{ name: "delegate_task", arguments: { prompt: "sub", wait: true } }])
    expect(taskOf(parked, "m-t0")).toMatchObject({ status: "needs_approval", spec: { awaitKind: "wait" } })
    const [approved] = approve(parked, "m-t0")
    expect(statusOf(approved, "m-t0")).toBe("dispatched")
    expect(statusOf(approved, "m-t0-model-1")).toBe("running")
  })

  it("a denied or refused delegate_task starts nothing", () => {
    const [parked] = expanded("ask", [], [{ name: "delegate_task", arguments: { prompt: "sub" } }])
    const [denied] = deny(parked, "m-t0", null)
    expect(taskOf(denied, "m-t0")).toMatchObject({ status: "failed", error: { key: "approval_denied" } })
    expect(taskOf(denied, "m-t0-model-1")).toBeUndefined()
    const [refused] = expanded("rules", [], [{ name: "delegate_task", arguments: { prompt: "sub", wait: true } }])
    expect(taskOf(refused, "m-t0")).toMatchObject({ status: "failed", error: { key: "approval_denied" } })
    expect(taskOf(refused, "m-t0-model-1")).toBeUndefined()
  })
})

describe("a parked kernel call racing the run", () => {
  it("a parked delegate_task canceled or stopped starts nothing, and a late approve is refused", () => {
    const [parked] = expanded("ask", [], [{ name: "delegate_task", arguments: { prompt: "sub" } }])
    const [canceled] = step(parked, { type: "task.cancel", key: "m-t0", at: 2_000 })
    expect(taskOf(canceled, "m-t0")).toMatchObject({ status: "canceled", failureResolution: "canceled" })
    const [late, refused] = approve(canceled, "m-t0")
    expect(named(refused, "run.refuse")[0]!.params).toEqual({ reason: "not_awaiting_approval" })
    expect(named(refused, "run.insertTasks")).toEqual([])
    expect(taskOf(late, "m-t0-model-1")).toBeUndefined()
    const [stopped] = step(parked, { type: "run.stop", force: false, at: 2_000 })
    expect(statusOf(stopped, "m-t0")).toBe("canceled")
    const [, afterStop] = approve(stopped, "m-t0")
    expect(named(afterStop, "run.refuse")[0]!.params).toEqual({ reason: "not_adjudicable" })
  })

  it("a parked delegate_task approved after the hosted run's reply settled starts its task, whose result returns to the conversation", () => {
    const [created] = initialTransition(runMachine, {
      publicId: "run-1",
      conversationId: "conversation-1",
      turnId: "turn-1",
      replyTo: { kind: "conversation", actorId: "conversation-1" },
      creatorId: "creator",
      creatorApplicationId: "app-1",
      approvalMode: "ask",
      approvalRules: [{ tool: "delegate_task", path: "prompt", match: "sub", verdict: "allow" }],
      tasks: [round],
      deliverable: "m",
      kernelTools,
      at: 0
    })
    const answer = (snapshot: Snapshot, key: string, toolCalls: ReadonlyArray<Record<string, unknown>>, at: number) =>
      step(snapshot, {
        type: "inference.replied",
        requestId: "r",
        status: "completed",
        errorCode: null,
        declined: false,
        usage: null,
        ref: `${key}#1#1`,
        toolCalls: toolCalls.map((call, index) => ({
          call_id: `call-${index}`,
          ...call,
          arguments: JSON.stringify(call.arguments)
        })),
        at
      } as Event)
    const [running] = step(created, { type: "run.start", at: 1_000 })
    const [delegated] = answer(running, "m", [{ name: "delegate_task", arguments: { prompt: "sub" } }], 2_000)
    const [settled, early] = answer(delegated, "m-c", [], 3_000)
    expect(named(early, "run.replyToHost")[0]!.params.event).toMatchObject({ status: "completed" })
    const nested = [{ name: "delegate_task", arguments: { prompt: "nested" } }]
    const [parked, parking] = answer(settled, "m-t0-model-1", nested, 4_000)
    expect(statusOf(parked, "m-t0-model-1-t0")).toBe("needs_approval")
    expect(named(parking, "run.replyToHost")).toEqual([])
    const [approved, after] = approve(parked, "m-t0-model-1-t0")
    expect(statusOf(approved, "m-t0-model-1-t0")).toBe("completed")
    expect(statusOf(approved, "m-t0-model-1-t0-model-1")).toBe("running")
    expect(approved.context.status).toBe("running")
    expect(named(after, "run.replyToHost")).toEqual([])
    const [, returned] = answer(approved, "m-t0-model-1-t0-model-1", [], 6_000)
    expect(named(returned, "run.returnResult")[0]!.params).toMatchObject({
      conversationId: "conversation-1",
      key: "m-t0-model-1-t0-model-1",
      status: "completed"
    })
  })
})

describe("a runner tool's call refused approval", () => {
  it("leaves the model a result that says so, as a kernel call's does", () => {
    const [created] = initialTransition(runMachine, {
      publicId: "run-1",
      conversationId: null,
      turnId: null,
      creatorId: "creator",
      creatorApplicationId: "app-1",
      approvalMode: "ask",
      approvalRules: [],
      tasks: [
        {
          ...round,
          key: "t",
          kind: "tool_task",
          origin: "model",
          model: null,
          tool: {
            name: "grep",
            alias: null,
            target: { kind: "runner", executor: { executorId: "runner-1", displayName: "Runner" } },
            timeoutMs: 60_000,
            replayable: false,
            toolCallId: "t",
            input: {}
          }
        }
      ],
      deliverable: "t",
      at: 0
    })
    const [parked] = step(created, { type: "run.start", at: 1_000 })
    expect(statusOf(parked, "t")).toBe("needs_approval")
    const [, actions] = deny(parked, "t", "no")
    expect(resultOf(actions, "t")).toMatchObject({ output: "Approval denied: no", is_error: true })
  })
})
