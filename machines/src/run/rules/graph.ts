// The core of a run's task graph over a draft of one step (runs supplement "Task kinds and
// statuses", "Run lifecycle"): task bookkeeping, which waiting tasks start and how each kind
// starts, what a failure does to its dependents (halt holds, propagate skips, absorb resolves).
// Waits and joins, expansion, landing, retries and quiescence have their own modules.
// Pure: time arrives as `draft.at`.

import type { RunContext, RunQueueEntry, RunStatus, Task, TaskSpec, TaskStatus } from "../context.ts"
import {
  type AddressCallsParams,
  type AnswerWatcherParams,
  type CallKernelParams,
  type CancelRoundParams,
  runEffects as fx,
  type InsertInputParams,
  type InsertTasksParams,
  type NarrateOnHostParams,
  type NotifyExecutorsParams,
  type OpenRoundParams,
  type RecordDefaultRunnerParams,
  type RecordResultParams,
  type RecordRoundParams,
  type RecordRunParams,
  type RecordTasksParams,
  type RefuseParams,
  type RelayFrameParams,
  type ReplyToHostParams,
  type ReturnResultParams,
  type RouteTaskParams,
  type UpdateInputParams,
  type WatchTaskParams
} from "../effects.ts"
import type { ApprovalVerdict } from "./approval.ts"
import { callsOf, compactionOf } from "./compaction.ts"
import { pendingVerdict, refuseApproval } from "./kernelApproval.ts"
import { consumeInput } from "./landing.ts"
import { judgeJoin, settleWait, waitTarget } from "./waits.ts"

/** An approval parks this long (run clock: pauses shift it). */
export const approvalHoldMillis = 24 * 60 * 60 * 1000
/** A tool's budget when neither its step nor its announcement names one. */
export const defaultToolTimeoutMillis = 600_000

export type EffectRequest =
  | { readonly type: typeof fx.refuse; readonly params: RefuseParams }
  | { readonly type: typeof fx.answer; readonly params: RefuseParams }
  | { readonly type: typeof fx.recordRun; readonly params: RecordRunParams }
  | { readonly type: typeof fx.recordTasks; readonly params: RecordTasksParams }
  | { readonly type: typeof fx.insertTasks; readonly params: InsertTasksParams }
  | { readonly type: typeof fx.recordResult; readonly params: RecordResultParams }
  | { readonly type: typeof fx.openRound; readonly params: OpenRoundParams }
  | { readonly type: typeof fx.cancelRound; readonly params: CancelRoundParams }
  | { readonly type: typeof fx.recordRound; readonly params: RecordRoundParams }
  | { readonly type: typeof fx.recordDefaultRunner; readonly params: RecordDefaultRunnerParams }
  | { readonly type: typeof fx.recordTombstone }
  | { readonly type: typeof fx.reap }
  | { readonly type: typeof fx.notifyExecutors; readonly params: NotifyExecutorsParams }
  | { readonly type: typeof fx.relayFrame; readonly params: RelayFrameParams }
  | { readonly type: typeof fx.addressCalls; readonly params: AddressCallsParams }
  | { readonly type: typeof fx.callKernel; readonly params: CallKernelParams }
  | { readonly type: typeof fx.routeTask; readonly params: RouteTaskParams }
  | { readonly type: typeof fx.replyToHost; readonly params: ReplyToHostParams }
  | { readonly type: typeof fx.narrateOnHost; readonly params: NarrateOnHostParams }
  | { readonly type: typeof fx.returnResult; readonly params: ReturnResultParams }
  | { readonly type: typeof fx.insertInput; readonly params: InsertInputParams }
  | { readonly type: typeof fx.updateInput; readonly params: UpdateInputParams }
  | { readonly type: typeof fx.deleteInput; readonly params: { readonly inputId: string } }
  | { readonly type: typeof fx.watchTask; readonly params: WatchTaskParams }
  | { readonly type: typeof fx.answerWatcher; readonly params: AnswerWatcherParams }

export type Item = { readonly type: string; readonly [member: string]: unknown }

type Mutable<T> = { -readonly [K in keyof T]: T[K] }

/** A step's work: a draft of the context, the step's instant, and what it asks of the shell. */
export interface Draft {
  readonly at: number
  context: Mutable<RunContext> & { tasks: Array<Task>; inputs: Array<RunQueueEntry> }
  request(action: EffectRequest): void
  emit(item: Item): void
  /** Raises the task's deadline timer (replacing an earlier one). */
  setTimer(key: string, generation: number, deadlineAt: number): void
  clearTimer(key: string): void
  /** Raises (or clears) a scheduled input's due timer. */
  due(inputId: string, dueAt: number): void
  undue(inputId: string): void
  /** Keys of tasks this step changed (their rows are rewritten at the end of the step). */
  readonly touched: Set<string>
}

