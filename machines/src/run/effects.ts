// Effect requests of a run: its refusals, the projections its binding writes (the run row and
// the changed task rows), new task rows (appends, expansions), results, the model rounds it asks
// of inference requests, the addressing of a model's tool calls (a job), and what executors and
// the run's channel hear (inbox work, progress frames).
import type { ReplyAddress } from "../inferenceRequest/events.ts"
import type { RunStatus, TaskSpec, TaskStatus, Watcher } from "./context.ts"
import type { InputLanded, RunReplied } from "./events.ts"

export const runEffects = {
  /** The command is refused and the step rolled back: `reason` is the spec's code. */
  refuse: "run.refuse",
  /** The step commits, and the command is answered `code` (a refusal after a settlement, or unchanged). */
  answer: "run.answer",
  /** Writes the run row's projection (status, attention, revision, deliverable, stamps). */
  recordRun: "run.recordRun",
  /** Writes the projection of the tasks this step changed. */
  recordTasks: "run.recordTasks",
  /** Inserts rows for tasks this step added (an append, a model round's expansion). */
  insertTasks: "run.insertTasks",
  /** Stores a settled task's result (a commit, an ask's resolution). */
  recordResult: "run.recordResult",
  /** Seals a model round's request and asks it of a hidden inference request (told back). */
  openRound: "run.openRound",
  /** Tells a model round's inference request to cancel. */
  cancelRound: "run.cancelRound",
  /** Stores a completed round's answer (its text, usage) on its task row. */
  recordRound: "run.recordRound",
  /** Writes the run's default runner (tasks accepted later use it). */
  recordDefaultRunner: "run.recordDefaultRunner",
  /** Marks the run row tombstoned. */
  recordTombstone: "run.recordTombstone",
  /** Deletes a tombstone's rows 30 days after DELETE. */
  reap: "run.reapRows",
  /** Tells executors that work appeared on or left their inbox (after commit). */
  notifyExecutors: "run.notifyExecutors",
  /** Relays a kernel progress frame on the run's progress feed (after commit, never stored). */
  relayFrame: "run.relayFrame",
  /** Inserts a run inputs door row. */
  insertInput: "run.insertInput",
  /** Rewrites a door row's text, time, state or position (consumed: the task it became). */
  updateInput: "run.updateInput",
  /** Deletes a door row. */
  deleteInput: "run.deleteInput",
  /** Tells the hosting conversation the run's outcome (in the step's transaction). */
  replyToHost: "run.replyToHost",
  /** Appends a hosted run's narrated items to its conversation's feed (in the step's transaction). */
  narrateOnHost: "run.narrateOnHost",
  /** Puts an unwaited delegated task's result into the hosting conversation as a task_result input (in the step's transaction). */
  returnResult: "run.returnResult",
  /** After commit: carries out a kernel call (svc.memory.…), answered `task.kernelAnswered`. */
  callKernel: "run.callKernel",
  /** Rewrites a routed kernel call's row as its provider's tool call (names, call id, scope). */
  routeTask: "run.routeTask",
  /** After commit: finds who serves a model's tool calls, answered `task.addressed`. */
  addressCalls: "run.addressCalls",
  /** Asks another run (an earlier one of the same conversation) to watch a task (in the step's transaction). */
  watchTask: "run.watchTask",
  /** Tells a waiting run that the task it watches settled, or is gone (in the step's transaction). */
  answerWatcher: "run.answerWatcher"
} as const

export interface RefuseParams {
  readonly reason: string
  /** Members the refusal carries beside code and message (current_revision …). */
  readonly extra?: Readonly<Record<string, unknown>>
}

/** A task row's projection (times as epoch milliseconds; executors by public id). */
export interface TaskProjection {
  readonly key: string
  readonly status: TaskStatus
  readonly generation: number
  readonly failureResolution: string | null
  readonly error: { readonly key: string; readonly detail?: string } | null
  readonly inboxKind: "tool_call" | "ask" | "approval" | null
  /** The addressee of a listed row (null for an unclaimed pool row). */
  readonly inboxExecutorId: string | null
  readonly pool: boolean
  readonly targetExecutorId: string | null
  readonly claimedBy: string | null
  readonly claimTokenDigest: string | null
  readonly claimed: boolean
  readonly timeoutMs: number | null
  readonly deadlineAt: number | null
  readonly approval: { readonly origin: string; readonly decided_by: string; readonly decided_at: number } | null
  readonly after: ReadonlyArray<string>
  readonly startedAt: number | null
  readonly completedAt: number | null
}

export interface RecordTasksParams {
  readonly tasks: ReadonlyArray<TaskProjection>
}

export interface RecordRunParams {
  readonly status: RunStatus
  readonly attention: {
    readonly reason: string
    readonly blocked_task_keys: ReadonlyArray<string>
    readonly blocked_task_overflow?: true
  } | null
  readonly revision: number
  readonly deliverable: string
  readonly startedAt: number | null
  readonly pausedAt: number | null
  readonly completedAt: number | null
}

export interface RecordDefaultRunnerParams {
  /** The runner's public id; null clears. */
  readonly executorId: string | null
}

