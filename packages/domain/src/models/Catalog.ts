// The model catalog's vocabulary: what one model is (ref, workloads, limits, modalities, reasoning,
// prices, tokenizer), the built-in `local` models exactly as the supplements decide, and the
// `TROUPE_MODEL_CATALOG` file that adds providers and models. The service answering lookups and
// providers is ModelCatalog.ts; reading the file at boot is the server's Config.ts.
import { Result, Schema } from "effect"
import { dottedPath, firstFault } from "../kernel/SchemaFaults.ts"
import { Workload } from "./Provider.ts"

/** The provider id of the built-in deterministic models; a catalog file may not declare it. */
export const localProviderId = "local"

/** `provider/model`: the provider id, then a name without whitespace (it may hold more slashes). */
export const modelRefPattern = /^[a-z0-9][a-z0-9_.-]{0,63}\/[^\s/][^\s]{0,190}$/
const providerIdPattern = /^[a-z0-9][a-z0-9_.-]{0,63}$/
const environmentVariablePattern = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/
/** A non-negative plain decimal: digits, then optionally a point and digits ("1.00", "0", "0.15"). */
const decimalPattern = /^(0|[1-9][0-9]{0,17})(\.[0-9]{1,18})?$/

/** A kind of input a model admits; every model takes text, image and file are native media. */
export const InputModality = Schema.Literals(["text", "image", "file"])
export type InputModality = typeof InputModality.Type

// ---------------------------------------------------------------------------------------------
// Building blocks: each reads `message` when it fails, whether its type or its check failed.

const said = <S extends Schema.Top>(schema: S, message: string): S["Rebuild"] => schema.annotate({ message })

/** An object of exactly these members: another one is named as not the file's. */
const closed = <const Fields extends Schema.Struct.Fields>(fields: Fields, message: string) =>
  Schema.Struct(fields).annotate({ message, messageUnexpectedKey: "is not a member of a model catalog (misspelt?)" })

const stringWhere = (message: string, valid: (text: string) => boolean) =>
  Schema.String.annotate({ message }).check(Schema.makeFilter(valid, { message }))

const matching = (pattern: RegExp, message: string) => stringWhere(message, (text) => pattern.test(text))

const count = (minimum: number, message: string) =>
  Schema.Number.annotate({ message }).check(
    Schema.makeFilter((value: number) => Number.isSafeInteger(value) && value >= minimum, { message })
  )

/** A non-empty array without repeats; the repeat is named by its index. */
const uniqueList = <S extends Schema.Top>(item: S, message: string) =>
  Schema.Array(item)
    .annotate({ message })
    .check(
      Schema.makeFilter((items: ReadonlyArray<unknown>) => {
        if (items.length === 0) return message
        const repeat = items.findIndex((value, index) => items.indexOf(value) !== index)
        return repeat < 0 ? undefined : { path: [repeat], issue: `repeats ${JSON.stringify(items[repeat])}` }
      })
    )

const decimal = matching(decimalPattern, 'must be a decimal string such as "1.00" or "0.15"')

// ---------------------------------------------------------------------------------------------
// The catalog as the rest of Troupe reads it

/** Reasoning a model offers: its efforts (maybe none), the default effort, whether it is on by default. */
export const Reasoning = Schema.Struct({
  efforts: Schema.Array(Schema.String),
  default_effort: Schema.NullOr(Schema.String),
  default_enabled: Schema.Boolean
})
export type Reasoning = typeof Reasoning.Type

/** Prices per million input and output tokens, decimal strings in the account's cost unit. */
export const Pricing = Schema.Struct({ input_per_mtok: decimal, output_per_mtok: decimal })
export type Pricing = typeof Pricing.Type

/** One model of the catalog. */
export const CatalogModel = Schema.Struct({
  /** `provider/name` */
  ref: matching(modelRefPattern, "must be provider/model"),
  provider: Schema.String,
  workloads: Schema.Array(Workload),
  /** What the provider calls it (the file's `upstream_model`, else the ref's name). */
  upstream_model: Schema.String,
  /** The input token limit. */
  context_window: Schema.Number,
  /** The most output tokens one call may ask for; null when the catalog gives no bound. */
  max_output_tokens: Schema.NullOr(Schema.Number),
  input_modalities: Schema.Array(InputModality),
  /** null: the model has no reasoning controls. */
  reasoning: Schema.NullOr(Reasoning),
  /** null: the catalog gives no price (usage is then cost_complete false). */
  pricing: Schema.NullOr(Pricing),
  /** Whether input is counted with the model's own tokenizer (else estimated). */
  tokenizer_exact: Schema.Boolean
})
export type CatalogModel = typeof CatalogModel.Type

