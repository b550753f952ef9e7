// The OpenAI-compatible adapter against a real HTTP server speaking OpenAI's wire format: streamed
// chat (text, reasoning, tool calls, usage, finish reasons), embeddings, images, speech, every status
// class, cut and hung connections, garbage answers, the API key's path, and input token counts.

import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { makeOpenAiCompatible } from "@troupe/domain/models/OpenAiCompatible"
import { type ProviderCall, type ProviderEvent, ProviderFailure, ProviderRefusal } from "@troupe/domain/models/Provider"
import { Deferred, Effect, Fiber, Redacted, Stream } from "effect"
import { encodeChat } from "gpt-tokenizer/model/gpt-4o"
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest"
import {
  chunk,
  type FakeOpenAi,
  json,
  openSse,
  sendEvent,
  sse,
  startFakeOpenAi,
  status,
  usageChunk
} from "../../support/fakeOpenAi.ts"

const secret = "sk-troupe-test-0123456789"

let fake: FakeOpenAi
beforeAll(async () => {
  fake = await startFakeOpenAi()
})
afterAll(() => fake.close())
afterEach(() => {
  vi.restoreAllMocks()
  fake.requests.length = 0
})

const provider = (options: { apiKey?: string | undefined; maxTokensField?: string; baseUrl?: string } = {}) =>
  makeOpenAiCompatible({
    id: "fake",
    baseUrl: options.baseUrl ?? fake.baseUrl,
    apiKey:
      "apiKey" in options ? (options.apiKey && Redacted.make(options.apiKey)) || undefined : Redacted.make(secret),
    ...(options.maxTokensField === undefined ? {} : { maxTokensField: options.maxTokensField })
  })

const user = (text: string) => ({ role: "user" as const, content: [{ type: "text" as const, text }] })

const callOf = (overrides: Partial<ProviderCall> = {}): ProviderCall => ({
  workload: "text_generation",
  modelRef: "fake/model",
  upstreamModel: "fake-model",
  messages: [user("hi")],
  tools: [],
  reasoning: { enabled: false, effort: null },
  attempt: 1,
  earlierAttemptsOnModel: 0,
  ...overrides
})

/** Runs one call to its end: the events, or the events before the failure and the failure. */
const run = async (call: ProviderCall = callOf(), p = provider()) => {
  const events: Array<ProviderEvent> = []
  const outcome = await Effect.runPromise(
    p.call(call).pipe(
      Stream.runForEach((event) => Effect.sync(() => events.push(event))),
      Effect.result
    )
  )
  return { events, failure: outcome._tag === "Failure" ? outcome.failure : undefined }
}

const failureOf = async (call?: ProviderCall) => {
  const { failure } = await run(call)
  expect(failure).toBeInstanceOf(ProviderFailure)
  return failure as ProviderFailure
}

const usage = { prompt_tokens: 11, completion_tokens: 7 }

