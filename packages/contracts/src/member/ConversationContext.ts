// Member: context (spec "Member: context"; supplement conversations.md "Assembly, estimate,
// compaction"): what the next reply would read (an estimate, a read), a manual compaction, and a
// candidate's sealed request. The estimate's members are the input's (ConversationInputs) read the
// same way; render must be a JSON boolean (else 400). The model's standing in the catalog, an
// addressee, and whether anything is left to compact are the domain's.
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { BadRequest, Conflict, ContentTooLarge, Forbidden, NotFound, Unprocessable } from "../Errors.ts"
import { wrappedOrTopLevel } from "../Wrapped.ts"
import { MemberAuthentication } from "./Caller.ts"
import { HistoryShape, HistoryValues, ModelChoice } from "./ConversationInputs.ts"
import { judged, optionalBody, RequestEntry, TextValue, Turn } from "./ConversationShapes.ts"

const Object_ = Schema.Record(Schema.String, Schema.Unknown)

const estimateShape = {
  prompt: Schema.optionalKey(Schema.NullOr(Schema.String)),
  model: Schema.optionalKey(Schema.NullOr(ModelChoice)),
  history: Schema.optionalKey(Schema.NullOr(HistoryShape)),
  execution_declaration: Schema.optionalKey(Schema.Unknown),
  model_selection: Schema.optionalKey(Schema.Unknown),
  fallback_models: Schema.optionalKey(Schema.NullOr(Schema.Array(Schema.String))),
  reasoning_replay: Schema.optionalKey(Schema.Unknown),
  inline: Schema.optionalKey(Schema.Unknown),
  variables: Schema.optionalKey(Schema.NullOr(Object_)),
  template: Schema.optionalKey(Schema.Unknown),
  answering_user_public_id: Schema.optionalKey(Schema.NullOr(Schema.String)),
  speaker_public_id: Schema.optionalKey(Schema.NullOr(Schema.String)),
  render: Schema.optionalKey(Schema.Boolean).annotate({ description: "a JSON boolean: true adds the rendered request" })
}

/** The estimate's members: the prompt as an input's text (over 1 MiB 413), history's ranges 422. */
export const EstimateMembers = judged(
  Schema.Struct(estimateShape),
  Schema.Struct({
    ...estimateShape,
    prompt: Schema.optionalKey(Schema.NullOr(TextValue)),
    history: Schema.optionalKey(Schema.NullOr(HistoryValues))
  })
)
export type EstimateMembers = typeof EstimateMembers.Type

export const EstimateBody = wrappedOrTopLevel("context_estimate", EstimateMembers)

const Block = Schema.Record(Schema.String, Schema.Unknown)

export const ContextEstimate = Schema.Struct({
  input_tokens: Schema.Natural,
  tokenizer_exact: Schema.Boolean,
  catalog_input_token_limit: Schema.NullOr(Schema.Natural),
  advisory_input_token_limit: Schema.NullOr(Schema.Natural),
  message_count: Schema.Natural,
  history: Schema.Struct({
    selected: Schema.Natural,
    skipped: Schema.Natural,
    skipped_reason: Schema.NullOr(Schema.Literals(["max_entries", "budget_exceeded", "candidate_limit"])),
    compacted: Schema.Boolean
  }),
  mechanism: Schema.optionalKey(Schema.String),
  entries: Schema.optionalKey(Schema.Array(RequestEntry)),
  storage: Schema.optionalKey(
    Schema.Struct({
      bytes: Schema.Natural,
      bound: Schema.Natural,
      within_bound: Schema.Boolean,
      refusal: Schema.optionalKey(Schema.Unknown)
    })
  ),
  blocks: Schema.optionalKey(
    Schema.Array(Block).annotate({
      description:
        "{block, index, type, role, state, tokens, allocated_tokens}; state selected, empty, floor_unmet or carried"
    })
  ),
  memory: Schema.optionalKey(Block.annotate({ description: "{included, omitted}" })),
  slots: Schema.optionalKey(Schema.Unknown)
}).annotate({ description: "render true adds mechanism, entries, storage, blocks, memory and slots" })

export const ContextEstimateResponse = Schema.Struct({ context_estimate: ContextEstimate })

/** `{model?, reasoning_enabled?, reasoning_effort?}`: the summarizer (default the policy's, then the last reply's). */
export const CompactionMembers = Schema.Struct({
  model: Schema.optionalKey(Schema.NullOr(Schema.String)),
  reasoning_enabled: Schema.optionalKey(Schema.NullOr(Schema.Boolean)),
  reasoning_effort: Schema.optionalKey(Schema.NullOr(Schema.String))
})
export type CompactionMembers = typeof CompactionMembers.Type

export const CompactionBody = wrappedOrTopLevel("compaction", CompactionMembers)

/** The compaction_summary turn; during a running run-backed reply also its task and summary_task_key. */
export const CompactionResponse = Schema.Struct({
  turn: Turn,
  task: Schema.optionalKey(Schema.Struct({ key: Schema.String, status: Schema.String })),
  summary_task_key: Schema.optionalKey(Schema.String)
})

/** The request a candidate's model round was sealed with (the estimate's entry form). */
export const SealedRequestResponse = Schema.Struct({
  request: Schema.Struct({ entries: Schema.Array(RequestEntry), request_options: Block })
})

const conversation = "/agent_api/v1/workspaces/:workspace_id/conversations/:conversation_id"
const params = { workspace_id: Schema.String, conversation_id: Schema.String }
const errors = [BadRequest, Forbidden, NotFound, Conflict, ContentTooLarge, Unprocessable]

export class ConversationContextGroup extends HttpApiGroup.make("conversationContext")
  .add(
    HttpApiEndpoint.post("estimate", `${conversation}/context_estimate`, {
      params,
      payload: optionalBody(EstimateBody),
      success: ContextEstimateResponse,
      error: errors
    }).annotate(
      OpenApi.Description,
      "A read: what the next reply would send, counted (and rendered with render true)."
    ),
    HttpApiEndpoint.post("compaction", `${conversation}/compaction`, {
      params,
      payload: optionalBody(CompactionBody),
      success: CompactionResponse.pipe(HttpApiSchema.status(202)),
      error: errors
    }).annotate(
      OpenApi.Description,
      "202 with a compaction_summary turn; a reply or summary running 409 conversation_busy, nothing after the " +
        "newest summary 422 nothing_to_compact."
    ),
    HttpApiEndpoint.get("sealedRequest", `${conversation}/turns/:turn_id/variants/:variant_id/request`, {
      params: { ...params, turn_id: Schema.String, variant_id: Schema.String },
      success: SealedRequestResponse,
      error: errors
    }).annotate(OpenApi.Description, "The sealed request a variant was generated from.")
  )
  .middleware(MemberAuthentication)
  .annotateMerge(OpenApi.annotations({ title: "Member: context" })) {}
