// A run's trace, its task rows and task read, and its list row (runs supplement "Run resource and
// projections"), as pure functions over the run's rows and its snapshot's task facts. Values are
// the contract's types (stamps as Dates): the http layer encodes them with RunShapes.
import type { ApprovalRule, OnFailure, TaskKind, TaskStatus, Visibility } from "@troupe/machines/run/context"
import { isSettled, turnStatusOf } from "@troupe/machines/run/rules/graph"
import type { RunRow, RunStatus, TaskRow } from "@troupe/storage/repositories/Runs"
import { isObject } from "../kernel/Json.ts"
import {
  type ContentBlock,
  contentOf,
  dateOf,
  factsOf,
  inAuthoringOrder,
  isResolved,
  kindOf,
  onFailureOf,
  outputOf,
  previewOf,
  resultOf,
  statusesOf,
  type TaskFactsByKey,
  visibilityOf
} from "./Projections.ts"

type Block = Readonly<Record<string, unknown>>

export interface TaskRowView {
  readonly key: string
  readonly kind: TaskKind
  readonly lifetime: "conversation" | "turn"
  readonly wake: "auto" | "passive"
  readonly status: TaskStatus
  readonly visibility: Visibility
  readonly after: ReadonlyArray<string>
  readonly waiting_on?: ReadonlyArray<string>
  readonly mainline?: boolean
  readonly on_failure: OnFailure
  readonly failure_resolution?: "abandoned" | "canceled"
  readonly result?: { readonly resolved: boolean }
  readonly tool_name?: string
  readonly target?: { readonly executor_public_id: string; readonly display_name?: string }
  readonly addressed_to?: {
    readonly role: "runner" | "agent_application" | "tool_provider"
    readonly executor_public_id?: string
  }
  readonly claimed_by?: { readonly executor_public_id: string }
  readonly approval?: { readonly origin: string; readonly decided_by?: string; readonly decided_at: Date }
  readonly error?: { readonly key: string; readonly detail?: string }
  readonly deadline_at?: Date
  readonly created_at: Date
  readonly started_at: Date | null
  readonly completed_at: Date | null
}

export interface TaskReadView extends TaskRowView {
  readonly prompt?: string
  readonly options?: ReadonlyArray<string>
  readonly multi?: boolean
  readonly instructions?: string
  readonly model?: unknown
  readonly tool_input?: Block
  readonly timeout_ms?: number
  readonly output?: string
  readonly output_preview?: string
  readonly content?: ReadonlyArray<ContentBlock>
  readonly structured_content?: unknown
  readonly is_error?: boolean
  readonly title?: string
  readonly metadata?: Block
  readonly result_type?: string
  readonly usage?: Block
  readonly tool_definitions?: ReadonlyArray<Block>
  readonly request_bytes?: number
}

export type AttentionView = {
  readonly reason: "halt_failure" | "deliverable_unresolved" | "approval_required" | "awaiting_human"
  readonly blocked_task_keys: ReadonlyArray<string>
  readonly blocked_task_overflow?: boolean
}

export interface RunnerEffectsView {
  readonly status: "untouched" | "touched"
  readonly runners: ReadonlyArray<{
    readonly runner_executor_public_id: string
    readonly run_public_id: string
    readonly task_key: string
    readonly checkpoint: unknown
  }>
}

export interface RunTurnView {
  readonly status: string
  readonly failure_reason_key?: string
  readonly public_id?: string
  readonly conversation_public_id?: string
  readonly answering_user_public_id?: string
  readonly model?: unknown
}

export type TaskProgressView = Readonly<Record<TaskStatus | "total", number>>