describe("chat completions over SSE", () => {
  it("streams text deltas and ends with the final chunk's usage; the request asks for usage and sends the key as Bearer", async () => {
    fake.on(
      "/chat/completions",
      sse(
        chunk({ role: "assistant", content: "" }),
        chunk({ content: "Hello" }),
        chunk({ content: ", world" }),
        chunk({}, "stop"),
        usageChunk({
          ...usage,
          prompt_tokens_details: { cached_tokens: 3 },
          completion_tokens_details: { reasoning_tokens: 2 }
        })
      )
    )
    const { events, failure } = await run(callOf({ maxOutputTokens: 50, temperature: 0.5, topP: 0.9 }))
    expect(failure).toBeUndefined()
    expect(events).toEqual([
      { type: "text_delta", text: "Hello" },
      { type: "text_delta", text: ", world" },
      {
        type: "finished",
        usage: { inputTokens: 11, outputTokens: 7, reasoningTokens: 2, cacheReadTokens: 3, cacheCreationTokens: 0 }
      }
    ])
    const [request] = fake.requests
    expect(request!.headers.authorization).toBe(`Bearer ${secret}`)
    expect(request!.body).toMatchObject({
      model: "fake-model",
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 50,
      temperature: 0.5,
      top_p: 0.9,
      messages: [{ role: "user", content: "hi" }]
    })
  })

  it("streams reasoning deltas from reasoning_content and reasoning, and sends the effort when reasoning is on", async () => {
    fake.on(
      "/chat/completions",
      sse(
        chunk({ reasoning_content: "thinking" }),
        chunk({ reasoning: " more" }),
        chunk({ content: "answer" }, "stop"),
        usageChunk(usage)
      )
    )
    const { events } = await run(callOf({ reasoning: { enabled: true, effort: "high" } }))
    expect(events.slice(0, 3)).toEqual([
      { type: "reasoning_delta", text: "thinking" },
      { type: "reasoning_delta", text: " more" },
      { type: "text_delta", text: "answer" }
    ])
    expect(fake.requests[0]!.body.reasoning_effort).toBe("high")
  })

  it("turns tool calls split over chunks into started, deltas and completed with compact arguments", async () => {
    fake.on(
      "/chat/completions",
      sse(
        chunk({
          tool_calls: [{ index: 0, id: "call_a", type: "function", function: { name: "lookup", arguments: "" } }]
        }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city": ' } }] }),
        chunk({
          tool_calls: [{ index: 1, id: "call_b", type: "function", function: { name: "clock", arguments: "{}" } }]
        }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '"Oslo"}' } }] }),
        chunk({}, "tool_calls"),
        usageChunk(usage)
      )
    )
    const tools = [{ name: "lookup", description: "Find a city", parameters: { type: "object" } }, { name: "clock" }]
    const { events, failure } = await run(callOf({ tools }))
    expect(failure).toBeUndefined()
    expect(events).toEqual([
      { type: "tool_call_started", index: 0, callId: "call_a", name: "lookup" },
      { type: "tool_call_delta", index: 0, delta: '{"city": ' },
      { type: "tool_call_started", index: 1, callId: "call_b", name: "clock" },
      { type: "tool_call_delta", index: 1, delta: "{}" },
      { type: "tool_call_delta", index: 0, delta: '"Oslo"}' },
      { type: "tool_call_completed", index: 0, callId: "call_a", name: "lookup", arguments: '{"city":"Oslo"}' },
      { type: "tool_call_completed", index: 1, callId: "call_b", name: "clock", arguments: "{}" },
      expect.objectContaining({ type: "finished" })
    ])
    expect(fake.requests[0]!.body.tools).toEqual([
      { type: "function", function: { name: "lookup", description: "Find a city", parameters: { type: "object" } } },
      { type: "function", function: { name: "clock" } }
    ])
  })

  it("maps a length finish to output_budget_exhausted", async () => {
    fake.on("/chat/completions", sse(chunk({ content: "cut" }, "length"), usageChunk(usage)))
    const { events } = await run()
    expect(events.at(-1)).toMatchObject({ type: "finished", finishQuality: "output_budget_exhausted" })
  })

  it("maps a content_filter finish to a refusal billing the reported input", async () => {
    fake.on("/chat/completions", sse(chunk({ content: "partial" }, "content_filter"), usageChunk(usage)))
    const { failure } = await run()
    expect(failure).toBeInstanceOf(ProviderRefusal)
    expect(failure).toMatchObject({ kind: "refused", category: "content_filter", inputTokens: 11 })
  })

  it("maps a refusal the model streams to a refusal", async () => {
    fake.on("/chat/completions", sse(chunk({ refusal: "I can't help with that." }, "stop"), usageChunk(usage)))
    const { failure } = await run()
    expect(failure).toBeInstanceOf(ProviderRefusal)
    expect(failure).toMatchObject({ kind: "refused", inputTokens: 11 })
  })

  it("maps a finish reason it cannot read to provider_error", async () => {
    fake.on("/chat/completions", sse(chunk({ content: "x" }, "mystery"), usageChunk(usage)))
    expect(await failureOf()).toMatchObject({ code: "provider_error" })
  })

  it("refuses the transcription workload as provider_model_unavailable without a request", async () => {
    expect(await failureOf(callOf({ workload: "transcription" }))).toMatchObject({
      code: "provider_model_unavailable"
    })
    expect(fake.requests).toEqual([])
  })

  it("counts usage itself when the server reports none", async () => {
    fake.on("/chat/completions", sse(chunk({ content: "four words right here" }, "stop")))
    const { events } = await run(callOf({ upstreamModel: "gpt-4o-mini" }))
    const expectedInput = encodeChat([{ role: "user", content: "hi" }], "gpt-4o").length
    expect(events.at(-1)).toMatchObject({
      type: "finished",
      usage: { inputTokens: expectedInput, outputTokens: 4 }
    })
  })

  it("maps messages: developer as system, uploads as image_url and file parts, tool calls and results", async () => {
    fake.on("/chat/completions", sse(chunk({ content: "ok" }, "stop"), usageChunk(usage)))
    const png = new Uint8Array([137, 80, 78, 71])
    const pdf = new TextEncoder().encode("%PDF-1.7")
    await run(
      callOf({
        messages: [
          { role: "developer", content: [{ type: "text", text: "be brief" }] },
          {
            role: "user",
            content: [
              { type: "text", text: "look" },
              { type: "upload", contentType: "image/png", filename: "a.png", bytes: png },
              { type: "upload", contentType: "application/pdf", filename: "b.pdf", bytes: pdf }
            ]
          },
          {
            role: "assistant",
            content: [],
            toolCalls: [{ callId: "call_1", name: "lookup", arguments: '{"q":1}' }]
          },
          { role: "tool", toolCallId: "call_1", content: [{ type: "text", text: "found" }] }
        ],
        maxOutputTokens: 9
      }),
      provider({ maxTokensField: "max_completion_tokens" })
    )
    const body = fake.requests[0]!.body
    expect(body.messages).toEqual([
      { role: "system", content: "be brief" },
      {
        role: "user",
        content: [
          { type: "text", text: "look" },
          { type: "image_url", image_url: { url: `data:image/png;base64,${Buffer.from(png).toString("base64")}` } },
          {
            type: "file",
            file: { filename: "b.pdf", file_data: `data:application/pdf;base64,${Buffer.from(pdf).toString("base64")}` }
          }
        ]
      },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "call_1", type: "function", function: { name: "lookup", arguments: '{"q":1}' } }]
      },
      { role: "tool", tool_call_id: "call_1", content: "found" }
    ])
    expect(body.max_completion_tokens).toBe(9)
    expect(body.max_tokens).toBeUndefined()
  })
})

