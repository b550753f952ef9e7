// Member: runs (spec "Member: runs"; runs supplement): create and append (Idempotency-Key up to 36
// bytes), list, trace, the run verbs, DELETE, the default runner, the projections (phases, graph,
// transcript), task reads and the task verbs. The create and append bodies are read loosely: the
// step compiler judges them in the supplement's order (raw graph names, the shell, every
// invalid_steps entry at its path), which a strict decode would pre-empt.
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { BadRequest, Conflict, Forbidden, NotFound, Unprocessable } from "../Errors.ts"
import { IdempotencyKeyHeader, IdempotencyKeyMaxBytes, Idempotent } from "../Idempotency.ts"
import { MemberAuthentication } from "./Caller.ts"
import { optionalBody } from "./ConversationShapes.ts"
import { DefaultRunnerBody } from "./Conversations.ts"
import { StreamItem } from "./InferenceRequests.ts"
import {
  RunAppended,
  RunCreated,
  RunGraph,
  RunList,
  RunPhases,
  RunResponse,
  RunTaskDetailResponse,
  RunTaskResponse,
  RunTranscript
} from "./RunShapes.ts"

const JsonObject = Schema.Record(Schema.String, Schema.Unknown)

/** `{run: {steps, approval_mode, ...}}`: the members are the compiler's to judge. */
export const CreateRunBody = Schema.Struct({
  run: JsonObject.annotate({
    description:
      "{steps, approval_mode, approval_rules?, prompt_mechanism?, billing_subject?, default_runner_executor_public_id?, speaker_public_id?, model_selection?, fallback_models?}"
  })
})

/** `{steps, expected_revision?, resolve?}`. */
export const AppendBody = JsonObject.annotate({ description: "{steps, expected_revision?, resolve?}" })

/** A verb body with no members of its own (an object; unknown members are ignored). */
export const EmptyBody = Schema.Record(Schema.String, Schema.Unknown)

export const ForceBody = Schema.Struct({ force: Schema.optionalKey(Schema.Boolean) })

export const ResolutionBody = Schema.Struct({
  resolution_token: Schema.optionalKey(Schema.String),
  content: Schema.optionalKey(Schema.Unknown),
  outcome: Schema.optionalKey(Schema.Unknown.annotate({ description: "completed (default) or failed" }))
})

export const RetryBody = Schema.Struct({ model: Schema.optionalKey(Schema.NullOr(Schema.String)) })
export const DenyBody = Schema.Struct({ reason: Schema.optionalKey(Schema.NullOr(Schema.String)) })

export const SealedRequestResponse = Schema.Struct({
  request: Schema.Struct({
    entries: Schema.Array(
      Schema.Struct({
        role: Schema.String,
        parts: Schema.Array(Schema.Struct({ type: Schema.Literal("text"), text: Schema.String }))
      })
    ),
    request_options: Schema.Struct({
      model: Schema.String,
      tools: Schema.optionalKey(Schema.Array(Schema.Unknown)),
      instructions: Schema.optionalKey(Schema.String)
    })
  })
})

/** A standalone run's feed replayed (runs supplement "Run feed"), as the other replay streams. */
export const RunEventsResponse = Schema.Struct({
  events: Schema.Array(StreamItem),
  pagination: Schema.Struct({ next_after: Schema.NullOr(Schema.String), watermark: Schema.Natural })
})

const collection = "/agent_api/v1/workspaces/:workspace_id/runs"
const one = `${collection}/:run_id`
const task = `${one}/tasks/:task_key`
const workspaceParams = { workspace_id: Schema.String }
const params = { ...workspaceParams, run_id: Schema.String }
const taskParams = { ...params, task_key: Schema.String }
const errors = [BadRequest, Forbidden, NotFound, Conflict, Unprocessable] as const

const verb = <const Name extends string>(name: Name, path: Name) =>
  HttpApiEndpoint.post(name, `${one}/${path}`, {
    params,
    payload: optionalBody(ForceBody),
    success: RunResponse,
    error: errors
  })

const taskVerb = <const Name extends string, Body extends Schema.Top>(name: Name, path: Name, body: Body) =>
  HttpApiEndpoint.post(name, `${task}/${path}`, {
    params: taskParams,
    payload: optionalBody(body),
    success: RunTaskResponse,
    error: errors
  })

