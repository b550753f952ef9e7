// Input token counts for calls to OpenAI-compatible providers: the model family's own tokenizer
// (gpt-tokenizer's bundled o200k_base and cl100k_base ranks, loaded on first use, never downloaded)
// where the upstream model name names a family that has one, else the estimate of ceil(UTF-8 bytes / 4)
// plus 4 per message. Which families count exactly is decided here and nowhere else.
import { Effect } from "effect"
import type { ProviderCall, ProviderMessage } from "./Provider.ts"

export type TokenizerFamily = "o200k_base" | "cl100k_base"

/** Upstream name prefixes per tokenizer, tried in order (gpt-4o before gpt-4). */
const families: ReadonlyArray<readonly [prefix: string, family: TokenizerFamily]> = [
  ["gpt-4o", "o200k_base"],
  ["chatgpt-4o", "o200k_base"],
  ["gpt-4.1", "o200k_base"],
  ["gpt-4.5", "o200k_base"],
  ["gpt-5", "o200k_base"],
  ["o1", "o200k_base"],
  ["o3", "o200k_base"],
  ["o4", "o200k_base"],
  ["gpt-4", "cl100k_base"],
  ["gpt-3.5", "cl100k_base"],
  ["text-embedding-3", "cl100k_base"],
  ["text-embedding-ada-002", "cl100k_base"]
]

/** The tokenizer of an upstream model name (a hosted router's `vendor/` prefix ignored), if known. */
export const tokenizerFamily = (upstreamModel: string): TokenizerFamily | undefined => {
  const name = upstreamModel.toLowerCase().slice(upstreamModel.lastIndexOf("/") + 1)
  return families.find(([prefix]) => name.startsWith(prefix))?.[1]
}

/** Whether counts for this upstream model come from its own tokenizer (the catalog's tokenizer_exact). */
export const hasExactTokenizer = (upstreamModel: string): boolean => tokenizerFamily(upstreamModel) !== undefined

interface ChatCounter {
  readonly countTokens: (text: string) => number
  readonly countChatCompletionTokens:
    | ((request: {
        readonly messages: ReadonlyArray<{
          readonly role: string
          readonly content: string
          readonly function_call?: { readonly name: string; readonly arguments: string }
        }>
        readonly functions?: ReadonlyArray<{ readonly name: string; readonly description?: string; parameters?: any }>
      }) => number)
    | undefined
}

/** The ranks are megabytes of JavaScript: imported once, on the first count that needs them. */
const counters = new Map<TokenizerFamily, Promise<ChatCounter>>()
const counterOf = (family: TokenizerFamily): Promise<ChatCounter> => {
  let counter = counters.get(family)
  if (counter === undefined) {
    counter = family === "o200k_base" ? import("gpt-tokenizer/model/gpt-4o") : import("gpt-tokenizer/model/gpt-4-turbo")
    counters.set(family, counter)
  }
  return counter
}

const utf8 = new TextEncoder()
const estimateText = (text: string) => Math.ceil(utf8.encode(text).length / 4)

/** Inline media cost no tokenizer can count from the bytes: counted as the local provider does. */
const uploadTokens = 256

const textOf = (message: ProviderMessage) =>
  message.content.flatMap((part) => (part.type === "text" ? [part.text] : [])).join("\n")
const uploadsIn = (messages: ReadonlyArray<ProviderMessage>) =>
  messages.reduce((sum, message) => sum + message.content.filter((part) => part.type === "upload").length, 0)

const estimateCall = (call: ProviderCall): number => {
  if (call.workload !== "text_generation") {
    return call.messages.reduce((sum, message) => sum + estimateText(textOf(message)), 0)
  }
  const messages = call.messages.reduce((sum, message) => {
    const calls = (message.toolCalls ?? []).map((toolCall) => toolCall.name + toolCall.arguments).join("")
    return sum + estimateText(textOf(message) + calls) + 4
  }, 0)
  const tools = call.tools.length === 0 ? 0 : estimateText(JSON.stringify(call.tools))
  return messages + tools + uploadsIn(call.messages) * uploadTokens
}

/** The chat as gpt-tokenizer's OpenAI request counter reads it (one message per tool call). */
const chatOf = (call: ProviderCall) => ({
  messages: call.messages.flatMap((message) => [
    { role: message.role === "developer" ? "system" : message.role, content: textOf(message) },
    ...(message.toolCalls ?? []).map((toolCall) => ({
      role: "assistant",
      content: "",
      function_call: { name: toolCall.name, arguments: toolCall.arguments }
    }))
  ]),
  functions: call.tools.map((tool) => ({
    name: tool.name,
    ...(tool.description === undefined ? {} : { description: tool.description }),
    parameters: tool.parameters
  }))
})

const countWith = (counter: ChatCounter, call: ProviderCall): number => {
  if (call.workload !== "text_generation") {
    return call.messages.reduce((sum, message) => sum + counter.countTokens(textOf(message)), 0)
  }
  const chat = chatOf(call)
  try {
    return counter.countChatCompletionTokens!(chat.functions.length === 0 ? { messages: chat.messages } : chat)
  } catch {
    // A tool schema the function formatter cannot walk: its JSON text counted instead.
    return (
      counter.countChatCompletionTokens!({ messages: chat.messages }) + counter.countTokens(JSON.stringify(call.tools))
    )
  }
}

/** Input tokens of a call, and whether the model's own tokenizer counted them (inline media never is). */
export const countCallInput = (
  call: ProviderCall
): Effect.Effect<{ readonly tokens: number; readonly exact: boolean }> => {
  const family = tokenizerFamily(call.upstreamModel)
  if (family === undefined) return Effect.succeed({ tokens: estimateCall(call), exact: false })
  return Effect.promise(() => counterOf(family)).pipe(
    Effect.map((counter) => {
      const uploads = uploadsIn(call.messages)
      return { tokens: countWith(counter, call) + uploads * uploadTokens, exact: uploads === 0 }
    })
  )
}

/** Tokens of generated text, for a provider that reports no usage. */
export const countOutputText = (upstreamModel: string, text: string): Effect.Effect<number> => {
  const family = tokenizerFamily(upstreamModel)
  if (family === undefined) return Effect.succeed(estimateText(text))
  return Effect.promise(() => counterOf(family)).pipe(Effect.map((counter) => counter.countTokens(text)))
}