describe("statuses and faults", () => {
  it("maps 429 to rate_limited with Retry-After in seconds", async () => {
    fake.on("/chat/completions", status(429, { "retry-after": "7" }))
    expect(await failureOf()).toMatchObject({ code: "rate_limited", retryAfterMs: 7000 })
  })

  it.each([
    [500, "provider_error"],
    [502, "provider_error"],
    [504, "provider_error"],
    [503, "provider_overloaded"],
    [529, "provider_overloaded"],
    [401, "provider_model_unavailable"],
    [403, "provider_model_unavailable"],
    [404, "provider_model_unavailable"],
    [400, "provider_error"],
    [422, "provider_error"]
  ] as const)("maps HTTP %i to %s", async (code, expected) => {
    fake.on("/chat/completions", status(code))
    expect(await failureOf()).toMatchObject({ code: expected })
  })

  it("classifies a 5xx with an HTML body by its status", async () => {
    fake.on("/chat/completions", status(500, {}, "<html>oops</html>"))
    expect(await failureOf()).toMatchObject({ code: "provider_error" })
  })

  it("ends with provider_error when the connection is cut mid-stream, after the deltas it carried", async () => {
    const delivered = Promise.withResolvers<void>()
    fake.on("/chat/completions", async (_request, response) => {
      openSse(response)
      sendEvent(response, chunk({ content: "half" }))
      await delivered.promise
      response.socket?.destroy()
    })
    const events: Array<ProviderEvent> = []
    const failure = await Effect.runPromise(
      provider()
        .call(callOf())
        .pipe(
          Stream.runForEach((event) =>
            Effect.sync(() => {
              events.push(event)
              delivered.resolve()
            })
          ),
          Effect.flip
        )
    )
    expect(events).toEqual([{ type: "text_delta", text: "half" }])
    expect(failure).toBeInstanceOf(ProviderFailure)
    expect(failure).toMatchObject({ code: "provider_error" })
  })

  it("maps an unreachable server to provider_error, its detail naming the refused address", async () => {
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve))
    const { port } = closed.address() as AddressInfo
    await new Promise((resolve) => closed.close(resolve))
    const { failure } = await run(callOf(), provider({ baseUrl: `http://127.0.0.1:${port}/v1` }))
    expect(failure).toMatchObject({ _tag: "ProviderFailure", code: "provider_error" })
    expect((failure as ProviderFailure).detail).toContain(`ECONNREFUSED 127.0.0.1:${port}`)
  })

  it.each([
    ["malformed SSE data", (response: Parameters<typeof openSse>[0]) => sendEvent(response, "{not json")],
    ["a chunk of the wrong shape", (response: Parameters<typeof openSse>[0]) => sendEvent(response, { choices: 5 })],
    ["a stream with no finish reason", (response: Parameters<typeof openSse>[0]) => sendEvent(response, "[DONE]")]
  ])("maps %s to provider_error", async (_name, send) => {
    fake.on("/chat/completions", (_request, response) => {
      openSse(response)
      send(response)
      response.end()
    })
    expect(await failureOf()).toMatchObject({ code: "provider_error" })
  })

  it("maps a 200 answer that is not SSE to provider_error", async () => {
    fake.on("/chat/completions", (_request, response) => {
      response.writeHead(200, { "content-type": "text/html" })
      response.end("<html>not a stream</html>")
    })
    expect(await failureOf()).toMatchObject({ code: "provider_error" })
  })

  it("aborts the request when the stream is interrupted while the server hangs after its headers", async () => {
    const headersSent = Promise.withResolvers<void>()
    fake.on("/chat/completions", (_request, response) => {
      openSse(response)
      headersSent.resolve()
    })
    const arrived = fake.next("/chat/completions")
    await Effect.runPromise(
      Effect.gen(function* () {
        const fiber = yield* provider().call(callOf()).pipe(Stream.runDrain, Effect.forkChild)
        yield* Effect.promise(() => headersSent.promise)
        yield* Fiber.interrupt(fiber)
      })
    )
    await (await arrived).closed
  })

  it("aborts the request when the consumer stops after the first delta of a hanging stream", async () => {
    fake.on("/chat/completions", (_request, response) => {
      openSse(response)
      sendEvent(response, chunk({ content: "first" }))
    })
    const arrived = fake.next("/chat/completions")
    const events = await Effect.runPromise(
      Effect.gen(function* () {
        const first = yield* Deferred.make<ProviderEvent>()
        const fiber = yield* provider()
          .call(callOf())
          .pipe(
            Stream.runForEach((event) => Deferred.succeed(first, event)),
            Effect.forkChild
          )
        const event = yield* Deferred.await(first)
        yield* Fiber.interrupt(fiber)
        return [event]
      })
    )
    expect(events).toEqual([{ type: "text_delta", text: "first" }])
    await (await arrived).closed
  })
})

