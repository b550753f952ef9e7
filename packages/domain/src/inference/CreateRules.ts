// What a create body asks, judged against the catalog (supplement "Create body"): the workload, a
// model serving it with its reasoning controls, the input as provider messages, the configuration
// within its bounds, the billing subject, the fallbacks, and the input's exact count against the
// model's window. Answers the effective model, the stored call every attempt makes, the routes the
// request's actor walks (each fallback judged now), and the timeout; or the refusal naming the member.
import type { Route } from "@troupe/machines/inferenceRequest/context"
import { isUuid } from "@troupe/storage/Ids"
import { Effect } from "effect"
import { Invalid } from "../kernel/Refusals.ts"
import { codePointLength } from "../kernel/Text.ts"
import type { CatalogModel } from "../models/Catalog.ts"
import type { ModelCatalog } from "../models/ModelCatalog.ts"
import type { ProviderCall, Workload } from "../models/Provider.ts"
import { providerCallOf } from "./ProviderCalls.ts"
import type { StoredCall, StoredMessage, StoredPart } from "./StoredCall.ts"

export const defaultTimeoutMs = 300_000

/** The create body's members (the contract's decoded shape). */
export interface CreateMembers {
  readonly workload: string
  readonly model: {
    readonly model: string
    readonly reasoning_enabled?: boolean | null
    readonly reasoning_effort?: string | null
  }
  readonly input: string | ReadonlyArray<string | InputMessage>
  readonly configuration?: Readonly<Record<string, unknown>> | null
  readonly upload_public_ids?: ReadonlyArray<string> | null
  readonly billing_subject?: string | null
  readonly model_selection?: unknown
  readonly fallback_models?: ReadonlyArray<string> | null
}

export interface InputMessage {
  readonly role: string
  readonly content:
    | string
    | ReadonlyArray<{ readonly type: string; readonly text?: string; readonly upload_public_id?: string }>
  readonly tool_calls?: ReadonlyArray<{ readonly call_id: string; readonly name: string; readonly arguments: string }>
  readonly tool_call_id?: string
}

export interface EffectiveModel {
  readonly provider_id: string
  readonly model_ref: string
  readonly reasoning_enabled: boolean
  readonly reasoning_effort: string | null
}

export interface JudgedCreate {
  /** The input counted for the requested model, and whether its tokenizer is the model's own. */
  readonly input: { readonly tokens: number; readonly exact: boolean; readonly window: number }
  readonly workload: Workload
  readonly model: EffectiveModel
  readonly stored: StoredCall
  readonly routes: ReadonlyArray<Route>
  readonly timeoutMs: number
  readonly billingSubject: string | null
  /** The uploads the request names (each once). */
  readonly uploads: ReadonlyArray<ResolvedUpload>
}

const workloads: ReadonlyArray<string> = ["text_generation", "image_generation", "speech_generation", "embedding"]
const roles: ReadonlyArray<string> = ["system", "developer", "user", "assistant", "tool"]

const invalid = (member: string, why: string) => new Invalid({ code: "validation_failed", message: `${member} ${why}` })

const isInteger = (value: unknown): value is number => typeof value === "number" && Number.isInteger(value)
const within = (value: unknown, min: number, max: number): value is number =>
  typeof value === "number" && Number.isFinite(value) && value >= min && value <= max

/** A message before its uploads are resolved: upload parts name an upload by its public id. */
interface DraftMessage {
  readonly role: StoredMessage["role"]
  readonly parts: Array<{ readonly text: string } | { readonly upload: string }>
  readonly toolCalls?: StoredMessage["toolCalls"]
  readonly toolCallId?: string
}

const textMessage = (role: StoredMessage["role"], text: string): DraftMessage => ({ role, parts: [{ text }] })

