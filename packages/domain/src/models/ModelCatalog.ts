// The model catalog as a service: the local models plus those of TROUPE_MODEL_CATALOG, a lookup
// by ref, the Provider that answers a model (the local one, or a remote one made by the function
// the layer is given, with the API key read from the provider's variable when asked), and the
// rows of GET /agent_api/v1/models. It makes no call to a model.
import { Config, Context, Effect, Layer, Option, Redacted, Schema } from "effect"
import {
  type CatalogModel,
  type CatalogProvider,
  catalogModels,
  catalogProviders,
  localModels,
  localProviderId,
  type ModelCatalogFile
} from "./Catalog.ts"
import { localProvider } from "./LocalProvider.ts"
import type { Provider, ProviderCall, Workload } from "./Provider.ts"
import { type PricingView, pricingView } from "./Usage.ts"

/** Makes the Provider of a remote (OpenAI-compatible) provider; `apiKey` undefined: it takes none. */
export type RemoteProviderFactory = (provider: {
  readonly id: string
  readonly baseUrl: string
  readonly apiKey: Redacted.Redacted<string> | undefined
  readonly maxTokensField?: string
}) => Provider

/** The model's provider needs a key and its variable is unset (422 model_plane_unavailable). */
export class ModelPlaneUnavailable extends Schema.TaggedError<ModelPlaneUnavailable>()("ModelPlaneUnavailable", {
  code: Schema.Literal("model_plane_unavailable"),
  message: Schema.String,
  provider: Schema.String
}) {}

/** No model of the catalog has this ref. */
export class UnknownModel extends Schema.TaggedError<UnknownModel>()("UnknownModel", { ref: Schema.String }) {}

/** One configuration member a workload accepts, as a model row describes it. */
export interface GenerationParameter {
  readonly kind: "integer" | "number" | "string"
  readonly default: null
  readonly minimum: number | null
  readonly maximum: number | null
  readonly allowed_values: ReadonlyArray<string> | null
}

/** A row of GET /agent_api/v1/models: one (model, workload) pair. */
export interface ModelRow {
  readonly ref: string
  readonly provider: string
  readonly workload: Workload
  readonly visible: true
  readonly available: boolean
  readonly unavailable_reason: "missing_credential" | null
  readonly capabilities: {
    readonly tool_calls: boolean
    readonly streaming: boolean
    readonly prompt_caching: false
    readonly input_modalities: ReadonlyArray<"image" | "file">
    readonly output_modalities: ReadonlyArray<"text" | "image" | "audio" | "embedding">
    readonly reasoning_modes: ReadonlyArray<string>
    readonly reasoning: {
      readonly supported: boolean
      readonly default_enabled: boolean | null
      readonly disable_supported: boolean
      readonly efforts: ReadonlyArray<string>
      readonly default_effort: string | null
    }
    readonly generation_parameters: Readonly<Record<string, GenerationParameter>>
    readonly service_tiers: ReadonlyArray<string>
    readonly limits: { readonly input_tokens: number }
  }
  readonly pricing: PricingView
  readonly tokenizer_exact: boolean
}

const parameter = (
  kind: GenerationParameter["kind"],
  minimum: number | null,
  maximum: number | null
): GenerationParameter => ({ kind, default: null, minimum, maximum, allowed_values: null })

/** The configuration members a workload accepts, with their bounds. */
const generationParameters = (model: CatalogModel, workload: Workload): Record<string, GenerationParameter> => {
  const timeout = { timeout_ms: parameter("integer", 1000, 300000) }
  switch (workload) {
    case "text_generation":
      return {
        max_output_tokens: parameter("integer", 1, model.max_output_tokens),
        temperature: parameter("number", 0, 2),
        top_p: parameter("number", 0, 1),
        ...timeout
      }
    case "image_generation":
      return { size: parameter("string", null, null), ...timeout }
    case "speech_generation":
      return { voice: parameter("string", null, null), ...timeout }
    default:
      return timeout
  }
}

const outputModalities: Record<Workload, ModelRow["capabilities"]["output_modalities"]> = {
  text_generation: ["text"],
  image_generation: ["image"],
  speech_generation: ["audio"],
  embedding: ["embedding"],
  transcription: ["text"]
}

const rowOf = (model: CatalogModel, workload: Workload, available: boolean, costUnit: string | null): ModelRow => {
  const textual = workload === "text_generation"
  const reasoning = model.reasoning
  return {
    ref: model.ref,
    provider: model.provider,
    workload,
    visible: true,
    available,
    unavailable_reason: available ? null : "missing_credential",
    capabilities: {
      tool_calls: textual,
      streaming: textual,
      prompt_caching: false,
      input_modalities: model.input_modalities.filter((modality) => modality !== "text"),
      output_modalities: outputModalities[workload],
      reasoning_modes: [],
      reasoning: {
        supported: reasoning !== null,
        default_enabled: reasoning?.default_enabled ?? null,
        disable_supported: reasoning !== null,
        efforts: reasoning?.efforts ?? [],
        default_effort: reasoning?.default_effort ?? null
      },
      generation_parameters: generationParameters(model, workload),
      service_tiers: [],
      limits: { input_tokens: model.context_window }
    },
    pricing: pricingView(model.pricing, costUnit),
    tokenizer_exact: model.tokenizer_exact
  }
}

