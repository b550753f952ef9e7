// The run machine's tool_call (svc.tools.call: a declared tool's own task, its approval judged under
// the inner name) and waits on another run's task (the wait step's run_public_id, svc.graph.wait):
// the waiter asks the other run to watch, the watched run answers once the task settles.

import { machines, migrateSnapshot, type PersistedSnapshot } from "@troupe/machines/registry"
import type { CompiledTaskSpec } from "@troupe/machines/run/context"
import { runMachine, runVersion } from "@troupe/machines/run/run.machine"
import { describe, expect, it } from "vitest"
import {
  baseTask as base,
  createRun,
  modelTask,
  named,
  firstRoundReplied as replied,
  type Snapshot,
  step,
  taskOf
} from "../support/runMachine.ts"

const runner = { executorId: "runner-1", displayName: "Runner" }

const model = (key: string): CompiledTaskSpec => modelTask(key, ["tool_call", "wait"])

const tool = (key: string): CompiledTaskSpec => ({
  ...base(key),
  tool: {
    name: "grep",
    alias: null,
    target: { kind: "runner", executor: runner },
    timeoutMs: 60_000,
    replayable: false,
    toolCallId: key,
    input: {}
  }
})

const foreignWait = (key: string, timeoutMs: number | null = null): CompiledTaskSpec => ({
  ...base(key),
  kind: "await_task",
  awaitKind: "wait",
  onFailure: "absorb",
  wait: { task: "q", run: "run-0", timeoutMs }
})

const hosted = {
  conversationId: "conversation-1",
  turnId: "turn-1",
  creatorApplicationId: "app-1",
  kernelTools: { tool_call: "svc.tools.call", wait: "svc.graph.wait" }
}

const create = (tasks: Array<CompiledTaskSpec>, extra: Record<string, unknown> = {}) =>
  createRun(tasks, { ...hosted, ...extra })
const started = (tasks: Array<CompiledTaskSpec>, extra: Record<string, unknown> = {}) =>
  step(create(tasks, extra), { type: "run.start", at: 1_000 })

const statusOf = (snapshot: Snapshot, key: string) => taskOf(snapshot, key).status

const toolCall = (name: unknown, input: unknown = { q: "y" }) =>
  replied(started([model("m")])[0], [
    { call_id: "call-9", name: "tool_call", arguments: JSON.stringify({ name, input }) }
  ])

const address = (snapshot: Snapshot, target: Record<string, unknown>) =>
  step(snapshot, {
    type: "task.addressed",
    calls: [{ key: "m-t0", target, timeoutMs: 5_000, replayable: false }] as never,
    at: 2_000
  })

