// The run machine, one test per row of the run lifecycle table (runs supplement "Run
// lifecycle") and the task rules it rests on: dispatch, claims, commits, expiry, rounds and
// their expansion, failures and their on_failure, races, asks, approvals and the task verbs.
import { machines, migrateSnapshot, type PersistedSnapshot } from "@troupe/machines/registry"
import type { ApprovalRule, CompiledTaskSpec } from "@troupe/machines/run/context"
import { runMachine } from "@troupe/machines/run/run.machine"
import { describe, expect, it } from "vitest"
import {
  type Action,
  baseTask as base,
  createRun,
  firstRoundReplied,
  modelTask,
  named,
  roundReplied,
  type Snapshot,
  step,
  taskOf
} from "../support/runMachine.ts"

const runner = { executorId: "runner-1", displayName: "Runner" }

const tool = (key: string, after: Array<string> = [], extra: Partial<CompiledTaskSpec> = {}): CompiledTaskSpec => ({
  ...base(key, after),
  tool: {
    name: "grep",
    alias: null,
    target: { kind: "runner", executor: runner },
    timeoutMs: 60_000,
    announcedTimeoutMs: 60_000,
    replayable: false,
    toolCallId: key,
    input: { q: "x" }
  },
  ...extra
})

const model = (key: string, after: Array<string> = [], extra: Partial<CompiledTaskSpec> = {}): CompiledTaskSpec => ({
  ...modelTask(key, ["grep"], after),
  ...extra
})

const ask = (key: string, after: Array<string> = []): CompiledTaskSpec => ({
  ...base(key, after),
  kind: "await_task",
  awaitKind: "ask",
  ask: { authored: true, timeoutMs: 3_600_000, tokenDigest: "ask-digest" }
})

const create = (tasks: Array<CompiledTaskSpec>, extra: Record<string, unknown> = {}) =>
  createRun(tasks, { creatorApplicationId: "app-1", ...extra })

const refusal = (actions: ReadonlyArray<Action>) => named(actions, "run.refuse")[0]?.params.reason
const emitted = (actions: ReadonlyArray<Action>) =>
  actions.filter((action) => action.type === "xstate.emit").map((action) => action.params.event)
const statusOf = (snapshot: Snapshot, key: string) => snapshot.context.tasks.find((t) => t.spec.key === key)?.status

const started = (tasks: Array<CompiledTaskSpec>, extra: Record<string, unknown> = {}) =>
  step(create(tasks, extra), { type: "run.start", at: 1_000 })

const claim = (snapshot: Snapshot, key: string, at = 2_000, executorId = "runner-1") =>
  step(snapshot, {
    type: "task.claim",
    key,
    executorId,
    announces: false,
    eligible: true,
    authorized: true,
    tokenDigest: `token-${key}-${at}`,
    at
  })

const commit = (
  snapshot: Snapshot,
  key: string,
  claimedAt = 2_000,
  at = 3_000,
  outcome: "completed" | "failed" = "completed"
) =>
  step(snapshot, {
    type: "task.commit",
    key,
    executorId: "runner-1",
    tokenDigest: `token-${key}-${claimedAt}`,
    outcome,
    result: { content: "done" },
    fault: null,
    at
  })

