// The local provider exactly as the supplements decide: echo's pieces, reasoning and upload
// suffixes, the output bound, tiny's small bound, every script directive (reply, reasoning,
// tool_calls, refuse, fail with fail_times, delay_ms and pace_ms on a TestClock, finish, usage),
// embed's vectors by the formula, image's PNG (decoded by sharp, chunks and CRCs checked) and
// speech's WAV, and the local tokenizer's counts.
import { createHash } from "node:crypto"
import { crc32, inflateSync } from "node:zlib"
import { it as effectIt } from "@effect/vitest"
import { localInputTokens, localProvider } from "@troupe/domain/models/LocalProvider"
import type { ProviderCall, ProviderEvent, ProviderMessage } from "@troupe/domain/models/Provider"
import { Effect, Exit, Fiber, Stream } from "effect"
import { TestClock } from "effect/testing"
import { fileTypeFromBuffer } from "file-type"
import sharp from "sharp"
import { describe, expect, it } from "vitest"

const user = (text: string, ...uploads: ReadonlyArray<string>): ProviderMessage => ({
  role: "user",
  content: [
    { type: "text", text },
    ...uploads.map((contentType) => ({
      type: "upload" as const,
      contentType,
      filename: "upload",
      bytes: new Uint8Array([1, 2, 3])
    }))
  ]
})
const message = (role: ProviderMessage["role"], text: string): ProviderMessage => ({
  role,
  content: [{ type: "text", text }]
})

const callOf = (overrides: Partial<ProviderCall>): ProviderCall => ({
  workload: "text_generation",
  modelRef: "local/echo",
  upstreamModel: "echo",
  messages: [user("hi you")],
  tools: [],
  reasoning: { enabled: false, effort: null },
  attempt: 1,
  earlierAttemptsOnModel: 0,
  ...overrides
})

const events = (overrides: Partial<ProviderCall>) =>
  Effect.runPromise(Stream.runCollect(localProvider.call(callOf(overrides))))

const failure = async (overrides: Partial<ProviderCall>) => {
  const exit = await Effect.runPromiseExit(Stream.runCollect(localProvider.call(callOf(overrides))))
  if (Exit.isSuccess(exit)) throw new Error(`answered ${JSON.stringify(exit.value)}`)
  return exit.cause.reasons.map((reason) => ("error" in reason ? reason.error : reason))[0] as any
}

const texts = (answer: ReadonlyArray<ProviderEvent>, type: "text_delta" | "reasoning_delta") =>
  answer.flatMap((event) => (event.type === type ? [event.text] : []))

const finishedOf = (answer: ReadonlyArray<ProviderEvent>) => {
  const last = answer.at(-1)
  if (last?.type !== "finished") throw new Error("no finished event last")
  return last
}

const usage = (input: number, output: number, reasoning = 0) => ({
  inputTokens: input,
  outputTokens: output,
  reasoningTokens: reasoning,
  cacheReadTokens: 0,
  cacheCreationTokens: 0
})

const script = (directive: unknown, more: Partial<ProviderCall> = {}) =>
  callOf({ modelRef: "local/script", upstreamModel: "script", messages: [user(JSON.stringify(directive))], ...more })

describe("the local tokenizer", () => {
  it('counts "hello" as 6 and [system "You are terse.", user "hello"] as 14', () => {
    expect(localInputTokens({ workload: "text_generation", messages: [user("hello")] })).toBe(6)
    expect(
      localInputTokens({ workload: "text_generation", messages: [message("system", "You are terse."), user("hello")] })
    ).toBe(14)
  })

  it("counts UTF-8 bytes, 256 per upload part, and embeddings without overhead", async () => {
    // "héllo wörld" is 13 bytes: 4 tokens, + 4.
    expect(localInputTokens({ workload: "text_generation", messages: [user("héllo wörld")] })).toBe(8)
    expect(
      localInputTokens({ workload: "text_generation", messages: [user("hello", "image/png", "application/pdf")] })
    ).toBe(6 + 512)
    expect(localInputTokens({ workload: "embedding", messages: [user("hello"), user("a"), user("")] })).toBe(2 + 1 + 0)
    expect(await Effect.runPromise(localProvider.countInput(callOf({ messages: [user("hello")] })))).toEqual({
      tokens: 6,
      exact: true
    })
  })
})