export interface InsertTasksParams {
  /** Authoring positions continue after the run's last task. */
  readonly firstPosition: number
  readonly tasks: ReadonlyArray<TaskSpec>
  readonly details: Readonly<Record<string, unknown>>
}

export interface RecordResultParams {
  readonly key: string
  readonly result: Readonly<Record<string, unknown>>
  /** A wait's result is its target's: the row's result is copied from this task's. */
  readonly from?: string
  /** The run `from` is a task of, when not this one (a wait on another run's task). */
  readonly fromRun?: string
}

export interface OpenRoundParams {
  readonly key: string
  /** Told back in `inference.replied` as the request's `ref`. */
  readonly ref: string
  readonly model: string
  /** The previous mainline round this one replays first (null: a fresh context). */
  readonly continues: string | null
  /** Keys whose results the round reads (as task_result messages before its prompt). */
  readonly results: ReadonlyArray<string>
  /** Keys of the tool calls a continuation consumes (their results answer the calls). */
  readonly calls: ReadonlyArray<string>
  readonly mainline: boolean
  readonly attempt: number
  /** Tool names offered to the round. */
  readonly tools: ReadonlyArray<string>
  /** Steering rows that land in this round (after its prompt), in order. */
  readonly steers: ReadonlyArray<string>
  /** A compacted round's: the summarizer whose answer stands in for the history it replays. */
  readonly summary?: string
  /** A summarizer's: the round whose history it summarizes, as that round is asked. */
  readonly summarizes?: SummarizedRound
}

/** A round as its summarizer reads it (rules/compaction.ts): what its request replays. */
export interface SummarizedRound {
  readonly key: string
  readonly model: string
  readonly continues: string | null
  readonly results: ReadonlyArray<string>
  readonly calls: ReadonlyArray<string>
  readonly mainline: boolean
  /** An earlier summarizer of that round, whose answer already stands in for its history. */
  readonly summary?: string
}

export interface CancelRoundParams {
  readonly key: string
}

export interface RecordRoundParams {
  readonly key: string
  readonly usage: Readonly<Record<string, unknown>> | null
}

/** A bare inbox channel message for each named executor. */
export interface NotifyExecutorsParams {
  readonly messages: ReadonlyArray<{
    readonly executorIds: ReadonlyArray<string>
    readonly message: Readonly<Record<string, unknown>>
  }>
}

export interface RelayFrameParams {
  readonly frame: Readonly<Record<string, unknown>>
  /** A hosted run's conversation (its frames ride the conversation's feed); null standalone. */
  readonly conversationId: string | null
}

export interface AddressCallsParams {
  readonly calls: ReadonlyArray<{
    readonly key: string
    readonly name: string
    /** A `tool_call`: only a tool of the creator's declaration may serve it. */
    readonly via?: "tool_call"
  }>
}

export interface NarrateOnHostParams {
  /** The hosting conversation's public id. */
  readonly conversationId: string
  /** The step's items in order, each as the run's feed would carry it (with run_public_id). */
  readonly items: ReadonlyArray<{ readonly type: string; readonly [member: string]: unknown }>
}

export interface ReplyToHostParams {
  readonly to: ReplyAddress
  readonly event: RunReplied | InputLanded
}

export interface ReturnResultParams {
  /** The hosting conversation's public id. */
  readonly conversationId: string
  /** The delegated task (the input's sender_task_key) and the task whose row holds its result (its chain's last round). */
  readonly key: string
  readonly from: string
  readonly status: TaskStatus
  readonly errorKey: string | null
  /** auto: the result asks the answerer's reply; passive: it is recorded as a message. */
  readonly wake: "auto" | "passive"
  /** The model of the round that delegated (a wake reply's, when the answerer names no default). */
  readonly roundModel: string | null
}

export interface InsertInputParams {
  readonly inputId: string
  readonly steer: boolean
  readonly dueAt: number | null
  readonly position: number
  readonly row: Readonly<Record<string, unknown>>
}

export interface UpdateInputParams {
  readonly inputId: string
  readonly state: "pending" | "steering" | "consumed"
  readonly lockVersion: number
  readonly position: number
  readonly dueAt: number | null
  readonly text?: string
  /** The task a consumed row became (or joined, a steer). */
  readonly taskKey?: string
}

export interface CallKernelParams {
  readonly key: string
  readonly generation: number
  readonly canonical: string
}

/** A kernel call routed to a provider (rules/reports.ts kernelRouted): what its row now shows. */
export interface RouteTaskParams {
  readonly key: string
  readonly toolName: string
  readonly toolAlias: string | null
  readonly toolCallId: string
  readonly scope: { readonly bindings: ReadonlyArray<unknown> } | null
}

export interface WatchTaskParams {
  /** The other run's public id and its task's key. */
  readonly run: string
  readonly task: string
  /** This run's wait task and its generation. */
  readonly key: string
  readonly generation: number
}

export interface AnswerWatcherParams {
  readonly watcher: Watcher
  readonly outcome: "settled" | "not_found"
}