describe("run machine: lifecycle", () => {
  it("Run: pending --start--> running; other states refuse not_startable", () => {
    const [running, actions] = started([tool("a")])
    expect(running.value).toBe("running")
    expect(statusOf(running, "a")).toBe("dispatched")
    expect(emitted(actions).map((item) => item.type)).toEqual(["task_status", "turn_status"])
    expect(named(actions, "run.notifyExecutors")[0]!.params.messages[0].message.type).toBe("work_available")
    expect(refusal(step(running, { type: "run.start", at: 2 })[1])).toBe("not_startable")
  })

  it("Run: running --quiescent, deliverable completed--> completed", () => {
    const [running] = started([tool("a"), tool("b", ["a"])])
    const [afterA] = commit(claim(running, "a")[0], "a")
    expect(statusOf(afterA, "b")).toBe("dispatched")
    const [done] = commit(claim(afterA, "b", 4_000)[0], "b", 4_000, 5_000)
    expect(done.value).toBe("completed")
    expect(done.context.completedAt).toBe(5_000)
  })

  it("Run: running --quiescent otherwise--> needs_attention (halt_failure), retry --> running", () => {
    const [running] = started([tool("a", [], { onFailure: "halt" }), tool("b", ["a"])])
    const [failed] = commit(claim(running, "a")[0], "a", 2_000, 3_000, "failed")
    expect(failed.value).toBe("needs_attention")
    expect(failed.context.attention).toEqual({ reason: "halt_failure", blockedTaskKeys: ["a"], overflow: false })
    expect(statusOf(failed, "b")).toBe("waiting")
    const [retried] = step(failed, { type: "task.retry", key: "a", model: null, at: 4_000 })
    expect(retried.value).toBe("running")
    expect(statusOf(retried, "a")).toBe("dispatched")
    expect(retried.context.tasks[0]!.generation).toBe(2)
  })

  it("Run: a propagated failure skips descendants and leaves the deliverable unresolved", () => {
    const [running] = started([tool("a"), tool("b", ["a"]), tool("c", ["b"])])
    const [failed] = commit(claim(running, "a")[0], "a", 2_000, 3_000, "failed")
    expect(statusOf(failed, "b")).toBe("skipped")
    expect(statusOf(failed, "c")).toBe("skipped")
    expect(failed.value).toBe("needs_attention")
    expect(failed.context.attention?.reason).toBe("deliverable_unresolved")
    const [abandoned] = step(failed, { type: "task.abandon", key: "c", at: 4_000 })
    expect(abandoned.value).toBe("completed")
  })

  it("Run: running --pause--> paused; paused --resume--> running with deadlines shifted", () => {
    const [running] = started([tool("a")])
    const [paused, pauseActions] = step(running, { type: "run.pause", force: false, at: 10_000 })
    expect(paused.value).toBe("paused")
    expect(named(pauseActions, "xstate.cancel").length).toBe(1)
    expect(refusal(step(paused, { type: "run.pause", force: false, at: 11_000 })[1])).toBe("not_pausable")
    const [resumed] = step(paused, { type: "run.resume", at: 15_000 })
    expect(resumed.value).toBe("running")
    expect(resumed.context.tasks[0]!.deadlineAt).toBe(1_000 + 60_000 + 5_000)
    expect(refusal(step(resumed, { type: "run.resume", at: 16_000 })[1])).toBe("not_resumable")
  })

  it("Run: paused --pause force--> paused, running rounds aborted and re-asked on resume", () => {
    const [running] = started([model("m")])
    expect(statusOf(running, "m")).toBe("running")
    const [paused] = step(running, { type: "run.pause", force: false, at: 2_000 })
    const [forced, actions] = step(paused, { type: "run.pause", force: true, at: 3_000 })
    expect(named(actions, "run.cancelRound").length).toBe(1)
    expect(statusOf(forced, "m")).toBe("waiting")
    const [resumed, resumeActions] = step(forced, { type: "run.resume", at: 4_000 })
    expect(named(resumeActions, "run.openRound")[0]!.params.ref).toBe("m#1#2")
    expect(statusOf(resumed, "m")).toBe("running")
  })

  it("Run: pending --stop--> canceled", () => {
    const [canceled] = step(create([tool("a")]), { type: "run.stop", force: true, at: 5 })
    expect(canceled.value).toBe("canceled")
    expect(statusOf(canceled, "a")).toBe("canceled")
    expect(refusal(step(canceled, { type: "run.stop", force: true, at: 6 })[1])).toBe("already_terminal")
  })

  it("Run: running --stop force--> canceled at once, the claimant told work_canceled", () => {
    const [claimed] = claim(started([tool("a")])[0], "a")
    const [canceled, actions] = step(claimed, { type: "run.stop", force: true, at: 3_000 })
    expect(canceled.value).toBe("canceled")
    expect(canceled.context.tasks[0]!.error).toEqual({ key: "run_canceled" })
    const messages = named(actions, "run.notifyExecutors").flatMap((action) => action.params.messages)
    expect(messages.map((m: any) => m.message.type)).toContain("work_canceled")
  })

  it("Run: running --stop graceful--> canceling --last started work settled--> canceled", () => {
    const [claimed] = claim(started([tool("a"), tool("b", ["a"])])[0], "a")
    const [canceling] = step(claimed, { type: "run.stop", force: false, at: 3_000 })
    expect(canceling.value).toBe("canceling")
    expect(statusOf(canceling, "b")).toBe("canceled")
    const [canceled] = commit(canceling, "a", 2_000, 4_000)
    expect(statusOf(canceled, "a")).toBe("completed")
    expect(canceled.value).toBe("canceled")
  })

  it("Run: canceling --stop force--> canceled (force escalates)", () => {
    const [claimed] = claim(started([tool("a")])[0], "a")
    const [canceling] = step(claimed, { type: "run.stop", force: false, at: 3_000 })
    const [canceled] = step(canceling, { type: "run.stop", force: true, at: 3_500 })
    expect(canceled.value).toBe("canceled")
  })

  it("DELETE: pending or terminal runs tombstone; live runs refuse run_live", () => {
    const [running] = started([tool("a")])
    expect(refusal(step(running, { type: "run.tombstone", at: 2 })[1])).toBe("run_live")
    const [tombstoned, actions] = step(create([tool("a")]), { type: "run.tombstone", at: 2 })
    expect(tombstoned.value).toBe("tombstoned")
    expect(named(actions, "run.recordTombstone").length).toBe(1)
    expect(named(actions, "xstate.raise")[0]!.params.id).toBe("reap")
  })
})

