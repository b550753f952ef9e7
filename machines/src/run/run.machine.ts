// A run (runs supplement "Run lifecycle"; SUPPLEMENT "Runs and tasks"):
//   pending --start--> running; --stop--> canceled
//   running, needs_attention --pause--> paused (force also aborts running rounds, re-asked on
//     resume); paused --pause force--> paused; paused --resume--> running (deadlines shifted)
//   running --quiescent, deliverable completed, nothing unresolved--> completed
//   running --quiescent otherwise--> needs_attention; needs_attention --retry, abandon, append,
//     resolution--> running
//   running, paused, needs_attention --stop--> canceling --last started work settled--> canceled
//     (force settles everything at once); completed, canceled, pending --DELETE--> tombstoned,
//     reaped 30 days later (durable timer)
// Every step's work runs on a draft (graph.ts); the machine's state follows the status the draft
// decided. Every refusal names the spec's code; ids and tokens arrive minted in events.
import { enqueueActions, setup } from "xstate"
import type { CompiledTaskSpec, RunContext, RunInput, RunStatus, Task } from "./context.ts"
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
} from "./effects.ts"
import type { RunEvent } from "./events.ts"
import { claim, commit, deadline, extend } from "./rules/claims.ts"
import { answeredWait, answerWatchers, waitAnswered, watch } from "./rules/crossRun.ts"
import { returnResults, settleReplyEarly } from "./rules/delegation.ts"
import { advance, clocked, type Draft, fail, find, fresh, type Item, put } from "./rules/graph.ts"
import { acceptInput, deleteInput, editInput, inputDue, reorderInputs } from "./rules/inputDoor.ts"
import { landInput } from "./rules/landing.ts"
import { replyReturned, returnedTo } from "./rules/mail.ts"
import { conclude, judge } from "./rules/quiescence.ts"
import { addressed, kernelAnswered, kernelRouted, parseRef, replied } from "./rules/reports.ts"
import { append, defaultRunner, pause, resume, start, stop, tombstone } from "./rules/runVerbs.ts"
import { abandon, approve, cancelVerb, compactVerb, deny, resolve, retryTask } from "./rules/taskVerbs.ts"
import { keptSpec } from "./rules/toolCall.ts"

/** A tombstone's rows are reaped this long after DELETE. */
export const reapAfterMillis = 30 * 24 * 60 * 60 * 1000

type Event = RunEvent
type EventOf<T extends Event["type"]> = Extract<Event, { type: T }>

const deadlineTimer = (key: string) => `deadline:${key}`
const dueTimer = (inputId: string) => `due:${inputId}`

