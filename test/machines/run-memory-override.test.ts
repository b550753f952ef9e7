// The run machine's memory calls in a workspace whose svc.memory a tool provider overrides (spec
// "Tool provider overrides": the six verbs route to the provider): the kernel job's routing turns
// the call into the provider's tool call under the catalog wire name, dispatched, claimed and
// committed as a runner's tool is, its continuation reading the result; a stale routing is ignored.
import { describe, expect, it } from "vitest"
import { firstRoundReplied, modelTask, named, type Snapshot, startRun, step, taskOf } from "../support/runMachine.ts"

const provider = { executorId: "provider-1", displayName: "Memory provider" }
const scope = { bindings: [{ name: "conversation", scope: "conversation", access: "read_write" }] }

const expanded = () => {
  const [running] = startRun([modelTask("m", ["memory_read", "remember"])], {
    kernelTools: { memory_read: "svc.memory.read", remember: "svc.memory.write" },
    kernelAliases: { remember: "memory_write" }
  })
  return firstRoundReplied(running, [
    { call_id: "call-0", name: "memory_read", arguments: JSON.stringify({ path: "user/a.md" }) },
    { call_id: "call-1", name: "remember", arguments: JSON.stringify({ path: "user/a.md", content: "x" }) }
  ])[0]
}

const routed = (snapshot: Snapshot, key: string, toolCallId: string, generation = 1) =>
  step(snapshot, {
    type: "task.kernelRouted",
    key,
    generation,
    executor: provider,
    timeoutMs: 30_000,
    replayable: true,
    toolCallId,
    scope,
    at: 2_000
  })

describe("run machine: svc.memory overridden", () => {
  it("a routed memory call becomes the provider's tool call under the wire name, listed on its inbox", () => {
    const [snapshot, actions] = routed(expanded(), "m-t0", "call-0")
    const task = taskOf(snapshot, "m-t0")
    expect(task.spec).not.toHaveProperty("kernel")
    expect(task.spec.tool).toEqual({
      name: "memory_read",
      alias: null,
      target: { kind: "runner", executor: provider },
      timeoutMs: 30_000,
      replayable: true,
      toolCallId: "call-0"
    })
    expect(task).toMatchObject({ status: "dispatched", deadlineAt: 32_000, claimed: false })
    expect(named(actions, "run.routeTask").map((action) => action.params)).toEqual([
      { key: "m-t0", toolName: "memory_read", toolAlias: null, toolCallId: "call-0", scope }
    ])
    expect(named(actions, "run.notifyExecutors")[0]!.params.messages).toEqual([
      {
        executorIds: ["provider-1"],
        message: {
          type: "work_available",
          kind: "tool_call",
          run_public_id: "run-1",
          task_key: "m-t0",
          tool_name: "memory_read"
        }
      }
    ])
    const row = named(actions, "run.recordTasks")[0]!.params.tasks.find((each: { key: string }) => each.key === "m-t0")
    expect(row).toMatchObject({ inboxKind: "tool_call", inboxExecutorId: "provider-1", targetExecutorId: "provider-1" })
    // An alias's call goes under the wire name the provider announces, the alias kept beside it.
    const [aliased] = routed(snapshot, "m-t1", "call-1")
    expect(taskOf(aliased, "m-t1").spec.tool).toMatchObject({ name: "memory_write", alias: "remember" })
  })

  it("the provider claims and commits it; the continuation reads its result once every call settles", () => {
    const [first] = routed(expanded(), "m-t0", "call-0")
    const [both] = routed(first, "m-t1", "call-1")
    let snapshot = both
    for (const key of ["m-t0", "m-t1"]) {
      const [claimed, claimActions] = step(snapshot, {
        type: "task.claim",
        key,
        executorId: "provider-1",
        announces: true,
        eligible: true,
        authorized: true,
        tokenDigest: `token-${key}`,
        at: 3_000
      })
      expect(named(claimActions, "run.refuse")).toEqual([])
      expect(taskOf(claimed, key)).toMatchObject({ claimed: true, claim: { executorId: "provider-1" } })
      const [committed, commitActions] = step(claimed, {
        type: "task.commit",
        key,
        executorId: "provider-1",
        tokenDigest: `token-${key}`,
        outcome: "completed",
        result: { content: "ship on friday" },
        fault: null,
        at: 4_000
      })
      expect(named(commitActions, "run.recordResult").map((action) => action.params)).toEqual([
        { key, result: { content: "ship on friday" } }
      ])
      expect(taskOf(committed, key).status).toBe("completed")
      snapshot = committed
    }
    expect(taskOf(snapshot, "m-c").status).toBe("running")
  })

  it("a routing of an earlier generation, or of a call no longer under way, is ignored", () => {
    const snapshot = expanded()
    const [stale, staleActions] = routed(snapshot, "m-t0", "call-0", 2)
    expect(taskOf(stale, "m-t0").spec).toMatchObject({ kernel: "svc.memory.read", tool: null })
    expect(staleActions).toEqual([])
    const [canceled] = step(snapshot, { type: "task.cancel", key: "m-t0", at: 1_500 })
    expect(taskOf(canceled, "m-t0").status).toBe("canceled")
    const [late] = routed(canceled, "m-t0", "call-0")
    expect(taskOf(late, "m-t0")).toMatchObject({ status: "canceled", spec: { kernel: "svc.memory.read" } })
  })
})
