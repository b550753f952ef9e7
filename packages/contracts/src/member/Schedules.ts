// Member: schedules (spec "Member: schedules", "Schedule"; supplement "Schedules"): create
// (Idempotency-Key 1 to 255 bytes, replayed verbatim), the lists (a conversation's, a workspace's
// readable conversations'), read, PATCH with expected_lock_version, the verbs (pause, resume,
// cancel, run) and the executions. Bodies are read loosely: the domain judges each member in the
// supplement's order (absent prompt or rule 400, bad values 422 validation_failed naming them).
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { BadRequest, Conflict, ContentTooLarge, Forbidden, NotFound, Unprocessable } from "../Errors.ts"
import { IdempotencyKeyHeader, Idempotent } from "../Idempotency.ts"
import { PageQuery } from "../Pagination.ts"
import { wrappedOrTopLevel } from "../Wrapped.ts"
import { MemberAuthentication } from "./Caller.ts"
import { optionalBody } from "./ConversationShapes.ts"

const JsonObject = Schema.Record(Schema.String, Schema.Unknown)
const optional = (description: string) => Schema.optionalKey(Schema.Unknown.annotate({ description }))

const policyMembers = {
  answering_user_public_id: optional("UUID or @handle of an eligible agent"),
  speaker_public_id: optional("the caller, or an agent caller's steward"),
  configuration: optional("object"),
  tool_names: optional("array of tool names"),
  approval_mode: optional("string"),
  model: optional("{model, reasoning_enabled?, reasoning_effort?}; a catalog model"),
  model_selection: optional("object"),
  fallback_models: optional("array of catalog models ([] disables, null the default list)")
}

export const ScheduleMembers = Schema.Struct({
  name: optional("at most 255 characters"),
  prompt: optional("required at creation; nonblank"),
  rule: optional(
    "once {run_at}, interval {every_seconds 60..31536000, starts_at?} or daily {local_time HH:MM, time_zone}"
  ),
  ...policyMembers,
  source_run_public_id: optional("with source_task_key, at creation only"),
  source_task_key: optional("with source_run_public_id, at creation only"),
  expected_lock_version: optional("PATCH: required, the schedule's lock_version")
})

/** `{schedule: {...}}` (or its members at top level). */
export const ScheduleBody = wrappedOrTopLevel("schedule", ScheduleMembers)

export const ExecutionShape = Schema.Struct({
  child_conversation_public_id: Schema.String,
  input_public_id: Schema.String,
  turn_public_id: Schema.NullOr(Schema.String),
  run_public_id: Schema.NullOr(Schema.String),
  scheduled_for: Schema.String,
  status: Schema.Literals(["queued", "running", "completed", "failed", "canceled"]),
  created_at: Schema.String
})

export const ScheduleShape = Schema.Struct({
  public_id: Schema.String,
  workspace_public_id: Schema.String,
  conversation_public_id: Schema.String,
  conversation_title: Schema.NullOr(Schema.String),
  creating_user_public_id: Schema.String,
  name: Schema.NullOr(Schema.String),
  prompt: Schema.String,
  rule: JsonObject,
  answering_user_public_id: Schema.NullOr(Schema.String),
  speaker_public_id: Schema.NullOr(Schema.String),
  configuration: Schema.NullOr(JsonObject),
  tool_names: Schema.NullOr(Schema.Array(Schema.String)),
  approval_mode: Schema.NullOr(Schema.String),
  model: Schema.NullOr(JsonObject),
  model_selection: Schema.NullOr(JsonObject),
  fallback_models: Schema.NullOr(Schema.Array(Schema.String)),
  source_run_public_id: Schema.NullOr(Schema.String),
  source_task_key: Schema.NullOr(Schema.String),
  status: Schema.Literals(["active", "paused", "canceled", "completed"]),
  next_run_at: Schema.NullOr(Schema.String),
  last_enqueued_at: Schema.NullOr(Schema.String),
  last_input_public_id: Schema.NullOr(Schema.String),
  last_error_code: Schema.NullOr(Schema.String),
  last_execution: Schema.NullOr(ExecutionShape),
  lock_version: Schema.Natural,
  created_at: Schema.String,
  updated_at: Schema.String
})

