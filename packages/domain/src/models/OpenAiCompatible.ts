// The OpenAI-compatible provider adapter: one Provider over any server speaking OpenAI's HTTP API
// (`/chat/completions` streamed as SSE, `/embeddings`, `/images/generations` and `/images/edits`,
// `/audio/speech`), through the official `openai` client, which owns transport, auth and SSE framing.
// This module maps a ProviderCall to a request, and answers, statuses and network faults to
// ProviderEvents, ProviderFailure and ProviderRefusal; retries, fallbacks and rows are the inference
// request's. Interrupting a call's stream aborts its HTTP request.
import { Clock, Effect, Exit, Redacted, Schema, Stream } from "effect"
import OpenAI, { APIError, toFile } from "openai"
import type {
  ChatCompletionContentPart,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionMessageParam
} from "openai/resources/chat/completions"
import { countCallInput, countOutputText } from "./OpenAiTokens.ts"
import {
  type FinishQuality,
  type Provider,
  type ProviderCall,
  type ProviderEvent,
  ProviderFailure,
  type ProviderMessage,
  ProviderRefusal,
  type ProviderUsage
} from "./Provider.ts"

export interface OpenAiCompatibleConfig {
  /** The catalog's provider id, named in failure details. */
  readonly id: string
  /** Up to and including the version segment, e.g. `http://127.0.0.1:8080/v1`. */
  readonly baseUrl: string
  /** Sent as `Authorization: Bearer`; without one no Authorization header is sent. */
  readonly apiKey: Redacted.Redacted<string> | undefined
  /** The chat request member that carries max_output_tokens (catalog `max_tokens_field`). */
  readonly maxTokensField?: string
}

type CallError = ProviderFailure | ProviderRefusal

// ---------------------------------------------------------------------------------------------
// Answers as this adapter reads them: only the members it uses, every one optional or nullable where
// compatible servers differ. Anything else is a garbled answer (provider_error).

const OptionalText = Schema.optional(Schema.NullOr(Schema.String))
const OptionalCount = Schema.optional(Schema.NullOr(Schema.Number))

const Usage = Schema.Struct({
  prompt_tokens: OptionalCount,
  completion_tokens: OptionalCount,
  input_tokens: OptionalCount,
  output_tokens: OptionalCount,
  prompt_tokens_details: Schema.optional(Schema.NullOr(Schema.Struct({ cached_tokens: OptionalCount }))),
  completion_tokens_details: Schema.optional(Schema.NullOr(Schema.Struct({ reasoning_tokens: OptionalCount })))
})
type Usage = typeof Usage.Type

/** A reported count as a whole number ≥ 0; undefined when absent, negative or not finite. */
const countOf = (reported: number | null | undefined) =>
  reported == null || !Number.isFinite(reported) || reported < 0 ? undefined : Math.round(reported)

const ChunkToolCall = Schema.Struct({
  index: Schema.optional(Schema.Number),
  id: OptionalText,
  function: Schema.optional(Schema.NullOr(Schema.Struct({ name: OptionalText, arguments: OptionalText })))
})

const ChatChunk = Schema.Struct({
  choices: Schema.optional(
    Schema.NullOr(
      Schema.Array(
        Schema.Struct({
          delta: Schema.optional(
            Schema.NullOr(
              Schema.Struct({
                content: OptionalText,
                reasoning_content: OptionalText,
                reasoning: OptionalText,
                refusal: OptionalText,
                tool_calls: Schema.optional(Schema.NullOr(Schema.Array(ChunkToolCall)))
              })
            )
          ),
          finish_reason: OptionalText
        })
      )
    )
  ),
  usage: Schema.optional(Schema.NullOr(Usage))
})
type ChatChunk = typeof ChatChunk.Type

const EmbeddingsAnswer = Schema.Struct({
  data: Schema.Array(Schema.Struct({ index: Schema.Number, embedding: Schema.Array(Schema.Number) })),
  usage: Schema.optional(Schema.NullOr(Usage))
})

const ImagesAnswer = Schema.Struct({
  data: Schema.Array(Schema.Struct({ b64_json: Schema.String })),
  usage: Schema.optional(Schema.NullOr(Usage))
})

// ---------------------------------------------------------------------------------------------
// Failures: by status first (bodies and headers of 5xx are unstable), then by kind of fault.

