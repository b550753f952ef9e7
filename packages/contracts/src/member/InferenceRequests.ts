// Member: inference requests (spec "InferenceRequest", "Member: inference requests", "Inference
// request replay stream"; supplement "Inference requests, models and uploads"). The create body's
// shape is judged here (absent members 400 parameter_missing, wrong JSON types 400
// parameter_invalid); what depends on the catalog (a model serving the workload, efforts, bounds)
// is the domain's 422 validation_failed naming the member.
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSchema, OpenApi } from "effect/http-api"
import { BadRequest, Conflict, Forbidden, NotFound, RateLimitedResponse, Unprocessable } from "../Errors.ts"
import { type CallerIdentity, IdempotencyKeyHeader, Idempotent, ReplaysStanding } from "../Idempotency.ts"
import { PageQuery, Pagination } from "../Pagination.ts"
import { MemberAuthentication } from "./Caller.ts"

const ToolCall = Schema.Struct({ call_id: Schema.String, name: Schema.String, arguments: Schema.String })

const Part = Schema.Struct({
  type: Schema.String,
  text: Schema.optionalKey(Schema.String),
  upload_public_id: Schema.optionalKey(Schema.String)
})

export const InputMessage = Schema.Struct({
  role: Schema.String,
  content: Schema.Union([Schema.String, Schema.Array(Part)]),
  tool_calls: Schema.optionalKey(Schema.Array(ToolCall)),
  tool_call_id: Schema.optionalKey(Schema.String)
})
export type InputMessage = typeof InputMessage.Type

export const CreateInferenceRequestMembers = Schema.Struct({
  workload: Schema.String,
  model: Schema.Struct({
    model: Schema.String,
    reasoning_enabled: Schema.optionalKey(Schema.NullOr(Schema.Boolean)),
    reasoning_effort: Schema.optionalKey(Schema.NullOr(Schema.String))
  }),
  /** A string, messages, or (embedding) strings. */
  input: Schema.Union([Schema.String, Schema.Array(Schema.Union([Schema.String, InputMessage]))]),
  configuration: Schema.optionalKey(Schema.NullOr(Schema.Record(Schema.String, Schema.Unknown))),
  upload_public_ids: Schema.optionalKey(Schema.NullOr(Schema.Array(Schema.String))),
  billing_subject: Schema.optionalKey(Schema.NullOr(Schema.String)),
  model_selection: Schema.optionalKey(Schema.Unknown),
  fallback_models: Schema.optionalKey(Schema.NullOr(Schema.Array(Schema.String)))
})
export type CreateInferenceRequestMembers = typeof CreateInferenceRequestMembers.Type

/** `{inference_request: {...}}`; unknown members are ignored. */
export const CreateInferenceRequestPayload = Schema.Struct({ inference_request: CreateInferenceRequestMembers })

export const EffectiveModel = Schema.Struct({
  provider_id: Schema.String,
  model_ref: Schema.String,
  reasoning_enabled: Schema.Boolean,
  reasoning_effort: Schema.NullOr(Schema.String)
})

export const InferenceRequestSummary = Schema.Struct({
  public_id: Schema.String,
  workload: Schema.String,
  status: Schema.String,
  model: EffectiveModel,
  billing_subject: Schema.NullOr(Schema.String),
  created_at: Schema.DateFromString,
  updated_at: Schema.DateFromString
})

/** The full projection: the summary, usage_summary, and the result once terminal. */
export const InferenceRequest = Schema.Struct({
  ...InferenceRequestSummary.fields,
  usage_summary: Schema.Record(Schema.String, Schema.Unknown),
  result: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown))
})

export const InferenceRequestResponse = Schema.Struct({ inference_request: InferenceRequest })

export const InferenceRequestListResponse = Schema.Struct({
  inference_requests: Schema.Array(InferenceRequestSummary),
  pagination: Pagination
})

export const StreamItem = Schema.Struct({
  public_id: Schema.String,
  sequence: Schema.Natural,
  cursor: Schema.String,
  type: Schema.String,
  resource: Schema.Struct({ type: Schema.String, public_id: Schema.String }),
  occurred_at: Schema.String,
  payload: Schema.Unknown
})

export const InferenceEventsResponse = Schema.Struct({
  events: Schema.Array(StreamItem),
  pagination: Schema.Struct({ next_after: Schema.NullOr(Schema.String), watermark: Schema.Natural })
})

/** `{input_estimate: {...}}`: the create body's selection members (no billing subject). */
export const InputEstimatePayload = Schema.Struct({
  input_estimate: Schema.Struct({
    workload: CreateInferenceRequestMembers.fields.workload,
    model: CreateInferenceRequestMembers.fields.model,
    input: CreateInferenceRequestMembers.fields.input,
    configuration: CreateInferenceRequestMembers.fields.configuration,
    upload_public_ids: CreateInferenceRequestMembers.fields.upload_public_ids,
    model_selection: CreateInferenceRequestMembers.fields.model_selection,
    fallback_models: CreateInferenceRequestMembers.fields.fallback_models
  })
})