const settledStatuses: ReadonlySet<TaskStatus> = new Set([
  "completed",
  "failed",
  "canceled",
  "timed_out",
  "uncertain",
  "skipped"
])
export const isSettled = (status: TaskStatus) => settledStatuses.has(status)
/** Settled in a way that lets dependents run. */
export const isResolved = (task: Task) =>
  task.status === "completed" || task.absorbed || task.failureResolution !== null
export const isOpenAsk = (task: Task) =>
  task.spec.awaitKind === "ask" && (task.status === "dispatched" || task.status === "awaiting_input")

export const refuse = (draft: Draft, reason: string, extra?: Record<string, unknown>) =>
  draft.request({ type: fx.refuse, params: extra === undefined ? { reason } : { reason, extra } })
export const answer = (draft: Draft, reason: string) => draft.request({ type: fx.answer, params: { reason } })

/**
 * Each task list's positions by key, built once per list: a list only grows by a new list (the
 * tasks are appended, never removed) and `put` replaces a task at its own position, so a list's
 * positions never change. Lookups are O(1), so a step stays linear in the run's tasks.
 */
const positions = new WeakMap<ReadonlyArray<Task>, ReadonlyMap<string, number>>()

const positionsOf = (tasks: ReadonlyArray<Task>) => {
  let known = positions.get(tasks)
  if (known === undefined) {
    known = new Map(tasks.map((task, index) => [task.spec.key, index]))
    positions.set(tasks, known)
  }
  return known
}

export const find = (context: RunContext, key: string): Task | undefined => {
  const index = positionsOf(context.tasks).get(key)
  return index === undefined ? undefined : context.tasks[index]
}

export const get = (draft: Draft, key: string) => find(draft.context, key)!

/** Replaces a task in the draft's own list (a copy made for the step), at its position. */
export const put = (draft: Draft, task: Task) => {
  const index = positionsOf(draft.context.tasks).get(task.spec.key)!
  draft.context.tasks[index] = task
  draft.touched.add(task.spec.key)
}

const taskStatusItem = (task: Task) => ({
  type: "task_status",
  task_key: task.spec.key,
  kind: task.spec.kind,
  status: task.status,
  generation: task.generation,
  ...(task.error === null ? {} : { error: task.error })
})

/** Moves a task to `status` (with `patch`), narrating it. */
export const change = (draft: Draft, task: Task, status: TaskStatus, patch: Partial<Task> = {}): Task => {
  const next: Task = { ...task, ...patch, status }
  put(draft, next)
  if (status !== task.status) draft.emit(taskStatusItem(next))
  return next
}

/** The keys a task waits on before it may start (a wait's target settles it, not its start). */
const startWaits = (spec: TaskSpec) =>
  spec.wait === null ? spec.after : spec.after.filter((key) => key !== spec.wait!.task)

export const dependentsOf = (context: RunContext, key: string) =>
  context.tasks.filter((task) => task.spec.kind !== "join_task" && startWaits(task.spec).includes(key))

/** Settles a task that ended badly; its on_failure decides what its dependents do. */
export const fail = (
  draft: Draft,
  key: string,
  status: "failed" | "timed_out" | "uncertain",
  error: { readonly key: string; readonly detail?: string }
) => {
  const task = get(draft, key)
  draft.clearTimer(key)
  change(draft, task, status, {
    error,
    completedAt: draft.at,
    deadlineAt: null,
    absorbed: task.spec.onFailure === "absorb"
  })
  if (task.spec.onFailure === "propagate") skipDescendants(draft, key)
}

/** A propagated failure skips every descendant that has not started. */
const skipDescendants = (draft: Draft, key: string) => {
  for (const dependent of dependentsOf(draft.context, key)) {
    if (dependent.status !== "waiting" && dependent.status !== "needs_approval") continue
    draft.clearTimer(dependent.spec.key)
    change(draft, dependent, "skipped", { completedAt: draft.at, deadlineAt: null })
    skipDescendants(draft, dependent.spec.key)
  }
}

export const complete = (draft: Draft, key: string, patch: Partial<Task> = {}) => {
  draft.clearTimer(key)
  change(draft, get(draft, key), "completed", { completedAt: draft.at, deadlineAt: null, ...patch })
}