/** Milliseconds the provider asked to wait: `retry-after-ms`, else `Retry-After` in seconds or as a date. */
const retryAfterMs = (headers: Headers | undefined, now: number): number | undefined => {
  const millis = Number(headers?.get("retry-after-ms") ?? Number.NaN)
  if (Number.isFinite(millis) && millis >= 0) return millis
  const value = headers?.get("retry-after")?.trim()
  if (value === undefined || value === "") return undefined
  const seconds = Number(value)
  if (Number.isFinite(seconds)) return seconds >= 0 ? Math.ceil(seconds * 1000) : undefined
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

const codeOfStatus = (status: number): ProviderFailure["code"] => {
  if (status === 429) return "rate_limited"
  if (status === 503 || status === 529) return "provider_overloaded"
  if (status === 401 || status === 403 || status === 404) return "provider_model_unavailable"
  return "provider_error"
}

/**
 * The server refused the input as over the model's context window: OpenAI says so by
 * `error.code` context_length_exceeded, llama.cpp by `error.type` exceed_context_size_error, vLLM
 * and older llama.cpp builds only in the message. All of them answer 400 (or, once a stream began,
 * an error event without a status).
 */
const contextPhrases =
  /maximum context length|context length exceeded|exceeds (the available )?context size|larger than the max context size/i

const contextRefusal = (error: APIError) => {
  if (error.status !== undefined && error.status !== 400) return false
  if (error.code === "context_length_exceeded" || error.type === "exceed_context_size_error") return true
  return contextPhrases.test(error.message)
}

/** What failed, with the causes beneath it (a network fault's "fetch failed: connect ECONNREFUSED ..."). */
const messageOf = (cause: unknown) => {
  if (!(cause instanceof Error)) return String(cause)
  const beneath: Array<string> = []
  for (let inner = cause.cause; inner instanceof Error && beneath.length < 4; inner = inner.cause) {
    beneath.push(inner.message)
  }
  return `${cause.name}: ${cause.message}${beneath.length === 0 ? "" : ` (${beneath.join(": ")})`}`
}

export const makeOpenAiCompatible = (config: OpenAiCompatibleConfig): Provider => {
  const apiKey = config.apiKey
  const client = new OpenAI({
    baseURL: config.baseUrl,
    // The key stays redacted until a request's headers are built; a keyless server gets no header.
    ...(apiKey === undefined
      ? { apiKey: "keyless", defaultHeaders: { Authorization: null } }
      : { apiKey: async () => Redacted.value(apiKey) }),
    adminAPIKey: null,
    organization: null,
    project: null,
    webhookSecret: null,
    maxRetries: 0,
    logLevel: "off"
  })
  const maxTokensField = config.maxTokensField ?? "max_tokens"

  /** A detail for logs: the provider and what failed, never the key. */
  const detailOf = (what: string) => {
    const detail = `${config.id}: ${what}`
    return apiKey === undefined ? detail : detail.replaceAll(Redacted.value(apiKey), "[redacted]")
  }
  const garbled = (what: string) => new ProviderFailure({ code: "provider_error", detail: detailOf(what) })

  const failureOf = (cause: unknown): Effect.Effect<never, ProviderFailure> =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      if (cause instanceof ProviderFailure) return Effect.fail(cause)
      if (cause instanceof APIError && contextRefusal(cause)) {
        return Effect.fail(
          new ProviderFailure({
            code: "context_window_exceeded",
            detail: detailOf(`context refused: ${cause.message}`)
          })
        )
      }
      if (cause instanceof APIError && cause.status !== undefined) {
        const wait = cause.status === 429 ? retryAfterMs(cause.headers, now) : undefined
        return Effect.fail(
          new ProviderFailure({
            code: codeOfStatus(cause.status),
            ...(wait === undefined ? {} : { retryAfterMs: wait }),
            detail: detailOf(`HTTP ${cause.status}: ${cause.message}`)
          })
        )
      }
      return Effect.fail(garbled(messageOf(cause)))
    })

  /** One request whose promise is abandoned and aborted when the fiber is interrupted. */
  const request = <A>(send: (signal: AbortSignal) => Promise<A>) =>
    Effect.tryPromise({ try: send, catch: (cause) => cause }).pipe(Effect.catch(failureOf))

  const decode =
    <S extends Schema.ConstraintDecoder<unknown>>(schema: S, what: string) =>
    (answer: unknown): Effect.Effect<S["Type"], ProviderFailure> => {
      const decoded = Schema.decodeUnknownExit(schema)(answer)
      return Exit.isSuccess(decoded) ? Effect.succeed(decoded.value) : Effect.fail(garbled(`${what}: ${decoded.cause}`))
    }

  /**
   * The usage the server reported, its missing counts counted here. A count that is not a whole
   * number ≥ 0 is rounded or, negative or not finite, taken as missing; cached tokens are at most
   * the input's, so every count a usage record shows stays a whole number ≥ 0.
   */
  const usageOf = Effect.fnUntraced(function* (
    call: ProviderCall,
    usage: Usage | null | undefined,
    generated: string
  ): Effect.fn.Return<ProviderUsage> {
    const inputTokens =
      countOf(usage?.prompt_tokens) ?? countOf(usage?.input_tokens) ?? (yield* countCallInput(call)).tokens
    return {
      inputTokens,
      outputTokens:
        countOf(usage?.completion_tokens) ??
        countOf(usage?.output_tokens) ??
        (yield* countOutputText(call.upstreamModel, generated)),
      reasoningTokens: countOf(usage?.completion_tokens_details?.reasoning_tokens) ?? 0,
      cacheReadTokens: Math.min(countOf(usage?.prompt_tokens_details?.cached_tokens) ?? 0, inputTokens),
      cacheCreationTokens: 0
    }
  })

  const chat = (call: ProviderCall): Stream.Stream<ProviderEvent, CallError> =>
    Stream.unwrap(
      Effect.gen(function* () {
        const controller = yield* Effect.acquireRelease(
          Effect.sync(() => new AbortController()),
          (controller) => Effect.sync(() => controller.abort())
        )
        const chunks = yield* request(() =>
          client.chat.completions.create(chatRequest(call, maxTokensField), { signal: controller.signal })
        )
        const answer = new ChatAnswer()
        return Stream.fromAsyncIterable(chunks, (cause) => cause).pipe(
          Stream.catch((cause) => Stream.fromEffect(failureOf(cause))),
          Stream.mapEffect(decode(ChatChunk, "stream chunk")),
          Stream.flatMap((chunk) => Stream.fromIterable(answer.absorb(chunk))),
          Stream.concat(Stream.unwrap(endOf(answer, call)))
        )
      })
    )

  /** The last events of a chat stream, decided by what the whole stream said. */
  const endOf = (answer: ChatAnswer, call: ProviderCall) =>
    Effect.gen(function* () {
      const finishReason = answer.finishReason
      if (finishReason === undefined) return yield* garbled("the stream ended without a finish reason")
      const usage = yield* usageOf(call, answer.usage, answer.generated)
      if (finishReason === "content_filter" || answer.refusal !== "") {
        return yield* new ProviderRefusal({
          kind: "refused",
          ...(finishReason === "content_filter" ? { category: "content_filter" } : {}),
          inputTokens: usage.inputTokens
        })
      }
      const quality = finishQualityOf(finishReason)
      if (quality === "unknown") return yield* garbled(`unknown finish reason ${JSON.stringify(finishReason)}`)
      const completed = answer.toolCalls.map(
        (toolCall, index): ProviderEvent => ({
          type: "tool_call_completed",
          index,
          callId: toolCall.callId,
          name: toolCall.name,
          arguments: compactJson(toolCall.arguments)
        })
      )
      const finished: ProviderEvent = {
        type: "finished",
        usage,
        ...(quality === undefined ? {} : { finishQuality: quality })
      }
      return Stream.fromIterable([...completed, finished])
    })

  const embeddings = (call: ProviderCall): Stream.Stream<ProviderEvent, CallError> =>
    Stream.fromEffect(
      Effect.gen(function* () {
        const answer = yield* request((signal) =>
          client.embeddings.create(
            { model: call.upstreamModel, input: call.messages.map(textOf), encoding_format: "float" },
            { signal }
          )
        ).pipe(Effect.flatMap(decode(EmbeddingsAnswer, "embeddings answer")))
        if (answer.data.length !== call.messages.length) {
          return yield* garbled(`${answer.data.length} embeddings for ${call.messages.length} inputs`)
        }
        const usage = yield* usageOf(call, answer.usage, "")
        return [
          {
            type: "embeddings",
            embeddings: answer.data.map((item) => ({ index: item.index, vector: item.embedding }))
          },
          { type: "finished", usage }
        ] satisfies ReadonlyArray<ProviderEvent>
      })
    ).pipe(Stream.flatMap(Stream.fromIterable))

  const images = (call: ProviderCall): Stream.Stream<ProviderEvent, CallError> =>
    Stream.fromEffect(
      Effect.gen(function* () {
        const prompt = call.messages.map(textOf).join("\n")
        const sources = call.messages.flatMap((message) =>
          message.content.flatMap((p) => (p.type === "upload" ? [p] : []))
        )
        const common = {
          model: call.upstreamModel,
          prompt,
          n: 1,
          ...(call.size === undefined ? {} : { size: call.size }),
          // GPT image models always answer base64 and refuse the member.
          ...(/^(chat)?gpt-image/i.test(call.upstreamModel) ? {} : { response_format: "b64_json" as const })
        }
        const answer = yield* request(async (signal) =>
          sources.length === 0
            ? client.images.generate(common, { signal })
            : client.images.edit(
                {
                  ...common,
                  image: await Promise.all(
                    sources.map((source) => toFile(source.bytes, source.filename, { type: source.contentType }))
                  )
                },
                { signal }
              )
        ).pipe(Effect.flatMap(decode(ImagesAnswer, "images answer")))
        if (answer.data.length === 0) return yield* garbled("the images answer holds no image")
        const usage = yield* usageOf(call, answer.usage, "")
        return [
          ...answer.data.map(
            (image, index): ProviderEvent => ({
              type: "output_file",
              index,
              filename: `image-${index + 1}.png`,
              contentType: "image/png",
              bytes: Buffer.from(image.b64_json, "base64")
            })
          ),
          { type: "finished", usage }
        ] satisfies ReadonlyArray<ProviderEvent>
      })
    ).pipe(Stream.flatMap(Stream.fromIterable))

  const speech = (call: ProviderCall): Stream.Stream<ProviderEvent, CallError> =>
    Stream.fromEffect(
      Effect.gen(function* () {
        const bytes = yield* request(async (signal) => {
          const answer = await client.audio.speech.create(
            {
              model: call.upstreamModel,
              input: call.messages.map(textOf).join("\n"),
              voice: call.voice ?? "alloy",
              response_format: "wav"
            },
            { signal }
          )
          return new Uint8Array(await answer.arrayBuffer())
        })
        const usage = yield* usageOf(call, undefined, "")
        return [
          { type: "output_file", index: 0, filename: "speech-1.wav", contentType: "audio/wav", bytes },
          { type: "finished", usage }
        ] satisfies ReadonlyArray<ProviderEvent>
      })
    ).pipe(Stream.flatMap(Stream.fromIterable))

  return {
    call: (call) => {
      switch (call.workload) {
        case "text_generation":
          return chat(call)
        case "embedding":
          return embeddings(call)
        case "image_generation":
          return images(call)
        case "speech_generation":
          return speech(call)
        case "transcription":
          return Stream.fail(
            new ProviderFailure({ code: "provider_model_unavailable", detail: detailOf("transcription is not served") })
          )
      }
    },
    countInput: countCallInput
  }
}

