// A conversation's usage_summary counts every attempt of its own samples' inference requests
// (supplement conversations.md "Conversation"; inference "usage_summary": request_count = attempts
// made, billed usage summed): a direct reply or a compaction summary whose first attempt an
// OpenAI-compatible provider (test/support/fakeOpenAi.ts) answers retryably, and a reply that fails.
import { afterAll, beforeAll, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { waitForConversation } from "../../support/conversations.ts"
import {
  chunk,
  type FakeHandler,
  type FakeOpenAi,
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

const call = (method: string, path: string, body?: unknown) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, {
    headers: { ...bearer(agent.token), "idempotency-key": `usage-${++keys}` },
    body
  })
const path = (id: string, rest = "") => `/workspaces/${workspaceId}/conversations/${id}${rest}`
const turns = async (id: string) => (await call("GET", path(id, "/turns?limit=100"))).body.turns as Array<any>
const view = async (id: string) => (await call("GET", path(id))).body.conversation

const createConversation = async () => {
  const made = await call("POST", `/workspaces/${workspaceId}/conversations`, { conversation: {} })
  expect(made.status).toBe(201)
  return made.body.conversation.public_id as string
}

const reply = async (id: string, text: string, model: string) => {
  const accepted = await call("POST", path(id, "/inputs"), { input: { kind: "direct_reply", text, model: { model } } })
  expect(accepted.status).toBe(202)
}

/** Waits until the conversation holds `count` turns, the newest with `status`; answers that turn. */
const settled = async (id: string, count: number, status: string) => {
  await waitForConversation(server, id, async () => {
    const found = await turns(id)
    return found.length === count && found.at(-1)?.status === status
  })
  return (await turns(id)).at(-1)
}

/** The provider's first call answers `first`; later ones stream "fine" reporting `usage`. */
const failingOnce = (first: FakeHandler, usage: { prompt_tokens: number; completion_tokens: number }) => {
  let calls = 0
  fake.on("/chat/completions", (request, response) =>
    ++calls === 1
      ? first(request, response)
      : sse(chunk({ role: "assistant", content: "fine" }), chunk({}, "stop"), usageChunk(usage))(request, response)
  )
}

/** fake/chat's price (0.15 in, 0.60 out per million) as a plain decimal. */
const cost = (input: number, output: number) => String((input * 0.15 + output * 0.6) / 1e6)

beforeAll(async () => {
  fake = await startFakeOpenAi()
  process.env[keyVariable] = "sk-fake-test-key"
  server = await startTestServer({
    modelCatalog: {
      providers: { fake: { base_url: fake.baseUrl, api_key_env: keyVariable } },
      models: {
        "fake/chat": {
          workloads: ["text_generation"],
          context_window: 8192,
          max_output_tokens: 1024,
          input_modalities: [],
          upstream_model: "gpt-4o-mini",
          pricing: { input_per_mtok: "0.15", output_per_mtok: "0.60" }
        }
      }
    }
  })
  const account = await twoStewards(server, { owner: ["usage-agent"], member: [] })
  agent = account.ownerAgents[0] as ConnectedAgent
  const made = await call("POST", "/workspaces", { workspace: { name: "direct-usage" } })
  workspaceId = made.body.workspace.public_id
})
afterAll(async () => {
  await server?.close()
  await fake?.close()
  delete process.env[keyVariable]
})

it("a direct reply whose first attempt is answered 503 counts both attempts and the billed one's usage", async () => {
  const id = await createConversation()
  failingOnce(status(503), { prompt_tokens: 1000, completion_tokens: 2000 })
  await reply(id, "hi", "fake/chat")
  const turn = await settled(id, 1, "completed")
  expect(turn.content).toBe("fine")
  const conversation = await view(id)
  expect(conversation.usage_summary).toEqual({
    request_count: 2,
    input_tokens: 1000,
    cache_read_tokens: 0,
    uncached_input_tokens: 1000,
    cache_creation_tokens: 0,
    cache_hit_rate: 0,
    output_tokens: 2000,
    reasoning_tokens: 0,
    total_tokens: 3000,
    cost_amount: cost(1000, 2000),
    cost_unit: null,
    cost_complete: true
  })
  expect(conversation.context).toMatchObject({ input_tokens: 1000, output_tokens: 2000, window_tokens: 8192 })
}, 20_000)

it("a compaction summary whose first attempt is answered 500 counts both attempts beside the reply's", async () => {
  const id = await createConversation()
  await reply(id, "hello", "local/echo")
  const answered = await settled(id, 1, "completed")
  const echoed = answered.active_variant.usage
  failingOnce(status(500), { prompt_tokens: 300, completion_tokens: 40 })
  const asked = await call("POST", path(id, "/compaction"), { compaction: { model: "fake/chat" } })
  expect(asked.status).toBe(202)
  const summary = await settled(id, 2, "completed")
  expect(summary).toMatchObject({ kind: "compaction_summary", content: "fine" })
  const { usage_summary } = await view(id)
  expect(usage_summary).toMatchObject({
    request_count: 3,
    input_tokens: echoed.input_tokens + 300,
    output_tokens: echoed.output_tokens + 40,
    total_tokens: echoed.input_tokens + 300 + echoed.output_tokens + 40,
    cost_complete: true
  })
  expect(Number(usage_summary.cost_amount)).toBeCloseTo(Number(echoed.cost_amount) + Number(cost(300, 40)), 12)
}, 20_000)

it("a direct reply that fails counts its attempt (no billed usage, context unchanged)", async () => {
  const id = await createConversation()
  await reply(id, JSON.stringify({ fail: "provider_model_unavailable" }), "local/script")
  const turn = await settled(id, 1, "failed")
  expect(turn.failure_reason_key).toBe("provider_model_unavailable")
  const conversation = await view(id)
  expect(conversation.usage_summary).toMatchObject({ request_count: 1, total_tokens: 0, cost_amount: "0" })
  expect(conversation.context).toBeNull()
})

it("a provider's odd counts reach the usage as whole numbers ≥ 0 (rounded; negative taken as missing; cached at most the input)", async () => {
  const id = await createConversation()
  fake.on(
    "/chat/completions",
    sse(
      chunk({ role: "assistant", content: "fine" }),
      chunk({}, "stop"),
      usageChunk({
        prompt_tokens: 10.6,
        completion_tokens: -4,
        prompt_tokens_details: { cached_tokens: 50 },
        completion_tokens_details: { reasoning_tokens: -0.5 }
      })
    )
  )
  await reply(id, "hi", "fake/chat")
  const turn = await settled(id, 1, "completed")
  const usage = turn.active_variant.usage
  expect(usage).toMatchObject({
    input_tokens: 11,
    cache_read_tokens: 11,
    uncached_input_tokens: 0,
    reasoning_tokens: 0
  })
  expect(Number.isInteger(usage.output_tokens) && usage.output_tokens > 0).toBe(true)
  expect((await view(id)).usage_summary).toMatchObject({ input_tokens: 11, cache_read_tokens: 11 })
})