describe("embeddings, images and speech", () => {
  it("asks /embeddings for floats and answers the vectors with the usage", async () => {
    fake.on("/embeddings", (_request, response) =>
      json(response, 200, {
        object: "list",
        data: [
          { object: "embedding", index: 0, embedding: [0.1, 0.2] },
          { object: "embedding", index: 1, embedding: [0.3, 0.4] }
        ],
        model: "embed",
        usage: { prompt_tokens: 4, total_tokens: 4 }
      })
    )
    const { events } = await run(callOf({ workload: "embedding", messages: [user("one"), user("two")] }))
    expect(events).toEqual([
      {
        type: "embeddings",
        embeddings: [
          { index: 0, vector: [0.1, 0.2] },
          { index: 1, vector: [0.3, 0.4] }
        ]
      },
      {
        type: "finished",
        usage: { inputTokens: 4, outputTokens: 0, reasoningTokens: 0, cacheReadTokens: 0, cacheCreationTokens: 0 }
      }
    ])
    expect(fake.requests[0]!.body).toMatchObject({
      model: "fake-model",
      input: ["one", "two"],
      encoding_format: "float"
    })
  })

  it.each([
    ["text that is not JSON", (response: Parameters<typeof json>[0]) => response.end("plain words")],
    ["JSON of the wrong shape", (response: Parameters<typeof json>[0]) => json(response, 200, { data: "nope" })],
    ["no vectors", (response: Parameters<typeof json>[0]) => json(response, 200, { data: [] })],
    [
      "broken JSON",
      (response: Parameters<typeof json>[0]) => {
        response.writeHead(200, { "content-type": "application/json" })
        response.end("{broken")
      }
    ]
  ])("maps an embeddings answer of %s to provider_error", async (_name, answer) => {
    fake.on("/embeddings", (_request, response) => answer(response))
    expect(await failureOf(callOf({ workload: "embedding" }))).toMatchObject({ code: "provider_error" })
  })

  it("generates images as b64_json and answers them as output files", async () => {
    const png = Buffer.from([137, 80, 78, 71, 13, 10, 26, 10])
    fake.on("/images/generations", (_request, response) =>
      json(response, 200, { created: 1, data: [{ b64_json: png.toString("base64") }] })
    )
    const { events } = await run(callOf({ workload: "image_generation", messages: [user("a cat")], size: "64x64" }))
    expect(events[0]).toMatchObject({
      type: "output_file",
      index: 0,
      filename: "image-1.png",
      contentType: "image/png"
    })
    expect(Buffer.from((events[0] as { bytes: Uint8Array }).bytes)).toEqual(png)
    expect(events[1]).toMatchObject({ type: "finished" })
    expect(fake.requests[0]!.body).toMatchObject({
      model: "fake-model",
      prompt: "a cat",
      n: 1,
      size: "64x64",
      response_format: "b64_json"
    })
  })

  it("sends source images to /images/edits as multipart", async () => {
    fake.on("/images/edits", (_request, response) =>
      json(response, 200, { created: 1, data: [{ b64_json: Buffer.from("img").toString("base64") }] })
    )
    const source = {
      type: "upload" as const,
      contentType: "image/png",
      filename: "src.png",
      bytes: new Uint8Array([1])
    }
    const { events } = await run(
      callOf({
        workload: "image_generation",
        messages: [{ role: "user", content: [{ type: "text", text: "paint it" }, source] }]
      })
    )
    expect(events[0]).toMatchObject({ type: "output_file", filename: "image-1.png" })
    const request = fake.requests[0]!
    expect(request.headers["content-type"]).toMatch(/^multipart\/form-data/)
    expect(request.body).toContain('filename="src.png"')
    expect(request.body).toContain("paint it")
  })

  it("asks /audio/speech for wav and answers the bytes as speech-1.wav", async () => {
    const wav = Buffer.from("RIFF....WAVEfmt ")
    fake.on("/audio/speech", (_request, response) => {
      response.writeHead(200, { "content-type": "audio/wav" })
      response.end(wav)
    })
    const { events } = await run(callOf({ workload: "speech_generation", messages: [user("say hi")], voice: "nova" }))
    expect(events[0]).toMatchObject({
      type: "output_file",
      index: 0,
      filename: "speech-1.wav",
      contentType: "audio/wav"
    })
    expect(Buffer.from((events[0] as { bytes: Uint8Array }).bytes)).toEqual(wav)
    expect(fake.requests[0]!.body).toMatchObject({
      model: "fake-model",
      input: "say hi",
      voice: "nova",
      response_format: "wav"
    })
  })
})

