// A run's transcript (runs supplement "Run resource and projections"): its mainline model rounds,
// newest page first and in reading order within a page, each with the calls it made and the
// tasks it delegated; and the row a settled round or call is, as the conversation channel's
// transcript tells it. Pure; a bad cursor or limit is refused as parameter_invalid.
import type { TaskStatus, Visibility } from "@troupe/machines/run/context"
import { isSettled } from "@troupe/machines/run/rules/graph"
import type { TaskRow } from "@troupe/storage/repositories/Runs"
import { Result } from "effect"
import { isObject } from "../kernel/Json.ts"
import { BadParameter } from "../kernel/Refusals.ts"
import {
  bytesOf,
  delegationsOf,
  factsOf,
  inAuthoringOrder,
  outputOf,
  previewOf,
  resultOf,
  type TaskFactsByKey,
  visibilityOf
} from "./Projections.ts"

type Block = Readonly<Record<string, unknown>>

export type TranscriptCallView = {
  readonly task_key: string
  readonly tool_call_id?: string
  /** What the model called (an alias when declared). */
  readonly name: string
  /** The catalog wire name behind an alias. */
  readonly tool?: string
  readonly status: TaskStatus
  readonly is_error?: boolean
  readonly title?: string
  readonly metadata?: Block
  readonly output_preview?: string
  readonly output_bytes?: number
  readonly started_at?: Date
  readonly completed_at?: Date
}

export type TranscriptRoundView = {
  readonly task_key: string
  readonly mainline: boolean
  readonly status: TaskStatus
  readonly visibility: Visibility
  readonly text_preview?: string
  readonly text_bytes?: number
  readonly usage?: Block
  readonly error?: Block
  readonly started_at: Date | null
  readonly completed_at: Date | null
  readonly calls: { readonly count: number; readonly items: ReadonlyArray<TranscriptCallView> }
  /** Keys of the tasks the round delegated. */
  readonly branches: ReadonlyArray<string>
}

export interface RunTranscriptView {
  readonly rounds: ReadonlyArray<TranscriptRoundView>
  readonly pagination: { readonly next_before: string | null; readonly has_older: boolean }
}

/** The query as it arrived: `before` an opaque cursor, `limit` 1–100 (default 25). */
export interface TranscriptPage {
  readonly before?: string | undefined
  readonly limit?: string | undefined
}

/** A round lists at most this many of its calls. */
export const callsShown = 24

const cursorTag = "transcript"

const cursorOf = (round: TaskRow) => Buffer.from(JSON.stringify([cursorTag, round.key])).toString("base64url")

/** The key a cursor names, when it is one of ours. */
const cursorKey = (cursor: string): string | undefined => {
  try {
    const decoded: unknown = JSON.parse(Buffer.from(cursor, "base64url").toString())
    return Array.isArray(decoded) && decoded.length === 2 && decoded[0] === cursorTag && typeof decoded[1] === "string"
      ? decoded[1]
      : undefined
  } catch {
    return undefined
  }
}

const invalid = (message: string) => Result.fail(new BadParameter({ code: "parameter_invalid", message }))

const textOf = (task: TaskRow) => {
  const result = resultOf(task)
  return result === undefined ? undefined : outputOf(result)
}

const callOf = (call: TaskRow): TranscriptCallView => {
  const result = resultOf(call) ?? {}
  const output = textOf(call)
  return {
    task_key: call.key,
    ...(call.tool_call_id === null ? {} : { tool_call_id: call.tool_call_id }),
    name: call.tool_name ?? "",
    ...(call.tool_alias === null ? {} : { tool: call.tool_alias }),
    status: call.status,
    ...(typeof result.is_error === "boolean" ? { is_error: result.is_error } : {}),
    ...(typeof result.title === "string" ? { title: result.title } : {}),
    ...(isObject(result.metadata) ? { metadata: result.metadata } : {}),
    ...(output === undefined ? {} : { output_preview: previewOf(output), output_bytes: bytesOf(output) }),
    ...(call.started_at === null ? {} : { started_at: call.started_at }),
    ...(call.completed_at === null ? {} : { completed_at: call.completed_at })
  }
}

