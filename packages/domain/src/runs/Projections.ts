// What every read projection of a run (Trace.ts, Graph.ts, Phases.ts, Transcript.ts) reads of its
// rows: the compiled facts the rows lack (taken from the run's snapshot), settledness, a task's
// committed result as text and blocks, previews, and the tasks a model delegated. Pure.
import type { OnFailure, TaskKind, TaskStatus, Visibility } from "@troupe/machines/run/context"
import type { TaskRow } from "@troupe/storage/repositories/Runs"
import { isObject } from "../kernel/Json.ts"

/**
 * What a task's compiled spec in the run's snapshot knows and its row does not: the waits as the
 * graph holds them now (an expansion rewires its round's dependents), which waits the written
 * order made, what it reads, the envelope and step that wrote it, the round it grew from, a race's
 * rule. A machine `TaskSpec` fits; `lifetime`, `wake` and `resultDeliveredAt` are for delegated
 * tasks (absent: conversation, auto, not delivered).
 */
export interface TaskFacts {
  readonly after: ReadonlyArray<string>
  readonly structural: ReadonlyArray<string>
  readonly results: ReadonlyArray<string>
  readonly revision: number
  readonly step: number
  readonly expansionParent: string | null
  readonly model: { readonly model: string; readonly continues: string | null } | null
  readonly join: { readonly until: number; readonly losers: "cancel" | "run_out" } | null
  readonly lifetime?: "conversation" | "turn"
  readonly wake?: "auto" | "passive"
  /** When a delegated task's result reached the delegating work (epoch ms). */
  readonly resultDeliveredAt?: number | null
}

/** The snapshot's facts by task key (`new Map(context.tasks.map((t) => [t.spec.key, t.spec]))`). */
export type TaskFactsByKey = ReadonlyMap<string, TaskFacts>

/** A row the snapshot does not know stands alone: its own step, its row's waits all written. */
export const factsOf = (task: TaskRow, specs: TaskFactsByKey): TaskFacts => {
  const known = specs.get(task.key)
  if (known !== undefined) return known
  const after = keysOf(task.after)
  return {
    after,
    structural: after,
    results: [],
    revision: -1,
    step: task.position,
    expansionParent: null,
    model: null,
    join: null
  }
}

const keysOf = (value: unknown): ReadonlyArray<string> =>
  Array.isArray(value) ? value.filter((key): key is string => typeof key === "string") : []

/** The row's enumerations, as the run binding writes them. */
export const kindOf = (task: TaskRow) => task.kind as TaskKind
export const visibilityOf = (task: TaskRow) => task.visibility as Visibility
export const onFailureOf = (task: TaskRow) => task.on_failure as OnFailure

/** Tasks of a run in authoring order. */
export const inAuthoringOrder = (tasks: ReadonlyArray<TaskRow>): ReadonlyArray<TaskRow> =>
  tasks.toSorted((a, b) => a.position - b.position || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))

/** Settled so that dependents may run: completed, absorbed by on_failure absorb, or given a resolution. */
export const isResolved = (task: TaskRow) =>
  task.status === "completed" ||
  task.failure_resolution !== null ||
  (task.on_failure === "absorb" &&
    (task.status === "failed" || task.status === "timed_out" || task.status === "uncertain"))

export const isOpenAsk = (task: TaskRow) =>
  task.await_kind === "ask" && (task.status === "dispatched" || task.status === "awaiting_input")

/** A task's stored result object, once it has one. */
export const resultOf = (task: TaskRow): Readonly<Record<string, unknown>> | undefined =>
  isObject(task.result) ? task.result : undefined

/** A content block the contract knows: text or a resource link. */
export type ContentBlock =
  | { readonly type: "text"; readonly text: string }
  | {
      readonly type: "resource_link"
      readonly uri: string
      readonly name: string
      readonly mimeType?: string
      readonly size?: number
      readonly title?: string
      readonly description?: string
    }

const isContentBlock = (block: unknown): block is ContentBlock =>
  isObject(block) &&
  ((block.type === "text" && typeof block.text === "string") ||
    (block.type === "resource_link" && typeof block.uri === "string" && typeof block.name === "string"))

/** The result's blocks: a committed string is one text block; an output alone reads as one too. */
export const contentOf = (result: Readonly<Record<string, unknown>>): ReadonlyArray<ContentBlock> | undefined => {
  const content = result.content
  if (typeof content === "string") return [{ type: "text", text: content }]
  if (Array.isArray(content)) return content.filter(isContentBlock)
  return typeof result.output === "string" ? [{ type: "text", text: result.output }] : undefined
}

/** The text answer: the result's output, else its text blocks joined by `\n`. */
export const outputOf = (result: Readonly<Record<string, unknown>>): string | undefined => {
  if (typeof result.output === "string") return result.output
  const blocks = contentOf(result)
  return blocks?.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("\n")
}

/** The first 200 characters (code points) of a text. */
export const previewOf = (text: string): string => {
  let preview = ""
  let count = 0
  for (const character of text) {
    if (count === 200) break
    preview += character
    count++
  }
  return preview
}

export const bytesOf = (text: string): number => new TextEncoder().encode(text).byteLength

/** A stamp as the snapshot or a jsonb member holds it (epoch ms or ISO text). */
export const dateOf = (value: unknown): Date | undefined => {
  if (typeof value !== "number" && typeof value !== "string") return undefined
  const date = new Date(value)
  return Number.isNaN(date.getTime()) ? undefined : date
}

/** The wire name a tool row serves: the catalog name behind an alias, else the name called. */
const wireNameOf = (task: TaskRow) => task.tool_alias ?? task.tool_name

/**
 * The tasks each `delegate_task` call started (`<call key>-model-<n>`), by the call's key, in
 * authoring order.
 */
export const delegationsOf = (tasks: ReadonlyArray<TaskRow>): ReadonlyMap<string, ReadonlyArray<string>> => {
  const calls = tasks.filter((task) => task.kind === "tool_task" && wireNameOf(task) === "delegate_task")
  const grownBy = (call: TaskRow, task: TaskRow) =>
    task.kind === "model_task" &&
    task.key.startsWith(`${call.key}-model-`) &&
    /^\d+$/.test(task.key.slice(call.key.length + 7))
  return new Map(calls.map((call) => [call.key, tasks.filter((task) => grownBy(call, task)).map((task) => task.key)]))
}

/** Each task's status by key. */
export const statusesOf = (tasks: ReadonlyArray<TaskRow>): ReadonlyMap<string, TaskStatus> =>
  new Map(tasks.map((task) => [task.key, task.status]))