describe("the API key", () => {
  it("is sent only as Bearer and appears in no log output or failure detail, even with OPENAI_LOG=debug", async () => {
    vi.stubEnv("OPENAI_LOG", "debug")
    const printed: Array<string> = []
    for (const method of ["log", "info", "warn", "error", "debug"] as const) {
      vi.spyOn(console, method).mockImplementation((...args: Array<unknown>) => {
        printed.push(args.map((arg) => (typeof arg === "string" ? arg : JSON.stringify(arg))).join(" "))
      })
    }
    fake.on("/chat/completions", (request, response) =>
      status(401, {}, { error: { message: `bad key ${request.headers.authorization}` } })(request, response)
    )
    const failure = await failureOf()
    fake.on("/chat/completions", sse(chunk({ content: "ok" }, "stop"), usageChunk(usage)))
    await run()
    vi.unstubAllEnvs()
    expect(fake.requests.map((request) => request.headers.authorization)).toEqual([
      `Bearer ${secret}`,
      `Bearer ${secret}`
    ])
    expect(failure.code).toBe("provider_model_unavailable")
    expect(failure.detail).not.toContain(secret)
    expect(printed.join("\n")).not.toContain(secret)
  })

  it("is not sent at all for a keyless server, whatever OPENAI_API_KEY says", async () => {
    vi.stubEnv("OPENAI_API_KEY", "sk-from-the-environment")
    fake.on("/chat/completions", sse(chunk({ content: "ok" }, "stop"), usageChunk(usage)))
    const { failure } = await run(callOf(), provider({ apiKey: undefined }))
    vi.unstubAllEnvs()
    expect(failure).toBeUndefined()
    expect(fake.requests[0]!.headers.authorization).toBeUndefined()
  })
})

