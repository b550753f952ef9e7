// A model round's sealed request as the request door shows it (`GET …/tasks/{key}/request`, the
// estimate render's entry form), read from the stored request's members; and what a model task's
// read and its round_started frame measure of it: the definitions offered, the canonical size.
import { isObject } from "../kernel/Json.ts"
import { canonicalBytes } from "./Compiler.ts"
import type { ModelOffer } from "./Trace.ts"

/** A sealed round as the request door shows it. */
export interface SealedRequest {
  readonly entries: ReadonlyArray<{
    readonly role: string
    readonly parts: ReadonlyArray<{ readonly type: "text"; readonly text: string }>
  }>
  readonly request_options: {
    readonly model: string
    readonly tools?: ReadonlyArray<unknown>
    readonly instructions?: string
  }
}

const textOf = (content: unknown): string =>
  typeof content === "string"
    ? content
    : Array.isArray(content)
      ? content.map((part) => (isObject(part) && typeof part.text === "string" ? part.text : "")).join("")
      : ""

/** The entries and options of a sealed round's stored members. */
export const sealedOf = (members: Readonly<Record<string, unknown>>): SealedRequest => {
  const input = Array.isArray(members.input) ? members.input : []
  const messages = input.filter(isObject)
  const system = messages.find((message) => message.role === "system")
  const model = isObject(members.model) && typeof members.model.model === "string" ? members.model.model : ""
  const configuration = isObject(members.configuration) ? members.configuration : {}
  return {
    entries: messages
      .filter((message) => message.role !== "system")
      .map((message) => ({
        role: String(message.role),
        parts: [{ type: "text" as const, text: textOf(message.content) }]
      })),
    request_options: {
      model,
      ...(Array.isArray(configuration.tools) ? { tools: configuration.tools } : {}),
      ...(system === undefined ? {} : { instructions: textOf(system.content) })
    }
  }
}

/**
 * What a sealed round offered and weighs: its function definitions (`{type: "function", function}`
 * as sealed; [] when none) and the UTF-8 bytes of the request door's answer's canonical JSON.
 */
export const offerOf = (members: Readonly<Record<string, unknown>>): Required<ModelOffer> => {
  const sealed = sealedOf(members)
  return {
    toolDefinitions: (sealed.request_options.tools ?? []).filter(isObject),
    requestBytes: canonicalBytes(sealed)
  }
}
