// The model catalog: the local models exactly as the supplements decide, TROUPE_MODEL_CATALOG's
// file (accepted, and each fault named by its member path, through the boot's configuration
// too), and the ModelCatalog service: lookups, the Provider for a ref (local, remote with its key,
// model_plane_unavailable without it) and the rows of GET /models.
import { mkdtemp, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { localModels, type ModelCatalogFile, parseModelCatalogFile } from "@troupe/domain/models/Catalog"
import { localProvider } from "@troupe/domain/models/LocalProvider"
import { ModelCatalog, type RemoteProviderFactory } from "@troupe/domain/models/ModelCatalog"
import type { Provider } from "@troupe/domain/models/Provider"
import { loadServerConfig } from "@troupe/server/Config"
import { ConfigProvider, Effect, Exit, Redacted, Result, Stream } from "effect"
import { describe, expect, it } from "vitest"

const reasoning = { efforts: ["low", "medium", "high"], default_effort: "medium", default_enabled: false }
const pricing = { input_per_mtok: "1.00", output_per_mtok: "2.00" }

describe("the local models", () => {
  it("are echo, script, tiny, embed, image and speech with the supplements' limits, media and prices", () => {
    const model = (
      name: string,
      workload: string,
      window: number,
      output: number | null,
      modalities: ReadonlyArray<string>,
      withReasoning: boolean
    ) => ({
      ref: `local/${name}`,
      provider: "local",
      workloads: [workload],
      upstream_model: name,
      context_window: window,
      max_output_tokens: output,
      input_modalities: modalities,
      reasoning: withReasoning ? reasoning : null,
      pricing,
      tokenizer_exact: true
    })
    expect(localModels).toEqual([
      model("echo", "text_generation", 32768, 4096, ["text", "image", "file"], true),
      model("script", "text_generation", 32768, 4096, ["text", "image", "file"], true),
      model("tiny", "text_generation", 256, 64, ["text"], false),
      model("embed", "embedding", 8192, null, ["text"], false),
      model("image", "image_generation", 4096, null, ["text", "image"], false),
      model("speech", "speech_generation", 4096, null, ["text"], false)
    ])
  })
})

const validFile = {
  providers: {
    acme: {
      base_url: "https://api.acme.test/v1",
      api_key_env: "TROUPE_TEST_ACME_KEY",
      max_tokens_field: "max_completion_tokens"
    },
    lan: { base_url: "http://127.0.0.1:8080/v1" }
  },
  models: {
    "acme/big": {
      workloads: ["text_generation", "embedding"],
      upstream_model: "big-2025",
      context_window: 128000,
      max_output_tokens: 8192,
      input_modalities: ["text", "image"],
      reasoning: { efforts: ["low", "high"], default_effort: "low", default_enabled: true },
      pricing: { input_per_mtok: "0.15", output_per_mtok: "0.60" }
    },
    "lan/meta-llama/Llama-3-8B": { workloads: ["text_generation"], context_window: 8192, input_modalities: ["text"] },
    "lan/free": {
      workloads: ["speech_generation"],
      context_window: 4096,
      input_modalities: ["text"],
      pricing: { input_per_mtok: "0", output_per_mtok: "0.00" }
    }
  }
}

const fault = (file: unknown) => {
  const parsed = parseModelCatalogFile(typeof file === "string" ? file : JSON.stringify(file))
  if (Result.isSuccess(parsed)) throw new Error("accepted")
  return parsed.failure
}

const withModel = (ref: string, entry: Record<string, unknown>) => ({
  ...validFile,
  models: { ...validFile.models, [ref]: entry }
})
const bigWith = (change: Record<string, unknown>) =>
  withModel("acme/big", { ...validFile.models["acme/big"], ...change })

describe("the TROUPE_MODEL_CATALOG file", () => {
  it("reads providers and models", () => {
    const parsed = parseModelCatalogFile(JSON.stringify(validFile))
    expect(Result.isSuccess(parsed) && parsed.success).toEqual(validFile)
  })

  it("names each fault by its member path", () => {
    expect(fault("{ not json")).toMatch(/^is not JSON/)
    expect(fault([])).toBe("must be a JSON object {providers, models}")
    expect(fault({ providers: {} })).toBe("models is required")
    expect(fault({ ...validFile, extra: 1 })).toBe("extra is not a member of a model catalog (misspelt?)")
    expect(fault({ ...validFile, providers: { ...validFile.providers, local: { base_url: "http://x" } } })).toBe(
      "providers.local is reserved for the built-in models"
    )
    expect(fault(withModel("local/mine", validFile.models["lan/free"]))).toBe(
      "models.local/mine is reserved for the built-in models"
    )
    expect(fault(withModel("other/x", validFile.models["lan/free"]))).toBe(
      "models.other/x names the provider other, which providers does not declare"
    )
    expect(fault(withModel("no-slash", validFile.models["lan/free"]))).toMatch(/provider\/model/)
    expect(fault({ ...validFile, providers: { acme: { base_url: "ftp://x" } } })).toMatch(
      /^providers\.acme\.base_url must be an absolute http\(s\) URL/
    )
    expect(
      fault({ ...validFile, providers: { ...validFile.providers, lan: { base_url: "http://x", api_key: "k" } } })
    ).toMatch(/^providers\.lan\.api_key /)
    expect(fault(bigWith({ context_window: 0 }))).toBe(
      "models.acme/big.context_window must be a whole number of tokens, 1 or more"
    )
    expect(fault(bigWith({ context_windw: 10 }))).toMatch(/^models\.acme\/big\.context_windw /)
    expect(fault(bigWith({ workloads: [] }))).toBe("models.acme/big.workloads must be a non-empty array of workloads")
    expect(fault(bigWith({ workloads: ["embedding", "embedding"] }))).toBe(
      'models.acme/big.workloads[1] repeats "embedding"'
    )
    expect(fault(bigWith({ workloads: ["chat"] }))).toMatch(/^models\.acme\/big\.workloads\[0\] must be one of/)
    expect(fault(bigWith({ input_modalities: ["video"] }))).toBe(
      "models.acme/big.input_modalities[0] must be text, image or file"
    )
    expect(fault(bigWith({ reasoning: { efforts: ["low"], default_effort: "max" } }))).toBe(
      "models.acme/big.reasoning.default_effort must be one of the efforts (low)"
    )
    expect(fault(bigWith({ pricing: { input_per_mtok: 0.15, output_per_mtok: "1" } }))).toMatch(
      /^models\.acme\/big\.pricing\.input_per_mtok must be a decimal string/
    )
    expect(fault(bigWith({ pricing: { input_per_mtok: "-1", output_per_mtok: "1" } }))).toMatch(
      /^models\.acme\/big\.pricing\.input_per_mtok /
    )
  })

  const load = (env: Record<string, string>) =>
    Effect.runPromiseExit(
      Effect.provideService(loadServerConfig, ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env }))
    )
  const refusal = async (env: Record<string, string>) => {
    const exit = await load(env)
    if (Exit.isSuccess(exit)) throw new Error("accepted")
    return exit.cause.reasons.map((reason) => ("error" in reason ? reason.error : undefined))[0] as any
  }

  it("stops the boot naming the variable, the path and the fault; a good file reaches the configuration", async () => {
    const directory = await mkdtemp(join(tmpdir(), "troupe-catalog-"))
    const missing = join(directory, "absent.json")
    expect(await refusal({ TROUPE_MODEL_CATALOG: missing })).toMatchObject({
      _tag: "ConfigurationError",
      variable: "TROUPE_MODEL_CATALOG",
      message: expect.stringMatching(new RegExp(`^TROUPE_MODEL_CATALOG=${missing} cannot be read \\(ENOENT\\); `))
    })
    const bad = join(directory, "bad.json")
    await writeFile(bad, JSON.stringify(bigWith({ context_window: -5 })))
    expect((await refusal({ TROUPE_MODEL_CATALOG: bad })).message).toMatch(
      new RegExp(`^TROUPE_MODEL_CATALOG=${bad} is not a model catalog: models\\.acme/big\\.context_window must be`)
    )
    const good = join(directory, "good.json")
    await writeFile(good, JSON.stringify(validFile))
    const loaded = await load({ TROUPE_MODEL_CATALOG: good })
    expect(Exit.isSuccess(loaded) && loaded.value.modelCatalog).toEqual(validFile)
    const unset = await load({})
    expect(Exit.isSuccess(unset) && unset.value.modelCatalog).toBeUndefined()
  })
})