// ---------------------------------------------------------------------------------------------
// Requests.

const textOf = (message: ProviderMessage) =>
  message.content.flatMap((part) => (part.type === "text" ? [part.text] : [])).join("\n")

const dataUrl = (contentType: string, bytes: Uint8Array) =>
  `data:${contentType};base64,${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64")}`

const userContent = (message: ProviderMessage): string | Array<ChatCompletionContentPart> => {
  if (message.content.every((part) => part.type === "text")) return textOf(message)
  return message.content.map((part): ChatCompletionContentPart => {
    if (part.type === "text") return { type: "text", text: part.text }
    if (part.contentType.startsWith("image/")) {
      return { type: "image_url", image_url: { url: dataUrl(part.contentType, part.bytes) } }
    }
    return { type: "file", file: { filename: part.filename, file_data: dataUrl(part.contentType, part.bytes) } }
  })
}

/** `developer` goes as `system`: OpenAI reads them alike and servers' chat templates know `system`. */
const messageParam = (message: ProviderMessage): ChatCompletionMessageParam => {
  switch (message.role) {
    case "system":
    case "developer":
      return { role: "system", content: textOf(message) }
    case "user":
      return { role: "user", content: userContent(message) }
    case "assistant": {
      const toolCalls = message.toolCalls ?? []
      const content = textOf(message)
      return {
        role: "assistant",
        content: content === "" && toolCalls.length > 0 ? null : content,
        ...(toolCalls.length === 0
          ? {}
          : {
              tool_calls: toolCalls.map((toolCall) => ({
                id: toolCall.callId,
                type: "function" as const,
                function: { name: toolCall.name, arguments: toolCall.arguments }
              }))
            })
      }
    }
    case "tool":
      return { role: "tool", tool_call_id: message.toolCallId ?? "", content: textOf(message) }
  }
}