/** A provider other than `local`: where it answers, and the variable holding its API key. */
export interface CatalogProvider {
  readonly id: string
  /** The OpenAI-compatible API's base, such as https://api.openai.com/v1. */
  readonly base_url: string
  /** The environment variable holding the key; absent: the provider takes no key. */
  readonly api_key_env?: string
  /** The body member carrying the output bound (`max_tokens` unless the provider wants another). */
  readonly max_tokens_field?: string
}

// ---------------------------------------------------------------------------------------------
// The built-in local provider (supplements "Models and the local provider", "Local provider")

const localPricing: Pricing = { input_per_mtok: "1.00", output_per_mtok: "2.00" }
const localReasoning: Reasoning = {
  efforts: ["low", "medium", "high"],
  default_effort: "medium",
  default_enabled: false
}

const local = (
  name: string,
  model: Pick<CatalogModel, "workloads" | "context_window" | "max_output_tokens" | "input_modalities" | "reasoning">
): CatalogModel => ({
  ref: `${localProviderId}/${name}`,
  provider: localProviderId,
  upstream_model: name,
  pricing: localPricing,
  tokenizer_exact: true,
  ...model
})

/**
 * The local models. Only text generation has an output bound: embeddings, images and speech
 * stream no text, so they report no output tokens. local/image takes source images.
 */
export const localModels: ReadonlyArray<CatalogModel> = [
  local("echo", {
    workloads: ["text_generation"],
    context_window: 32768,
    max_output_tokens: 4096,
    input_modalities: ["text", "image", "file"],
    reasoning: localReasoning
  }),
  local("script", {
    workloads: ["text_generation"],
    context_window: 32768,
    max_output_tokens: 4096,
    input_modalities: ["text", "image", "file"],
    reasoning: localReasoning
  }),
  local("tiny", {
    workloads: ["text_generation"],
    context_window: 256,
    max_output_tokens: 64,
    input_modalities: ["text"],
    reasoning: null
  }),
  local("embed", {
    workloads: ["embedding"],
    context_window: 8192,
    max_output_tokens: null,
    input_modalities: ["text"],
    reasoning: null
  }),
  local("image", {
    workloads: ["image_generation"],
    context_window: 4096,
    max_output_tokens: null,
    input_modalities: ["text", "image"],
    reasoning: null
  }),
  local("speech", {
    workloads: ["speech_generation"],
    context_window: 4096,
    max_output_tokens: null,
    input_modalities: ["text"],
    reasoning: null
  })
]

// ---------------------------------------------------------------------------------------------
// The TROUPE_MODEL_CATALOG file (supplement "Models and providers"): unknown members are refused,
// so a misspelt one is named rather than ignored.

const ProviderEntry = closed(
  {
    base_url: stringWhere("must be an absolute http(s) URL such as https://api.example.com/v1", (text) => {
      const url = URL.parse(text)
      return url !== null && (url.protocol === "http:" || url.protocol === "https:")
    }),
    api_key_env: Schema.optionalKey(
      matching(environmentVariablePattern, "must be the name of an environment variable, such as OPENAI_API_KEY")
    ),
    max_tokens_field: Schema.optionalKey(
      matching(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/, "must be a body member name such as max_completion_tokens")
    )
  },
  "must be an object {base_url, api_key_env?, max_tokens_field?}"
)

const ReasoningEntry = closed(
  {
    efforts: uniqueList(
      matching(/^[a-z0-9_-]{1,32}$/, "must be an effort name such as low"),
      "must be a non-empty array of effort names"
    ).pipe(Schema.optionalKey),
    default_effort: Schema.optionalKey(said(Schema.NullOr(Schema.String), "must be one of the efforts, or null")),
    default_enabled: Schema.optionalKey(said(Schema.Boolean, "must be a boolean"))
  },
  "must be an object {efforts?, default_effort?, default_enabled?}"
).check(
  Schema.makeFilter((entry) => {
    const efforts = entry.efforts ?? []
    const effort = entry.default_effort ?? null
    if (effort === null && efforts.length > 0)
      return { path: ["default_effort"], issue: "must name one of the efforts" }
    if (effort !== null && !efforts.includes(effort)) {
      return { path: ["default_effort"], issue: `must be one of the efforts (${efforts.join(", ") || "none"})` }
    }
    return undefined
  })
)

