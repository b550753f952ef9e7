// Claims on dispatched inbox rows (spec "Inbox task"; runs supplement "Executor inbox"): claim,
// extend and commit by the executor a row is addressed to, and the deadline timer's expiry rule.

import type { RunContext, Task } from "../context.ts"
import { runEffects as fx } from "../effects.ts"
import type { RunEvent } from "../events.ts"
import { answer, complete, type Draft, fail, find, isSettled, put, refuse } from "./graph.ts"
import { approvalExpired, refuseApproval } from "./kernelApproval.ts"

type EventOf<T extends RunEvent["type"]> = Extract<RunEvent, { type: T }>

/** Whether the task's inbox row is addressed to `executorId`. */
const addressedTo = (context: RunContext, task: Task, executorId: string, announces: boolean) => {
  if (task.spec.kind !== "tool_task") return context.creatorApplicationId === executorId
  // A kernel call is the service's own: no executor's.
  if (task.spec.tool === null) return false
  // A pool row stays addressed to every provider announcing its name after it is claimed (the
  // others are then refused already_claimed), and to its claimant, whenever it announced the name
  // (whom a claim holds is `holds`').
  const target = task.spec.tool!.target
  if (target.kind === "runner") return target.executor.executorId === executorId
  if (target.kind === "pool") {
    return announces || target.executorIds.includes(executorId) || task.claim?.executorId === executorId
  }
  return task.claim?.executorId === executorId
}

/** A force stop settles every dispatched row at once, so a canceling run's rows are a graceful stop's. */
const claimable = (context: RunContext) =>
  context.status === "running" ||
  context.status === "paused" ||
  context.status === "needs_attention" ||
  context.status === "canceling"

/** The deadline as the run's clock reads it: a paused run's clocks stand still. */
export const effectiveDeadline = (context: RunContext, task: Task, at: number) =>
  context.pausedAt === null ? task.deadlineAt! : task.deadlineAt! + (at - context.pausedAt)

/** The expiry rule: never claimed or replayable → timed_out; else uncertain. */
const expire = (draft: Draft, task: Task) =>
  !task.claimed || task.spec.tool!.replayable
    ? fail(draft, task.spec.key, "timed_out", { key: "tool_timeout" })
    : fail(draft, task.spec.key, "uncertain", { key: "tool_uncertain" })

export const claim = (draft: Draft, event: EventOf<"task.claim">) => {
  const context = draft.context
  const task = find(context, event.key)
  if (task === undefined || context.tombstoned) return refuse(draft, "not_found")
  if (!addressedTo(context, task, event.executorId, event.announces)) return refuse(draft, "not_addressed_here")
  if (task.spec.kind !== "tool_task") return refuse(draft, "not_claimable_kind")
  if (task.status !== "dispatched" || !claimable(context)) return refuse(draft, "task_not_claimable")
  if (task.claimed) return refuse(draft, "already_claimed")
  // The deadline wins, swept or not: a row never claimed past it settles by the expiry rule.
  if (task.deadlineAt !== null && effectiveDeadline(context, task, draft.at) < draft.at) {
    expire(draft, task)
    return answer(draft, "task_not_claimable")
  }
  if (!event.eligible) return refuse(draft, "not_eligible")
  if (!event.authorized) return refuse(draft, "not_authorized")
  // A pool row is run by its claimant: its own announcement sets the budget, the extension's cap
  // and the replayability the expiry rule reads.
  const { announcedTimeoutMs: _, ...listed } = task.spec.tool!
  const tool =
    listed.target.kind === "pool" && event.served !== undefined
      ? {
          ...listed,
          timeoutMs: event.served.timeoutMs,
          replayable: event.served.replayable,
          ...(event.served.announcedTimeoutMs === undefined
            ? {}
            : { announcedTimeoutMs: event.served.announcedTimeoutMs })
        }
      : task.spec.tool!
  // The holder's full deadline on the run's clock, which a pause stops: a claim taken while paused
  // starts at the pause (the resume shifts it by the paused time, as every frozen clock).
  const deadlineAt = (context.pausedAt ?? draft.at) + tool.timeoutMs
  put(draft, {
    ...task,
    spec: { ...task.spec, tool },
    claim: { executorId: event.executorId, tokenDigest: event.tokenDigest, claimedAt: draft.at },
    claimed: true,
    deadlineAt
  })
  if (context.pausedAt === null) draft.setTimer(task.spec.key, task.generation, deadlineAt)
  draft.request({
    type: fx.relayFrame,
    params: {
      conversationId: draft.context.conversationId,
      frame: {
        type: "step_claimed",
        run_public_id: context.publicId,
        task_key: task.spec.key,
        tool_name: task.spec.tool!.name,
        executor_public_id: event.executorId,
        at: new Date(draft.at).toISOString()
      }
    }
  })
}

