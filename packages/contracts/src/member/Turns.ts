// Member: turns (spec "Turn and variant", "Member: turns"; supplement conversations.md "Turns and
// variants"): the timeline window, a turn, its deck of variants, the content verbs aimed at the
// tail (edit, regeneration, activation, a variant's concealment, visibility, deletion) and the
// conversation's cancellation. Whether a verb may reach a turn (branch_required, not_terminal,
// kernel_authored, conversation_busy) is the domain's; the window's query is strings it reads.
import { Schema, SchemaTransformation } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
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
import { wrappedOrTopLevel } from "../Wrapped.ts"
import { MemberAuthentication } from "./Caller.ts"
import { ModelChoice } from "./ConversationInputs.ts"
import {
  Conversation,
  ConversationResponse,
  judged,
  optionalBody,
  TextValue,
  Turn,
  TurnResponse,
  turnVisibilities,
  Variant,
  VariantResponse,
  vocabulary
} from "./ConversationShapes.ts"

export const TurnListResponse = Schema.Struct({
  turns: Schema.Array(Turn),
  pagination: Schema.Struct({
    before_position: Schema.NullOr(Schema.Natural).annotate({ description: "the first returned turn's position" }),
    after_position: Schema.NullOr(Schema.Natural).annotate({ description: "the last returned turn's position" }),
    has_older: Schema.Boolean,
    has_newer: Schema.Boolean
  })
})

export const VariantListResponse = Schema.Struct({
  variants: Schema.Array(Variant),
  turn: Schema.Struct({ public_id: Schema.String, inherited: Schema.Boolean })
})

/** `{text}`: a new active candidate with source edit; text over 1 MiB is 413 content_too_large. */
export const EditMembers = judged(Schema.Struct({ text: Schema.String }), Schema.Struct({ text: TextValue }))
export type EditMembers = typeof EditMembers.Type

export const EditBody = wrappedOrTopLevel("edit", EditMembers)

/** `{model?, configuration?, execution_declaration?, model_selection?, fallback_models?}`; the body may be left out. */
export const RegenerationMembers = Schema.Struct({
  model: Schema.optionalKey(Schema.NullOr(ModelChoice)),
  configuration: Schema.optionalKey(Schema.NullOr(Schema.Record(Schema.String, Schema.Unknown))),
  execution_declaration: Schema.optionalKey(Schema.Unknown),
  model_selection: Schema.optionalKey(Schema.Unknown),
  fallback_models: Schema.optionalKey(Schema.NullOr(Schema.Array(Schema.String)))
})
export type RegenerationMembers = typeof RegenerationMembers.Type

export const RegenerationBody = wrappedOrTopLevel("regeneration", RegenerationMembers)

/** The acceptance (202) and its receipt (200): the turn running and the new, not yet active, candidate. */
export const RegenerationResponse = Schema.Struct({
  turn: Schema.Struct({ public_id: Schema.String, status: Schema.String }),
  variant: Variant
})

/** `{visibility}`: visible, hidden or excluded_from_context (else 422 validation_failed). */
export const UpdateTurnMembers = judged(
  Schema.Struct({ visibility: Schema.String }),
  Schema.Struct({ visibility: vocabulary(turnVisibilities) })
)
export type UpdateTurnMembers = typeof UpdateTurnMembers.Type

export const UpdateTurnBody = wrappedOrTopLevel("turn", UpdateTurnMembers)

/** `{concealed}`: true hides a candidate (the active one 422). */
export const UpdateVariantMembers = Schema.Struct({ concealed: Schema.Boolean })
export type UpdateVariantMembers = typeof UpdateVariantMembers.Type

export const UpdateVariantBody = wrappedOrTopLevel("variant", UpdateVariantMembers)

/**
 * The cancellation's answer, `{conversation}` at 202 when it cut running work and at 200 when
 * nothing ran. `canceled` is the status, not a member: the server picks the schema by it.
 */
const cancellationAnswer = <const Canceled extends boolean>(canceled: Canceled) =>
  ConversationResponse.pipe(
    Schema.decodeTo(
      Schema.Struct({ conversation: Schema.toType(Conversation), canceled: Schema.Literal(canceled) }),
      SchemaTransformation.transform({
        decode: (answer) => ({ ...answer, canceled }),
        encode: ({ conversation }) => ({ conversation })
      })
    ),
    HttpApiSchema.status(canceled ? 202 : 200)
  )

/** The cancellation's answers: the handler returns `{conversation, canceled}`. */
export const CancellationAnswers = [cancellationAnswer(true), cancellationAnswer(false)] as const