/** The provider's key: undefined when it takes none; None when its variable is unset or empty. */
const keyOf = (provider: CatalogProvider) =>
  provider.api_key_env === undefined
    ? Effect.succeed(Option.some<Redacted.Redacted<string> | undefined>(undefined))
    : Config.option(Config.Redacted(provider.api_key_env)).pipe(
        Effect.map(Option.filter((key) => Redacted.value(key) !== "")),
        Effect.orElseSucceed(() => Option.none<Redacted.Redacted<string>>())
      )

/** A call of no messages: what a provider's countInput says of it tells whether its count is exact. */
const probeCall = (model: { readonly ref: string; readonly upstream_model: string; readonly workload: Workload }) =>
  ({
    workload: model.workload,
    modelRef: model.ref,
    upstreamModel: model.upstream_model,
    messages: [],
    tools: [],
    reasoning: { enabled: false, effort: null },
    attempt: 1,
    earlierAttemptsOnModel: 0
  }) satisfies ProviderCall

export class ModelCatalog extends Context.Service<
  ModelCatalog,
  {
    /** Every model, local ones first, then the file's in its order. */
    readonly models: ReadonlyArray<CatalogModel>
    readonly find: (ref: string) => CatalogModel | undefined
    /** The Provider answering `ref`; a remote provider whose key variable is unset: ModelPlaneUnavailable. */
    readonly providerFor: (ref: string) => Effect.Effect<Provider, ModelPlaneUnavailable | UnknownModel>
    /** One row per (model, workload), ordered by ref then workload; `workload` keeps that workload's. */
    readonly rows: (options: {
      readonly workload?: Workload | undefined
      readonly costUnit: string | null
    }) => Effect.Effect<ReadonlyArray<ModelRow>>
  }
>()("@troupe/domain/models/ModelCatalog") {
  /**
   * The catalog of the local models and `file`'s (when given); `remoteProvider` makes the
   * Provider of each file provider. A remote model's tokenizer_exact is what its provider's
   * countInput says of a call without messages.
   */
  static readonly layer = (options: {
    readonly file?: ModelCatalogFile | undefined
    readonly remoteProvider: RemoteProviderFactory
  }) =>
    Layer.effect(
      ModelCatalog,
      Effect.gen(function* () {
        const providers = new Map(
          (options.file === undefined ? [] : catalogProviders(options.file)).map((provider) => [provider.id, provider])
        )
        /** The Provider made for each remote provider, with the key it was made with. */
        const made = new Map<string, { readonly key: string | undefined; readonly provider: Provider }>()
        const remote = (provider: CatalogProvider, apiKey: Redacted.Redacted<string> | undefined) => {
          const key = apiKey === undefined ? undefined : Redacted.value(apiKey)
          const known = made.get(provider.id)
          if (known !== undefined && known.key === key) return known.provider
          const fresh = options.remoteProvider({
            id: provider.id,
            baseUrl: provider.base_url,
            apiKey,
            ...(provider.max_tokens_field === undefined ? {} : { maxTokensField: provider.max_tokens_field })
          })
          made.set(provider.id, { key, provider: fresh })
          return fresh
        }

        const exact = new Map<string, boolean>()
        if (options.file !== undefined) {
          for (const model of catalogModels(options.file, () => false)) {
            const provider = providers.get(model.provider)!
            const key = Option.getOrUndefined(yield* keyOf(provider))
            const counted = yield* remote(provider, key).countInput(
              probeCall({ ...model, workload: model.workloads[0]! })
            )
            exact.set(model.ref, counted.exact)
          }
        }
        const models = [
          ...localModels,
          ...(options.file === undefined ? [] : catalogModels(options.file, (ref) => exact.get(ref) ?? false))
        ]
        const byRef = new Map(models.map((model) => [model.ref, model]))

        const find = (ref: string) => byRef.get(ref)

        const providerFor = Effect.fn("ModelCatalog.providerFor")(function* (ref: string) {
          const model = byRef.get(ref)
          if (model === undefined) return yield* new UnknownModel({ ref })
          if (model.provider === localProviderId) return localProvider
          const provider = providers.get(model.provider)!
          const key = yield* keyOf(provider)
          if (Option.isNone(key)) {
            return yield* new ModelPlaneUnavailable({
              code: "model_plane_unavailable",
              message: `The provider ${provider.id} has no API key: ${provider.api_key_env} is not set`,
              provider: provider.id
            })
          }
          return remote(provider, key.value)
        })

        const rows = Effect.fn("ModelCatalog.rows")(function* (rowOptions: {
          readonly workload?: Workload | undefined
          readonly costUnit: string | null
        }) {
          const available = new Map<string, boolean>([[localProviderId, true]])
          for (const provider of providers.values()) available.set(provider.id, Option.isSome(yield* keyOf(provider)))
          return models
            .flatMap((model) =>
              model.workloads
                .filter((workload) => rowOptions.workload === undefined || workload === rowOptions.workload)
                .map((workload) => rowOf(model, workload, available.get(model.provider)!, rowOptions.costUnit))
            )
            .sort((a, b) => compare(a.ref, b.ref) || compare(a.workload, b.workload))
        })

        return ModelCatalog.of({ models, find, providerFor, rows })
      })
    )
}

/** Code-unit order, the same on every machine (no locale). */
const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)
