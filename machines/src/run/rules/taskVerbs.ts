// The task verbs a person adjudicates with (SUPPLEMENT "Runs and tasks"): resolve an ask, retry,
// abandon, approve, deny, cancel a branch and compact a model task.

import type { Task } from "../context.ts"
import { runEffects as fx } from "../effects.ts"
import type { RunEvent } from "../events.ts"
import { effectiveDeadline } from "./claims.ts"
import { compact } from "./compact.ts"
import {
  answer,
  cancelTask,
  complete,
  type Draft,
  fail,
  find,
  isResolved,
  isSettled,
  put,
  refuse,
  terminal
} from "./graph.ts"
import { approvalExpired, firstBytes, proceed, refuseApproval } from "./kernelApproval.ts"
import { retry } from "./retry.ts"

type EventOf<T extends RunEvent["type"]> = Extract<RunEvent, { type: T }>

/** A denial's reason is kept to this many bytes (UTF-8, whole characters). */
const denialReasonBytes = 256

/** Judged before every other task-verb rule: a finished run adjudicates nothing. */
const verbTask = (draft: Draft, key: string) => {
  if (draft.context.tombstoned) {
    refuse(draft, "not_found")
    return undefined
  }
  if (terminal(draft.context)) {
    refuse(draft, "not_adjudicable")
    return undefined
  }
  const task = find(draft.context, key)
  if (task === undefined) refuse(draft, "not_found")
  return task
}

export const resolve = (draft: Draft, event: EventOf<"task.resolve">) => {
  const task = verbTask(draft, event.key)
  if (task === undefined) return
  if (task.spec.awaitKind !== "ask") return refuse(draft, "await_not_resolvable")
  if (isSettled(task.status)) return answer(draft, "unchanged")
  if (task.status !== "dispatched" && task.status !== "awaiting_input") return refuse(draft, "await_not_resolvable")
  if (task.spec.ask!.authored) {
    if (event.tokenDigest === null) return refuse(draft, "parameter_missing")
    if (event.tokenDigest !== task.spec.ask!.tokenDigest) return refuse(draft, "not_claimant")
  }
  if (event.fault !== undefined && event.fault !== null) return refuse(draft, event.fault)
  draft.request({ type: fx.recordResult, params: { key: task.spec.key, result: { output: event.content } } })
  if (event.outcome === "failed") return fail(draft, task.spec.key, "failed", { key: "await_failed" })
  complete(draft, task.spec.key)
}

/** failed, timed_out or uncertain, unresolved, not absorbing, not a join. */
const retryable = (task: Task) =>
  (task.status === "failed" || task.status === "timed_out" || task.status === "uncertain") &&
  !isResolved(task) &&
  task.spec.onFailure !== "absorb" &&
  task.spec.kind !== "join_task"

export const retryTask = (draft: Draft, event: EventOf<"task.retry">) => {
  const task = verbTask(draft, event.key)
  if (task === undefined) return
  if (!retryable(task)) return refuse(draft, "not_retryable")
  retry(draft, task, event.model)
}

export const abandon = (draft: Draft, event: EventOf<"task.abandon">) => {
  const task = verbTask(draft, event.key)
  if (task === undefined) return
  const skipped = task.status === "skipped" && task.failureResolution === null
  if (!retryable(task) && !skipped) return refuse(draft, "not_abandonable")
  put(draft, { ...task, failureResolution: "abandoned" })
  draft.emit({
    type: "task_status",
    task_key: task.spec.key,
    kind: task.spec.kind,
    status: task.status,
    failure_resolution: "abandoned"
  })
}

const pastHold = (draft: Draft, task: Task) => effectiveDeadline(draft.context, task, draft.at) < draft.at

export const approve = (draft: Draft, event: EventOf<"task.approve">) => {
  const task = verbTask(draft, event.key)
  if (task === undefined) return
  if (event.by.decides === false) return refuse(draft, "not_decider")
  if (task.status !== "needs_approval") return refuse(draft, "not_awaiting_approval")
  if (pastHold(draft, task)) {
    refuseApproval(draft, task.spec.key, "timed_out", approvalExpired)
    return answer(draft, "not_awaiting_approval")
  }
  draft.clearTimer(task.spec.key)
  const approved = { ...task, approval: { origin: event.by.origin, decidedBy: event.by.userId, decidedAt: draft.at } }
  put(draft, approved)
  proceed(draft, approved)
}

export const deny = (draft: Draft, event: EventOf<"task.deny">) => {
  const task = verbTask(draft, event.key)
  if (task === undefined) return
  if (event.by.decides === false) return refuse(draft, "not_decider")
  if (task.status !== "needs_approval") return refuse(draft, "not_awaiting_approval")
  if (pastHold(draft, task)) {
    refuseApproval(draft, task.spec.key, "timed_out", approvalExpired)
    return answer(draft, "not_awaiting_approval")
  }
  put(draft, { ...task, approval: { origin: event.by.origin, decidedBy: event.by.userId, decidedAt: draft.at } })
  refuseApproval(draft, task.spec.key, "failed", {
    key: "approval_denied",
    ...(event.reason === null ? {} : { detail: firstBytes(event.reason, denialReasonBytes) })
  })
}

export const cancelVerb = (draft: Draft, event: EventOf<"task.cancel">) => {
  const task = verbTask(draft, event.key)
  if (task === undefined) return
  if (isSettled(task.status)) return refuse(draft, "already_terminal")
  if (task.spec.kind === "model_task" && task.spec.mainline) return refuse(draft, "not_a_branch")
  cancelTask(draft, task.spec.key, null, "canceled")
}

export const compactVerb = (draft: Draft, event: EventOf<"task.compact">) => {
  const task = verbTask(draft, event.key)
  if (task !== undefined) compact(draft, task, event.model)
}