export interface RunTraceView {
  readonly public_id: string
  readonly workspace_public_id: string
  readonly conversation_public_id: string | null
  readonly creator_public_id: string
  readonly status: RunStatus
  readonly deliverable_task_key: string
  readonly tasks: ReadonlyArray<TaskRowView>
  readonly task_progress: TaskProgressView
  readonly attention: AttentionView | null
  readonly approval_mode: "bypass" | "ask" | "rules"
  readonly approval_rules: ReadonlyArray<ApprovalRule>
  readonly prompt_mechanism: "raw" | "default" | "assembly"
  readonly billing_subject: string | null
  readonly requester_speaker_public_id: string | null
  readonly default_runner: { readonly executor_public_id: string; readonly display_name: string } | null
  readonly runner_effects: RunnerEffectsView
  readonly input_queue: { readonly limit: number; readonly held: number }
  readonly turn: RunTurnView
  readonly created_at: Date
  readonly updated_at: Date
  readonly started_at: Date | null
  readonly paused_at: Date | null
  readonly completed_at: Date | null
}

/** What the trace shows beyond the run's rows: the inputs door's held count, a hosted run's turn. */
export interface TraceExtras {
  /** Held inputs of the run inputs door (a hosted run reads 0). */
  readonly held?: number
  /** A hosted run's turn as its conversation shows it: its answerer and the model of the run's variant. */
  readonly hostTurn?: { readonly answering_user_public_id: string | null; readonly model: unknown } | null
  /** A hosted run's reply settled while the run runs on (delegated work of lifetime conversation): its turn completed. */
  readonly replyDelivered?: boolean
}

/** What a model task's read shows beyond its row: the definitions offered and the sealed size. */
export interface ModelOffer {
  /** The tool definitions offered to the round ([] when none). */
  readonly toolDefinitions?: ReadonlyArray<Block>
  /** The sealed request's canonical size, once sealed. */
  readonly requestBytes?: number
}

/** The run inputs door's bound. */
export const inputQueueLimit = 16

const taskStatuses: ReadonlyArray<TaskStatus> = [
  "waiting",
  "needs_approval",
  "running",
  "dispatched",
  "awaiting_input",
  "completed",
  "failed",
  "canceled",
  "timed_out",
  "uncertain",
  "skipped"
]

const present = <K extends string, V>(key: K, value: V | null | undefined): { readonly [P in K]?: V } =>
  (value === null || value === undefined ? {} : { [key]: value }) as { readonly [P in K]?: V }

/** A tool row's role is its addressee's kind (the creator's agent application serves tools too). */
export const toolRowRole = (kind: string | null | undefined): "runner" | "agent_application" | "tool_provider" =>
  kind === "agent_application" || kind === "tool_provider" ? kind : "runner"

const addressedTo = (task: TaskRow): TaskRowView["addressed_to"] => {
  if (task.inbox_kind === null) return undefined
  if (task.inbox_kind !== "tool_call") {
    return { role: "agent_application", ...present("executor_public_id", task.inbox_executor_public_id) }
  }
  if (task.pool) return { role: "tool_provider" }
  return {
    role: toolRowRole(task.inbox_executor_kind),
    ...present("executor_public_id", task.inbox_executor_public_id)
  }
}

const approvalOf = (approval: unknown): TaskRowView["approval"] => {
  if (!isObject(approval) || typeof approval.origin !== "string") return undefined
  const decidedAt = dateOf(approval.decided_at)
  if (decidedAt === undefined) return undefined
  return {
    origin: approval.origin,
    ...present("decided_by", typeof approval.decided_by === "string" ? approval.decided_by : null),
    decided_at: decidedAt
  }
}

const errorOf = (error: unknown): TaskRowView["error"] =>
  isObject(error) && typeof error.key === "string"
    ? { key: error.key, ...present("detail", typeof error.detail === "string" ? error.detail : null) }
    : undefined