describe("run machine: claims", () => {
  it("Claimed task: dispatched --claim--> claimed by one executor, deadline restarted", () => {
    const [running] = started([tool("a")])
    const [claimed, actions] = claim(running, "a", 5_000)
    const task = claimed.context.tasks[0]!
    expect(task.claim?.executorId).toBe("runner-1")
    expect(task.deadlineAt).toBe(65_000)
    expect(emitted(actions)).toEqual([])
    expect(refusal(claim(claimed, "a", 6_000)[1])).toBe("already_claimed")
    expect(refusal(claim(running, "a", 6_000, "other")[1])).toBe("not_addressed_here")
  })

  it("Claimed task: claimed --commit--> settled; a wrong token is not_claimant, a replay unchanged", () => {
    const [claimed] = claim(started([tool("a"), tool("b", ["a"])])[0], "a")
    expect(refusal(commit(claimed, "a", 1)[1])).toBe("not_claimant")
    const [settled] = commit(claimed, "a")
    expect(statusOf(settled, "a")).toBe("completed")
    expect(named(commit(settled, "a")[1], "run.answer")[0]!.params.reason).toBe("unchanged")
  })

  it("a commit after the deadline settles by the expiry rule and answers claim_inactive", () => {
    const [claimed] = claim(started([tool("a")])[0], "a")
    const [expired, actions] = commit(claimed, "a", 2_000, 70_000)
    expect(statusOf(expired, "a")).toBe("uncertain")
    expect(named(actions, "run.answer")[0]!.params.reason).toBe("claim_inactive")
  })

  it("expiry: never claimed --> timed_out tool_timeout; a stale timer changes nothing", () => {
    const [running] = started([tool("a")])
    const deadlineAt = running.context.tasks[0]!.deadlineAt!
    const [stale, staleActions] = step(running, { type: "task.deadline", key: "a", generation: 1, deadlineAt: 5 })
    expect(stale).toBe(running)
    expect(staleActions.filter((a) => !a.type.startsWith("xstate."))).toEqual([])
    const [expired] = step(running, { type: "task.deadline", key: "a", generation: 1, deadlineAt })
    expect(statusOf(expired, "a")).toBe("timed_out")
    expect(expired.context.tasks[0]!.error).toEqual({ key: "tool_timeout" })
  })

  it("extend: a claimed row gets a new deadline capped by the announced timeout; others refuse", () => {
    const [running] = started([tool("a")])
    expect(
      refusal(
        step(running, {
          type: "task.extend",
          key: "a",
          executorId: "runner-1",
          tokenDigest: "x",
          timeoutMs: 5,
          at: 2
        })[1]
      )
    ).toBe("not_extendable")
    const [claimed] = claim(running, "a")
    const [extended, actions] = step(claimed, {
      type: "task.extend",
      key: "a",
      executorId: "runner-1",
      tokenDigest: "token-a-2000",
      timeoutMs: 999_999,
      at: 10_000
    })
    expect(extended.context.tasks[0]!.deadlineAt).toBe(70_000)
    expect(emitted(actions)[0]!.type).toBe("task_deadline_extended")
  })
})

