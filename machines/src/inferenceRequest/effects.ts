// Effect requests of an inference request: the row writes of each step (status, streamed output,
// usage, result, tombstone, reap), an attempt's announcement to the asker's watchers, and the
// provider call, an after-commit job per attempt.
import type { ModelChange } from "./context.ts"
import type { InferenceReplied, Outcome, OutputItem, ReplyAddress } from "./events.ts"

export const inferenceRequestEffects = {
  /** Writes the projected status (queued, running or a terminal one) to the row. */
  recordStatus: "inference.recordStatus",
  /** Appends an attempt's streamed text, reasoning and tool calls to the row's attempt output. */
  appendOutput: "inference.appendOutput",
  /** Drops the current attempt's output (a rollback). */
  dropOutput: "inference.dropOutput",
  /** Adds a billed attempt's usage to the row's usage_summary. */
  recordUsage: "inference.recordUsage",
  /** Writes the terminal result (the row's attempt output becomes output_text and reasoning). */
  recordResult: "inference.recordResult",
  /** Marks the row tombstoned (the list omits it; reads answer 404). */
  recordTombstone: "inference.recordTombstone",
  /** Deletes the row of a tombstone 30 days old. */
  reapRow: "inference.reapRow",
  /** Tells the actor that asked for the request its outcome (in the step's transaction). */
  replyToAsker: "inference.replyToAsker",
  /** Announces a sent attempt to the asker's watchers (an ephemeral frame, when the step commits). */
  announceAttempt: "inference.announceAttempt",
  /** After commit: calls the provider for an attempt and reports what it streams and how it ends. */
  callProvider: "inference.callProvider"
} as const

export type ProjectedStatus = "queued" | "running" | "completed" | "failed" | "canceled" | "timed_out"

export interface RecordStatusParams {
  readonly status: ProjectedStatus
}

export interface AppendOutputParams {
  readonly items: ReadonlyArray<OutputItem>
}

export interface RecordUsageParams {
  readonly usage: Readonly<Record<string, unknown>>
}

export interface ResultParams {
  readonly status: Exclude<ProjectedStatus, "queued" | "running">
  readonly finish_quality?: string
  readonly refusal_category?: string
  readonly error?: { readonly code: string; readonly attempt_budget_spent?: true }
  readonly model_change?: ModelChange
  readonly usage?: Readonly<Record<string, unknown>>
  readonly outcome?: Outcome
}

export interface CallProviderParams {
  readonly attempt: number
  readonly model: string
  /** Attempts this request made on `model` before this one. */
  readonly earlierAttemptsOnModel: number
}

/** The announcement's frame with the attempt's number and model (the binding stamps `at`). */
export interface AnnounceAttemptParams {
  readonly channel: string
  readonly frame: Readonly<Record<string, unknown>>
}

export interface ReplyToAskerParams {
  readonly to: ReplyAddress
  readonly event: InferenceReplied
}