/** Cancels an unsettled task (its round told to stop, its claimant told work_canceled). */
export const cancelTask = (
  draft: Draft,
  key: string,
  error: { readonly key: string } | null,
  resolution: "canceled" | null
) => {
  const task = get(draft, key)
  if (isSettled(task.status)) return
  draft.clearTimer(key)
  if (task.status === "running" && task.spec.kind === "model_task") {
    draft.request({ type: fx.cancelRound, params: { key } })
  }
  if (task.status === "dispatched" && task.claim !== null) {
    draft.request({
      type: fx.notifyExecutors,
      params: {
        messages: [
          {
            executorIds: [task.claim.executorId],
            message: { type: "work_canceled", run_public_id: draft.context.publicId, task_key: key }
          }
        ]
      }
    })
  }
  change(draft, task, "canceled", { error, failureResolution: resolution, completedAt: draft.at, deadlineAt: null })
}

const executorsOf = (task: Task): ReadonlyArray<string> => {
  const target = task.spec.tool?.target
  if (target?.kind === "runner") return [target.executor.executorId]
  if (target?.kind === "pool") return target.executorIds
  return []
}

/**
 * A fresh deadline `ms` from now on the run's clock: while paused it starts at the pause and no timer
 * is raised (the resume shifts it by the paused time and arms it, as every frozen clock).
 */
const clockFrom = (draft: Draft, ms: number) => (draft.context.pausedAt ?? draft.at) + ms

const armTimer = (draft: Draft, task: Task, deadlineAt: number) => {
  if (draft.context.pausedAt === null) draft.setTimer(task.spec.key, task.generation, deadlineAt)
}

/** A tool task goes to its runner's (or its pool's) inbox with a fresh deadline. */
export const dispatch = (draft: Draft, task: Task) => {
  const tool = task.spec.tool!
  const deadlineAt = clockFrom(draft, tool.timeoutMs)
  change(draft, task, "dispatched", {
    startedAt: draft.at,
    claim: null,
    claimed: false,
    deadlineAt
  })
  armTimer(draft, task, deadlineAt)
  const message = {
    type: "work_available",
    kind: "tool_call",
    run_public_id: draft.context.publicId,
    task_key: task.spec.key,
    tool_name: tool.name
  }
  draft.request({ type: fx.notifyExecutors, params: { messages: [{ executorIds: executorsOf(task), message }] } })
  draft.request({
    type: fx.relayFrame,
    params: {
      conversationId: draft.context.conversationId,
      frame: {
        type: "step_started",
        run_public_id: draft.context.publicId,
        task_key: task.spec.key,
        tool_name: tool.name,
        status: "dispatched",
        at: new Date(draft.at).toISOString()
      }
    }
  })
}

/** An ask or approval notice on the creator's agent application inbox (a human creator has none). */
const noticeCreator = (draft: Draft, task: Task, kind: "ask" | "approval") => {
  const application = draft.context.creatorApplicationId
  if (application === null) return
  draft.request({
    type: fx.notifyExecutors,
    params: {
      messages: [
        {
          executorIds: [application],
          message: { type: "work_available", kind, run_public_id: draft.context.publicId, task_key: task.spec.key }
        }
      ]
    }
  })
}

const roundRef = (task: Task) => `${task.spec.key}#${task.generation}#${task.rounds}`

/** Asks a model task's next round. */
export const openRound = (draft: Draft, task: Task) => {
  const model = task.spec.model!
  const next = change(draft, task, "running", { startedAt: task.startedAt ?? draft.at, rounds: task.rounds + 1 })
  const steers = task.spec.mainline ? draft.context.inputs.filter((entry) => entry.steer && entry.dueAt === null) : []
  for (const entry of steers) consumeInput(draft, entry, task.spec.key)
  draft.request({
    type: fx.openRound,
    params: {
      key: task.spec.key,
      ref: roundRef(next),
      model: model.model,
      continues: model.continues,
      results: task.spec.results,
      calls: callsOf(draft.context, model.continues),
      mainline: task.spec.mainline,
      attempt: next.failures + 1,
      tools: model.tools,
      steers: steers.map((entry) => entry.inputId),
      ...compactionOf(draft.context, next)
    }
  })
}

/**
 * A call the approval stage did not grant: failed approval_denied (the model reads why), or
 * parked needs_approval for 24 h (run clock) with a notice to the creator's agent application.
 */
const hold = (draft: Draft, task: Task, judged: Exclude<ApprovalVerdict, { verdict: "grant" }>) => {
  if (judged.verdict === "fail") {
    change(draft, task, "waiting", { startedAt: draft.at })
    return refuseApproval(draft, task.spec.key, "failed", { key: "approval_denied", detail: judged.reason })
  }
  const deadlineAt = clockFrom(draft, approvalHoldMillis)
  change(draft, task, "needs_approval", { deadlineAt, startedAt: draft.at })
  armTimer(draft, task, deadlineAt)
  return noticeCreator(draft, task, "approval")
}