const runSetup = setup({
  types: {
    context: {} as RunContext,
    input: {} as RunInput,
    events: {} as RunEvent
  },
  actions: {
    [fx.refuse]: (_, _params: RefuseParams) => {},
    [fx.answer]: (_, _params: RefuseParams) => {},
    [fx.recordRun]: (_, _params: RecordRunParams) => {},
    [fx.recordTasks]: (_, _params: RecordTasksParams) => {},
    [fx.insertTasks]: (_, _params: InsertTasksParams) => {},
    [fx.recordResult]: (_, _params: RecordResultParams) => {},
    [fx.openRound]: (_, _params: OpenRoundParams) => {},
    [fx.cancelRound]: (_, _params: CancelRoundParams) => {},
    [fx.recordRound]: (_, _params: RecordRoundParams) => {},
    [fx.recordDefaultRunner]: (_, _params: RecordDefaultRunnerParams) => {},
    [fx.recordTombstone]: () => {},
    [fx.reap]: () => {},
    [fx.notifyExecutors]: (_, _params: NotifyExecutorsParams) => {},
    [fx.relayFrame]: (_, _params: RelayFrameParams) => {},
    [fx.addressCalls]: (_, _params: AddressCallsParams) => {},
    [fx.callKernel]: (_, _params: CallKernelParams) => {},
    [fx.routeTask]: (_, _params: RouteTaskParams) => {},
    [fx.replyToHost]: (_, _params: ReplyToHostParams) => {},
    [fx.narrateOnHost]: (_, _params: NarrateOnHostParams) => {},
    [fx.returnResult]: (_, _params: ReturnResultParams) => {},
    [fx.insertInput]: (_, _params: InsertInputParams) => {},
    [fx.updateInput]: (_, _params: UpdateInputParams) => {},
    [fx.deleteInput]: (_, _params: { inputId: string }) => {},
    [fx.watchTask]: (_, _params: WatchTaskParams) => {},
    [fx.answerWatcher]: (_, _params: AnswerWatcherParams) => {}
  },
  guards: {
    is: ({ context }, status: RunStatus) => context.status === status,
    tombstoned: ({ context }) => context.tombstoned,
    /** The answer (or routing) of a kernel call still under way (a canceled or retried one's is ignored). */
    kernelCurrent: ({ context, event }) => {
      if (event.type !== "task.kernelAnswered" && event.type !== "task.kernelRouted") return false
      const task = find(context, event.key)
      return (
        task !== undefined &&
        task.spec.kernel !== undefined &&
        task.status === "dispatched" &&
        task.generation === event.generation
      )
    },
    /** A spawned child's first reply, for the call's generation still holding or awaiting it. */
    replyCurrent: ({ context, event }) =>
      event.type === "task.replyReturned" && returnedTo(context.tasks, event) !== undefined,
    /** Another run's answer to a wait on its task, still waiting in the generation that asked. */
    waitCurrent: ({ context, event }) =>
      event.type === "wait.answered" && answeredWait(context.tasks, event) !== undefined,
    /** A scheduled row's timer at the time it still has. */
    inputDue: ({ context, event }) =>
      event.type === "input.due" &&
      context.inputs.some((entry) => entry.inputId === event.inputId && entry.dueAt === event.dueAt),
    /** A deadline timer of the task's current clock (stale ones, and a paused run's, are ignored). */
    deadlineCurrent: ({ context, event }) => {
      if (event.type !== "task.deadline" || context.pausedAt !== null) return false
      const task = find(context, event.key)
      return (
        task !== undefined &&
        task.generation === event.generation &&
        task.deadlineAt === event.deadlineAt &&
        clocked(task)
      )
    },
    /** The reply of a round still running (earlier rounds' replies are ignored). */
    roundCurrent: ({ context, event }) => {
      if (event.type !== "inference.replied") return false
      const ref = parseRef(event.ref)
      const task = ref === undefined ? undefined : find(context, ref.key)
      return (
        task !== undefined &&
        task.generation === ref!.generation &&
        task.rounds === ref!.round &&
        task.status === "running"
      )
    }
  }
})

/**
 * The instant an event happened: its `at` (a command's, or the step's the binding stamps on a told
 * message, a job's report or a timer), else a timer's due time.
 */
const instantOf = (event: Event, fallback: number) => {
  const stamped = (event as { readonly at?: unknown }).at
  return typeof stamped === "number"
    ? stamped
    : event.type === "task.deadline"
      ? event.deadlineAt
      : event.type === "input.due"
        ? event.dueAt
        : fallback
}

/**
 * A hosted run's narration rides its conversation's feed, in the step's transaction: each item as
 * the run's feed would carry it, naming the run; its turn_status and input_* items stay off (the
 * conversation narrates the run-backed turn's own, and its steers are the conversation's inputs).
 */
const narrateOnHost = (draft: Draft, conversationId: string, items: ReadonlyArray<Item>) => {
  const carried = items
    .filter((item) => item.type !== "turn_status" && !item.type.startsWith("input_"))
    .map((item) => ("run_public_id" in item ? item : { ...item, run_public_id: draft.context.publicId }))
  if (carried.length > 0) draft.request({ type: fx.narrateOnHost, params: { conversationId, items: carried } })
}

/**
 * The transition's actions: `work` on a draft, then (unless it refused) the graph advanced, the
 * run judged, and the step concluded with its projections and narration (a hosted run's on its
 * conversation's feed).
 */