const chatRequest = (call: ProviderCall, maxTokensField: string): ChatCompletionCreateParamsStreaming => ({
  model: call.upstreamModel,
  messages: call.messages.map(messageParam),
  stream: true,
  stream_options: { include_usage: true },
  ...(call.tools.length === 0
    ? {}
    : {
        tools: call.tools.map((tool) => ({
          type: "function" as const,
          function: {
            name: tool.name,
            ...(tool.description === undefined ? {} : { description: tool.description }),
            ...(tool.parameters === undefined ? {} : { parameters: tool.parameters as Record<string, unknown> })
          }
        }))
      }),
  ...(call.temperature === undefined ? {} : { temperature: call.temperature }),
  ...(call.topP === undefined ? {} : { top_p: call.topP }),
  ...(call.reasoning.enabled && call.reasoning.effort !== null
    ? { reasoning_effort: call.reasoning.effort as ChatCompletionCreateParamsStreaming["reasoning_effort"] }
    : {}),
  ...(call.maxOutputTokens === undefined ? {} : { [maxTokensField]: call.maxOutputTokens })
})

// ---------------------------------------------------------------------------------------------
// Answers.

/** What a chat stream said so far: its deltas become events at once, the rest waits for its end. */
class ChatAnswer {
  finishReason: string | undefined
  usage: Usage | undefined
  refusal = ""
  /** Every generated text, counted when the server reports no usage. */
  generated = ""
  readonly toolCalls: Array<{ upstream: number; callId: string; name: string; arguments: string }> = []

