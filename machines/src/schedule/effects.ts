// Effect requests of a schedule, carried out by its binding in the step's transaction: the row's
// projection, the dispatch of an execution (a child conversation and its first input), the
// withdrawal of a still-queued child input at cancel, and refusals.

export const scheduleEffects = {
  /** Mirror the projection (and an edit's changed members) on the schedule row. */
  record: "schedule.record",
  /** Open an execution: the child conversation, its first input, the execution row. */
  dispatch: "schedule.dispatch",
  /** Delete the execution's first input if it is still queued. */
  withdraw: "schedule.withdraw",
  /** Refuse the command (the step is vetoed with the reason). */
  refuse: "schedule.refuse"
} as const

export type ScheduleStatus = "active" | "paused" | "canceled" | "completed"

export interface RecordParams {
  readonly status: ScheduleStatus
  readonly nextRunAt: number | null
  readonly lockVersion: number
  readonly lastErrorCode: string | null
  readonly lastEnqueuedAt: number | null
  readonly lastInputId: string | null
  readonly changes?: Readonly<Record<string, unknown>>
}

export interface DispatchParams {
  readonly childId: string
  readonly inputId: string
  /** The nominal occurrence (a run now: its instant). */
  readonly scheduledFor: number
  readonly at: number
}

export interface WithdrawParams {
  readonly inputId: string
}

export interface RefuseParams {
  /** run_at_passed: a paused one-time schedule whose run_at has passed cannot resume. */
  readonly reason: "stale_object" | "execution_in_progress" | "run_at_passed"
}