/** The input as messages, or the refusal naming `input`. */
const messagesOf = (workload: Workload, input: CreateMembers["input"]): Array<DraftMessage> | Invalid => {
  if (workload === "embedding") {
    const strings = typeof input === "string" ? [input] : input
    if (strings.length < 1 || strings.length > 64 || !strings.every((s) => typeof s === "string" && s !== "")) {
      return invalid("input", "must be a non-empty string or 1 to 64 non-empty strings")
    }
    return strings.map((s) => textMessage("user", s as string))
  }
  if (workload !== "text_generation") {
    return typeof input === "string" && input !== ""
      ? [textMessage("user", input)]
      : invalid("input", "must be a string")
  }
  if (typeof input === "string")
    return input === "" ? invalid("input", "must not be empty") : [textMessage("user", input)]
  if (input.length < 1 || input.length > 256) return invalid("input", "must hold 1 to 256 messages")
  const messages: Array<DraftMessage> = []
  for (const message of input) {
    if (typeof message === "string" || !roles.includes(message.role)) {
      return invalid("input", "messages need a role of system, developer, user, assistant or tool")
    }
    const sent = typeof message.content === "string" ? [{ type: "text", text: message.content }] : message.content
    const parts: DraftMessage["parts"] = []
    for (const part of sent) {
      if (part.type === "text" && typeof part.text === "string") parts.push({ text: part.text })
      else if (part.type === "upload" && typeof part.upload_public_id === "string" && message.role === "user") {
        parts.push({ upload: part.upload_public_id })
      } else
        return invalid("input", "parts are {type: text, text} or, in user messages, {type: upload, upload_public_id}")
    }
    messages.push({
      role: message.role as StoredMessage["role"],
      parts,
      ...(message.role === "assistant" && message.tool_calls
        ? {
            toolCalls: message.tool_calls.map((call) => ({
              callId: call.call_id,
              name: call.name,
              arguments: call.arguments
            }))
          }
        : {}),
      ...(message.role === "tool" && message.tool_call_id !== undefined ? { toolCallId: message.tool_call_id } : {})
    })
  }
  return messages.some((message) => message.role === "user") ? messages : invalid("input", "needs a user message")
}

/** Inline native media: an upload sent to a model is at most 8 MiB. */
export const inlineMediaBound = 8 * 1024 * 1024

/** The input modality an upload's type needs (image/* an image, a PDF a file); null: none admits it. */
const modalityOf = (contentType: string): "image" | "file" | null =>
  contentType.startsWith("image/") ? "image" : contentType === "application/pdf" ? "file" : null

const admits = (model: CatalogModel, uploads: ReadonlyArray<ResolvedUpload>) =>
  uploads.every((upload) => {
    const modality = modalityOf(upload.content_type)
    return modality !== null && model.input_modalities.includes(modality)
  })

/** An upload a request may name: the caller's own. */
export interface ResolvedUpload {
  readonly id: bigint
  readonly public_id: string
  readonly creator_user_id: bigint | null
  readonly filename: string
  readonly content_type: string
  readonly byte_size: number
  readonly sha256: string
}

/** Who is asking: their uploads, and (an agent's) standing fallback list from its configuration. */
export interface Asker {
  readonly userId: bigint
  readonly find: (publicId: string) => Effect.Effect<ResolvedUpload | undefined>
  readonly standingFallbacks: ReadonlyArray<string>
}

type Configured = Omit<StoredCall["call"], "workload" | "messages" | "reasoning"> & { readonly timeoutMs: number }

/** The configuration members the workload reads, within their bounds. */
const configurationOf = (
  workload: Workload,
  model: CatalogModel,
  configuration: Readonly<Record<string, unknown>>
): Configured | Invalid => {
  const { max_output_tokens, temperature, top_p, tools, size, voice, timeout_ms } = configuration
  const text = workload === "text_generation"
  const maxOutput = model.max_output_tokens ?? Number.MAX_SAFE_INTEGER
  if (
    text &&
    max_output_tokens !== undefined &&
    !(isInteger(max_output_tokens) && within(max_output_tokens, 1, maxOutput))
  ) {
    return invalid("configuration.max_output_tokens", `must be an integer from 1 to ${maxOutput}`)
  }
  if (text && temperature !== undefined && !within(temperature, 0, 2)) {
    return invalid("configuration.temperature", "must be a number from 0 to 2")
  }
  if (text && top_p !== undefined && !within(top_p, 0, 1))
    return invalid("configuration.top_p", "must be a number from 0 to 1")
  if (timeout_ms !== undefined && !(isInteger(timeout_ms) && within(timeout_ms, 1000, 300_000))) {
    return invalid("configuration.timeout_ms", "must be an integer from 1000 to 300000")
  }
  if (
    workload === "image_generation" &&
    size !== undefined &&
    !(typeof size === "string" && /^\d{1,5}x\d{1,5}$/.test(size))
  ) {
    return invalid("configuration.size", "must be WxH")
  }
  if (
    workload === "speech_generation" &&
    voice !== undefined &&
    !(typeof voice === "string" && codePointLength(voice) <= 64)
  ) {
    return invalid("configuration.voice", "must be at most 64 characters")
  }
  const offered: Array<StoredCall["call"]["tools"][number]> = []
  if (text && tools !== undefined) {
    if (!Array.isArray(tools) || tools.length > 128) return invalid("configuration.tools", "must be at most 128 tools")
    for (const tool of tools) {
      const fn = typeof tool === "object" && tool !== null ? (tool as { type?: unknown; function?: unknown }) : {}
      const spec =
        typeof fn.function === "object" && fn.function !== null ? (fn.function as Record<string, unknown>) : undefined
      if (fn.type !== "function" || spec === undefined || typeof spec.name !== "string" || spec.name === "") {
        return invalid("configuration.tools", "are {type: function, function: {name, description?, parameters?}}")
      }
      if (offered.some((known) => known.name === spec.name))
        return invalid("configuration.tools", "names must be unique")
      offered.push({
        name: spec.name,
        ...(typeof spec.description === "string" ? { description: spec.description } : {}),
        ...(spec.parameters === undefined ? {} : { parameters: spec.parameters })
      })
    }
  }
  return {
    tools: offered,
    ...(text && isInteger(max_output_tokens) ? { maxOutputTokens: max_output_tokens } : {}),
    ...(text && typeof temperature === "number" ? { temperature } : {}),
    ...(text && typeof top_p === "number" ? { topP: top_p } : {}),
    ...(workload === "image_generation" && typeof size === "string" ? { size } : {}),
    ...(workload === "speech_generation" && typeof voice === "string" ? { voice } : {}),
    timeoutMs: isInteger(timeout_ms) ? timeout_ms : defaultTimeoutMs
  }
}

