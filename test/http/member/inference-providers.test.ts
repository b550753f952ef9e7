// Inference requests against a real OpenAI-compatible server (test/support/fakeOpenAi.ts) named by
// TROUPE_MODEL_CATALOG: a streamed answer, a 429 waited out with its Retry-After, garbage answered
// provider_error (never a 500 of ours), a provider hanging after its headers cut by the deadline,
// and a provider whose key variable is unset refused at create.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { waitForActorState } from "../../support/actors.ts"
import {
  chunk,
  type FakeOpenAi,
  openSse,
  sendEvent,
  sse,
  startFakeOpenAi,
  status,
  usageChunk
} from "../../support/fakeOpenAi.ts"
import { bearer, request } from "../../support/http.ts"
import type { ConnectedAgent } from "../../support/members.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let fake: FakeOpenAi
let server: TestServer
let agent: ConnectedAgent
let workspaceId: string
let keys = 0
const keyVariable = "TROUPE_TEST_FAKE_OPENAI_KEY"

const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, { headers: { ...bearer(agent.token), ...headers }, body })

const requests = () => `/workspaces/${workspaceId}/inference_requests`

const ask = (model: string, configuration: Record<string, unknown> = {}) =>
  call(
    "POST",
    requests(),
    { inference_request: { workload: "text_generation", model: { model }, input: "hi", configuration } },
    { "idempotency-key": `provider-${++keys}` }
  )

const settled = async (id: string, state: string) => {
  await waitForActorState(server, "inferenceRequest", id, state)
  return (await call("GET", `${requests()}/${id}`)).body.inference_request
}

const model = {
  workloads: ["text_generation" as const],
  context_window: 8192,
  max_output_tokens: 1024,
  input_modalities: []
}

beforeAll(async () => {
  fake = await startFakeOpenAi()
  process.env[keyVariable] = "sk-fake-test-key"
  server = await startTestServer({
    modelCatalog: {
      providers: {
        fake: { base_url: fake.baseUrl, api_key_env: keyVariable },
        keyless: { base_url: fake.baseUrl, api_key_env: "TROUPE_TEST_UNSET_KEY" }
      },
      models: {
        "fake/chat": {
          ...model,
          upstream_model: "gpt-4o-mini",
          pricing: { input_per_mtok: "0.15", output_per_mtok: "0.60" }
        },
        "keyless/chat": model
      }
    }
  })
  const account = await twoStewards(server, { owner: ["provider-agent"], member: [] })
  agent = account.ownerAgents[0] as ConnectedAgent
  const made = await call(
    "POST",
    "/workspaces",
    { workspace: { name: "providers" } },
    { "idempotency-key": "ws-providers" }
  )
  workspaceId = made.body.workspace.public_id
})
afterAll(async () => {
  await server?.close()
  await fake?.close()
  delete process.env[keyVariable]
})

describe("an OpenAI-compatible provider", () => {
  it("streams deltas into the replay and prices the provider's usage from the catalog", async () => {
    fake.on(
      "/chat/completions",
      sse(
        chunk({ role: "assistant", content: "Hello" }),
        chunk({ content: " world" }),
        chunk({}, "stop"),
        usageChunk({ prompt_tokens: 1000, completion_tokens: 2000, total_tokens: 3000 })
      )
    )
    const created = await ask("fake/chat")
    const done = await settled(created.body.inference_request.public_id, "completed")
    expect(done.result).toMatchObject({
      status: "completed",
      output_text: "Hello world",
      usage: { input_tokens: 1000, output_tokens: 2000, cost_amount: "0.00135", cost_complete: true }
    })
    const sent = fake.requests.at(-1)!
    expect(sent.headers.authorization).toBe("Bearer sk-fake-test-key")
    expect(sent.body.model).toBe("gpt-4o-mini")
  })

  it("a 429 waits out its Retry-After and retries within the budget", async () => {
    let calls = 0
    fake.on("/chat/completions", (request, response) => {
      calls++
      if (calls === 1) return status(429, { "retry-after": "1" })(request, response)
      return sse(
        chunk({ content: "later" }),
        chunk({}, "stop"),
        usageChunk({ prompt_tokens: 1, completion_tokens: 1 })
      )(request, response)
    })
    const created = await ask("fake/chat")
    const id = created.body.inference_request.public_id
    const done = await settled(id, "completed")
    expect(done.result.output_text).toBe("later")
    const items = (await call("GET", `${requests()}/${id}/events`)).body.events
    const retry = items.find((item: any) => item.type === "run_status" && item.payload.attempt === 2)
    expect(retry.payload).toMatchObject({ status: "queued", retry_after_ms: 1000 })
  })

  it("garbage from the provider ends in provider_error after the attempt budget, never a 500", async () => {
    fake.on("/chat/completions", (_request, response) => {
      openSse(response)
      sendEvent(response, "{not json")
      response.end()
    })
    const created = await ask("fake/chat")
    const id = created.body.inference_request.public_id
    const done = await settled(id, "failed")
    expect(done.result.error).toEqual({ code: "provider_error", attempt_budget_spent: true })
    expect(done.usage_summary.request_count).toBe(4)
  }, 20_000)

  it("InferenceRequest: running --finish--> timed_out: a provider that hangs after its headers is cut by the deadline, the call aborted", async () => {
    fake.on("/chat/completions", (_request, response) => {
      openSse(response)
      sendEvent(response, chunk({ role: "assistant", content: "" }))
    })
    const arrived = fake.next("/chat/completions")
    const created = await ask("fake/chat", { timeout_ms: 1000 })
    const id = created.body.inference_request.public_id
    const hung = await arrived
    const done = await settled(id, "timed_out")
    expect(done.result).toMatchObject({ status: "timed_out", error: { code: "timed_out" } })
    await hung.closed
  })

  it("a provider whose key variable is unset is refused at create: 422 model_plane_unavailable", async () => {
    const refused = await ask("keyless/chat")
    expect(refused.status).toBe(422)
    expect(refused.body.error.code).toBe("model_plane_unavailable")
  })
})
