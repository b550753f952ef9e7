// The executor inbox channel's wire shapes (SUPPLEMENT "Cable"; runs supplement "Executor
// inbox"): its identifiers and its bare messages (no `{event}` wrapper), and the executor's pong.
import { Schema } from "effect"

/** The identifiers the channel answers to: the upstream client's, then our short one. */
export const executorInboxChannelNames = ["AgentAPI::V1::ExecutorInboxChannel", "ExecutorInboxChannel"] as const

/** A row appeared on this inbox (a pool row: on every member's). */
export const WorkAvailable = Schema.Struct({
  type: Schema.Literal("work_available"),
  kind: Schema.String,
  run_public_id: Schema.String,
  task_key: Schema.String,
  tool_name: Schema.optionalKey(Schema.String)
})

/** The kernel canceled a row this executor claimed. */
export const WorkCanceled = Schema.Struct({
  type: Schema.Literal("work_canceled"),
  run_public_id: Schema.String,
  task_key: Schema.String
})

/** The channel's heartbeat; the executor answers with the action `pong`. */
export const InboxPing = Schema.Struct({ type: Schema.Literal("ping"), at: Schema.String })

export const ExecutorInboxMessage = Schema.Union([WorkAvailable, WorkCanceled, InboxPing])
export type ExecutorInboxMessage = typeof ExecutorInboxMessage.Type

/** The `data` of the executor's `message` command answering a ping. */
export const pong = { action: "pong" } as const
