// Member: the model catalog (supplement "Models and providers"). GET /agent_api/v1/models lists
// one row per (model, workload it serves), ordered by ref then workload; `?workload=` keeps one
// workload's rows. Any member credential may read it.
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { BadRequest } from "../Errors.ts"
import { MemberAuthentication } from "./Caller.ts"

export const ModelWorkload = Schema.Literals([
  "text_generation",
  "image_generation",
  "speech_generation",
  "embedding",
  "transcription"
])

/** A configuration member the workload accepts; null where a bound does not apply. */
export const GenerationParameter = Schema.Struct({
  kind: Schema.Literals(["integer", "number", "string"]),
  default: Schema.Null,
  minimum: Schema.NullOr(Schema.Finite),
  maximum: Schema.NullOr(Schema.Finite),
  allowed_values: Schema.NullOr(Schema.Array(Schema.String))
})

/** Prices per million tokens in the account's cost unit (null while the account has none). */
export const ModelPricing = Schema.Union([
  Schema.Struct({
    state: Schema.Literals(["priced", "known_free_candidate"]),
    unit: Schema.NullOr(Schema.String),
    input_per_mtok: Schema.String,
    output_per_mtok: Schema.String
  }),
  Schema.Struct({ state: Schema.Literal("cost_unknown") })
])

export const ModelCapabilities = Schema.Struct({
  tool_calls: Schema.Boolean,
  streaming: Schema.Boolean,
  prompt_caching: Schema.Boolean,
  /** The non-text inputs admitted; [] when text only. */
  input_modalities: Schema.Array(Schema.Literals(["image", "file"])),
  output_modalities: Schema.Array(Schema.Literals(["text", "image", "audio", "embedding"])),
  reasoning_modes: Schema.Array(Schema.String),
  reasoning: Schema.Struct({
    supported: Schema.Boolean,
    default_enabled: Schema.NullOr(Schema.Boolean),
    disable_supported: Schema.Boolean,
    efforts: Schema.Array(Schema.String),
    default_effort: Schema.NullOr(Schema.String)
  }),
  generation_parameters: Schema.Record(Schema.String, GenerationParameter),
  service_tiers: Schema.Array(Schema.String),
  limits: Schema.Struct({ input_tokens: Schema.Natural })
})

/** A model row: the catalog's model as one workload sees it. */
export const ModelRow = Schema.Struct({
  ref: Schema.String,
  provider: Schema.String,
  workload: ModelWorkload,
  visible: Schema.Literal(true),
  available: Schema.Boolean,
  /** missing_credential when the provider's key variable is unset. */
  unavailable_reason: Schema.NullOr(Schema.Literal("missing_credential")),
  capabilities: ModelCapabilities,
  pricing: ModelPricing,
  /** Whether Troupe counts this model's input with its own tokenizer. */
  tokenizer_exact: Schema.Boolean
})

export class ModelsGroup extends HttpApiGroup.make("models")
  .add(
    HttpApiEndpoint.get("list", "/agent_api/v1/models", {
      query: { workload: Schema.optional(ModelWorkload) },
      success: Schema.Struct({ models: Schema.Array(ModelRow) }),
      error: BadRequest
    }).annotate(OpenApi.Description, "The model catalog, optionally filtered by workload.")
  )
  .middleware(MemberAuthentication)
  .annotateMerge(OpenApi.annotations({ title: "Member: models" })) {}