const rowView = (task: TaskRow, statuses: ReadonlyMap<string, TaskStatus>, specs: TaskFactsByKey): TaskRowView => {
  const facts = factsOf(task, specs)
  const kind = kindOf(task)
  const holding = task.status === "waiting" || task.status === "needs_approval"
  const unsettled = facts.after.filter((key) => {
    const status = statuses.get(key)
    return status === undefined || !isSettled(status)
  })
  return {
    key: task.key,
    kind,
    lifetime: facts.lifetime ?? "conversation",
    wake: facts.wake ?? "auto",
    status: task.status,
    visibility: visibilityOf(task),
    after: facts.after,
    ...(holding ? { waiting_on: unsettled } : {}),
    ...(kind === "model_task" ? { mainline: task.mainline } : {}),
    on_failure: onFailureOf(task),
    ...present("failure_resolution", task.failure_resolution as "abandoned" | "canceled" | null),
    ...(isSettled(task.status) ? { result: { resolved: isResolved(task) } } : {}),
    ...present("tool_name", task.tool_name),
    ...(task.target_executor_public_id === null
      ? {}
      : {
          target: {
            executor_public_id: task.target_executor_public_id,
            ...present("display_name", task.target_display_name)
          }
        }),
    ...present("addressed_to", addressedTo(task)),
    ...(task.claimed_by_public_id === null ? {} : { claimed_by: { executor_public_id: task.claimed_by_public_id } }),
    ...present("approval", approvalOf(task.approval)),
    ...present("error", errorOf(task.error)),
    ...present("deadline_at", task.deadline_at),
    created_at: task.created_at,
    started_at: task.started_at,
    completed_at: task.completed_at
  }
}

/** A task row of the trace (a task verb's answer): `waiting_on` reads the other tasks' standing. */
export const taskRowOf = (task: TaskRow, tasks: ReadonlyArray<TaskRow>, specs: TaskFactsByKey): TaskRowView =>
  rowView(task, statusesOf(tasks), specs)

const pick = <T>(value: unknown, is: (value: unknown) => value is T): T | undefined => (is(value) ? value : undefined)
const isString = (value: unknown): value is string => typeof value === "string"
const isBoolean = (value: unknown): value is boolean => typeof value === "boolean"
const isNumber = (value: unknown): value is number => typeof value === "number"
const isStrings = (value: unknown): value is ReadonlyArray<string> => Array.isArray(value) && value.every(isString)

/**
 * `GET …/tasks/{key}`: the row, the inputs its spec keeps, and once it has one the result (output
 * and its preview, content as blocks, the commit's members), the usage block; a model task also
 * shows the definitions offered ([] when none) and, once sealed, the request's size.
 */
export const taskReadOf = (
  task: TaskRow,
  tasks: ReadonlyArray<TaskRow>,
  specs: TaskFactsByKey,
  offer: ModelOffer = {}
): TaskReadView => {
  const spec = isObject(task.spec) ? task.spec : {}
  const result = resultOf(task)
  const output = result === undefined ? undefined : outputOf(result)
  const model = kindOf(task) === "model_task"
  return {
    ...taskRowOf(task, tasks, specs),
    ...present("prompt", pick(spec.prompt, isString)),
    ...present("options", pick(spec.options, isStrings)),
    ...present("multi", pick(spec.multi, isBoolean)),
    ...present("instructions", pick(spec.instructions, isString)),
    ...present("model", spec.model),
    ...present("tool_input", pick(spec.tool_input, isObject)),
    ...present("timeout_ms", task.timeout_ms ?? pick(spec.timeout_ms, isNumber)),
    ...(output === undefined ? {} : { output, output_preview: previewOf(output) }),
    ...(result === undefined
      ? {}
      : {
          ...present("content", contentOf(result)),
          ...present("structured_content", result.structured_content),
          ...present("is_error", pick(result.is_error, isBoolean)),
          ...present("title", pick(result.title, isString)),
          ...present("metadata", pick(result.metadata, isObject)),
          ...present("result_type", pick(result.result_type, isString))
        }),
    ...present("usage", pick(task.usage, isObject)),
    ...(model ? { tool_definitions: offer.toolDefinitions ?? [] } : {}),
    ...(model ? present("request_bytes", offer.requestBytes) : {})
  }
}

const attentionOf = (attention: unknown): AttentionView | null =>
  isObject(attention) && typeof attention.reason === "string" ? (attention as unknown as AttentionView) : null

/**
 * One row per runner that committed a write-kind tool task (`result.writes`), naming its latest
 * such task and that commit's `metadata.checkpoint` (null when absent).
 */
