// The wire shapes of a schedule and of its executions (spec "Schedule"; supplement "Schedules"):
// the projection with its normalized rule, policy, provenance, clock and last execution; an
// execution's status read from its child's first input, turn and run.
import type { ExecutionRow, ScheduleRow } from "@troupe/storage/repositories/Schedules"
import type { StoredPolicy } from "./Policy.ts"

export type ExecutionStatus = "queued" | "running" | "completed" | "failed" | "canceled"

/** queued while its input waits (not yet landed, pending or blocked); then the turn's; canceled once withdrawn. */
export const executionStatus = (row: ExecutionRow): ExecutionStatus => {
  if (row.turn_status === null) {
    if (row.withdrawn && row.input_state !== "consumed") return "canceled"
    return row.input_state === "consumed" ? "running" : "queued"
  }
  switch (row.turn_status) {
    case "completed":
      return "completed"
    case "canceled":
      return "canceled"
    case "failed":
    case "timed_out":
      return "failed"
    default:
      return "running"
  }
}

export const executionView = (row: ExecutionRow) => ({
  child_conversation_public_id: row.child_conversation_public_id,
  input_public_id: row.input_public_id,
  turn_public_id: row.turn_public_id,
  run_public_id: row.run_public_id,
  scheduled_for: row.scheduled_for.toISOString(),
  status: executionStatus(row),
  created_at: row.created_at.toISOString()
})
export type ExecutionView = ReturnType<typeof executionView>

const iso = (date: Date | null) => (date === null ? null : date.toISOString())

export const scheduleView = (row: ScheduleRow, last: ExecutionRow | undefined) => {
  const policy = row.policy as StoredPolicy
  return {
    public_id: row.public_id,
    workspace_public_id: row.workspace_public_id,
    conversation_public_id: row.conversation_public_id,
    conversation_title: row.conversation_title,
    creating_user_public_id: row.creator_public_id,
    name: row.name,
    prompt: row.prompt,
    rule: row.rule as Readonly<Record<string, unknown>>,
    answering_user_public_id: policy.answering_user_public_id,
    speaker_public_id: policy.speaker_public_id,
    configuration: policy.configuration,
    tool_names: policy.tool_names,
    approval_mode: policy.approval_mode,
    model: policy.model,
    model_selection: policy.model_selection,
    fallback_models: policy.fallback_models,
    source_run_public_id: row.source_run_public_id,
    source_task_key: row.source_task_key,
    status: row.status,
    next_run_at: iso(row.next_run_at),
    last_enqueued_at: iso(row.last_enqueued_at),
    last_input_public_id: row.last_input_public_id,
    last_error_code: row.last_error_code,
    last_execution: last === undefined ? null : executionView(last),
    lock_version: row.lock_version,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString()
  }
}
export type ScheduleView = ReturnType<typeof scheduleView>