describe("run machine: tool_call", () => {
  it("tool_call becomes the named declared tool's own task: its input, the outer call id, addressed as that tool", () => {
    const [expanded, actions] = toolCall("grep")
    expect(taskOf(expanded, "m-t0").spec.tool).toMatchObject({
      name: "grep",
      toolCallId: "call-9",
      target: { kind: "unaddressed" },
      via: "tool_call"
    })
    // The input is the row's (tool_input), not the snapshot's.
    expect(taskOf(expanded, "m-t0").spec.tool).not.toHaveProperty("input")
    expect(named(actions, "run.addressCalls")[0]!.params.calls).toEqual([
      { key: "m-t0", name: "grep", via: "tool_call" }
    ])
    expect(named(actions, "run.insertTasks")[0]!.params.details["m-t0"]).toEqual({
      tool_input: { q: "y" },
      tool_call_id: "call-9"
    })
    const [addressed, dispatched] = address(expanded, { kind: "runner", executor: runner })
    expect(statusOf(addressed, "m-t0")).toBe("dispatched")
    expect(taskOf(addressed, "m-t0").deadlineAt).toBe(7_000)
    const work = named(dispatched, "run.notifyExecutors")[0]!.params.messages[0]
    expect(work).toMatchObject({ executorIds: ["runner-1"], message: { task_key: "m-t0", tool_name: "grep" } })
    const [claimed] = step(addressed, {
      type: "task.claim",
      key: "m-t0",
      executorId: "runner-1",
      announces: false,
      eligible: true,
      authorized: true,
      tokenDigest: "t",
      at: 3_000
    })
    const [continued, after] = step(claimed, {
      type: "task.commit",
      key: "m-t0",
      executorId: "runner-1",
      tokenDigest: "t",
      outcome: "completed",
      result: { content: "7 hits" },
      fault: null,
      at: 3_500
    })
    expect(named(after, "run.openRound")[0]!.params).toMatchObject({ key: "m-c", calls: ["m-t0"] })
    expect(statusOf(continued, "m-c")).toBe("running")
  })

  it("a tool_call naming no declared tool fails tool_unknown (absorbed); the model reads why", () => {
    const [expanded] = toolCall("nope")
    const [refused, actions] = address(expanded, { kind: "not_declared" })
    expect(taskOf(refused, "m-t0")).toMatchObject({ status: "failed", error: { key: "tool_unknown" }, absorbed: true })
    expect(named(actions, "run.recordResult")[0]!.params).toMatchObject({ key: "m-t0", result: { is_error: true } })
    expect(named(actions, "run.recordResult")[0]!.params.result.output).toContain('"nope"')
    expect(statusOf(refused, "m-c")).toBe("running")
  })

  it("a tool_call canceled before its addressing answers stays canceled: a late not_declared or not_served is ignored", () => {
    const [expanded] = toolCall("nope")
    const [canceled] = step(expanded, { type: "task.cancel", key: "m-t0", at: 1_500 })
    expect(statusOf(canceled, "m-t0")).toBe("canceled")
    for (const target of [{ kind: "not_declared" }, { kind: "not_served" }]) {
      const [late, actions] = address(canceled, target)
      expect(taskOf(late, "m-t0")).toMatchObject({ status: "canceled", error: null })
      expect(named(actions, "run.recordResult")).toEqual([])
    }
  })

  it("approval judges the inner tool's name and input; a rule naming tool_call itself may deny or ask, never grant", () => {
    const judged = (rules: Array<Record<string, unknown>>) => {
      const [running] = started([model("m")], { approvalMode: "rules", approvalRules: rules })
      const [expanded] = replied(running, [
        { call_id: "c", name: "tool_call", arguments: JSON.stringify({ name: "grep", input: { q: "y" } }) }
      ])
      return taskOf(address(expanded, { kind: "runner", executor: runner })[0], "m-t0")
    }
    expect(judged([{ tool: "grep", path: "q", match: "y", verdict: "allow" }]).status).toBe("dispatched")
    expect(judged([{ tool: "tool_call", verdict: "allow" }])).toMatchObject({
      status: "failed",
      error: { key: "approval_denied", detail: "no approval rule allows grep" }
    })
    const allowGrep = { tool: "grep", verdict: "allow" }
    expect(judged([allowGrep, { tool: "tool_call", path: "name", match: "gr*", verdict: "ask" }]).status).toBe(
      "needs_approval"
    )
    expect(judged([allowGrep, { tool: "tool_call", verdict: "deny", reason: "no deferred calls" }])).toMatchObject({
      status: "failed",
      error: { key: "approval_denied", detail: "no deferred calls" }
    })
  })
})