export const runnerEffectsOf = (run: Pick<RunRow, "public_id">, tasks: ReadonlyArray<TaskRow>): RunnerEffectsView => {
  const latest = new Map<string, TaskRow>()
  for (const task of tasks) {
    const runner = task.claimed_by_public_id ?? task.target_executor_public_id
    if (task.kind !== "tool_task" || resultOf(task)?.writes !== true || runner === null) continue
    const before = latest.get(runner)
    const later = (task.completed_at?.getTime() ?? 0) >= (before?.completed_at?.getTime() ?? 0)
    if (before === undefined || later) latest.set(runner, task)
  }
  const runners = [...latest].map(([runner, task]) => {
    const metadata = resultOf(task)?.metadata
    return {
      runner_executor_public_id: runner,
      run_public_id: run.public_id,
      task_key: task.key,
      checkpoint: isObject(metadata) ? (metadata.checkpoint ?? null) : null
    }
  })
  return { status: runners.length === 0 ? "untouched" : "touched", runners }
}

const progressOf = (tasks: ReadonlyArray<TaskRow>): TaskProgressView => {
  const counts = Object.fromEntries(taskStatuses.map((status) => [status, 0])) as Record<TaskStatus, number>
  for (const task of tasks) counts[task.status]++
  return { ...counts, total: tasks.length }
}

const turnOf = (run: RunRow, attention: AttentionView | null, extras: TraceExtras): RunTurnView => {
  const status = extras.replyDelivered === true ? "completed" : turnStatusOf(run.status)
  return {
    status,
    ...(status === "failed" && attention !== null ? { failure_reason_key: attention.reason } : {}),
    ...present("public_id", run.turn_public_id),
    ...present("conversation_public_id", run.conversation_public_id),
    ...present("answering_user_public_id", extras.hostTurn?.answering_user_public_id),
    ...present("model", extras.hostTurn?.model)
  }
}

/** The trace (`GET …/runs/{id}`, every run verb's answer): the run and its tasks in authoring order. */
export const traceOf = (
  run: RunRow,
  tasks: ReadonlyArray<TaskRow>,
  specs: TaskFactsByKey,
  extras: TraceExtras = {}
): RunTraceView => {
  const ordered = inAuthoringOrder(tasks)
  const statuses = statusesOf(ordered)
  const attention = attentionOf(run.attention)
  return {
    public_id: run.public_id,
    workspace_public_id: run.workspace_public_id,
    conversation_public_id: run.conversation_public_id,
    creator_public_id: run.creator_public_id,
    status: run.status,
    deliverable_task_key: run.deliverable_task_key,
    tasks: ordered.map((task) => rowView(task, statuses, specs)),
    task_progress: progressOf(ordered),
    attention,
    approval_mode: run.approval_mode as RunTraceView["approval_mode"],
    approval_rules: Array.isArray(run.approval_rules) ? (run.approval_rules as ReadonlyArray<ApprovalRule>) : [],
    prompt_mechanism: run.prompt_mechanism as RunTraceView["prompt_mechanism"],
    billing_subject: run.billing_subject,
    requester_speaker_public_id: run.requester_speaker_public_id,
    default_runner:
      run.default_runner_public_id === null
        ? null
        : { executor_public_id: run.default_runner_public_id, display_name: run.default_runner_display_name ?? "" },
    runner_effects: runnerEffectsOf(run, ordered),
    input_queue: { limit: inputQueueLimit, held: extras.held ?? 0 },
    turn: turnOf(run, attention, extras),
    created_at: run.created_at,
    updated_at: run.updated_at,
    started_at: run.started_at,
    paused_at: run.paused_at,
    completed_at: run.completed_at
  }
}

export interface RunListRowView {
  readonly public_id: string
  readonly status: RunStatus
  readonly conversation_public_id: string | null
  readonly attention: { readonly reason: string } | null
  readonly created_at: Date
}

/** A row of `GET …/runs`. */
export const listRowOf = (run: RunRow): RunListRowView => {
  const attention = attentionOf(run.attention)
  return {
    public_id: run.public_id,
    status: run.status,
    conversation_public_id: run.conversation_public_id,
    attention: attention === null ? null : { reason: attention.reason },
    created_at: run.created_at
  }
}