export class RunsGroup extends HttpApiGroup.make("runs")
  .add(
    HttpApiEndpoint.get("list", collection, {
      params: workspaceParams,
      query: {
        status: Schema.optional(Schema.String),
        attention: Schema.optional(Schema.String),
        order: Schema.optional(Schema.String),
        after: Schema.optional(Schema.String),
        limit: Schema.optional(Schema.String)
      },
      success: RunList,
      error: errors
    }).annotate(OpenApi.Description, "The workspace's runs, filtered by status or attention, keyset-paginated."),
    HttpApiEndpoint.post("create", collection, {
      params: workspaceParams,
      headers: IdempotencyKeyHeader,
      payload: CreateRunBody,
      success: RunCreated.pipe(HttpApiSchema.status(201)),
      error: errors
    })
      .annotate(
        OpenApi.Description,
        "Header Idempotency-Key (up to 36 bytes). Compiles the authored steps into a new run: 201 {run}. Raw graph fields are 422 edge_authoring_refused."
      )
      .annotate(IdempotencyKeyMaxBytes, 36)
      .middleware(Idempotent),
    HttpApiEndpoint.get("show", one, { params, success: RunResponse, error: errors }).annotate(
      OpenApi.Description,
      "One run with its trace: 200 {run}."
    ),
    HttpApiEndpoint.delete("remove", one, { params, error: errors }).annotate(
      OpenApi.Description,
      "Deletes a pending, completed or canceled run: 204. A live run is 409 run_live, a conversation-hosted one 409 conversation_hosted."
    ),
    verb("start", "start").annotate(
      OpenApi.Description,
      "Starts a pending run: 200 {run}; any other state is 409 not_startable."
    ),
    verb("pause", "pause").annotate(
      OpenApi.Description,
      "Pauses a running or needs_attention run ({force: true} also aborts running model rounds): 200 {run}; else 409 not_pausable."
    ),
    verb("resume", "resume").annotate(OpenApi.Description, "Resumes a paused run: 200 {run}; else 409 not_resumable."),
    verb("stop", "stop").annotate(
      OpenApi.Description,
      "Cancels the run ({force?}, default true): 200 {run}; a completed or canceled run is 409 already_terminal."
    ),
    HttpApiEndpoint.put("defaultRunner", `${one}/default_runner`, {
      params,
      payload: DefaultRunnerBody,
      success: RunResponse,
      error: errors
    }).annotate(
      OpenApi.Description,
      "{default_runner: {executor_public_id: UUID or null}}: 200 {run}; affects tasks accepted later only."
    ),
    HttpApiEndpoint.post("append", `${one}/tasks`, {
      params,
      headers: IdempotencyKeyHeader,
      payload: AppendBody,
      success: RunAppended.pipe(HttpApiSchema.status(201)),
      error: errors
    })
      .annotate(
        OpenApi.Description,
        "Header Idempotency-Key. Appends steps {steps, expected_revision?, resolve?}: 201 receipt {accepted_task_keys, steps, deliverable_task_key, revision, resolution_tokens}; a stale expected_revision is 409 with current_revision."
      )
      .annotate(IdempotencyKeyMaxBytes, 36)
      .middleware(Idempotent),
    HttpApiEndpoint.get("events", `${one}/events`, {
      params,
      query: { after: Schema.optional(Schema.String), limit: Schema.optional(Schema.String) },
      success: RunEventsResponse,
      error: errors
    }).annotate(
      OpenApi.Description,
      "A standalone run's feed: limit 1 to 200 (default 100); a hosted run's is its conversation's (409 conversation_hosted)."
    ),
    HttpApiEndpoint.get("phases", `${one}/phases`, { params, success: RunPhases, error: errors }).annotate(
      OpenApi.Description,
      "The run's phases, naming the current one."
    ),
    HttpApiEndpoint.get("graph", `${one}/graph`, { params, success: RunGraph, error: errors }).annotate(
      OpenApi.Description,
      "The run's graph: nodes, edges and a Mermaid flowchart."
    ),
    HttpApiEndpoint.get("transcript", `${one}/transcript`, {
      params,
      query: { before: Schema.optional(Schema.String), limit: Schema.optional(Schema.String) },
      success: RunTranscript,
      error: errors
    }).annotate(OpenApi.Description, "The run's transcript, paged backwards with before and limit."),
    HttpApiEndpoint.get("task", task, { params: taskParams, success: RunTaskDetailResponse, error: errors }).annotate(
      OpenApi.Description,
      "One task of the run."
    ),
    HttpApiEndpoint.get("taskRequest", `${task}/request`, {
      params: taskParams,
      success: SealedRequestResponse,
      error: errors
    }).annotate(OpenApi.Description, "The request a task sent (or will send)."),
    taskVerb("resolution", "resolution", ResolutionBody).annotate(
      OpenApi.Description,
      "Resolves a task with its resolution_token."
    ),
    taskVerb("retry", "retry", RetryBody).annotate(
      OpenApi.Description,
      "Retries a task, optionally with another model."
    ),
    taskVerb("abandon", "abandon", EmptyBody).annotate(OpenApi.Description, "Abandons a task."),
    taskVerb("approve", "approve", EmptyBody).annotate(OpenApi.Description, "Approves a task awaiting approval."),
    taskVerb("deny", "deny", DenyBody).annotate(
      OpenApi.Description,
      "Denies a task awaiting approval, with an optional reason."
    ),
    taskVerb("cancel", "cancel", EmptyBody).annotate(OpenApi.Description, "Cancels a task."),
    taskVerb("compact", "compact", EmptyBody).annotate(OpenApi.Description, "Compacts a task's context.")
  )
  .middleware(MemberAuthentication)
  .annotateMerge(OpenApi.annotations({ title: "Member: runs" })) {}