describe("run machine: rounds", () => {
  it("a round's tool calls expand into tool tasks and a continuation that takes over the deliverable", () => {
    const [running] = started([model("m")])
    const [expanded, actions] = step(running, {
      type: "inference.replied",
      requestId: "r1",
      status: "completed",
      errorCode: null,
      declined: false,
      usage: { input_tokens: 3 },
      ref: "m#1#1",
      toolCalls: [{ call_id: "call-1", name: "grep", arguments: '{"q":"y"}' }]
    })
    expect(statusOf(expanded, "m")).toBe("completed")
    expect(expanded.context.deliverable).toBe("m-c")
    expect(named(actions, "run.addressCalls")[0]!.params.calls).toEqual([{ key: "m-t0", name: "grep" }])
    expect(expanded.value).toBe("running")
    const [addressed] = step(expanded, {
      type: "task.addressed",
      calls: [{ key: "m-t0", target: { kind: "runner", executor: runner }, timeoutMs: 1_000, replayable: true }],
      at: 3_000
    })
    expect(statusOf(addressed, "m-t0")).toBe("dispatched")
    const [claimed] = claim(addressed, "m-t0", 3_500)
    const [continued, continuedActions] = commit(claimed, "m-t0", 3_500, 3_600)
    const round = named(continuedActions, "run.openRound")[0]!.params
    expect(round).toMatchObject({ key: "m-c", continues: "m", calls: ["m-t0"] })
    const [done] = step(continued, {
      type: "inference.replied",
      requestId: "r2",
      status: "completed",
      errorCode: null,
      declined: false,
      usage: null,
      ref: "m-c#1#1"
    })
    expect(done.value).toBe("completed")
  })

  it("a failed round is asked again within its retry budget, then fails and halts", () => {
    const [running] = started([
      model("m", [], { model: { model: "local/script", retry: 1, tools: [], continues: null } })
    ])
    const failure = (ref: string) =>
      ({
        type: "inference.replied",
        requestId: "r",
        status: "failed",
        errorCode: "provider_error",
        declined: false,
        usage: null,
        ref
      }) as const
    const [again, actions] = step(running, failure("m#1#1"))
    expect(named(actions, "run.openRound")[0]!.params.ref).toBe("m#1#2")
    const [failed] = step(again, failure("m#1#2"))
    expect(statusOf(failed, "m")).toBe("failed")
    expect(failed.value).toBe("needs_attention")
    expect(failed.context.attention?.reason).toBe("halt_failure")
  })

  it("an unserved call fails tool_not_served and is absorbed", () => {
    const [running] = started([model("m")])
    const [expanded] = step(running, {
      type: "inference.replied",
      requestId: "r1",
      status: "completed",
      errorCode: null,
      declined: false,
      usage: null,
      ref: "m#1#1",
      toolCalls: [{ call_id: "c", name: "nope", arguments: "{}" }]
    })
    const [addressed] = step(expanded, {
      type: "task.addressed",
      calls: [{ key: "m-t0", target: { kind: "not_served" }, timeoutMs: 0, replayable: false }],
      at: 5
    })
    expect(statusOf(addressed, "m-t0")).toBe("failed")
    expect(statusOf(addressed, "m-c")).toBe("running")
  })
})