const effectiveModel = (model: CatalogModel, asked: CreateMembers["model"]): EffectiveModel | Invalid => {
  const reasoning = model.reasoning
  const enabled = asked.reasoning_enabled ?? undefined
  const effort = asked.reasoning_effort ?? undefined
  if (reasoning === null) {
    if (enabled === true) return invalid("model", `${model.ref} has no reasoning to enable`)
    if (effort !== undefined) return invalid("model.reasoning_effort", `${model.ref} takes no reasoning effort`)
    return { provider_id: model.provider, model_ref: model.ref, reasoning_enabled: false, reasoning_effort: null }
  }
  if (effort !== undefined && !reasoning.efforts.includes(effort)) {
    return invalid("model.reasoning_effort", `must be one of ${reasoning.efforts.join(", ")}`)
  }
  return {
    provider_id: model.provider,
    model_ref: model.ref,
    reasoning_enabled: enabled ?? reasoning.default_enabled ?? false,
    reasoning_effort: effort ?? reasoning.default_effort
  }
}

/**
 * Judges a create body; the count against each model's window uses its provider's tokenizer. An
 * estimate (`limitGate` false) judges everything but the requested model's window.
 */
export const judgeCreate = (
  catalog: ModelCatalog["Service"],
  members: CreateMembers,
  resolution: Asker,
  limitGate = true
) =>
  Effect.gen(function* () {
    if (!workloads.includes(members.workload))
      return yield* invalid("workload", `must be one of ${workloads.join(", ")}`)
    const workload = members.workload as Workload
    const model = catalog.find(members.model.model)
    if (model === undefined || !model.workloads.includes(workload)) {
      return yield* invalid("model", `${members.model.model} is not a catalog model serving ${workload}`)
    }
    yield* catalog.providerFor(model.ref).pipe(
      Effect.catchTags({
        ModelPlaneUnavailable: (unavailable) =>
          Effect.fail(new Invalid({ code: "model_plane_unavailable", message: unavailable.message })),
        UnknownModel: () => Effect.fail(invalid("model", `${model.ref} is not a catalog model`))
      })
    )
    const effective = effectiveModel(model, members.model)
    if (effective instanceof Invalid) return yield* effective
    const messages = messagesOf(workload, members.input)
    if (messages instanceof Invalid) return yield* messages
    const configured = configurationOf(workload, model, members.configuration ?? {})
    if (configured instanceof Invalid) return yield* configured
    const named = members.upload_public_ids ?? []
    if (named.length > 16) return yield* invalid("upload_public_ids", "must name at most 16 uploads")
    if (named.length > 0) {
      if (workload === "embedding" || workload === "speech_generation") {
        return yield* invalid("upload_public_ids", `are not accepted for ${workload}`)
      }
      const last = messages.findLast((message) => message.role === "user")!
      last.parts.push(...named.map((upload) => ({ upload })))
    }
    const asked = [
      ...new Set(
        messages.flatMap((message) => message.parts.flatMap((part) => ("upload" in part ? [part.upload] : [])))
      )
    ]
    // In the supplement's order: every upload the caller's own, then admitted by the model, then
    // within the inline bound (a 9 MiB text file on a model taking images is unsupported media).
    const resolved = new Map<string, ResolvedUpload>()
    for (const publicId of asked) {
      const upload = isUuid(publicId) ? yield* resolution.find(publicId) : undefined
      if (upload === undefined || upload.creator_user_id !== resolution.userId) {
        return yield* new Invalid({ code: "unknown_input_upload", message: `${publicId} is not an upload of yours` })
      }
      resolved.set(publicId, upload)
    }
    const uploads = [...resolved.values()]
    if (
      !admits(model, uploads) ||
      (workload === "image_generation" && uploads.some((u) => !u.content_type.startsWith("image/")))
    ) {
      return yield* new Invalid({
        code: "unsupported_input_media",
        message: `${model.ref} does not take ${uploads.map((u) => u.content_type).join(", ")}`
      })
    }
    const oversized = uploads.find((upload) => upload.byte_size > inlineMediaBound)
    if (oversized !== undefined) {
      return yield* new Invalid({ code: "input_media_too_large", message: `${oversized.public_id} is over 8 MiB` })
    }
    const subject = members.billing_subject ?? null
    const subjectLength = subject === null ? 0 : codePointLength(subject)
    if (subject !== null && (subjectLength < 1 || subjectLength > 255)) {
      return yield* new Invalid({
        code: "billing_subject_too_long",
        message: "billing_subject must be 1 to 255 characters"
      })
    }
    if (members.model_selection !== undefined && members.model_selection !== null) {
      return yield* invalid("model_selection", "must be null")
    }
    // An omitted (or null) list captures the caller's standing one, less refs the catalog lost.
    const supplied = members.fallback_models ?? undefined
    if (
      supplied !== undefined &&
      (supplied.length > 16 || new Set(supplied).size !== supplied.length || supplied.some((ref) => !catalog.find(ref)))
    ) {
      return yield* invalid("fallback_models", "must be at most 16 distinct catalog models")
    }
    const fallbacks = supplied ?? resolution.standingFallbacks.filter((ref) => catalog.find(ref) !== undefined)
    const { timeoutMs, ...rest } = configured
    const storedMessages: Array<StoredMessage> = messages.map(({ parts, ...message }) => ({
      ...message,
      content: parts.map((part): StoredPart => {
        if ("text" in part) return { type: "text", text: part.text }
        const upload = resolved.get(part.upload)!
        return {
          type: "upload",
          uploadPublicId: upload.public_id,
          contentType: upload.content_type,
          filename: upload.filename,
          sha256: upload.sha256
        }
      })
    }))
    const stored: StoredCall = {
      call: {
        workload,
        messages: storedMessages,
        ...rest,
        reasoning: { enabled: effective.reasoning_enabled, effort: effective.reasoning_effort }
      }
    }
    const countFor = (candidate: CatalogModel) =>
      Effect.gen(function* () {
        const provider = yield* Effect.option(catalog.providerFor(candidate.ref))
        if (provider._tag === "None") return undefined
        const call: ProviderCall = {
          ...providerCallOf(stored),
          modelRef: candidate.ref,
          upstreamModel: candidate.upstream_model,
          attempt: 1,
          earlierAttemptsOnModel: 0
        }
        return yield* provider.value.countInput(call)
      })
    const fits = (candidate: CatalogModel) =>
      Effect.map(countFor(candidate), (count) => !count?.exact || count.tokens <= candidate.context_window)
    const counted = (yield* countFor(model)) ?? { tokens: 0, exact: false }
    if (limitGate && counted.exact && counted.tokens > model.context_window) {
      return yield* new Invalid({
        code: "input_over_model_limit",
        message: `the input is over ${model.ref}'s window of ${model.context_window} tokens`
      })
    }
    const routes: Array<Route> = [{ model: model.ref, skip: null }]
    for (const ref of fallbacks) {
      const candidate = catalog.find(ref)!
      const skip = !candidate.workloads.includes(workload)
        ? "workload_mismatch"
        : !admits(candidate, uploads)
          ? "unsupported_input_media"
          : (yield* fits(candidate))
            ? null
            : "input_over_model_limit"
      routes.push({ model: ref, skip })
    }
    return {
      input: { tokens: counted.tokens, exact: counted.exact, window: model.context_window },
      workload,
      model: effective,
      stored,
      routes,
      timeoutMs,
      billingSubject: subject,
      uploads
    } satisfies JudgedCreate
  })