describe("input token counts", () => {
  const count = (call: ProviderCall) => Effect.runPromise(provider().countInput(call))

  it("counts with the model family's own tokenizer, exactly", async () => {
    const messages = [
      { role: "system" as const, content: [{ type: "text" as const, text: "You are terse." }] },
      user("How many tokens is this?")
    ]
    const expected = encodeChat(
      [
        { role: "system", content: "You are terse." },
        { role: "user", content: "How many tokens is this?" }
      ],
      "gpt-4o"
    ).length
    expect(await count(callOf({ upstreamModel: "gpt-4o-2024-11-20", messages }))).toEqual({
      tokens: expected,
      exact: true
    })
    expect(await count(callOf({ upstreamModel: "gpt-3.5-turbo", messages }))).toMatchObject({ exact: true })
  })

  it("estimates for models without a known tokenizer: ceil(UTF-8 bytes / 4) + 4 per message", async () => {
    expect(await count(callOf({ upstreamModel: "llama-3.1-8b", messages: [user("héllo"), user("ab")] }))).toEqual({
      tokens: 2 + 4 + 1 + 4,
      exact: false
    })
  })

  it("is not exact when the input carries media", async () => {
    const messages = [
      {
        role: "user" as const,
        content: [{ type: "upload" as const, contentType: "image/png", filename: "a.png", bytes: new Uint8Array(4) }]
      }
    ]
    expect(await count(callOf({ upstreamModel: "gpt-4o", messages }))).toMatchObject({ exact: false })
  })
})