describe("run machine: asks, approvals, races", () => {
  it("an authored ask waits for its resolution with its token", () => {
    const [running] = started([ask("q"), tool("a", ["q"])])
    expect(statusOf(running, "q")).toBe("dispatched")
    expect(running.value).toBe("needs_attention")
    expect(running.context.attention?.reason).toBe("awaiting_human")
    const resolve = (tokenDigest: string | null) =>
      step(running, { type: "task.resolve", key: "q", tokenDigest, outcome: "completed", content: "yes", at: 5 })
    expect(refusal(resolve(null)[1])).toBe("parameter_missing")
    expect(refusal(resolve("wrong")[1])).toBe("not_claimant")
    const [answered] = resolve("ask-digest")
    expect(statusOf(answered, "q")).toBe("completed")
    expect(answered.value).toBe("running")
  })

  it("approval: ask mode parks a model's call; approve dispatches it, deny fails it", () => {
    const spec = tool("a", [], { origin: "model" })
    const [running] = started([spec], { approvalMode: "ask" })
    expect(statusOf(running, "a")).toBe("needs_approval")
    expect(running.context.attention?.reason).toBe("approval_required")
    const by = { userId: "creator", origin: "agent" as const }
    const [approved] = step(running, { type: "task.approve", key: "a", by, at: 10 })
    expect(statusOf(approved, "a")).toBe("dispatched")
    expect(approved.context.tasks[0]!.approval).toEqual({ origin: "agent", decidedBy: "creator", decidedAt: 10 })
    const [denied] = step(running, { type: "task.deny", key: "a", by, reason: "no", at: 10 })
    expect(denied.context.tasks[0]!.error).toEqual({ key: "approval_denied", detail: "no" })
    expect(refusal(step(approved, { type: "task.approve", key: "a", by, at: 11 })[1])).toBe("not_awaiting_approval")
  })

  it("approval: a call approved while paused dispatches on the frozen clock, timed from the resume", () => {
    const [running] = started([tool("a", [], { origin: "model" })], { approvalMode: "ask" })
    const [paused] = step(running, { type: "run.pause", force: false, at: 10_000 })
    const by = { userId: "creator", origin: "agent" as const }
    const [approved, actions] = step(paused, { type: "task.approve", key: "a", by, at: 20_000 })
    expect(statusOf(approved, "a")).toBe("dispatched")
    expect(taskOf(approved, "a").deadlineAt).toBe(10_000 + 60_000)
    expect(named(actions, "xstate.raise")).toEqual([])
    const [resumed, resumeActions] = step(approved, { type: "run.resume", at: 30_000 })
    expect(taskOf(resumed, "a").deadlineAt).toBe(30_000 + 60_000)
    expect(named(resumeActions, "xstate.raise").length).toBe(1)
  })

  it("a race settles at its first completed member and cancels the losers", () => {
    const join: CompiledTaskSpec = {
      ...base("race", ["x", "y"]),
      kind: "join_task",
      origin: "kernel",
      visibility: "hidden",
      join: { members: ["x", "y"], until: 1, losers: "cancel" }
    }
    const [running] = started([tool("x"), tool("y"), join])
    const [won] = commit(claim(running, "x")[0], "x")
    expect(statusOf(won, "race")).toBe("completed")
    expect(statusOf(won, "y")).toBe("canceled")
    expect(won.value).toBe("completed")
  })

  it("task verbs on a finished run answer not_adjudicable", () => {
    const [canceled] = step(create([tool("a")]), { type: "run.stop", force: true, at: 5 })
    expect(refusal(step(canceled, { type: "task.retry", key: "a", model: null, at: 6 })[1])).toBe("not_adjudicable")
  })
})

describe("run machine: the run inputs door", () => {
  const accept = (snapshot: Snapshot, inputId: string, steer = false, at = 2_000) =>
    step(snapshot, { type: "input.accept", inputId, steer, dueAt: null, row: { text: inputId }, at })
  it("a queued row lands at quiescence as a mainline round continuing the last mainline model", () => {
    const [running] = started([model("m")])
    const [queued] = accept(running, "in-1")
    expect(queued.context.inputs).toHaveLength(1)
    const [landed, actions] = roundReplied(queued, "m#1#1")
    expect(landed.value).toBe("running")
    expect(landed.context.deliverable).toBe("i1-model")
    expect(named(actions, "run.openRound")[0]!.params).toMatchObject({ key: "i1-model", continues: "m" })
    expect(named(actions, "run.updateInput")[0]!.params).toMatchObject({
      inputId: "in-1",
      state: "consumed",
      taskKey: "i1-model"
    })
    expect(landed.context.inputs).toEqual([])
  })

  it("a steer lands in the next mainline round", () => {
    const [running] = started([model("m"), model("n", ["m"])])
    const [steering] = accept(running, "st-1", true)
    const [next, actions] = roundReplied(steering, "m#1#1")
    expect(named(actions, "run.openRound")[0]!.params).toMatchObject({ key: "n", steers: ["st-1"] })
    expect(next.context.inputs).toEqual([])
  })

  it("refusals: run_not_appendable without a mainline model, run_settled once settled, input_queue_full at 16", () => {
    expect(refusal(accept(started([tool("a")])[0], "x")[1])).toBe("run_not_appendable")
    const [canceled] = step(create([model("m")]), { type: "run.stop", force: true, at: 5 })
    expect(refusal(accept(canceled, "x")[1])).toBe("run_settled")
    let snapshot = create([model("m")])
    for (let i = 0; i < 16; i++) snapshot = accept(snapshot, `in-${i}`)[0]
    expect(refusal(accept(snapshot, "in-16")[1])).toBe("input_queue_full")
  })
})

