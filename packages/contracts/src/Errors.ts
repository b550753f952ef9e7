// The error envelope `{error: {code, message}}`, one error class per HTTP status (so every
// endpoint declares, and OpenAPI documents, exactly the failures it can answer), and the spec's
// Errors table: the one place a code gets its status. Messages are for humans, not contract.
import { Schema } from "effect"
import { HttpApiSchema } from "effect/http-api"

/**
 * Members a few refusals carry beside code and message (runs supplement): the path of a raw graph
 * name, invalid_steps entries, the current revision of a stale append, a hosted run's hosts.
 */
export const ErrorExtras = Schema.Struct({
  path: Schema.optionalKey(Schema.String),
  steps: Schema.optionalKey(Schema.Array(Schema.Struct({ code: Schema.String, path: Schema.String }))),
  current_revision: Schema.optionalKey(Schema.Natural),
  conversation_public_id: Schema.optionalKey(Schema.String),
  turn_public_id: Schema.optionalKey(Schema.NullOr(Schema.String))
})
export type ErrorExtras = typeof ErrorExtras.Type

export const ErrorBody = Schema.Struct({
  code: Schema.String,
  message: Schema.String,
  ...ErrorExtras.fields
})
export type ErrorBody = typeof ErrorBody.Type

const envelope = { error: ErrorBody }

export class BadRequest extends Schema.Error<BadRequest>("BadRequest")(envelope, { httpApiStatus: 400 }) {
  readonly _tag = "BadRequest" as const
}
export class Unauthorized extends Schema.Error<Unauthorized>("Unauthorized")(envelope, { httpApiStatus: 401 }) {
  readonly _tag = "Unauthorized" as const
}
export class Forbidden extends Schema.Error<Forbidden>("Forbidden")(envelope, { httpApiStatus: 403 }) {
  readonly _tag = "Forbidden" as const
}
export class NotFound extends Schema.Error<NotFound>("NotFound")(envelope, { httpApiStatus: 404 }) {
  readonly _tag = "NotFound" as const
}
export class Conflict extends Schema.Error<Conflict>("Conflict")(envelope, { httpApiStatus: 409 }) {
  readonly _tag = "Conflict" as const
}
export class ContentTooLarge extends Schema.Error<ContentTooLarge>("ContentTooLarge")(envelope, {
  httpApiStatus: 413
}) {
  readonly _tag = "ContentTooLarge" as const
}
export class Unprocessable extends Schema.Error<Unprocessable>("Unprocessable")(envelope, { httpApiStatus: 422 }) {
  readonly _tag = "Unprocessable" as const
}
/** 503: a party the service depends on (the deployment updater, release metadata) is unavailable. */
export class ServiceUnavailable extends Schema.Error<ServiceUnavailable>("ServiceUnavailable")(envelope, {
  httpApiStatus: 503
}) {
  readonly _tag = "ServiceUnavailable" as const
}

/** 429 rate_limited with a Retry-After header in whole seconds. */
export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", {
  message: Schema.String,
  retryAfterSeconds: Schema.Int
}) {}

export const RateLimitedResponse = RateLimited.pipe(
  HttpApiSchema.encodeToWithHeaders(
    {
      body: Schema.Struct(envelope).pipe(HttpApiSchema.status(429)),
      headers: { "retry-after": Schema.FiniteFromString }
    },
    {
      encode: (e) => ({
        body: { error: { code: "rate_limited", message: e.message } },
        headers: { "retry-after": e.retryAfterSeconds }
      }),
      decode: ({ body, headers }) =>
        new RateLimited({ message: body.error.message, retryAfterSeconds: headers["retry-after"] })
    }
  )
)

/**
 * The spec's Errors table (service-spec "Errors", with the codes SUPPLEMENT adds): the status of
 * every code. Domain refusals carry only their code; the http layer answers them from here.
 */
