// GET /agent_api/v1/models through the real server on a fresh database: the local models' rows
// exactly as the supplement shows them, rows of a TROUPE_MODEL_CATALOG file (available, or
// missing_credential while the key variable is unset; tokenizer_exact as the OpenAI-compatible
// adapter counts), the workload filter (transcription empty, other values 400), and who may read.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { bearer, request } from "../../support/http.ts"
import { apiToken } from "../../support/people.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

const presentKey = "TROUPE_TEST_MODELS_PRESENT_KEY"
const absentKey = "TROUPE_TEST_MODELS_ABSENT_KEY"

let server: TestServer
let agentToken: string
let humanMemberToken: string
let platformToken: string

beforeAll(async () => {
  process.env[presentKey] = "sk-test"
  delete process.env[absentKey]
  server = await startTestServer({
    modelCatalog: {
      providers: {
        hosted: { base_url: "https://api.hosted.test/v1", api_key_env: presentKey },
        locked: { base_url: "https://api.locked.test/v1", api_key_env: absentKey },
        lan: { base_url: "http://127.0.0.1:9/v1" }
      },
      models: {
        "hosted/gpt-4o": {
          workloads: ["text_generation"],
          context_window: 128000,
          max_output_tokens: 16384,
          input_modalities: ["text", "image", "file"],
          pricing: { input_per_mtok: "2.50", output_per_mtok: "10.00" }
        },
        "locked/embedder": { workloads: ["embedding"], context_window: 8192, input_modalities: ["text"] },
        "lan/llama": {
          workloads: ["text_generation"],
          upstream_model: "meta-llama/Llama-3-8B",
          context_window: 8192,
          input_modalities: ["text"],
          pricing: { input_per_mtok: "0", output_per_mtok: "0" }
        }
      }
    }
  })
  const account = await twoStewards(server, { owner: ["models-agent"], member: [] })
  agentToken = account.ownerAgents[0]!.token
  humanMemberToken = account.memberToken
  platformToken = await apiToken(server)
})
afterAll(() => server?.close())

/** `token` null sends no credential. */
const list = (query: string, token: string | null = agentToken) =>
  request(server.baseUrl, "GET", `/agent_api/v1/models${query}`, { headers: token === null ? {} : bearer(token) })

const expectError = (response: { status: number; body: any }, status: number, code: string) =>
  expect({ status: response.status, body: response.body }).toEqual({
    status,
    body: { error: { code, message: expect.any(String) } }
  })

const textParameters = (maximum: number | null) => ({
  max_output_tokens: { kind: "integer", default: null, minimum: 1, maximum, allowed_values: null },
  temperature: { kind: "number", default: null, minimum: 0, maximum: 2, allowed_values: null },
  top_p: { kind: "number", default: null, minimum: 0, maximum: 1, allowed_values: null },
  timeout_ms: { kind: "integer", default: null, minimum: 1000, maximum: 300000, allowed_values: null }
})