describe("run machine: a model's kernel calls", () => {
  const kernel = {
    kernelTools: {
      ask: "svc.human.ask",
      wait: "svc.graph.wait",
      session_read: "svc.conversation.read",
      // A canonical name no part of the kernel carries out (every catalog tool is carried out now).
      retired: "svc.retired.tool"
    }
  }

  it("svc.human.ask parks awaiting_input, answered without a token; the continuation reads the answer", () => {
    const [running] = started([model("m")], kernel)
    const [parked, actions] = firstRoundReplied(running, [{ call_id: "c", name: "ask", arguments: '{"prompt":"Go?"}' }])
    expect(statusOf(parked, "m-t0")).toBe("awaiting_input")
    expect(parked.context.attention?.reason).toBe("awaiting_human")
    expect(named(actions, "run.addressCalls")).toEqual([])
    expect(named(actions, "run.insertTasks")[0]!.params.details["m-t0"]).toMatchObject({ prompt: "Go?" })
    const [answered, after] = step(parked, {
      type: "task.resolve",
      key: "m-t0",
      tokenDigest: null,
      outcome: "completed",
      content: "yes",
      at: 5_000
    })
    expect(statusOf(answered, "m-t0")).toBe("completed")
    expect(named(after, "run.openRound")[0]!.params).toMatchObject({ key: "m-c", calls: ["m-t0"] })
  })

  it("svc.graph.wait waits on a task of the run; a kernel tool not carried out here fails kernel_tool_unavailable", () => {
    const [running] = started([tool("a"), model("m")], kernel)
    const [expanded, actions] = firstRoundReplied(running, [
      { call_id: "c1", name: "wait", arguments: '{"task":"a"}' },
      { call_id: "c2", name: "retired", arguments: "{}" },
      { call_id: "c3", name: "session_read", arguments: '{"session_id":"x"}' }
    ])
    expect(statusOf(expanded, "m-t0")).toBe("dispatched")
    expect(statusOf(expanded, "m-t1")).toBe("failed")
    expect(expanded.context.tasks.find((t) => t.spec.key === "m-t1")!.error).toEqual({ key: "kernel_tool_unavailable" })
    // The conversation reads are a job's (KernelCalls).
    expect(statusOf(expanded, "m-t2")).toBe("dispatched")
    expect(named(actions, "run.callKernel").map((action) => action.params.canonical)).toEqual(["svc.conversation.read"])
    const [waited] = commit(claim(expanded, "a")[0], "a")
    expect(statusOf(waited, "m-t0")).toBe("completed")
    const [read] = step(waited, {
      type: "task.kernelAnswered",
      key: "m-t2",
      generation: 1,
      outcome: "completed",
      result: { output: "{}" },
      errorKey: null,
      at: 3_000
    })
    expect(statusOf(read, "m-c")).toBe("running")
  })
})