const step = <T extends Event["type"]>(work: (draft: Draft, event: EventOf<T>) => void) =>
  runSetup.enqueueActions(({ context, event, enqueue }) => {
    let refused = false
    const hosted: Array<Item> = []
    const draft: Draft = {
      at: instantOf(event, context.pausedAt ?? context.startedAt ?? 0),
      context: { ...context, tasks: [...context.tasks], inputs: [...context.inputs] },
      request: (action) => {
        if (action.type === fx.refuse) refused = true
        enqueue(action as never)
      },
      emit: (item) => {
        if (context.conversationId === null) enqueue.emit(item)
        else hosted.push(item)
      },
      setTimer: (key, generation, deadlineAt) =>
        enqueue.raise(
          { type: "task.deadline", key, generation, deadlineAt },
          { id: deadlineTimer(key), delay: Math.max(0, deadlineAt - draft.at) }
        ),
      clearTimer: (key) => enqueue.cancel(deadlineTimer(key)),
      due: (inputId, dueAt) =>
        enqueue.raise(
          { type: "input.due", inputId, dueAt },
          { id: dueTimer(inputId), delay: Math.max(0, dueAt - draft.at) }
        ),
      undue: (inputId) => enqueue.cancel(dueTimer(inputId)),
      touched: new Set()
    }
    work(draft, event as EventOf<T>)
    if (refused) return
    advance(draft)
    while (landInput(draft)) advance(draft)
    returnResults(draft)
    judge(draft)
    settleReplyEarly(draft)
    answerWatchers(draft)
    conclude(draft, context)
    if (context.conversationId !== null) narrateOnHost(draft, context.conversationId, hosted)
    enqueue.assign(draft.context)
  })

// ---- executors gone

const revoked = (draft: Draft, event: EventOf<"executor.revoked">) => {
  for (const task of draft.context.tasks) {
    const target = task.spec.tool?.target
    if (task.status !== "dispatched" || task.claimed || target === undefined) continue
    if (target.kind === "runner" && target.executor.executorId === event.executorId) {
      fail(draft, task.spec.key, "failed", { key: "executor_revoked" })
    } else if (target.kind === "pool" && target.executorIds.includes(event.executorId)) {
      const executorIds = target.executorIds.filter((id) => id !== event.executorId)
      const tool = { ...task.spec.tool!, target: { kind: "pool" as const, executorIds } }
      put(draft, { ...task, spec: { ...task.spec, tool } })
    }
  }
}

const reap = runSetup.enqueueActions(({ enqueue }) => enqueue({ type: fx.reap }))

const statuses: ReadonlyArray<RunStatus> = [
  "pending",
  "running",
  "paused",
  "needs_attention",
  "canceling",
  "completed",
  "canceled"
]

/** The machine's state follows the status its step decided (a tombstone first). */
const followers = (from: RunStatus) => [
  { guard: "tombstoned" as const, target: "tombstoned" },
  ...statuses
    .filter((status) => status !== from)
    .map((status) => ({ guard: { type: "is" as const, params: status }, target: status }))
]