describe("ModelCatalog", () => {
  /** A remote provider that remembers how it was made and counts exactly for upstream names starting "big". */
  const made: Array<Parameters<RemoteProviderFactory>[0]> = []
  const remote: RemoteProviderFactory = (provider) => {
    made.push(provider)
    return {
      call: () => Stream.empty,
      countInput: (call) => Effect.succeed({ tokens: 0, exact: call.upstreamModel.startsWith("big") })
    } satisfies Provider
  }
  const file = parseModelCatalogFile(JSON.stringify(validFile))
  if (Result.isFailure(file)) throw new Error(file.failure)

  const withCatalog = <A, E>(
    effect: Effect.Effect<A, E, ModelCatalog>,
    env: Record<string, string>,
    catalogFile: ModelCatalogFile | "none" = file.success
  ) =>
    Effect.runPromise(
      effect.pipe(
        Effect.provide(
          ModelCatalog.layer({ file: catalogFile === "none" ? undefined : catalogFile, remoteProvider: remote })
        ),
        Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env }))
      )
    )

  it("finds models, answers the local provider for local refs, and refuses unknown refs", async () => {
    const [found, local, unknown, models] = await withCatalog(
      Effect.gen(function* () {
        const catalog = yield* ModelCatalog
        return [
          catalog.find("acme/big"),
          yield* catalog.providerFor("local/echo"),
          yield* Effect.flip(catalog.providerFor("acme/none")),
          catalog.models.map((model) => model.ref)
        ] as const
      }),
      {}
    )
    expect(found).toMatchObject({ upstream_model: "big-2025", tokenizer_exact: true, max_output_tokens: 8192 })
    expect(local).toBe(localProvider)
    expect(unknown).toMatchObject({ _tag: "UnknownModel", ref: "acme/none" })
    expect(models).toEqual([
      ...localModels.map((model) => model.ref),
      "acme/big",
      "lan/meta-llama/Llama-3-8B",
      "lan/free"
    ])
  })

  it("makes a remote provider with its key, and answers model_plane_unavailable while the variable is unset", async () => {
    made.length = 0
    const missing = await withCatalog(
      Effect.flatMap(ModelCatalog, (catalog) => Effect.flip(catalog.providerFor("acme/big"))),
      { TROUPE_TEST_ACME_KEY: "" }
    )
    expect(missing).toMatchObject({ _tag: "ModelPlaneUnavailable", code: "model_plane_unavailable", provider: "acme" })
    expect(missing.message).toContain("TROUPE_TEST_ACME_KEY")

    made.length = 0
    await withCatalog(
      Effect.flatMap(ModelCatalog, (catalog) =>
        Effect.zip(catalog.providerFor("acme/big"), catalog.providerFor("lan/free"))
      ),
      { TROUPE_TEST_ACME_KEY: "sk-acme" }
    )
    const acme = made.find((provider) => provider.id === "acme")!
    expect(acme).toMatchObject({ baseUrl: "https://api.acme.test/v1", maxTokensField: "max_completion_tokens" })
    expect(Redacted.value(acme.apiKey!)).toBe("sk-acme")
    expect(made.find((provider) => provider.id === "lan")).toEqual({
      id: "lan",
      baseUrl: "http://127.0.0.1:8080/v1",
      apiKey: undefined
    })
  })

  it("lists one row per model and workload by ref then workload, filtered by workload", async () => {
    const rows = await withCatalog(
      Effect.flatMap(ModelCatalog, (catalog) =>
        Effect.zip(catalog.rows({ costUnit: null }), catalog.rows({ workload: "embedding", costUnit: null }))
      ),
      {}
    )
    expect(rows[0].map((row) => [row.ref, row.workload])).toEqual([
      ["acme/big", "embedding"],
      ["acme/big", "text_generation"],
      ["lan/free", "speech_generation"],
      ["lan/meta-llama/Llama-3-8B", "text_generation"],
      ["local/echo", "text_generation"],
      ["local/embed", "embedding"],
      ["local/image", "image_generation"],
      ["local/script", "text_generation"],
      ["local/speech", "speech_generation"],
      ["local/tiny", "text_generation"]
    ])
    expect(rows[1].map((row) => row.ref)).toEqual(["acme/big", "local/embed"])
    const row = (ref: string, workload: string) => rows[0].find((one) => one.ref === ref && one.workload === workload)!
    expect(row("acme/big", "text_generation")).toMatchObject({
      available: false,
      unavailable_reason: "missing_credential",
      tokenizer_exact: true,
      pricing: { state: "priced", unit: null, input_per_mtok: "0.15", output_per_mtok: "0.60" },
      capabilities: {
        input_modalities: ["image"],
        reasoning: { supported: true, default_enabled: true, efforts: ["low", "high"], default_effort: "low" }
      }
    })
    expect(row("lan/meta-llama/Llama-3-8B", "text_generation")).toMatchObject({
      available: true,
      unavailable_reason: null,
      tokenizer_exact: false,
      pricing: { state: "cost_unknown" },
      capabilities: {
        generation_parameters: {
          max_output_tokens: { kind: "integer", default: null, minimum: 1, maximum: null, allowed_values: null }
        }
      }
    })
    expect(row("lan/free", "speech_generation").pricing).toEqual({
      state: "known_free_candidate",
      unit: null,
      input_per_mtok: "0",
      output_per_mtok: "0"
    })
  })

  it("serves the local models alone without a file", async () => {
    const refs = await withCatalog(
      Effect.map(ModelCatalog, (catalog) => catalog.models.map((model) => model.ref)),
      {},
      "none"
    )
    expect(refs).toEqual(localModels.map((model) => model.ref))
  })
})
