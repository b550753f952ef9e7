// Where a run stands after a step's work (runs supplement "Run lifecycle", "Run resource"): live
// work, attention and quiescence, and the step's conclusion (changed rows, run row, feed, host reply).

import type { Attention, RunContext, Task } from "../context.ts"
import { runEffects as fx, type RecordRunParams, type TaskProjection } from "../effects.ts"
import {
  approvalHoldMillis,
  cancelTask,
  type Draft,
  find,
  isOpenAsk,
  isResolved,
  isSettled,
  ready,
  scheduling,
  turnStatusOf
} from "./graph.ts"
import { awaitingReply } from "./mail.ts"

/** blocked_task_keys names at most this many. */
const blockedKeysCap = 32

/**
 * Work that moves without a person: a running round, a dispatched row or wait, a call being
 * addressed (among the tasks `within` counts).
 */
export const liveWork = (draft: Draft, within: (task: Task) => boolean = () => true) =>
  draft.context.tasks.some(
    (task) =>
      within(task) &&
      (task.status === "running" ||
        (task.status === "dispatched" && task.spec.awaitKind !== "ask") ||
        awaitingReply(task) ||
        (task.status === "waiting" &&
          task.spec.tool?.target.kind === "unaddressed" &&
          ready(draft, task) &&
          scheduling(draft.context)))
  )

/** The first reason that stands, naming what blocks (runs supplement "Run resource"). */
export const attentionOf = (context: RunContext): Attention | null => {
  const unresolved = (task: Task) =>
    (task.status === "failed" || task.status === "timed_out" || task.status === "uncertain") && !isResolved(task)
  const halted = context.tasks.filter((task) => unresolved(task) && task.spec.onFailure === "halt")
  const deliverable = find(context, context.deliverable)
  const deliverableUnresolved = deliverable !== undefined && isSettled(deliverable.status) && !isResolved(deliverable)
  const approvals = context.tasks.filter((task) => task.status === "needs_approval")
  const asks = context.tasks.filter(isOpenAsk)
  const reason =
    halted.length > 0
      ? "halt_failure"
      : deliverableUnresolved
        ? "deliverable_unresolved"
        : approvals.length > 0
          ? "approval_required"
          : asks.length > 0
            ? "awaiting_human"
            : null
  if (reason === null) return null
  const keys = [
    ...new Set([
      ...halted.map((task) => task.spec.key),
      ...(deliverableUnresolved ? [context.deliverable] : []),
      ...approvals.map((task) => task.spec.key),
      ...asks.map((task) => task.spec.key)
    ])
  ]
  return {
    reason,
    blockedTaskKeys: keys.slice(0, blockedKeysCap),
    overflow: keys.length > blockedKeysCap
  }
}

/** Where the run stands after the step's work: quiescence, a graceful stop's end, attention. */
export const judge = (draft: Draft) => {
  const context = draft.context
  if (context.status === "running" || context.status === "needs_attention") {
    if (liveWork(draft)) context.status = "running"
    else {
      const deliverable = find(context, context.deliverable)
      const done =
        deliverable !== undefined &&
        isSettled(deliverable.status) &&
        isResolved(deliverable) &&
        attentionOf(context) === null
      context.status = done ? "completed" : "needs_attention"
      if (done) context.completedAt = draft.at
    }
  }
  if (context.status === "canceling") {
    const settling = context.tasks.some(
      (task) => task.status === "running" || task.status === "dispatched" || task.status === "awaiting_input"
    )
    if (!settling) {
      for (const task of context.tasks) cancelTask(draft, task.spec.key, { key: "run_canceled" }, null)
      context.status = "canceled"
      context.completedAt = draft.at
    }
  }
}