const ModelEntry = closed(
  {
    workloads: uniqueList(
      said(Workload, `must be one of ${Workload.literals.join(", ")}`),
      "must be a non-empty array of workloads"
    ),
    upstream_model: Schema.optionalKey(stringWhere("must be a non-empty model name", (text) => text.trim() !== "")),
    context_window: count(1, "must be a whole number of tokens, 1 or more"),
    max_output_tokens: Schema.optionalKey(count(1, "must be a whole number of tokens, 1 or more")),
    input_modalities: uniqueList(
      said(InputModality, "must be text, image or file"),
      "must be a non-empty array of text, image, file"
    ),
    reasoning: Schema.optionalKey(ReasoningEntry),
    pricing: Schema.optionalKey(
      closed(
        { input_per_mtok: decimal, output_per_mtok: decimal },
        'must be an object {input_per_mtok, output_per_mtok} of decimal strings such as "0.15"'
      )
    )
  },
  "must be an object {workloads, context_window, input_modalities, upstream_model?, max_output_tokens?, reasoning?, pricing?}"
)

/** The file as written. */
export const ModelCatalogFile = closed(
  {
    providers: said(Schema.Record(Schema.String, ProviderEntry), "must be an object of providers by id"),
    models: said(Schema.Record(Schema.String, ModelEntry), "must be an object of models by provider/model reference")
  },
  "must be a JSON object {providers, models}"
).check(
  // Keys are judged here: a Record's key check would call a bad one an excess property.
  Schema.makeFilter((file) => {
    for (const id of Object.keys(file.providers)) {
      if (!providerIdPattern.test(id)) {
        return { path: ["providers", id], issue: "is not a provider id: lower-case letters, digits, '.', '_' or '-'" }
      }
    }
    if (Object.hasOwn(file.providers, localProviderId)) {
      return { path: ["providers", localProviderId], issue: "is reserved for the built-in models" }
    }
    for (const ref of Object.keys(file.models)) {
      if (!modelRefPattern.test(ref)) {
        return { path: ["models", ref], issue: "is not a model reference provider/model" }
      }
      const provider = ref.slice(0, ref.indexOf("/"))
      if (provider === localProviderId) return { path: ["models", ref], issue: "is reserved for the built-in models" }
      if (!Object.hasOwn(file.providers, provider)) {
        return { path: ["models", ref], issue: `names the provider ${provider}, which providers does not declare` }
      }
    }
    return undefined
  })
)
export type ModelCatalogFile = typeof ModelCatalogFile.Type

const decodeFile = Schema.decodeUnknownResult(ModelCatalogFile, { onExcessProperty: "error" })

/** The file's text as a catalog, or the first fault: where it is (a member path) and what is wrong. */
export const parseModelCatalogFile = (text: string): Result.Result<ModelCatalogFile, string> => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    return Result.fail(`is not JSON (${(error as Error).message})`)
  }
  return Result.mapError(decodeFile(json), (error) => {
    const fault = firstFault(error.issue)
    const at = dottedPath(fault.path)
    return at === "" ? fault.message : `${at} ${fault.message}`
  })
}

/** The file's providers. */
export const catalogProviders = (file: ModelCatalogFile): ReadonlyArray<CatalogProvider> =>
  Object.entries(file.providers).map(([id, entry]) => ({ id, ...entry }))

/**
 * The file's models; `tokenizerExact` says, per ref, whether its provider counts with the
 * model's own tokenizer.
 */
export const catalogModels = (
  file: ModelCatalogFile,
  tokenizerExact: (ref: string) => boolean
): ReadonlyArray<CatalogModel> =>
  Object.entries(file.models).map(([ref, entry]) => {
    const at = ref.indexOf("/")
    const provider = ref.slice(0, at)
    const upstreamModel = entry.upstream_model ?? ref.slice(at + 1)
    return {
      ref,
      provider,
      workloads: entry.workloads,
      upstream_model: upstreamModel,
      context_window: entry.context_window,
      max_output_tokens: entry.max_output_tokens ?? null,
      input_modalities: entry.input_modalities,
      reasoning:
        entry.reasoning === undefined
          ? null
          : {
              efforts: entry.reasoning.efforts ?? [],
              default_effort: entry.reasoning.default_effort ?? null,
              default_enabled: entry.reasoning.default_enabled ?? false
            },
      pricing: entry.pricing ?? null,
      tokenizer_exact: tokenizerExact(ref)
    }
  })