describe("run machine: delegate_task", () => {
  const kernel = { kernelTools: { delegate_task: "svc.graph.delegate_task" } }
  const delegate = (wait: boolean) =>
    firstRoundReplied(started([model("m")], kernel)[0], [
      { call_id: "d", name: "delegate_task", arguments: JSON.stringify({ prompt: "sub", wait }) }
    ])

  it("starts a fresh model task beside the call and answers its key at once", () => {
    const [expanded, actions] = delegate(false)
    expect(statusOf(expanded, "m-t0")).toBe("completed")
    expect(statusOf(expanded, "m-t0-model-1")).toBe("running")
    expect(expanded.context.tasks.find((t) => t.spec.key === "m-t0-model-1")!.spec).toMatchObject({
      mainline: false,
      expansionParent: "m-t0"
    })
    expect(named(actions, "run.recordResult")[0]!.params).toEqual({ key: "m-t0", result: { output: "m-t0-model-1" } })
    expect(named(actions, "run.insertTasks")[0]!.params.details["m-t0-model-1"]).toMatchObject({ prompt: "sub" })
    expect(statusOf(expanded, "m-c")).toBe("running")
  })

  it("with wait, the call's result is the delegated task's", () => {
    const [expanded] = delegate(true)
    expect(statusOf(expanded, "m-t0")).toBe("dispatched")
    const [done] = step(expanded, {
      type: "inference.replied",
      requestId: "r2",
      status: "completed",
      errorCode: null,
      declined: false,
      usage: null,
      ref: "m-t0-model-1#1#1"
    })
    expect(statusOf(done, "m-t0")).toBe("completed")
    expect(statusOf(done, "m-c")).toBe("running")
  })
})

describe("run machine: claims under a graceful stop", () => {
  it("a dispatched row of a gracefully canceling run may still be claimed and committed", () => {
    const [running] = started([tool("a"), tool("b"), tool("c", ["a"])])
    const [canceling] = step(running, { type: "run.stop", force: false, at: 1_500 })
    expect(canceling.value).toBe("canceling")
    expect(statusOf(canceling, "c")).toBe("canceled")
    const [claimed, actions] = claim(canceling, "a")
    expect(refusal(actions)).toBeUndefined()
    const [afterA] = commit(claimed, "a")
    expect(statusOf(afterA, "a")).toBe("completed")
    expect(afterA.value).toBe("canceling")
  })
})

describe("run machine: kernel calls the service carries out", () => {
  it("a memory call is dispatched to a job, not an inbox; its answer settles it; a late answer is ignored", () => {
    const [running] = started([model("m")], { kernelTools: { memory_read: "svc.memory.read" } })
    const [expanded, actions] = firstRoundReplied(running, [
      { call_id: "c", name: "memory_read", arguments: '{"path":"user/x.md"}' }
    ])
    expect(statusOf(expanded, "m-t0")).toBe("dispatched")
    expect(named(actions, "run.callKernel")[0]!.params).toEqual({
      key: "m-t0",
      generation: 1,
      canonical: "svc.memory.read"
    })
    expect(named(actions, "run.notifyExecutors")).toEqual([])
    const rows = named(actions, "run.recordTasks")[0]!.params.tasks
    expect(rows.find((row: any) => row.key === "m-t0").inboxKind).toBeNull()
    const answer = (generation: number) =>
      step(expanded, {
        type: "task.kernelAnswered",
        key: "m-t0",
        generation,
        outcome: "completed",
        result: { output: "hello" },
        errorKey: null,
        at: 3_000
      })
    const [stale, staleActions] = answer(2)
    expect(stale).toBe(expanded)
    expect(staleActions.filter((action) => !action.type.startsWith("xstate."))).toEqual([])
    const [answered] = answer(1)
    expect(statusOf(answered, "m-t0")).toBe("completed")
    expect(statusOf(answered, "m-c")).toBe("running")
  })
})