const projectionOf = (context: RunContext, task: Task): TaskProjection => {
  const tool = task.spec.tool
  const target = tool?.target
  const listed: TaskProjection["inboxKind"] =
    task.status === "dispatched" && task.spec.kind === "tool_task" && task.spec.tool !== null
      ? "tool_call"
      : isOpenAsk(task) && context.creatorApplicationId !== null
        ? "ask"
        : task.status === "needs_approval" && context.creatorApplicationId !== null
          ? "approval"
          : null
  const inboxExecutorId =
    listed === null
      ? null
      : listed !== "tool_call"
        ? context.creatorApplicationId
        : task.claim !== null
          ? task.claim.executorId
          : target?.kind === "runner"
            ? target.executor.executorId
            : null
  return {
    key: task.spec.key,
    status: task.status,
    generation: task.generation,
    failureResolution: task.failureResolution,
    error: task.error,
    inboxKind: listed,
    inboxExecutorId,
    pool: target?.kind === "pool",
    targetExecutorId: target?.kind === "runner" ? target.executor.executorId : null,
    claimedBy: task.claim?.executorId ?? null,
    claimTokenDigest: task.claim?.tokenDigest ?? null,
    claimed: task.claimed,
    timeoutMs:
      task.status === "needs_approval"
        ? approvalHoldMillis
        : (tool?.timeoutMs ?? task.spec.ask?.timeoutMs ?? task.spec.wait?.timeoutMs ?? null),
    deadlineAt: task.deadlineAt,
    approval:
      task.approval === null
        ? null
        : { origin: task.approval.origin, decided_by: task.approval.decidedBy, decided_at: task.approval.decidedAt },
    after: task.spec.after,
    startedAt: task.startedAt,
    completedAt: task.completedAt
  }
}

const attentionJson = (attention: Attention | null): RecordRunParams["attention"] =>
  attention === null
    ? null
    : {
        reason: attention.reason,
        blocked_task_keys: attention.blockedTaskKeys,
        ...(attention.overflow ? { blocked_task_overflow: true as const } : {})
      }

/**
 * The end of every step: its changed rows, the run row when its projection moved (task rows stamp
 * the run's updated_at themselves), and what the feed says of the run.
 */
export const conclude = (draft: Draft, before: RunContext) => {
  const context = draft.context
  // A finished run asks nobody for anything: nothing on it can be adjudicated (not_adjudicable).
  const attention = context.status === "canceled" || context.status === "completed" ? null : attentionOf(context)
  const attentionChanged = JSON.stringify(attention) !== JSON.stringify(before.attention)
  context.attention = attention
  if (draft.touched.size > 0) {
    draft.request({
      type: fx.recordTasks,
      params: {
        tasks: context.tasks
          .filter((task) => draft.touched.has(task.spec.key))
          .map((task) => projectionOf(context, task))
      }
    })
  }
  if (context.status !== before.status) {
    draft.emit({
      type: "turn_status",
      run_public_id: context.publicId,
      status: turnStatusOf(context.status),
      run_status: context.status,
      ...(context.status === "needs_attention" && attention !== null ? { failure_reason_key: attention.reason } : {})
    })
  }
  // A hosted run tells its conversation where it stands whenever that changes: settled, held for
  // attention (the turn fails), or running again after attention (the turn runs again).
  const outcome =
    context.status === "completed"
      ? "completed"
      : context.status === "canceled"
        ? "canceled"
        : context.status === "needs_attention"
          ? "failed"
          : context.status === "running" && before.status === "needs_attention"
            ? "running"
            : null
  if (outcome !== null && context.replyTo !== null && context.status !== before.status) {
    context.replied = true
    draft.request({
      type: fx.replyToHost,
      params: {
        to: context.replyTo,
        event: {
          type: "run.replied",
          requestId: context.publicId,
          status: outcome,
          errorCode:
            outcome === "failed" ? (attention?.reason ?? "failed") : outcome === "canceled" ? "canceled" : null,
          declined: false,
          usage: null
        }
      }
    })
  }
  if (attentionChanged && attention !== null) {
    draft.emit({ type: "attention_required", run_public_id: context.publicId, attention: attentionJson(attention) })
  }
  if (
    context.status !== before.status ||
    attentionChanged ||
    context.revision !== before.revision ||
    context.deliverable !== before.deliverable ||
    context.pausedAt !== before.pausedAt ||
    context.startedAt !== before.startedAt ||
    context.completedAt !== before.completedAt
  ) {
    draft.request({
      type: fx.recordRun,
      params: {
        status: context.status,
        attention: attentionJson(attention),
        revision: context.revision,
        deliverable: context.deliverable,
        startedAt: context.startedAt,
        pausedAt: context.pausedAt,
        completedAt: context.completedAt
      }
    })
  }
}