describe("local/echo and local/tiny", () => {
  it('answers "echo: " + the last user text, one text_delta per piece, one output token each', async () => {
    const answer = await events({ messages: [user("first"), message("assistant", "ok"), user("hi you")] })
    expect(answer.slice(0, -1)).toEqual([
      { type: "text_delta", text: "echo:" },
      { type: "text_delta", text: " hi" },
      { type: "text_delta", text: " you" }
    ])
    expect(finishedOf(answer)).toEqual({ type: "finished", usage: usage(2 + 4 + (1 + 4) + (2 + 4), 3) })
    const stream = localProvider.call(callOf({}))
    const twice = await Effect.runPromise(Effect.zip(Stream.runCollect(stream), Stream.runCollect(stream)))
    expect(twice[1]).toEqual(twice[0])
  })

  it("keeps whitespace inside pieces and a trailing run as its own piece", async () => {
    const answer = await events({ messages: [user("a  b\n")] })
    expect(texts(answer, "text_delta")).toEqual(["echo:", " a", "  b", "\n"])
  })

  it('appends " [<content_type>]" per upload part of the last user message', async () => {
    const answer = await events({ messages: [user("look", "image/png", "application/pdf")] })
    expect(texts(answer, "text_delta").join("")).toBe("echo: look [image/png] [application/pdf]")
    expect(finishedOf(answer).usage.inputTokens).toBe(1 + 4 + 512)
  })

  it('streams reasoning first when enabled: "considering: " + the first 32 characters', async () => {
    const text = "Ünïcode words that go on well past thirty-two characters"
    const answer = await events({ messages: [user(text)], reasoning: { enabled: true, effort: "medium" } })
    const reasoning = texts(answer, "reasoning_delta")
    expect(reasoning.join("")).toBe(`considering: ${Array.from(text).slice(0, 32).join("")}`)
    expect(answer.findIndex((event) => event.type === "text_delta")).toBe(reasoning.length)
    const output = reasoning.length + texts(answer, "text_delta").length
    expect(finishedOf(answer).usage).toMatchObject({ outputTokens: output, reasoningTokens: reasoning.length })
    expect(texts(await events({ messages: [user(text)] }), "reasoning_delta")).toEqual([])
  })

  it("stops after max_output_tokens pieces with output_budget_exhausted; exactly enough is complete", async () => {
    const cut = await events({ messages: [user("one two three")], maxOutputTokens: 2 })
    expect(texts(cut, "text_delta")).toEqual(["echo:", " one"])
    expect(finishedOf(cut)).toMatchObject({ usage: { outputTokens: 2 }, finishQuality: "output_budget_exhausted" })
    const whole = await events({ messages: [user("one two three")], maxOutputTokens: 4 })
    expect(finishedOf(whole)).toEqual({ type: "finished", usage: usage(4 + 4, 4) })
  })

  it("local/tiny echoes within its own bound of 64 output tokens", async () => {
    const words = Array.from({ length: 100 }, (_, index) => `w${index}`).join(" ")
    const answer = await events({ modelRef: "local/tiny", upstreamModel: "tiny", messages: [user(words)] })
    expect(texts(answer, "text_delta")).toHaveLength(64)
    expect(finishedOf(answer)).toMatchObject({ usage: { outputTokens: 64 }, finishQuality: "output_budget_exhausted" })
  })

  it("refuses a ref or workload it does not serve as provider_model_unavailable", async () => {
    expect(await failure({ modelRef: "local/none" })).toMatchObject({
      _tag: "ProviderFailure",
      code: "provider_model_unavailable"
    })
    expect(await failure({ workload: "embedding" })).toMatchObject({ code: "provider_model_unavailable" })
  })
})