const holds = (task: Task, executorId: string, tokenDigest: string) =>
  task.claim !== null && task.claim.executorId === executorId && task.claim.tokenDigest === tokenDigest

export const extend = (draft: Draft, event: EventOf<"task.extend">) => {
  const context = draft.context
  const task = find(context, event.key)
  if (task === undefined || context.tombstoned) return refuse(draft, "not_found")
  const lapsed = task.deadlineAt === null || effectiveDeadline(context, task, draft.at) < draft.at
  if (!task.claimed || isSettled(task.status) || lapsed || context.status === "paused") {
    return refuse(draft, "not_extendable")
  }
  if (!holds(task, event.executorId, event.tokenDigest)) return refuse(draft, "not_claimant")
  const deadlineAt = draft.at + Math.min(event.timeoutMs, task.spec.tool!.announcedTimeoutMs ?? event.timeoutMs)
  put(draft, { ...task, deadlineAt })
  draft.setTimer(task.spec.key, task.generation, deadlineAt)
  draft.emit({
    type: "task_deadline_extended",
    run_public_id: context.publicId,
    task_key: task.spec.key,
    deadline_at: new Date(deadlineAt).toISOString()
  })
}

export const commit = (draft: Draft, event: EventOf<"task.commit">) => {
  const context = draft.context
  const task = find(context, event.key)
  if (task === undefined || context.tombstoned) return refuse(draft, "not_found")
  if (!addressedTo(context, task, event.executorId, event.announces === true))
    return refuse(draft, "not_addressed_here")
  if (task.spec.kind !== "tool_task") return refuse(draft, "not_claimable_kind")
  if (!holds(task, event.executorId, event.tokenDigest)) return refuse(draft, "not_claimant")
  // Settled by the expiry rule: the deadline won. Committed already, or canceled by the kernel
  // while claimed: the late answer is discarded.
  const expired = task.error?.key === "tool_timeout" || task.error?.key === "tool_uncertain"
  if (isSettled(task.status)) return answer(draft, expired ? "claim_inactive" : "unchanged")
  if (effectiveDeadline(context, task, draft.at) < draft.at) {
    expire(draft, task)
    return answer(draft, "claim_inactive")
  }
  if (event.fault !== null) return refuse(draft, event.fault)
  draft.request({ type: fx.recordResult, params: { key: task.spec.key, result: event.result } })
  if (event.outcome === "failed") return fail(draft, task.spec.key, "failed", { key: "tool_failed" })
  complete(draft, task.spec.key)
}

export const deadline = (draft: Draft, event: EventOf<"task.deadline">) => {
  const task = find(draft.context, event.key)!
  if (task.spec.kind === "tool_task" && task.status === "dispatched") return expire(draft, task)
  if (task.status === "needs_approval") return refuseApproval(draft, task.spec.key, "timed_out", approvalExpired)
  fail(draft, task.spec.key, "timed_out", { key: "await_timeout" })
}
