// Member: conversation inputs (spec "Conversation input", "Member: conversation inputs"; supplement
// conversations.md "Inputs", "Queue, drain, steering"). Bodies are read in two passes (JSON types
// 400, then vocabularies and bounds: kind, delivery_mode, context_mode and history's ranges 422
// validation_failed, text or steps over 1 MiB 413). What needs the catalog, the queue or the
// conversation (a model reference, an addressee, a reply-lane member on a message, deliver_at's
// instant, fences, frozen members on an edit, a held steer's one edit) is judged behind.
import { Schema, SchemaTransformation } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { coded, specCode } from "../Codes.ts"
import {
  BadRequest,
  Conflict,
  ContentTooLarge,
  Forbidden,
  NotFound,
  RateLimitedResponse,
  Unprocessable
} from "../Errors.ts"
import { IdempotencyKeyHeader, Idempotent } from "../Idempotency.ts"
import { LockVersion } from "../LockVersion.ts"
import { PublicId } from "../PublicId.ts"
import { canonicalBytes } from "../Text.ts"
import { wrappedOrTopLevel } from "../Wrapped.ts"
import { MemberAuthentication } from "./Caller.ts"
import { ConversationInput, InputQueue, judged, TextValue, vocabulary } from "./ConversationShapes.ts"
import { CreateInferenceRequestMembers } from "./InferenceRequests.ts"

export const inputKinds = ["message", "direct_reply"] as const
export const deliveryModes = ["queue", "steer", "steer_now"] as const
export const contextModes = ["assembled", "raw"] as const

const historyKeys = ["max_entries", "token_budget_share"]
const stepsLimitBytes = 1024 * 1024

/** `{model, reasoning_enabled?, reasoning_effort?}`: an object (else 400); the reference is the domain's. */
export const ModelChoice = CreateInferenceRequestMembers.fields.model

/** `{max_entries?, token_budget_share?}` as JSON: an object with no other key (else 400) holding numbers. */
export const HistoryShape = Schema.Record(Schema.String, Schema.Unknown)
  .check(
    Schema.makeFilter<Readonly<Record<string, unknown>>>(
      (history) => {
        const other = Object.keys(history).find((key) => !historyKeys.includes(key))
        return other === undefined || { path: [other], issue: "is not a history member" }
      },
      { expected: "only max_entries and token_budget_share" }
    )
  )
  .pipe(
    Schema.decodeTo(
      Schema.Struct({
        max_entries: Schema.optionalKey(Schema.NullOr(Schema.Number)),
        token_budget_share: Schema.optionalKey(Schema.NullOr(Schema.Number))
      }),
      SchemaTransformation.passthrough({ strict: false })
    )
  )

/** max_entries an integer from 0 to 200, token_budget_share above 0 and at most 1 (else 422 validation_failed). */
export const HistoryValues = Schema.Struct({
  max_entries: Schema.optionalKey(
    Schema.NullOr(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 200 }))).pipe(coded("validation_failed"))
  ),
  token_budget_share: Schema.optionalKey(
    Schema.NullOr(Schema.Number.check(Schema.isBetween({ minimum: 0, maximum: 1, exclusiveMinimum: true }))).pipe(
      coded("validation_failed")
    )
  )
})

/** A duration such as 20m (seconds, minutes, hours or days), else 400 parameter_invalid. */
const DeliverIn = Schema.String.check(
  Schema.isPattern(/^\d+[smhd]$/, { expected: "a duration of digits and s, m, h or d (such as 20m)" })
)

/** Steps as sent: an array of at most 1 MiB canonical JSON (else 413); their grammar is the domain's. */
const StepsValue = Schema.Array(Schema.Unknown).check(
  Schema.makeFilter<ReadonlyArray<unknown>>((steps) => canonicalBytes(steps) <= stepsLimitBytes, {
    expected: "at most 1 MiB of canonical JSON",
    [specCode]: "content_too_large"
  })
)

const optional = <S extends Schema.Top>(schema: S) => Schema.optionalKey(Schema.NullOr(schema))
const Object_ = Schema.Record(Schema.String, Schema.Unknown)

/** The members an edit may carry too, with their JSON types. */
const editableShape = {
  text: optional(Schema.String),
  attachments: optional(Schema.Array(Schema.Unknown)),
  model: optional(ModelChoice),
  configuration: optional(Object_),
  execution_declaration: Schema.optionalKey(Schema.Unknown),
  model_selection: Schema.optionalKey(Schema.Unknown),
  fallback_models: optional(Schema.Array(Schema.String)),
  tool_names: optional(Schema.Array(Schema.String)),
  steps: optional(Schema.Array(Schema.Unknown)),
  visible_in_context: Schema.optionalKey(Schema.Boolean),
  context_mode: optional(Schema.String),
  history: optional(HistoryShape),
  reasoning_replay: Schema.optionalKey(Schema.Unknown),
  deliver_at: optional(Schema.String).annotate({ description: "an instant with its offset" }),
  deliver_in: optional(DeliverIn),
  delivery_mode: optional(Schema.String)
}

/** Their values: vocabularies and ranges 422 validation_failed, text or steps over 1 MiB 413. */
const editableValues = {
  ...editableShape,
  text: optional(TextValue),
  steps: optional(StepsValue),
  context_mode: optional(vocabulary(contextModes)),
  history: optional(HistoryValues),
  delivery_mode: optional(vocabulary(deliveryModes))
}