export const InputEstimateResponse = Schema.Struct({
  input_estimate: Schema.Struct({
    input_tokens: Schema.Natural,
    tokenizer_exact: Schema.Boolean,
    catalog_input_token_limit: Schema.optionalKey(Schema.Natural),
    advisory_input_token_limit: Schema.optionalKey(Schema.Natural),
    model: EffectiveModel
  })
})

/**
 * The inference doors' request budget (6,000 a minute per caller and door): counted after
 * authentication and before anything is decoded, so malformed requests count too.
 */
export class InferenceRequestBudget extends HttpApiMiddleware.Service<
  InferenceRequestBudget,
  { requires: CallerIdentity }
>()("@troupe/contracts/member/InferenceRequestBudget", { error: RateLimitedResponse }) {}

const collection = "/agent_api/v1/workspaces/:workspace_id/inference_requests"
const workspaceParams = { workspace_id: Schema.String }
const requestParams = { ...workspaceParams, inference_request_id: Schema.String }
const errors = [BadRequest, Forbidden, NotFound, Conflict, Unprocessable] as const

export class InferenceRequestsGroup extends HttpApiGroup.make("inferenceRequests")
  .add(
    HttpApiEndpoint.get("list", collection, {
      params: workspaceParams,
      query: { ...PageQuery, workload: Schema.optional(Schema.String) },
      success: InferenceRequestListResponse,
      error: errors
    }).annotate(
      OpenApi.Description,
      "The workspace's inference request summaries, optionally by workload, keyset-paginated."
    ),
    HttpApiEndpoint.post("estimate", `${collection}/input_estimate`, {
      params: workspaceParams,
      payload: InputEstimatePayload,
      success: InputEstimateResponse,
      error: errors
    }).annotate(
      OpenApi.Description,
      "{input_estimate: {...}}: counts the input tokens without creating anything: 200 {input_estimate}. No Idempotency-Key."
    ),
    HttpApiEndpoint.post("create", collection, {
      params: workspaceParams,
      headers: IdempotencyKeyHeader,
      payload: CreateInferenceRequestPayload,
      success: InferenceRequestResponse.pipe(HttpApiSchema.status(202)),
      error: errors
    })
      .annotate(
        OpenApi.Description,
        "Header Idempotency-Key (blank is 400 idempotency_key_required). 202 with the queued request, accepted durably; a replay is 200. An exhausted budget is 422 budget_exhausted."
      )
      .annotate(ReplaysStanding, true)
      .middleware(Idempotent),
    HttpApiEndpoint.get("show", `${collection}/:inference_request_id`, {
      params: requestParams,
      success: InferenceRequestResponse,
      error: errors
    }).annotate(OpenApi.Description, "One inference request, in full."),
    HttpApiEndpoint.post("cancel", `${collection}/:inference_request_id/cancellation`, {
      params: requestParams,
      success: InferenceRequestResponse,
      error: errors
    }).annotate(
      OpenApi.Description,
      "Cancels the request; idempotent, answers the standing projection. Needs write tier (403 not_authorized)."
    ),
    HttpApiEndpoint.delete("remove", `${collection}/:inference_request_id`, {
      params: requestParams,
      error: errors
    }).annotate(
      OpenApi.Description,
      "Tombstones a terminal request: 204; a running one is 409 not_terminal. Needs write tier."
    ),
    HttpApiEndpoint.get("file", `${collection}/:inference_request_id/files/:index`, {
      params: { ...requestParams, index: Schema.String },
      success: HttpApiSchema.StreamUint8Array(),
      error: errors
    }).annotate(
      OpenApi.Description,
      "An output file (0-based index) of a terminal image or speech request, as an attachment. One bytes= range " +
        "(a-b, a-, -n) answers 206 with Content-Range, a start past the end 416 with Content-Range: bytes */<size>; " +
        "several or malformed ranges the whole file."
    ),
    HttpApiEndpoint.get("events", `${collection}/:inference_request_id/events`, {
      params: requestParams,
      query: { after: Schema.optional(Schema.String), limit: Schema.optional(Schema.String) },
      success: InferenceEventsResponse,
      error: errors
    }).annotate(OpenApi.Description, "Replays the request's events: after cursor, limit default 100, maximum 200.")
  )
  .middleware(InferenceRequestBudget)
  .middleware(MemberAuthentication)
  .annotateMerge(OpenApi.annotations({ title: "Member: inference requests" })) {}