const conversation = "/agent_api/v1/workspaces/:workspace_id/conversations/:conversation_id"
const turns = `${conversation}/turns` as const
const turn = `${turns}/:turn_id` as const
const conversationParams = { workspace_id: Schema.String, conversation_id: Schema.String }
const params = { ...conversationParams, turn_id: Schema.String }
const variantParams = { ...params, variant_id: Schema.String }
const includeHidden = { include_hidden: Schema.optional(Schema.String) }
const errors = [BadRequest, Forbidden, NotFound, Conflict, ContentTooLarge, Unprocessable]

export class TurnsGroup extends HttpApiGroup.make("turns")
  .add(
    HttpApiEndpoint.get("list", turns, {
      params: conversationParams,
      query: {
        limit: Schema.optional(Schema.String),
        after_position: Schema.optional(Schema.String),
        before_position: Schema.optional(Schema.String),
        ...includeHidden
      },
      success: TurnListResponse,
      error: errors
    }).annotate(
      OpenApi.Description,
      "The timeline window, inherited entries included, ascending: limit 1 to 100 (25); after_position=N the " +
        "oldest above N, before_position=N the newest below N, neither the newest; include_hidden true|false|1|0."
    ),
    HttpApiEndpoint.get("show", turn, { params, query: includeHidden, success: TurnResponse, error: errors }).annotate(
      OpenApi.Description,
      "One turn: 200 {turn}; unknown, concealed or hidden without include_hidden is 404."
    ),
    HttpApiEndpoint.post("edit", `${turn}/edit`, {
      params,
      payload: EditBody,
      success: TurnResponse,
      error: errors
    }).annotate(
      OpenApi.Description,
      "{edit: {text}} on the tail: 200 {turn} with a new active variant (source edit). A frozen turn is 409 branch_required, a running one 409 not_terminal."
    ),
    HttpApiEndpoint.post("regeneration", `${turn}/regeneration`, {
      params,
      headers: IdempotencyKeyHeader,
      payload: optionalBody(RegenerationBody),
      success: RegenerationResponse.pipe(HttpApiSchema.status(202)),
      error: [...errors, RateLimitedResponse]
    })
      .middleware(Idempotent)
      .annotate(
        OpenApi.Description,
        "Header Idempotency-Key (required). A direct_reply tail only; 202, and the receipt is kept 24 hours."
      ),
    HttpApiEndpoint.get("regenerationReceipt", `${turn}/regeneration_receipt`, {
      params,
      query: { idempotency_key: Schema.String },
      success: RegenerationResponse,
      error: errors
    }).annotate(OpenApi.Description, "The regeneration's 202 body for 24 hours (same caller and turn), else 404."),
    HttpApiEndpoint.post("cancellation", `${conversation}/cancellation`, {
      params: conversationParams,
      success: CancellationAnswers,
      error: errors
    }).annotate(
      OpenApi.Description,
      "Cuts the running reply, regeneration or summary: 202; nothing running: 200. Queued rows stay."
    ),
    HttpApiEndpoint.patch("update", turn, {
      params,
      payload: UpdateTurnBody,
      success: TurnResponse,
      error: errors
    }).annotate(OpenApi.Description, "{turn: {visibility}} on a settled turn: 200 {turn}."),
    HttpApiEndpoint.delete("remove", turn, { params, error: errors }).annotate(OpenApi.Description, "The tail: 204."),
    HttpApiEndpoint.get("variants", `${turn}/variants`, {
      params,
      success: VariantListResponse,
      error: errors
    }).annotate(OpenApi.Description, "The turn's candidates: 200 {variants, turn: {public_id, inherited}}."),
    HttpApiEndpoint.post("activate", `${turn}/variants/:variant_id/activation`, {
      params: variantParams,
      success: TurnResponse,
      error: errors
    }).annotate(
      OpenApi.Description,
      "Makes a candidate the turn's active one: 200 {turn}; an unsettled one is 409 not_terminal."
    ),
    HttpApiEndpoint.patch("updateVariant", `${turn}/variants/:variant_id`, {
      params: variantParams,
      payload: UpdateVariantBody,
      success: VariantResponse,
      error: errors
    }).annotate(OpenApi.Description, "{variant: {concealed}} hides a candidate (the active one is 422): 200 {variant}.")
  )
  .middleware(MemberAuthentication)
  .annotateMerge(OpenApi.annotations({ title: "Member: turns" })) {}