// A tool task's input lives on its row only (the snapshot is written on every step): its approval
// verdict is judged as it enters the run (acceptance, append, its round's expansion) and kept.
describe("run machine: tool inputs stay on their rows", () => {
  const marker = `distinctive-${"z".repeat(4_000)}`
  const rules: ReadonlyArray<ApprovalRule> = [
    { tool: "grep", verdict: "allow" },
    { tool: "grep", path: "q", match: "secret*", verdict: "deny", reason: "no secrets" },
    { tool: "grep", path: "q", match: "secret*", verdict: "ask", origin: "author" }
  ]
  const secret = (key: string, after: Array<string> = []) =>
    tool(key, after, { tool: { ...tool(key).tool!, input: { q: `secret-${marker}` } } })
  const calls = [
    { call_id: "c0", name: "grep", arguments: JSON.stringify({ q: "todo" }) },
    { call_id: "c1", name: "grep", arguments: JSON.stringify({ q: `secret-${marker}` }) }
  ]
  const addressBoth = (snapshot: Snapshot) =>
    step(snapshot, {
      type: "task.addressed",
      calls: ["m-t0", "m-t1"].map((key) => ({
        key,
        target: { kind: "runner" as const, executor: runner },
        timeoutMs: 1_000,
        replayable: false
      })),
      at: 3_000
    })
  const by = { userId: "creator", origin: "agent" as const }

  it("the snapshot keeps no tool input; rules matching on it still park, deny and grant", () => {
    const [running] = started([secret("a"), model("m")], { approvalMode: "rules", approvalRules: rules })
    expect(statusOf(running, "a")).toBe("needs_approval")
    const [appended, appendActions] = step(running, {
      type: "run.append",
      compiledAt: 1,
      expectedRevision: null,
      tasks: [secret("b")],
      details: { b: { tool_input: { q: `secret-${marker}` } } },
      deliverable: "b",
      seedIsModel: false,
      resolve: [],
      at: 1_500
    })
    expect(statusOf(appended, "b")).toBe("needs_approval")
    expect(named(appendActions, "run.insertTasks")[0]!.params.tasks[0].tool).not.toHaveProperty("input")
    const [expanded, actions] = firstRoundReplied(appended, calls)
    expect(named(actions, "run.insertTasks")[0]!.params.details["m-t1"].tool_input).toEqual({ q: `secret-${marker}` })
    const [addressed] = addressBoth(expanded)
    expect(statusOf(addressed, "m-t0")).toBe("dispatched")
    expect(taskOf(addressed, "m-t1")).toMatchObject({
      status: "failed",
      error: { key: "approval_denied", detail: "no secrets" }
    })
    const [approved] = step(addressed, { type: "task.approve", key: "a", by, at: 4_000 })
    expect(statusOf(approved, "a")).toBe("dispatched")
    for (const snapshot of [running, appended, expanded, addressed, approved]) {
      expect(JSON.stringify(snapshot.context).includes(marker)).toBe(false)
    }
  })

  it("a version-3 snapshot (inputs kept) migrates: verdicts judged over the old inputs, inputs dropped; it steps as before", () => {
    const [running] = started([secret("a"), model("m")], { approvalMode: "rules", approvalRules: rules })
    const [expanded] = firstRoundReplied(running, calls)
    const inputs: Record<string, unknown> = {
      a: { q: `secret-${marker}` },
      "m-t0": { q: "todo" },
      "m-t1": { q: `secret-${marker}` }
    }
    // What version 3 wrote: each tool task's input in its spec, no verdict beside it.
    const v3Tasks = expanded.context.tasks.map(({ spec: { approvalVerdict: _verdict, ...spec }, ...task }) => ({
      ...task,
      spec: spec.tool === null ? spec : { ...spec, tool: { ...spec.tool, input: inputs[spec.key] } }
    }))
    const v3: PersistedSnapshot = {
      status: "active",
      value: expanded.value,
      context: { ...expanded.context, tasks: v3Tasks }
    }
    expect(JSON.stringify(v3.context).includes(marker)).toBe(true)
    const migrated = migrateSnapshot(machines.run, v3, 3) as PersistedSnapshot
    expect(JSON.stringify(migrated.context).includes(marker)).toBe(false)
    const restored = runMachine.resolveState({
      value: migrated.value,
      context: migrated.context as Snapshot["context"]
    })
    expect(["a", "m-t0", "m-t1"].map((key) => taskOf(restored, key).spec.approvalVerdict)).toEqual([
      { verdict: "park" },
      { verdict: "grant" },
      { verdict: "fail", reason: "no secrets" }
    ])
    const [addressed] = addressBoth(restored)
    expect(statusOf(addressed, "m-t0")).toBe("dispatched")
    expect(taskOf(addressed, "m-t1")).toMatchObject({ status: "failed", error: { key: "approval_denied" } })
    const [approved] = step(addressed, { type: "task.approve", key: "a", by, at: 4_000 })
    expect(statusOf(approved, "a")).toBe("dispatched")
  })
})