const roundOf = (
  round: TaskRow,
  tasks: ReadonlyArray<TaskRow>,
  specs: TaskFactsByKey,
  delegations: ReadonlyMap<string, ReadonlyArray<string>>
): TranscriptRoundView => {
  const calls = tasks.filter((task) => task.kind === "tool_task" && factsOf(task, specs).expansionParent === round.key)
  const text = textOf(round)
  return {
    task_key: round.key,
    mainline: round.mainline,
    status: round.status,
    visibility: visibilityOf(round),
    ...(text === undefined ? {} : { text_preview: previewOf(text), text_bytes: bytesOf(text) }),
    ...(isObject(round.usage) ? { usage: round.usage } : {}),
    ...(isObject(round.error) ? { error: round.error } : {}),
    started_at: round.started_at,
    completed_at: round.completed_at,
    calls: { count: calls.length, items: calls.slice(0, callsShown).map(callOf) },
    branches: calls.flatMap((call) => delegations.get(call.key) ?? [])
  }
}

/**
 * `GET …/runs/{id}/transcript?before&limit`: the `limit` mainline rounds older than `before`'s
 * (the newest without it), in reading order; `next_before` names the page's oldest round while
 * older ones remain. A cursor that is not ours or names no mainline round, or a limit outside
 * 1–100 → parameter_invalid.
 */
export const transcriptOf = (
  tasks: ReadonlyArray<TaskRow>,
  specs: TaskFactsByKey,
  page: TranscriptPage
): Result.Result<RunTranscriptView, BadParameter> => {
  const limit = page.limit === undefined ? 25 : Number(page.limit)
  if (!/^\d{1,3}$/.test(page.limit ?? "25") || limit < 1 || limit > 100) return invalid("limit must be 1 to 100")
  const ordered = inAuthoringOrder(tasks)
  const rounds = ordered.filter((task) => task.kind === "model_task" && task.mainline)
  let end = rounds.length
  if (page.before !== undefined) {
    const key = cursorKey(page.before)
    end = rounds.findIndex((round) => round.key === key)
    if (end < 0) return invalid("before is not a transcript cursor of this run")
  }
  const start = Math.max(0, end - limit)
  const delegations = delegationsOf(ordered)
  return Result.succeed({
    rounds: rounds.slice(start, end).map((round) => roundOf(round, ordered, specs, delegations)),
    pagination: { next_before: start > 0 ? cursorOf(rounds[start]!) : null, has_older: start > 0 }
  })
}

/** What the conversation channel's transcript tells of a settled task: a round's row, or a call's. */
export type SettledTranscriptRow =
  | { readonly type: "round"; readonly round: TranscriptRoundView }
  | { readonly type: "call"; readonly call: TranscriptCallView }

/** Whether a task_status item's status settles its task (a round or a call then has its row). */
export const settlesTask = (status: unknown) => typeof status === "string" && isSettled(status as TaskStatus)

/**
 * The transcript row of task `key` once it settled (conversations supplement "Feed and conversation
 * channel": round and call items): a mainline round, or a call such a round made, as the transcript
 * door shows them; undefined for any other task, or one not settled (a retried round is told again
 * when it settles).
 */
export const settledRowOf = (
  tasks: ReadonlyArray<TaskRow>,
  specs: TaskFactsByKey,
  key: string
): SettledTranscriptRow | undefined => {
  const ordered = inAuthoringOrder(tasks)
  const task = ordered.find((each) => each.key === key)
  if (task === undefined || !isSettled(task.status)) return undefined
  if (task.kind === "model_task") {
    return task.mainline ? { type: "round", round: roundOf(task, ordered, specs, delegationsOf(ordered)) } : undefined
  }
  if (task.kind !== "tool_task") return undefined
  const parent = factsOf(task, specs).expansionParent
  const round = ordered.find((each) => each.key === parent)
  return round?.kind === "model_task" && round.mainline ? { type: "call", call: callOf(task) } : undefined
}
