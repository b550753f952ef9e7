// Events of a schedule. Commands carry the instant they were made (`at`); the domain dates what
// needs the rule's arithmetic (a resume's or an edit's next occurrence). The timer's event is
// raised with the occurrence it waits for and the rule; the binding stamps it on delivery with the
// step's instant, the occurrence it stands for (the latest one due: missed ones coalesce), the next
// one after now, and the ids a child conversation and its first input take.
import { Schema } from "effect"

const JsonObject = Schema.Record(Schema.String, Schema.Unknown)

/** The statuses an execution settles in (its child's first reply). */
export const SettledStatus = Schema.Literals(["completed", "failed", "canceled"])

export const ScheduleEvent = Schema.Union([
  Schema.Struct({
    type: Schema.Literal("schedule.due"),
    /** The occurrence the timer was set for (a stale timer's differs from the context's). */
    due: Schema.Number,
    rule: Schema.Unknown,
    /** The stamp's (absent on the timer row; a delivery without them is not accepted). */
    at: Schema.optionalKey(Schema.Number),
    scheduledFor: Schema.optionalKey(Schema.Number),
    nextRunAt: Schema.optionalKey(Schema.NullOr(Schema.Number)),
    childId: Schema.optionalKey(Schema.String),
    inputId: Schema.optionalKey(Schema.String)
  }),
  /** Run now: one execution started at once, the clock unchanged. */
  Schema.Struct({
    type: Schema.Literal("schedule.run"),
    at: Schema.Number,
    childId: Schema.String,
    inputId: Schema.String
  }),
  Schema.Struct({ type: Schema.Literal("schedule.pause"), at: Schema.Number }),
  /** `nextRunAt`: the next future occurrence from now (dated by the domain); null: a one-time rule expired. */
  Schema.Struct({
    type: Schema.Literal("schedule.resume"),
    at: Schema.Number,
    nextRunAt: Schema.NullOr(Schema.Number)
  }),
  Schema.Struct({ type: Schema.Literal("schedule.cancel"), at: Schema.Number }),
  /**
   * PATCH with the presented lock_version: `changes` are the row's replaced members (name, prompt,
   * policy, rule); a changed rule brings its next occurrence from now.
   */
  Schema.Struct({
    type: Schema.Literal("schedule.edit"),
    at: Schema.Number,
    lockVersion: Schema.Number,
    changes: JsonObject,
    rule: Schema.optionalKey(Schema.Unknown),
    nextRunAt: Schema.optionalKey(Schema.NullOr(Schema.Number))
  }),
  /**
   * Told when an execution's child settles its first reply, or by the dispatch itself when the
   * child could not be opened (`errorCode` names why: the schedule's last_error_code).
   */
  Schema.Struct({
    type: Schema.Literal("execution.settled"),
    inputId: Schema.String,
    status: SettledStatus,
    errorCode: Schema.optionalKey(Schema.String)
  })
])
export type ScheduleEvent = typeof ScheduleEvent.Type