export const statusOfCode = {
  invalid_request: 400,
  invalid_client: 400,
  bad_request: 400,
  parameter_missing: 400,
  parameter_invalid: 400,
  idempotency_key_required: 400,
  invalid_credentials: 401,
  unauthorized: 401,
  local_recovery_required: 403,
  password_change_required: 403,
  not_authorized: 403,
  not_agent: 403,
  not_workspace_owner: 403,
  workspace_agent_identifier_mismatch: 403,
  memory_read_only: 403,
  administrator_required: 403,
  user_not_administrable: 403,
  not_found: 404,
  memory_not_found: 404,
  prompt_document_not_found: 404,
  representation_unavailable: 404,
  runner_not_found: 404,
  request_not_sealed: 404,
  initialization_required: 409,
  idempotency_envelope_mismatch: 409,
  stale_object: 409,
  stale_context: 409,
  stale_timeline: 409,
  stale_revision: 409,
  identifier_taken: 409,
  name_taken: 409,
  shutdown_pending: 409,
  concurrent_write: 409,
  key_taken: 409,
  entry_limit_reached: 409,
  workspace_not_active: 409,
  transition_in_progress: 409,
  conversation_archived: 409,
  conversation_busy: 409,
  subagent_follows_parent: 409,
  conversation_hosted: 409,
  input_queue_full: 409,
  kernel_input_immutable: 409,
  queue_changed: 409,
  steering_held: 409,
  steering_target_changed: 409,
  not_claimable_kind: 409,
  not_addressed_here: 409,
  task_not_claimable: 409,
  already_claimed: 409,
  not_eligible: 409,
  not_claimant: 409,
  claim_inactive: 409,
  not_extendable: 409,
  extension_too_long: 409,
  execution_in_progress: 409,
  not_startable: 409,
  not_pausable: 409,
  not_resumable: 409,
  already_terminal: 409,
  not_adjudicable: 409,
  not_awaiting_approval: 409,
  not_retryable: 409,
  not_abandonable: 409,
  not_a_branch: 409,
  not_compactable: 409,
  run_settled: 409,
  run_live: 409,
  not_terminal: 409,
  branch_required: 409,
  kernel_authored: 409,
  memory_overridden: 409,
  runner_not_eligible: 409,
  tip_live: 409,
  tip_unresolved: 409,
  duplicate_task_key: 409,
  run_not_appendable: 409,
  cost_unit_conflict: 409,
  budget_window_overlap: 409,
  budget_insufficient_headroom: 409,
  budget_already_revoked: 409,
  upgrade_in_progress: 409,
  recovery_required: 409,
  candidate_changed: 409,
  preflight_failed: 409,
  idempotency_conflict: 409,
  content_too_large: 413,
  validation_failed: 422,
  target_not_eligible: 422,
  answerer_not_eligible: 422,
  principal_unknown: 422,
  principal_not_eligible: 422,
  memory_path_invalid: 422,
  memory_scope_unavailable: 422,
  memory_full: 422,
  memory_document_too_large: 422,
  memory_content_invalid: 422,
  memory_description_invalid: 422,
  memory_edit_not_found: 422,
  memory_edit_ambiguous: 422,
  memory_edit_invalid: 422,
  memory_pattern_invalid: 422,
  memory_pattern_too_costly: 422,
  skill_description_required: 422,
  skill_name_invalid: 422,
  skill_scope_unavailable: 422,
  prompt_slot_unavailable: 422,
  prompt_document_too_large: 422,
  prompt_document_macro_unknown: 422,
  prompt_document_invalid: 422,
  reserved_namespace: 422,
  provider_not_eligible: 422,
  provider_incomplete: 422,
  deliver_at_in_past: 422,
  deliver_at_too_far: 422,
  deliver_at_ambiguous: 422,
  deliver_at_not_steerable: 422,
  attachments_not_steerable: 422,
  steering_guard_requires_steer: 422,
  unknown_input_upload: 422,
  invalid_timeout_ms: 422,
  invalid_content: 422,
  too_many_content_blocks: 422,
  unknown_result_upload: 422,
  invalid_title: 422,
  invalid_metadata: 422,
  invalid_result_type: 422,
  invalid_frame: 422,
  edge_authoring_refused: 422,
  graph_authoring_not_available: 422,
  invalid_steps: 422,
  invalid_approval_mode: 422,
  invalid_approval_rules: 422,
  invalid_prompt_mechanism: 422,
  prompt_template_missing: 422,
  seed_not_a_model_step: 422,
  instructions_raw_only: 422,
  tool_input_too_large: 422,
  steps_payload_too_large: 422,
  billing_subject_not_owned: 422,
  unsupported_resolve_outcome: 422,
  unknown_await: 422,
  await_not_resolvable: 422,
  model_plane_unavailable: 422,
  billing_subject_too_long: 422,
  input_over_model_limit: 422,
  input_media_too_large: 422,
  unsupported_input_media: 422,
  account_unit_unconfigured: 422,
  budget_exhausted: 422,
  schedule_finished: 422,
  side_conversation: 422,
  nothing_to_compact: 422,
  rate_limited: 429,
  updater_unavailable: 503,
  release_unavailable: 503
} as const

export type ErrorCode = keyof typeof statusOfCode

const envelopeClasses = {
  400: BadRequest,
  401: Unauthorized,
  403: Forbidden,
  404: NotFound,
  409: Conflict,
  413: ContentTooLarge,
  422: Unprocessable,
  503: ServiceUnavailable
} as const

type EnvelopeClasses = typeof envelopeClasses

/** The codes answered by a plain envelope class (429 needs Retry-After: `errors.rateLimited`). */
export type EnvelopeCode = {
  [C in ErrorCode]: (typeof statusOfCode)[C] extends keyof EnvelopeClasses ? C : never
}[ErrorCode]

/** The endpoint error a code answers with: the class of its status. */
export type ErrorOfCode<C extends EnvelopeCode> = InstanceType<EnvelopeClasses[(typeof statusOfCode)[C]]>

/** Builders that read like the spec's table: `fail.notFound("...")`. */
export const errors = {
  /** The error of a code, at the status the spec's table gives it. */
  of: <C extends EnvelopeCode>(code: C, message: string, extras: ErrorExtras = {}): ErrorOfCode<C> =>
    new envelopeClasses[statusOfCode[code]]({ error: { code, message, ...extras } }) as ErrorOfCode<C>,
  badRequest: (code: string, message: string) => new BadRequest({ error: { code, message } }),
  parameterMissing: (message: string) => new BadRequest({ error: { code: "parameter_missing", message } }),
  parameterInvalid: (message: string) => new BadRequest({ error: { code: "parameter_invalid", message } }),
  unauthorized: (message = "Authentication is required") =>
    new Unauthorized({ error: { code: "unauthorized", message } }),
  invalidCredentials: () =>
    new Unauthorized({ error: { code: "invalid_credentials", message: "The email or password is not correct" } }),
  forbidden: (code: string, message: string) => new Forbidden({ error: { code, message } }),
  notFound: (message = "Not found", code = "not_found") => new NotFound({ error: { code, message } }),
  conflict: (code: string, message: string) => new Conflict({ error: { code, message } }),
  contentTooLarge: (message: string) => new ContentTooLarge({ error: { code: "content_too_large", message } }),
  unprocessable: (code: string, message: string) => new Unprocessable({ error: { code, message } }),
  rateLimited: (retryAfterSeconds: number, message = "Too many requests") =>
    new RateLimited({ message, retryAfterSeconds })
}
