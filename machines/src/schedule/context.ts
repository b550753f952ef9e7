// What a schedule starts from and remembers: its rule as stored (the timer's events carry it, so
// the binding can date the next occurrence), the next occurrence its timer waits for (epoch
// milliseconds, null while paused or finished), its lock_version, the one unfinished execution
// (its first input's public id) and what the projection shows of the last dispatch.
import { Schema } from "effect"

export const ScheduleInput = Schema.Struct({
  rule: Schema.Unknown,
  /** The first occurrence, dated by the domain at creation. */
  nextRunAt: Schema.Number,
  at: Schema.Number
})
export type ScheduleInput = typeof ScheduleInput.Type

export const ScheduleContext = Schema.Struct({
  rule: Schema.Unknown,
  nextRunAt: Schema.NullOr(Schema.Number),
  lockVersion: Schema.Number,
  /** The first input of the execution not yet finished (queued or running), else null. */
  unfinished: Schema.NullOr(Schema.String),
  lastErrorCode: Schema.NullOr(Schema.String),
  lastEnqueuedAt: Schema.NullOr(Schema.Number),
  lastInputId: Schema.NullOr(Schema.String)
})
export type ScheduleContext = typeof ScheduleContext.Type