describe("GET /agent_api/v1/models", () => {
  it("lists one row per model and workload, ordered by ref then workload", async () => {
    const response = await list("")
    expect(response.status).toBe(200)
    expect(response.body.models.map((row: any) => `${row.ref} ${row.workload}`)).toEqual([
      "hosted/gpt-4o text_generation",
      "lan/llama text_generation",
      "local/echo text_generation",
      "local/embed embedding",
      "local/image image_generation",
      "local/script text_generation",
      "local/speech speech_generation",
      "local/tiny text_generation",
      "locked/embedder embedding"
    ])
  })

  it("shows local/echo exactly as the supplement's row", async () => {
    const rows = (await list("")).body.models
    expect(rows.find((row: any) => row.ref === "local/echo")).toEqual({
      ref: "local/echo",
      provider: "local",
      workload: "text_generation",
      visible: true,
      available: true,
      unavailable_reason: null,
      capabilities: {
        tool_calls: true,
        streaming: true,
        prompt_caching: false,
        input_modalities: ["image", "file"],
        output_modalities: ["text"],
        reasoning_modes: [],
        reasoning: {
          supported: true,
          default_enabled: false,
          disable_supported: true,
          efforts: ["low", "medium", "high"],
          default_effort: "medium"
        },
        generation_parameters: textParameters(4096),
        service_tiers: [],
        limits: { input_tokens: 32768 }
      },
      pricing: { state: "priced", unit: null, input_per_mtok: "1.00", output_per_mtok: "2.00" },
      tokenizer_exact: true
    })
    const tiny = rows.find((row: any) => row.ref === "local/tiny")
    expect(tiny.capabilities).toMatchObject({
      input_modalities: [],
      reasoning: {
        supported: false,
        default_enabled: null,
        disable_supported: false,
        efforts: [],
        default_effort: null
      },
      generation_parameters: textParameters(64),
      limits: { input_tokens: 256 }
    })
    const speech = rows.find((row: any) => row.ref === "local/speech")
    expect(speech.capabilities).toMatchObject({
      tool_calls: false,
      streaming: false,
      output_modalities: ["audio"],
      generation_parameters: {
        voice: { kind: "string", default: null, minimum: null, maximum: null, allowed_values: null },
        timeout_ms: { kind: "integer", default: null, minimum: 1000, maximum: 300000, allowed_values: null }
      },
      limits: { input_tokens: 4096 }
    })
    expect(Object.keys(speech.capabilities.generation_parameters)).toEqual(["voice", "timeout_ms"])
    const image = rows.find((row: any) => row.ref === "local/image")
    expect(image.capabilities).toMatchObject({ input_modalities: ["image"], output_modalities: ["image"] })
    expect(Object.keys(image.capabilities.generation_parameters)).toEqual(["size", "timeout_ms"])
  })

  it("shows the catalog file's models: availability by key variable, their pricing state and tokenizer", async () => {
    const rows = (await list("")).body.models
    const row = (ref: string) => rows.find((one: any) => one.ref === ref)
    expect(row("hosted/gpt-4o")).toMatchObject({
      provider: "hosted",
      available: true,
      unavailable_reason: null,
      tokenizer_exact: true,
      pricing: { state: "priced", unit: null, input_per_mtok: "2.50", output_per_mtok: "10.00" },
      capabilities: { input_modalities: ["image", "file"], generation_parameters: textParameters(16384) }
    })
    expect(row("locked/embedder")).toMatchObject({
      available: false,
      unavailable_reason: "missing_credential",
      pricing: { state: "cost_unknown" },
      capabilities: { output_modalities: ["embedding"], generation_parameters: { timeout_ms: expect.any(Object) } }
    })
    expect(row("lan/llama")).toMatchObject({
      available: true,
      tokenizer_exact: false,
      pricing: { state: "known_free_candidate", unit: null, input_per_mtok: "0", output_per_mtok: "0" },
      capabilities: { reasoning: { supported: false }, generation_parameters: textParameters(null) }
    })
  })

  it("keeps one workload's rows; transcription is empty; another value is 400 parameter_invalid", async () => {
    const embedding = await list("?workload=embedding")
    expect(embedding.body.models.map((row: any) => row.ref)).toEqual(["local/embed", "locked/embedder"])
    expect((await list("?workload=transcription")).body).toEqual({ models: [] })
    expectError(await list("?workload=chat"), 400, "parameter_invalid")
    expectError(await list("?workload="), 400, "parameter_invalid")
  })

  it("answers any member credential (a human's member token too) and refuses others with 401", async () => {
    const human = await list("", humanMemberToken)
    expect(human.status).toBe(200)
    expect(human.body.models).toHaveLength(9)
    expectError(await list("", null), 401, "unauthorized")
    expectError(await list("", platformToken), 401, "unauthorized")
  })
})