  absorb(chunk: ChatChunk): ReadonlyArray<ProviderEvent> {
    if (chunk.usage) this.usage = chunk.usage
    const choice = chunk.choices?.[0]
    if (choice === undefined) return []
    if (choice.finish_reason) this.finishReason = choice.finish_reason
    const delta = choice.delta
    if (!delta) return []
    const events: Array<ProviderEvent> = []
    const reasoning = delta.reasoning_content ?? delta.reasoning
    if (reasoning) {
      this.generated += reasoning
      events.push({ type: "reasoning_delta", text: reasoning })
    }
    if (delta.content) {
      this.generated += delta.content
      events.push({ type: "text_delta", text: delta.content })
    }
    if (delta.refusal) this.refusal += delta.refusal
    for (const part of delta.tool_calls ?? []) events.push(...this.absorbToolCall(part))
    return events
  }

  /** A tool call is known by its index; servers that send none are followed by id, else the last call. */
  private absorbToolCall(part: typeof ChunkToolCall.Type): ReadonlyArray<ProviderEvent> {
    const known =
      part.index !== undefined
        ? this.toolCalls.find((toolCall) => toolCall.upstream === part.index)
        : part.id
          ? this.toolCalls.find((toolCall) => toolCall.callId === part.id)
          : this.toolCalls.at(-1)
    const args = part.function?.arguments ?? ""
    this.generated += args
    if (known === undefined) {
      const index = this.toolCalls.length
      const callId = part.id || `call_${index}`
      const name = part.function?.name ?? ""
      this.toolCalls.push({ upstream: part.index ?? index, callId, name, arguments: args })
      const started: ProviderEvent = { type: "tool_call_started", index, callId, name }
      return args === "" ? [started] : [started, { type: "tool_call_delta", index, delta: args }]
    }
    known.name ||= part.function?.name ?? ""
    known.arguments += args
    return args === "" ? [] : [{ type: "tool_call_delta", index: this.toolCalls.indexOf(known), delta: args }]
  }
}

/** A finish reason as a finish quality: undefined for a complete answer, "unknown" for one we cannot read. */
const finishQualityOf = (reason: string): FinishQuality | undefined | "unknown" => {
  switch (reason) {
    case "stop":
    case "tool_calls":
    case "function_call":
      return undefined
    case "length":
      return "output_budget_exhausted"
    default:
      return "unknown"
  }
}

/** Tool arguments as compact JSON; text that is not JSON passes as sent, an empty one as `{}`. */
const compactJson = (text: string): string => {
  if (text.trim() === "") return "{}"
  try {
    return JSON.stringify(JSON.parse(text))
  } catch {
    return text
  }
}