describe("run machine: waits on another run's task", () => {
  const answered = (snapshot: Snapshot, outcome: "settled" | "not_found", generation = 1) =>
    step(snapshot, { type: "wait.answered", key: "w", generation, outcome })

  it("wait: waiting → dispatched (the other run asked to watch) → completed when the target settles (result = target's result)", () => {
    const [waiting, actions] = started([foreignWait("w")])
    expect(statusOf(waiting, "w")).toBe("dispatched")
    expect(waiting.value).toBe("running")
    expect(named(actions, "run.watchTask")[0]!.params).toEqual({ run: "run-0", task: "q", key: "w", generation: 1 })
    const [done, after] = answered(waiting, "settled")
    expect(statusOf(done, "w")).toBe("completed")
    expect(named(after, "run.recordResult")[0]!.params).toEqual({ key: "w", result: {}, from: "q", fromRun: "run-0" })
    expect(done.value).toBe("completed")
  })

  it("a wait whose target is no task of an earlier run of the conversation fails wait_target_not_found", () => {
    const [waiting] = started([foreignWait("w")])
    const [failed, actions] = answered(waiting, "not_found")
    expect(taskOf(failed, "w")).toMatchObject({ status: "failed", error: { key: "wait_target_not_found" } })
    expect(named(actions, "run.recordResult")[0]!.params.result).toMatchObject({ is_error: true })
  })

  it("wait: dispatched → timed_out ends only the wait; a later answer, or one of another generation, is ignored", () => {
    const [waiting] = started([foreignWait("w", 5_000)])
    expect(answered(waiting, "settled", 2)[0]).toBe(waiting)
    const [timedOut] = step(waiting, { type: "task.deadline", key: "w", generation: 1, deadlineAt: 6_000 })
    expect(taskOf(timedOut, "w")).toMatchObject({ status: "timed_out", error: { key: "await_timeout" } })
    const [late, actions] = answered(timedOut, "settled")
    expect(late).toBe(timedOut)
    expect(named(actions, "run.recordResult")).toEqual([])
  })

  it("a model's wait naming run_public_id waits on that run's task", () => {
    const [expanded, actions] = replied(started([model("m")])[0], [
      { call_id: "c", name: "wait", arguments: JSON.stringify({ task: "q", run_public_id: "run-0", timeout_ms: 10 }) }
    ])
    expect(taskOf(expanded, "m-t0").spec.wait).toEqual({ task: "q", run: "run-0", timeoutMs: 10 })
    expect(statusOf(expanded, "m-t0")).toBe("dispatched")
    expect(named(actions, "run.watchTask")[0]!.params).toEqual({ run: "run-0", task: "q", key: "m-t0", generation: 1 })
  })

  it("a model's wait naming this run's own id waits on this run's task", () => {
    const [expanded, actions] = replied(started([model("m")])[0], [
      { call_id: "c", name: "wait", arguments: JSON.stringify({ task: "m", run_public_id: "RUN-1" }) }
    ])
    expect(taskOf(expanded, "m-t0").spec.wait).toMatchObject({ task: "m", run: null })
    expect(named(actions, "run.watchTask")).toEqual([])
    expect(statusOf(expanded, "m-t0")).toBe("completed")
  })

  it("a model's wait on a key this run does not have fails wait_target_not_found at once", () => {
    const [expanded] = replied(started([model("m")])[0], [
      { call_id: "c", name: "wait", arguments: JSON.stringify({ task: "nowhere" }) }
    ])
    expect(taskOf(expanded, "m-t0")).toMatchObject({ status: "failed", error: { key: "wait_target_not_found" } })
    expect(statusOf(expanded, "m-c")).toBe("running")
  })

  /** Task a claimed by runner-1 at 2 000 and committed `outcome` with `content` at 3 000. */
  const settleA = (snapshot: Snapshot, outcome: "completed" | "failed", content: string) => {
    const [claimed] = step(snapshot, {
      type: "task.claim",
      key: "a",
      executorId: "runner-1",
      announces: false,
      eligible: true,
      authorized: true,
      tokenDigest: "t",
      at: 2_000
    })
    return step(claimed, {
      type: "task.commit",
      key: "a",
      executorId: "runner-1",
      tokenDigest: "t",
      outcome,
      result: { content },
      fault: null,
      at: 3_000
    })
  }

  it("the watched run tells its watcher once the task settles, and at once when it already has", () => {
    const watcher = { run: "run-2", key: "w", generation: 1 }
    const [running] = started([tool("a"), tool("b")])
    const [watching, none] = step(running, { type: "task.watch", key: "a", watcher })
    expect(watching.context.watchers).toEqual([{ task: "a", ...watcher }])
    expect(named(none, "run.answerWatcher")).toEqual([])
    const [settled, told] = settleA(watching, "failed", "boom")
    expect(named(told, "run.answerWatcher")[0]!.params).toEqual({
      watcher: { task: "a", ...watcher },
      outcome: "settled"
    })
    expect(settled.context.watchers).toEqual([])
    const [, atOnce] = step(settled, { type: "task.watch", key: "a", watcher: { ...watcher, key: "w2" } })
    expect(named(atOnce, "run.answerWatcher")[0]!.params.outcome).toBe("settled")
  })

  it("a watch of a task the run does not have, or of a tombstoned run, answers not_found", () => {
    const watcher = { run: "run-2", key: "w", generation: 1 }
    const [running] = started([tool("a")])
    const [, unknown] = step(running, { type: "task.watch", key: "zz", watcher })
    expect(named(unknown, "run.answerWatcher")[0]!.params.outcome).toBe("not_found")
    const pending = create([tool("a")])
    const [watched] = step(pending, { type: "task.watch", key: "a", watcher })
    const [tombstoned, actions] = step(watched, { type: "run.tombstone", at: 5 })
    expect(tombstoned.value).toBe("tombstoned")
    expect(named(actions, "run.answerWatcher")[0]!.params).toMatchObject({ outcome: "not_found" })
  })

  it("a version-2 snapshot migrates to a run nothing watches, is restored and answers a later watcher", () => {
    expect(runVersion).toBe(4)
    const [running] = started([tool("a"), tool("b")])
    const { watchers: _watchers, ...v2Context } = running.context
    const v2: PersistedSnapshot = { status: "active", value: running.value, context: v2Context }
    const migrated = migrateSnapshot(machines.run, v2, 2) as PersistedSnapshot
    expect(migrated.context).toMatchObject({ watchers: [] })
    const restored = runMachine.resolveState({
      value: migrated.value,
      context: migrated.context as Snapshot["context"]
    })
    const watcher = { run: "run-2", key: "w", generation: 1 }
    const [watching] = step(restored, { type: "task.watch", key: "a", watcher })
    const [settled, told] = settleA(watching, "completed", "done")
    expect(named(told, "run.answerWatcher")[0]!.params).toEqual({
      watcher: { task: "a", ...watcher },
      outcome: "settled"
    })
    expect(settled.context.watchers).toEqual([])
  })
})
