// The run verbs (runs supplement "Run lifecycle"): start, pause (force aborts running rounds),
// resume (deadlines shifted), stop, append, the default runner and DELETE's tombstone.

import type { RunContext } from "../context.ts"
import { runEffects as fx } from "../effects.ts"
import type { RunEvent } from "../events.ts"
import { replyDelivered } from "./delegation.ts"
import {
  cancelTask,
  change,
  clocked,
  complete,
  type Draft,
  find,
  fresh,
  isResolved,
  isSettled,
  put,
  refuse,
  terminal
} from "./graph.ts"
import { keptSpec } from "./toolCall.ts"

type EventOf<T extends RunEvent["type"]> = Extract<RunEvent, { type: T }>

export const start = (draft: Draft) => {
  if (draft.context.status !== "pending") return refuse(draft, "not_startable")
  draft.context.status = "running"
  draft.context.startedAt = draft.at
}

/** Clocks of parked and dispatched work stop while paused. */
const freezeClocks = (draft: Draft) => {
  for (const task of draft.context.tasks) if (clocked(task)) draft.clearTimer(task.spec.key)
}

/** Running rounds are told to stop and wait to be asked again. */
const abortRounds = (draft: Draft) => {
  for (const task of draft.context.tasks) {
    if (task.spec.kind !== "model_task" || task.status !== "running") continue
    draft.request({ type: fx.cancelRound, params: { key: task.spec.key } })
    change(draft, task, "waiting")
  }
}

export const pause = (draft: Draft, event: EventOf<"run.pause">) => {
  const status = draft.context.status
  if (status === "paused") {
    if (!event.force) return refuse(draft, "not_pausable")
    return abortRounds(draft)
  }
  if (status !== "running" && status !== "needs_attention") return refuse(draft, "not_pausable")
  draft.context.status = "paused"
  draft.context.pausedAt = draft.at
  freezeClocks(draft)
  if (event.force) abortRounds(draft)
}

/** A pause's end (resume, or a stop of a paused run): frozen clocks run again, shifted by the pause. */
const thawClocks = (draft: Draft) => {
  const shift = draft.at - draft.context.pausedAt!
  for (const task of draft.context.tasks) {
    if (!clocked(task)) continue
    const deadlineAt = task.deadlineAt! + shift
    put(draft, { ...task, deadlineAt })
    draft.setTimer(task.spec.key, task.generation, deadlineAt)
  }
  draft.context.pausedAt = null
}

export const resume = (draft: Draft) => {
  if (draft.context.status !== "paused") return refuse(draft, "not_resumable")
  thawClocks(draft)
  draft.context.status = "running"
}

const cancelAll = (draft: Draft) => {
  for (const task of draft.context.tasks) cancelTask(draft, task.spec.key, { key: "run_canceled" }, null)
}

export const stop = (draft: Draft, event: EventOf<"run.stop">) => {
  const context = draft.context
  if (terminal(context)) return refuse(draft, "already_terminal")
  if (context.status === "pending") {
    cancelAll(draft)
    context.status = "canceled"
    context.completedAt = draft.at
    return
  }
  // What a graceful stop lets settle keeps its clock: a paused run's run again from here.
  if (context.status === "paused") thawClocks(draft)
  context.status = "canceling"
  context.stopping = true
  if (event.force) return cancelAll(draft)
  for (const task of context.tasks) {
    if (task.status === "waiting" || task.status === "needs_approval") {
      cancelTask(draft, task.spec.key, { key: "run_canceled" }, null)
    }
  }
}

/** The mainline's newest round (an append's first model step would continue it). */
const mainlineTip = (context: RunContext) => context.tasks.filter((task) => task.spec.mainline).at(-1)

export const append = (draft: Draft, event: EventOf<"run.append">) => {
  const context = draft.context
  const open = ["pending", "running", "paused", "needs_attention"].includes(context.status)
  if (!open || context.tombstoned || replyDelivered(context)) return refuse(draft, "run_not_appendable")
  if (event.expectedRevision !== null && event.expectedRevision !== context.revision) {
    return refuse(draft, "stale_revision", { current_revision: context.revision })
  }
  if (event.compiledAt !== context.revision) return refuse(draft, "recompile")
  const tip = mainlineTip(context)
  if (event.seedIsModel && tip !== undefined && (tip.status === "waiting" || tip.status === "running")) {
    return refuse(draft, "tip_live")
  }
  const deliverable = find(context, context.deliverable)
  if (deliverable !== undefined && isSettled(deliverable.status) && !isResolved(deliverable)) {
    return refuse(draft, "tip_unresolved")
  }
  if (event.tasks.some((spec) => find(context, spec.key) !== undefined)) return refuse(draft, "duplicate_task_key")
  for (const entry of event.resolve) {
    const ask = find(context, entry.task)
    if (ask === undefined || ask.spec.awaitKind !== "ask" || !ask.spec.ask!.authored) {
      return refuse(draft, "unknown_await")
    }
    if (ask.status !== "dispatched") return refuse(draft, "await_not_resolvable")
  }
  const firstPosition = context.tasks.length
  const added = event.tasks.map((spec) => keptSpec(context.approvalMode, context.approvalRules, spec))
  context.tasks = [...context.tasks, ...added.map((spec) => fresh(spec, draft.at))]
  for (const spec of added) draft.touched.add(spec.key)
  draft.request({ type: fx.insertTasks, params: { firstPosition, tasks: added, details: event.details } })
  context.deliverable = event.deliverable
  context.revision += 1
  for (const entry of event.resolve) {
    draft.request({ type: fx.recordResult, params: { key: entry.task, result: { output: entry.content ?? null } } })
    complete(draft, entry.task)
  }
}

export const defaultRunner = (draft: Draft, event: EventOf<"run.defaultRunner">) => {
  if (draft.context.tombstoned) return refuse(draft, "not_found")
  draft.request({ type: fx.recordDefaultRunner, params: { executorId: event.executor?.executorId ?? null } })
  draft.emit({
    type: "default_runner_changed",
    run_public_id: draft.context.publicId,
    default_runner: event.executor === null ? null : { executor_public_id: event.executor.executorId }
  })
}

export const tombstone = (draft: Draft) => {
  const status = draft.context.status
  if (draft.context.tombstoned) return refuse(draft, "not_found")
  if (status !== "pending" && !terminal(draft.context)) return refuse(draft, "run_live")
  if (status === "pending") cancelAll(draft)
  draft.context.tombstoned = true
  draft.request({ type: fx.recordTombstone })
}