describe("local/script", () => {
  it('answers reply, "ok" without one, and behaves as echo when the last user text is no JSON object', async () => {
    expect(texts(await events(script({ reply: "scripted answer" })), "text_delta")).toEqual(["scripted", " answer"])
    expect(texts(await events(script({})), "text_delta")).toEqual(["ok"])
    const plain = { modelRef: "local/script", messages: [user("[1, 2]")] }
    expect(texts(await events(plain), "text_delta").join("")).toBe("echo: [1, 2]")
  })

  it("streams the directive's reasoning only when reasoning is enabled", async () => {
    const directive = { reply: "done", reasoning: "thinking hard" }
    const on = await events(script(directive, { reasoning: { enabled: true, effort: "low" } }))
    expect(on.slice(0, -1)).toEqual([
      { type: "reasoning_delta", text: "thinking" },
      { type: "reasoning_delta", text: " hard" },
      { type: "text_delta", text: "done" }
    ])
    expect(finishedOf(on).usage).toMatchObject({ outputTokens: 3, reasoningTokens: 2 })
    expect(texts(await events(script(directive)), "reasoning_delta")).toEqual([])
  })

  it("calls offered tools (others ignored) with call_<n> and compact arguments, without text", async () => {
    const directive = {
      reply: "after the tools",
      tool_calls: [
        { name: "lookup", input: { q: "x", n: [1, 2] } },
        { name: "not_offered", input: {} },
        { name: "clock" }
      ]
    }
    const answer = await events(script(directive, { tools: [{ name: "lookup" }, { name: "clock" }] }))
    expect(answer.slice(0, -1)).toEqual([
      { type: "tool_call_started", index: 0, callId: "call_1", name: "lookup" },
      { type: "tool_call_delta", index: 0, delta: '{"q":"x","n":[1,2]}' },
      { type: "tool_call_completed", index: 0, callId: "call_1", name: "lookup", arguments: '{"q":"x","n":[1,2]}' },
      { type: "tool_call_started", index: 1, callId: "call_2", name: "clock" },
      { type: "tool_call_delta", index: 1, delta: "{}" },
      { type: "tool_call_completed", index: 1, callId: "call_2", name: "clock", arguments: "{}" }
    ])
    expect(finishedOf(answer).usage.outputTokens).toBe(2)
    const none = await events(script({ tool_calls: [{ name: "lookup" }] }))
    expect(texts(none, "text_delta")).toEqual(["ok"])
  })

  it('ends a tool loop: after tool results it answers reply, else "echo: " + the last tool result', async () => {
    const directive = JSON.stringify({ tool_calls: [{ name: "lookup" }] })
    const round = (reply?: string) => [
      user(reply === undefined ? directive : JSON.stringify({ reply, tool_calls: [{ name: "lookup" }] })),
      {
        role: "assistant" as const,
        content: [],
        toolCalls: [{ callId: "call_1", name: "lookup", arguments: "{}" }]
      },
      { role: "tool" as const, content: [{ type: "text" as const, text: "found 3" }], toolCallId: "call_1" }
    ]
    const tools = [{ name: "lookup" }]
    const echoed = await events({ modelRef: "local/script", messages: round(), tools })
    expect(echoed.map((event) => event.type)).not.toContain("tool_call_started")
    expect(texts(echoed, "text_delta").join("")).toBe("echo: found 3")
    const replied = await events({ modelRef: "local/script", messages: round("all done"), tools })
    expect(texts(replied, "text_delta").join("")).toBe("all done")
  })

  it("refuses with true or a category, billing the input", async () => {
    expect(await failure(script({ refuse: true }))).toMatchObject({ _tag: "ProviderRefusal", kind: "refused" })
    const refusal = await failure(script({ refuse: "self_harm" }))
    expect(refusal).toMatchObject({ _tag: "ProviderRefusal", kind: "refused", category: "self_harm" })
    expect(refusal.inputTokens).toBe(localInputTokens(script({ refuse: "self_harm" })))
    expect(texts(await events(script({ refuse: false, reply: "fine" })), "text_delta")).toEqual(["fine"])
  })

  it("fails the first fail_times attempts on the model (all without it); rate_limited asks for 1 s", async () => {
    const directive = { fail: "provider_overloaded", fail_times: 2, reply: "recovered" }
    for (const earlier of [0, 1]) {
      expect(await failure(script(directive, { earlierAttemptsOnModel: earlier, attempt: earlier + 1 }))).toMatchObject(
        {
          _tag: "ProviderFailure",
          code: "provider_overloaded"
        }
      )
    }
    const third = await events(script(directive, { earlierAttemptsOnModel: 2, attempt: 3 }))
    expect(texts(third, "text_delta")).toEqual(["recovered"])
    expect(await failure(script({ fail: "provider_error" }, { earlierAttemptsOnModel: 9 }))).toMatchObject({
      code: "provider_error"
    })
    const limited = await failure(script({ fail: "rate_limited" }))
    expect(limited).toMatchObject({ code: "rate_limited", retryAfterMs: 1000 })
  })

  it("reports the directive's finish and overrides the usage it names", async () => {
    const answer = await events(
      script({
        reply: "short",
        finish: "context_window_exhausted",
        usage: { input_tokens: 1_000_000, cache_read_tokens: 7 }
      })
    )
    expect(finishedOf(answer)).toEqual({
      type: "finished",
      usage: { ...usage(1_000_000, 1), cacheReadTokens: 7 },
      finishQuality: "context_window_exhausted"
    })
  })

  it("fails a malformed directive as provider_error", async () => {
    expect(await failure(script({ reply: 5 }))).toMatchObject({ _tag: "ProviderFailure", code: "provider_error" })
    expect(await failure(script({ fail: "exploded" }))).toMatchObject({ code: "provider_error" })
  })

  effectIt.effect("waits delay_ms before the first delta (and before a failure), then pace_ms between", () =>
    Effect.gen(function* () {
      const seen: Array<string> = []
      const record = (call: ProviderCall) =>
        localProvider.call(call).pipe(
          Stream.runForEach((event) =>
            Effect.sync(() => seen.push(event.type === "text_delta" ? event.text : event.type))
          ),
          Effect.exit,
          Effect.forkChild
        )
      const paced = yield* record(script({ reply: "a b c", delay_ms: 1000, pace_ms: 100 }))
      yield* TestClock.adjust(999)
      expect(seen).toEqual([])
      yield* TestClock.adjust(1)
      expect(seen).toEqual(["a"])
      yield* TestClock.adjust(100)
      expect(seen).toEqual(["a", " b"])
      yield* TestClock.adjust(100)
      expect(seen).toEqual(["a", " b", " c", "finished"])
      expect(Exit.isSuccess(yield* Fiber.join(paced))).toBe(true)

      seen.length = 0
      const failing = yield* record(script({ fail: "provider_error", delay_ms: 500 }))
      yield* TestClock.adjust(499)
      expect(failing.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust(1)
      expect(Exit.isFailure(yield* Fiber.join(failing))).toBe(true)
      expect(seen).toEqual([])
    })
  )
})

describe("local/embed, local/image, local/speech", () => {
  const expectedVector = (input: string) => {
    const d = createHash("sha256").update(input).digest()
    const raw = Array.from({ length: 16 }, (_, i) => (d[2 * i]! * 256 + d[2 * i + 1]!) / 32767.5 - 1)
    const norm = Math.sqrt(raw.reduce((sum, value) => sum + value * value, 0))
    return raw.map((value) => value / norm)
  }

  it("embeds each input as the unit vector of its SHA-256 by the formula", async () => {
    const answer = await events({
      workload: "embedding",
      modelRef: "local/embed",
      messages: [user("hello"), user("wörld")]
    })
    const [embeddings, finished] = answer
    if (embeddings?.type !== "embeddings") throw new Error("no embeddings")
    expect(embeddings.embeddings.map(({ index }) => index)).toEqual([0, 1])
    for (const [index, input] of ["hello", "wörld"].entries()) {
      const vector = embeddings.embeddings[index]!.vector
      expect(vector).toHaveLength(16)
      for (const [i, value] of vector.entries()) expect(value).toBeCloseTo(expectedVector(input)[i]!, 12)
      expect(Math.hypot(...vector)).toBeCloseTo(1, 12)
    }
    expect(embeddings.embeddings[0]!.vector).not.toEqual(embeddings.embeddings[1]!.vector)
    expect(finished).toEqual({ type: "finished", usage: usage(2 + 2, 0) })
  })

  const fileOf = async (workload: "image_generation" | "speech_generation", prompt: string) => {
    const modelRef = workload === "image_generation" ? "local/image" : "local/speech"
    const answer = await events({ workload, modelRef, messages: [user(prompt)] })
    const [file, finished] = answer
    if (file?.type !== "output_file") throw new Error("no file")
    expect(finished).toEqual({
      type: "finished",
      usage: usage(localInputTokens({ workload, messages: [user(prompt)] }), 0)
    })
    return file
  }

  it("draws a 64×64 RGB PNG from the prompt: valid chunks, decodable, the same bytes for the same prompt", async () => {
    const file = await fileOf("image_generation", "a lighthouse at dusk")
    expect(file).toMatchObject({ index: 0, filename: "image-1.png", contentType: "image/png" })
    const png = Buffer.from(file.bytes)
    expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))
    const chunks: Array<{ type: string; data: Buffer }> = []
    for (let at = 8; at < png.length; ) {
      const length = png.readUInt32BE(at)
      const typed = png.subarray(at + 4, at + 8 + length)
      expect(png.readUInt32BE(at + 8 + length)).toBe(crc32(typed))
      chunks.push({ type: typed.subarray(0, 4).toString("latin1"), data: typed.subarray(4) })
      at += 12 + length
    }
    expect(chunks.map((chunk) => chunk.type)).toEqual(["IHDR", "IDAT", "IEND"])
    const header = chunks[0]!.data
    expect([header.readUInt32BE(0), header.readUInt32BE(4), ...header.subarray(8)]).toEqual([64, 64, 8, 2, 0, 0, 0])
    expect(inflateSync(chunks[1]!.data)).toHaveLength(64 * (1 + 64 * 3))

    const decoded = await sharp(png).raw().toBuffer({ resolveWithObject: true })
    expect(decoded.info).toMatchObject({ width: 64, height: 64, channels: 3 })
    expect(await fileTypeFromBuffer(png)).toMatchObject({ mime: "image/png" })

    const again = await fileOf("image_generation", "a lighthouse at dusk")
    expect(Buffer.from(again.bytes).equals(png)).toBe(true)
    const other = await fileOf("image_generation", "a lighthouse at dawn")
    expect(Buffer.from(other.bytes).equals(png)).toBe(false)
  })

  it("speaks a 16 kHz mono 16-bit WAV of 44 + 3200 bytes per word", async () => {
    const file = await fileOf("speech_generation", "  three spoken\twords ")
    expect(file).toMatchObject({ index: 0, filename: "speech-1.wav", contentType: "audio/wav" })
    const wav = Buffer.from(file.bytes)
    expect(wav).toHaveLength(44 + 3200 * 3)
    expect(wav.toString("latin1", 0, 4)).toBe("RIFF")
    expect(wav.readUInt32LE(4)).toBe(wav.length - 8)
    expect(wav.toString("latin1", 8, 16)).toBe("WAVEfmt ")
    expect([wav.readUInt16LE(20), wav.readUInt16LE(22), wav.readUInt32LE(24), wav.readUInt16LE(34)]).toEqual([
      1, 1, 16000, 16
    ])
    expect(wav.toString("latin1", 36, 40)).toBe("data")
    expect(wav.readUInt32LE(40)).toBe(3200 * 3)
    expect(await fileTypeFromBuffer(wav)).toMatchObject({ mime: "audio/wav" })
    expect((await fileOf("speech_generation", "")).bytes).toHaveLength(44)
    const again = await fileOf("speech_generation", "  three spoken\twords ")
    expect(Buffer.from(again.bytes).equals(wav)).toBe(true)
  })
})
