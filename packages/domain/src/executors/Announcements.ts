// Executor announcements (SUPPLEMENT "Executor plane"): the whole replacement of served tools,
// environment and documents, validated with field paths.
import type { ExecutorRow } from "@troupe/storage/repositories/Executors"
import { Effect } from "effect"
import { canonicalBytes, isObject } from "../kernel/Json.ts"
import { BadParameter, Invalid, TooLarge } from "../kernel/Refusals.ts"
import { isPrintableText } from "../kernel/Text.ts"

export type Announcement = ExecutorRow["announcement"]

export type AnnouncementRefusal = BadParameter | Invalid | TooLarge

const environmentLimitBytes = 64 * 1024

const vocabulary = {
  kind: ["read_only", "pure", "write"],
  effect_scope: ["closed", "open"],
  idempotency: ["intrinsic", "none"],
  reconciliation: ["none", "lookup"]
} as const

const invalid = (path: string, message: string) =>
  new Invalid({ code: "validation_failed", message: `${path} ${message}` })

const printable = (value: unknown, max: number) => isPrintableText(value, 1, max) && value.trim() !== ""

const validateTool = (tool: unknown, path: string): Invalid | undefined => {
  if (!isObject(tool)) return invalid(path, "must be an object")
  if (!printable(tool.name, 128)) return invalid(`${path}.name`, "must be a name of 1 to 128 printable characters")
  const profile = tool.effect_profile
  if (!isObject(profile))
    return invalid(
      `${path}.effect_profile`,
      "is required: {kind, destructive, effect_scope, idempotency, reconciliation}"
    )
  for (const [member, allowed] of Object.entries(vocabulary)) {
    if (!(allowed as ReadonlyArray<unknown>).includes(profile[member])) {
      return invalid(`${path}.effect_profile.${member}`, `must be one of ${allowed.join(", ")}`)
    }
  }
  if (typeof profile.destructive !== "boolean")
    return invalid(`${path}.effect_profile.destructive`, "must be true or false")
  if (tool.timeout_ms !== undefined && !(Number.isInteger(tool.timeout_ms) && (tool.timeout_ms as number) > 0)) {
    return invalid(`${path}.timeout_ms`, "must be a positive integer")
  }
  if (tool.description !== undefined && !(typeof tool.description === "string" && tool.description.length <= 4096)) {
    return invalid(`${path}.description`, "must be a string of at most 4096 characters")
  }
  if (tool.input_schema !== undefined && !isObject(tool.input_schema))
    return invalid(`${path}.input_schema`, "must be an object")
  return undefined
}

/** A tool is replayable when it only reads, is pure, or is intrinsically idempotent. */
export const replayable = (profile: { readonly kind: string; readonly idempotency: string }) =>
  profile.kind === "read_only" || profile.kind === "pure" || profile.idempotency === "intrinsic"

export const validateAnnouncement = (body: unknown): Effect.Effect<Announcement, AnnouncementRefusal> => {
  const refuse = (refusal: AnnouncementRefusal) => Effect.fail(refusal)
  if (!isObject(body)) {
    return refuse(new BadParameter({ code: "parameter_invalid", message: "The body must be a JSON object" }))
  }
  if (body.tools === undefined) {
    return refuse(new BadParameter({ code: "parameter_missing", message: "tools is required ([] clears)" }))
  }
  if (!Array.isArray(body.tools)) return refuse(invalid("tools", "must be an array"))
  const names = new Set<string>()
  for (const [index, tool] of body.tools.entries()) {
    const refusal = validateTool(tool, `tools[${index}]`)
    if (refusal) return refuse(refusal)
    const name = (tool as { name: string }).name
    if (names.has(name)) return refuse(invalid(`tools[${index}].name`, `repeats ${JSON.stringify(name)}`))
    names.add(name)
  }
  const environment = body.environment ?? null
  if (environment !== null && !isObject(environment)) return refuse(invalid("environment", "must be an object"))
  if (environment !== null && canonicalBytes(environment) > environmentLimitBytes) {
    return refuse(new TooLarge({ code: "content_too_large", message: "environment is over 64 KiB" }))
  }
  const documents = body.documents ?? []
  if (!Array.isArray(documents)) return refuse(invalid("documents", "must be an array"))
  for (const [index, document] of documents.entries()) {
    if (!isObject(document) || !printable(document.name, 256) || typeof document.description !== "string") {
      return refuse(invalid(`documents[${index}]`, "must be {name, description}"))
    }
  }
  const tools = (body.tools as Array<Record<string, unknown>>).map((tool) => ({
    name: tool.name,
    effect_profile: tool.effect_profile,
    ...(tool.timeout_ms === undefined ? {} : { timeout_ms: tool.timeout_ms }),
    ...(tool.description === undefined ? {} : { description: tool.description }),
    ...(tool.input_schema === undefined ? {} : { input_schema: tool.input_schema })
  }))
  return Effect.succeed({
    tools,
    environment,
    documents: (documents as Array<Record<string, unknown>>).map((d) => ({
      name: d.name,
      description: d.description
    }))
  })
}