export const ScheduleResponse = Schema.Struct({ schedule: ScheduleShape })
export const ScheduleList = Schema.Struct({
  schedules: Schema.Array(ScheduleShape),
  pagination: Schema.Struct({ next_after: Schema.NullOr(Schema.String) })
})
export const ExecutionList = Schema.Struct({
  executions: Schema.Array(ExecutionShape),
  pagination: Schema.Struct({ next_after: Schema.NullOr(Schema.String), last_cursor: Schema.NullOr(Schema.String) })
})

const conversationParams = { workspace_id: Schema.String, conversation_id: Schema.String }
const params = { ...conversationParams, job_id: Schema.String }
const collection = "/agent_api/v1/workspaces/:workspace_id/conversations/:conversation_id/schedules"
const one = `${collection}/:job_id`
const errors = [BadRequest, Forbidden, NotFound, Conflict, ContentTooLarge, Unprocessable] as const

/** A verb: no body of its own (an object or nothing), answering the schedule. */
const verb = <const Name extends string>(name: Name) =>
  HttpApiEndpoint.post(name, `${one}/${name}`, {
    params,
    payload: optionalBody(JsonObject),
    success: ScheduleResponse,
    error: errors
  })

/** Reads need read level on the conversation; writes full level, write standing. */
export class SchedulesGroup extends HttpApiGroup.make("schedules")
  .add(
    HttpApiEndpoint.get("listWorkspace", "/agent_api/v1/workspaces/:workspace_id/schedules", {
      params: { workspace_id: Schema.String },
      query: PageQuery,
      success: ScheduleList,
      error: errors
    }).annotate(
      OpenApi.Description,
      "Schedules across the workspace's readable conversations: {schedules, pagination: {next_after}}."
    ),
    HttpApiEndpoint.get("list", collection, {
      params: conversationParams,
      query: PageQuery,
      success: ScheduleList,
      error: errors
    }).annotate(OpenApi.Description, "The conversation's schedules."),
    HttpApiEndpoint.post("create", collection, {
      params: conversationParams,
      headers: IdempotencyKeyHeader,
      payload: ScheduleBody,
      success: ScheduleResponse.pipe(HttpApiSchema.status(201)),
      error: errors
    })
      .annotate(
        OpenApi.Description,
        "Header Idempotency-Key (required). {schedule: {...}}: 201 {schedule}; a replay answers verbatim. Needs write access; a side conversation cannot own a schedule."
      )
      .middleware(Idempotent),
    HttpApiEndpoint.get("show", one, { params, success: ScheduleResponse, error: errors }).annotate(
      OpenApi.Description,
      "One schedule: 200 {schedule}."
    ),
    HttpApiEndpoint.patch("update", one, {
      params,
      payload: ScheduleBody,
      success: ScheduleResponse,
      error: errors
    }).annotate(
      OpenApi.Description,
      "Edits a schedule; schedule.expected_lock_version required, omitted policy fields keep their values. 200 {schedule}."
    ),
    verb("pause").annotate(OpenApi.Description, "Pauses an active schedule: 200 {schedule}; repeated, 200 unchanged."),
    verb("resume").annotate(OpenApi.Description, "Resumes a paused schedule: 200 {schedule}; repeated, 200 unchanged."),
    verb("cancel").annotate(OpenApi.Description, "Cancels the schedule: 200 {schedule}; repeated, 200 unchanged."),
    verb("run").annotate(OpenApi.Description, "Starts one execution now: 200 {schedule} with its new last_execution."),
    HttpApiEndpoint.get("executions", `${one}/executions`, {
      params,
      query: { after: PageQuery.after, limit: PageQuery.limit },
      success: ExecutionList,
      error: errors
    }).annotate(OpenApi.Description, "The schedule's executions: {executions, pagination: {next_after, last_cursor}}.")
  )
  .middleware(MemberAuthentication)
  .annotateMerge(OpenApi.annotations({ title: "Member: schedules" })) {}