export const runMachine = runSetup.createMachine({
  id: "run",
  context: ({ input }) => ({
    publicId: input.publicId,
    conversationId: input.conversationId,
    turnId: input.turnId,
    creatorId: input.creatorId,
    creatorApplicationId: input.creatorApplicationId,
    approvalMode: input.approvalMode,
    approvalRules: input.approvalRules,
    status: "pending",
    tasks: input.tasks.map((spec) => fresh(keptSpec(input.approvalMode, input.approvalRules, spec), input.at)),
    deliverable: input.deliverable,
    revision: 1,
    attention: null,
    stopping: false,
    pausedAt: null,
    startedAt: null,
    completedAt: null,
    tombstoned: false,
    replyTo: input.replyTo ?? null,
    replied: false,
    inputs: [],
    nextInputPosition: 0,
    landed: 0,
    kernelTools: input.kernelTools ?? {},
    ...(input.kernelAliases === undefined ? {} : { kernelAliases: input.kernelAliases }),
    ...(input.kernelProfiles === undefined ? {} : { kernelProfiles: input.kernelProfiles }),
    watchers: []
  }),
  on: {
    "run.start": { actions: step(start) },
    "run.pause": { actions: step(pause) },
    "run.resume": { actions: step(resume) },
    "run.stop": { actions: step(stop) },
    "run.append": { actions: step(append) },
    "run.defaultRunner": { actions: step(defaultRunner) },
    "run.tombstone": { actions: step(tombstone) },
    "input.accept": { actions: step(acceptInput) },
    "input.edit": { actions: step(editInput) },
    "input.delete": { actions: step(deleteInput) },
    "input.reorder": { actions: step(reorderInputs) },
    "input.due": { guard: "inputDue", actions: step(inputDue) },
    "executor.revoked": { actions: step(revoked) },
    "task.claim": { actions: step(claim) },
    "task.extend": { actions: step(extend) },
    "task.commit": { actions: step(commit) },
    "task.resolve": { actions: step(resolve) },
    "task.retry": { actions: step(retryTask) },
    "task.abandon": { actions: step(abandon) },
    "task.approve": { actions: step(approve) },
    "task.deny": { actions: step(deny) },
    "task.cancel": { actions: step(cancelVerb) },
    "task.compact": { actions: step(compactVerb) },
    "task.addressed": { actions: step(addressed) },
    "task.kernelAnswered": { guard: "kernelCurrent", actions: step(kernelAnswered) },
    "task.kernelRouted": { guard: "kernelCurrent", actions: step(kernelRouted) },
    "task.replyReturned": { guard: "replyCurrent", actions: step(replyReturned) },
    "task.watch": { actions: step(watch) },
    "wait.answered": { guard: "waitCurrent", actions: step(waitAnswered) },
    "task.deadline": { guard: "deadlineCurrent", actions: step(deadline) },
    "inference.replied": { guard: "roundCurrent", actions: step(replied) }
  },
  initial: "pending",
  states: {
    pending: { meta: { waitsOn: "its creator's start" }, always: followers("pending") },
    running: {
      meta: {
        waitsOn:
          "its running rounds, dispatched tasks (waits on other runs' tasks too) and the addressing of model calls"
      },
      always: followers("running")
    },
    paused: { meta: { waitsOn: "its creator's resume or stop" }, always: followers("paused") },
    needs_attention: {
      meta: { waitsOn: "a person: a retry, abandon, append, resolution or approval" },
      always: followers("needs_attention")
    },
    canceling: { meta: { waitsOn: "the settling of its started work" }, always: followers("canceling") },
    completed: { meta: { waitsOn: "nothing (terminal)" }, always: followers("completed") },
    canceled: { meta: { waitsOn: "nothing (terminal)" }, always: followers("canceled") },
    tombstoned: {
      meta: { waitsOn: "its reap, 30 days after DELETE" },
      entry: enqueueActions(({ enqueue }) =>
        enqueue.raise({ type: "run.reap" }, { id: "reap", delay: reapAfterMillis })
      ),
      on: { "run.reap": { target: "reaped", actions: reap } }
    },
    reaped: { type: "final" }
  }
})

export const runVersion = 4

/** A version-3 context: its tool tasks' specs as compiled, each with its input. */
type CompiledTasks = Omit<RunContext, "tasks"> & {
  readonly tasks: ReadonlyArray<Omit<Task, "spec"> & { readonly spec: CompiledTaskSpec }>
}

/**
 * Version 1 hosted no runs: every run it wrote tells no one. Version 2 knew no waits across runs:
 * nothing watches its tasks. Version 3 kept every tool task's input and judged its approval as it
 * started: each is judged now over that input (mode and rules never changed since) and the input
 * dropped (the task's row keeps it).
 */
export const runMigrations = {
  2: <S extends { readonly context: unknown }>(snapshot: S) => ({
    ...snapshot,
    context: {
      ...(snapshot.context as object),
      replyTo: null,
      replied: false,
      inputs: [],
      nextInputPosition: 0,
      landed: 0,
      kernelTools: {}
    }
  }),
  3: <S extends { readonly context: unknown }>(snapshot: S) => ({
    ...snapshot,
    context: { ...(snapshot.context as object), watchers: [] }
  }),
  4: <S extends { readonly context: unknown }>(snapshot: S) => {
    const context = snapshot.context as CompiledTasks
    const kept = (spec: CompiledTaskSpec) => keptSpec(context.approvalMode, context.approvalRules, spec)
    return {
      ...snapshot,
      context: { ...context, tasks: context.tasks.map((task) => ({ ...task, spec: kept(task.spec) })) }
    }
  }
}