/**
 * Starts a ready task as its kind does once the approval stage grants it (the verdict it was given as
 * it entered the run); a model's call of a runner's tool waits for its addressing first.
 */
export const start = (draft: Draft, task: Task) => {
  const spec = task.spec
  if (spec.tool?.target.kind === "unaddressed") return
  const verdict = pendingVerdict(task)
  if (verdict !== undefined && verdict.verdict !== "grant") return hold(draft, task, verdict)
  switch (spec.kind) {
    case "model_task":
      return openRound(draft, task)
    case "tool_task": {
      if (spec.kernel !== undefined) {
        // The service carries the call out itself (a job); nothing is listed for a runner.
        change(draft, task, "dispatched", { startedAt: draft.at })
        draft.request({
          type: fx.callKernel,
          params: { key: spec.key, generation: task.generation, canonical: spec.kernel }
        })
        return
      }
      return dispatch(draft, task)
    }
    case "await_task": {
      if (spec.awaitKind === "wait") {
        const wait = spec.wait!
        const target = wait.run === null ? waitTarget(draft.context, wait.task) : undefined
        if (target !== undefined && isSettled(target.status)) return settleWait(draft, task)
        // Only a model's wait can name a key the run does not have (the compiler judged the steps').
        if (wait.run === null && target === undefined) {
          change(draft, task, "waiting", { startedAt: draft.at })
          return fail(draft, spec.key, "failed", { key: "wait_target_not_found" })
        }
        const timeout = wait.timeoutMs
        const deadlineAt = timeout === null ? null : clockFrom(draft, timeout)
        change(draft, task, "dispatched", { startedAt: draft.at, deadlineAt })
        if (deadlineAt !== null) armTimer(draft, task, deadlineAt)
        // Another run's task: that run is asked to tell this one when it settles (rules/crossRun.ts).
        if (wait.run !== null) {
          draft.request({
            type: fx.watchTask,
            params: { run: wait.run, task: wait.task, key: spec.key, generation: task.generation }
          })
        }
        return
      }
      const deadlineAt = clockFrom(draft, spec.ask!.timeoutMs)
      change(draft, task, spec.ask!.authored ? "dispatched" : "awaiting_input", { startedAt: draft.at, deadlineAt })
      armTimer(draft, task, deadlineAt)
      return noticeCreator(draft, task, "ask")
    }
    case "join_task":
      return
  }
}

export const ready = (draft: Draft, task: Task) =>
  startWaits(task.spec).every((key) => {
    const dependency = find(draft.context, key)
    return dependency !== undefined && isSettled(dependency.status) && isResolved(dependency)
  })

/** Whether the run may start new work now. */
export const scheduling = (context: RunContext) => context.status === "running" || context.status === "needs_attention"

export const terminal = (context: RunContext) => context.status === "completed" || context.status === "canceled"

/** Starts every task that may start, and settles waits and joins, until nothing moves. */
export const advance = (draft: Draft) => {
  let moved = true
  while (moved) {
    moved = false
    for (const task of draft.context.tasks) {
      const current = get(draft, task.spec.key)
      if (current.spec.kind === "join_task") {
        if (current.status === "waiting" && judgeJoin(draft, current)) moved = true
        continue
      }
      if (current.spec.awaitKind === "wait" && current.status === "dispatched") {
        const wait = current.spec.wait!
        const target = wait.run === null ? waitTarget(draft.context, wait.task) : undefined
        if (target !== undefined && isSettled(target.status)) {
          settleWait(draft, current)
          moved = true
        }
        continue
      }
      if (current.status !== "waiting" || !scheduling(draft.context) || draft.context.stopping) continue
      if (!ready(draft, current)) continue
      start(draft, current)
      if (get(draft, current.spec.key).status !== "waiting") moved = true
    }
  }
}

/** A standalone run's turn status, derived from the run's. */
export const turnStatusOf = (status: RunStatus) =>
  status === "pending"
    ? "pending"
    : status === "needs_attention"
      ? "failed"
      : status === "completed" || status === "canceled"
        ? status
        : "running"

/** A new task's standing: its spec as kept (a compiled tool's input never enters; rules/toolCall.ts keptSpec). */
export const fresh = (spec: TaskSpec & { readonly tool: { readonly input?: never } | null }, at: number): Task => ({
  spec,
  status: "waiting",
  generation: 1,
  failureResolution: null,
  absorbed: false,
  error: null,
  claim: null,
  claimed: false,
  deadlineAt: null,
  approval: null,
  rounds: 0,
  failures: 0,
  createdAt: at,
  startedAt: null,
  completedAt: null,
  expanded: false
})

/** Tasks whose deadline clocks run (paused runs stop and shift them). */
export const clocked = (task: Task) => task.deadlineAt !== null && !isSettled(task.status)