const createShape = {
  kind: Schema.String.annotate({ description: "message or direct_reply" }),
  ...editableShape,
  approval_mode: optional(Schema.String),
  inline: Schema.optionalKey(Schema.Unknown),
  variables: optional(Object_),
  answering_user_public_id: optional(Schema.String).annotate({ description: "UUID or @handle" }),
  speaker_public_id: optional(Schema.String),
  expected_context_revision: optional(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))),
  expected_tail_turn_public_id: optional(Schema.String),
  expected_steering_run_public_id: optional(Schema.String)
}

/** An input as created: kind required (400), message or direct_reply (422 validation_failed). */
export const CreateInputMembers = judged(
  Schema.Struct(createShape),
  Schema.Struct({ ...createShape, kind: vocabulary(inputKinds), ...editableValues })
)
export type CreateInputMembers = typeof CreateInputMembers.Type

export const CreateInputBody = wrappedOrTopLevel("input", CreateInputMembers)

/** Members frozen at creation: carried so the domain refuses them by name (422 validation_failed). */
const frozenShape = {
  kind: Schema.optionalKey(Schema.Unknown),
  role: Schema.optionalKey(Schema.Unknown),
  answering_user_public_id: Schema.optionalKey(Schema.Unknown),
  speaker_public_id: Schema.optionalKey(Schema.Unknown)
}

const updateShape = { ...editableShape, ...frozenShape, expected_lock_version: Schema.optionalKey(LockVersion) }

/** An edit: the editable members, optional expected_lock_version (a mismatch 409 stale_object). */
export const UpdateInputMembers = judged(
  Schema.Struct(updateShape),
  Schema.Struct({ ...updateShape, ...editableValues })
)
export type UpdateInputMembers = typeof UpdateInputMembers.Type

export const UpdateInputBody = wrappedOrTopLevel("input", UpdateInputMembers)

/** `{inputs: [public_id, ...]}` naming exactly the caller's unconsumed rows (else 409 queue_changed). */
export const ReorderInputsBody = Schema.Struct({ inputs: Schema.Array(PublicId) })
export type ReorderInputsBody = typeof ReorderInputsBody.Type

export const InputResponse = Schema.Struct({ input: ConversationInput })

export const InputListResponse = Schema.Struct({ inputs: Schema.Array(ConversationInput), input_queue: InputQueue })

export const MaterializationResponse = Schema.Struct({
  materialization: Schema.Struct({
    input_public_id: Schema.String,
    turn_public_id: Schema.NullOr(Schema.String),
    variant_public_id: Schema.NullOr(Schema.String),
    run_public_id: Schema.NullOr(Schema.String)
  })
})

const collection = "/agent_api/v1/workspaces/:workspace_id/conversations/:conversation_id/inputs"
const conversationParams = { workspace_id: Schema.String, conversation_id: Schema.String }
const params = { ...conversationParams, input_id: Schema.String }
const errors = [BadRequest, Forbidden, NotFound, Conflict, ContentTooLarge, Unprocessable]

export class ConversationInputsGroup extends HttpApiGroup.make("conversationInputs")
  .add(
    HttpApiEndpoint.get("list", collection, {
      params: conversationParams,
      success: InputListResponse,
      error: errors
    }).annotate(OpenApi.Description, "The queue, unpaginated: kernel rows first, then queue_position."),
    HttpApiEndpoint.post("create", collection, {
      params: conversationParams,
      headers: IdempotencyKeyHeader,
      payload: CreateInputBody,
      success: InputResponse.pipe(HttpApiSchema.status(202)),
      error: [...errors, RateLimitedResponse]
    })
      .middleware(Idempotent)
      .annotate(
        OpenApi.Description,
        "Header Idempotency-Key (1 to 255 bytes). 202 with the row as accepted; a replay within 24 hours " +
          "answers the original body."
      ),
    HttpApiEndpoint.patch("update", `${collection}/:input_id`, {
      params,
      payload: UpdateInputBody,
      success: InputResponse,
      error: errors
    }).annotate(OpenApi.Description, "Edits a queued input {input: {...edited fields, expected_lock_version?}}: 200."),
    HttpApiEndpoint.delete("remove", `${collection}/:input_id`, { params, error: errors }).annotate(
      OpenApi.Description,
      "204; on a steering or scheduled row it is the cancel."
    ),
    HttpApiEndpoint.post("reorder", `${collection}/reorder`, {
      params: conversationParams,
      payload: ReorderInputsBody,
      success: InputListResponse,
      error: errors
    }).annotate(
      OpenApi.Description,
      "{inputs: [public_id, ...]} naming every one of the caller's rows exactly: the new order."
    ),
    HttpApiEndpoint.get("materialization", `${collection}/:input_id/materialization`, {
      params,
      query: { include_hidden: Schema.optional(Schema.String) },
      success: MaterializationResponse,
      error: errors
    }).annotate(
      OpenApi.Description,
      "Where an input landed: 200 {materialization: {input_public_id, turn_public_id, variant_public_id, run_public_id}}; 404 when not readable."
    )
  )
  .middleware(MemberAuthentication)
  .annotateMerge(OpenApi.annotations({ title: "Member: conversation inputs" })) {}
