// The executor inbox's request bodies judged alone (runs supplement "Executor inbox": Commit,
// Extend, Progress): each fault in the supplement's order, first found wins, as plain data.
import { isObject } from "../kernel/Json.ts"
import { codePointLength } from "../kernel/Text.ts"
import { canonicalBytes } from "./Compiler.ts"

/** The status of each code these judges answer (spec Errors, SUPPLEMENT codes). */
const statusOf = {
  parameter_missing: 400,
  parameter_invalid: 400,
  extension_too_long: 409,
  content_too_large: 413,
  invalid_content: 422,
  validation_failed: 422,
  too_many_content_blocks: 422,
  unknown_result_upload: 422,
  invalid_title: 422,
  invalid_metadata: 422,
  invalid_result_type: 422,
  invalid_timeout_ms: 422,
  invalid_frame: 422
} as const

export type BodyFaultCode = keyof typeof statusOf

/** A refused body: the integrator answers it with the http envelope. `field` names the member. */
export interface BodyFault {
  readonly status: (typeof statusOf)[BodyFaultCode]
  readonly code: BodyFaultCode
  readonly message: string
  readonly field: string
}

const fault = (code: BodyFaultCode, field: string, message: string): BodyFault => ({
  status: statusOf[code],
  code,
  message,
  field
})

export const inboxLimits = {
  contentBlocks: 256,
  titleChars: 255,
  resultTypeChars: 64,
  metadataBytes: 16 * 1024,
  resultBytes: 1_000_000,
  frameBytes: 16 * 1024,
  extensionMs: 3_600_000
} as const

/** A non-blank string member, else undefined (the caller answers 400 parameter_missing). */
const tokenOf = (body: unknown): string | undefined => {
  const token = isObject(body) ? body.claim_token : undefined
  return typeof token === "string" && token.trim() !== "" ? token : undefined
}

export type ResultBlock =
  | { readonly type: "text"; readonly text: string }
  | {
      readonly type: "resource_link"
      readonly uri: string
      readonly name: string
      readonly mimeType?: string
      readonly size?: number
      readonly title?: string
      readonly description?: string
    }

/** A committed result as the task row keeps it. */
export interface CommittedResult {
  readonly content: ReadonlyArray<ResultBlock>
  /** A string content as sent, or the text blocks' text joined by "\n". */
  readonly output: string
  readonly structured_content?: unknown
  readonly is_error?: boolean
  readonly title?: string
  readonly metadata?: Readonly<Record<string, unknown>>
  readonly result_type?: string
}

export type CommitJudgement =
  | { readonly claimToken: string | undefined; readonly fault: BodyFault }
  | {
      readonly claimToken: string | undefined
      readonly fault: null
      readonly outcome: "completed" | "failed"
      readonly result: CommittedResult
      /** `metadata.checkpoint`, null when absent (the run's runner_effects). */
      readonly checkpoint: unknown
    }

const uploadUri = "svc://uploads/"

/** The upload public id a link's uri names, or undefined when it names none. */
const linkedUpload = (uri: string): string | undefined => {
  const id = uri.startsWith(uploadUri) ? uri.slice(uploadUri.length) : ""
  return /^[^/?#\s]+$/.test(id) ? id : undefined
}

/** The upload public ids a commit body's links name, once each: what the caller loads before judging. */
export const resultUploadIds = (body: unknown): ReadonlyArray<string> => {
  const content = isObject(body) ? body.content : undefined
  if (!Array.isArray(content)) return []
  const ids = content.flatMap((block) => {
    const id = isObject(block) && typeof block.uri === "string" ? linkedUpload(block.uri) : undefined
    return id === undefined ? [] : [id]
  })
  return [...new Set(ids)]
}

const optionalString = (value: unknown) => value === undefined || typeof value === "string"

/** Whether a block carries its members (of known types; other types are judged after). */
const wellFormed = (block: unknown): boolean => {
  if (!isObject(block) || typeof block.type !== "string") return false
  if (block.type === "text") return typeof block.text === "string"
  if (block.type !== "resource_link") return true
  return (
    typeof block.uri === "string" &&
    typeof block.name === "string" &&
    optionalString(block.mimeType) &&
    optionalString(block.title) &&
    optionalString(block.description) &&
    (block.size === undefined || (Number.isSafeInteger(block.size) && (block.size as number) >= 0))
  )
}

/** A known block with its members only (unknown members are dropped). */
const keptBlock = (block: Record<string, unknown>): ResultBlock => {
  if (block.type === "text") return { type: "text", text: block.text as string }
  const link: Record<string, unknown> = { type: "resource_link", uri: block.uri, name: block.name }
  for (const member of ["mimeType", "size", "title", "description"]) {
    if (block[member] !== undefined) link[member] = block[member]
  }
  return link as ResultBlock
}

const judgeContent = (
  content: unknown,
  ownUpload: (publicId: string) => boolean
): BodyFault | { readonly blocks: ReadonlyArray<ResultBlock> } => {
  if (typeof content === "string") return { blocks: [{ type: "text", text: content }] }
  if (!Array.isArray(content))
    return fault("invalid_content", "content", "content is neither a string nor a block list")
  const malformed = content.findIndex((block) => !wellFormed(block))
  if (malformed >= 0) return fault("invalid_content", "content", `content[${malformed}] lacks its members`)
  const foreign = content.findIndex((block) => block.type !== "text" && block.type !== "resource_link")
  if (foreign >= 0) {
    return fault("validation_failed", "content", `content[${foreign}].type is neither text nor resource_link`)
  }
  if (content.length > inboxLimits.contentBlocks) {
    return fault("too_many_content_blocks", "content", `content has more than ${inboxLimits.contentBlocks} blocks`)
  }
  const unknown = content.findIndex((block) => {
    if (block.type !== "resource_link") return false
    const id = linkedUpload(block.uri)
    return id === undefined || !ownUpload(id)
  })
  if (unknown >= 0) {
    return fault(
      "unknown_result_upload",
      "content",
      `content[${unknown}].uri is not svc://uploads/ of an upload of yours`
    )
  }
  return { blocks: content.map(keptBlock) }
}

/** The members after content, in the supplement's order. */
const judgeMembers = (body: Record<string, unknown>): BodyFault | null => {
  const { outcome, is_error, title, metadata, result_type } = body
  if (outcome !== undefined && outcome !== "completed" && outcome !== "failed") {
    return fault("validation_failed", "outcome", "outcome is neither completed nor failed")
  }
  if (is_error !== undefined && typeof is_error !== "boolean") {
    return fault("validation_failed", "is_error", "is_error is not a boolean")
  }
  if (title !== undefined && (typeof title !== "string" || codePointLength(title) > inboxLimits.titleChars)) {
    return fault("invalid_title", "title", `title is not a string of at most ${inboxLimits.titleChars} characters`)
  }
  if (metadata !== undefined && !isObject(metadata)) {
    return fault("invalid_metadata", "metadata", "metadata is not an object")
  }
  if (result_type !== undefined) {
    const length = typeof result_type === "string" ? codePointLength(result_type) : 0
    if (length < 1 || length > inboxLimits.resultTypeChars) {
      return fault(
        "invalid_result_type",
        "result_type",
        `result_type is not a string of 1 to ${inboxLimits.resultTypeChars} characters`
      )
    }
  }
  if (metadata !== undefined && canonicalBytes(metadata) > inboxLimits.metadataBytes) {
    return fault("content_too_large", "metadata", "metadata is over 16 KiB of canonical JSON")
  }
  if (canonicalBytes(body.content) + canonicalBytes(body.structured_content) > inboxLimits.resultBytes) {
    return fault("content_too_large", "content", "the result is over 1 MB of canonical JSON")
  }
  return null
}

/**
 * A commit body's faults after the claim's (the caller answers 400 parameter_missing first when
 * `claimToken` is undefined). `ownUpload` tells this executor's uploads (`resultUploadIds` lists
 * the ones a body names). A body that is not an object is 400 parameter_invalid.
 */
export const judgeCommitBody = (body: unknown, ownUpload: (publicId: string) => boolean): CommitJudgement => {
  const claimToken = tokenOf(body)
  if (!isObject(body)) return { claimToken, fault: fault("parameter_invalid", "body", "the body is not an object") }
  const content = judgeContent(body.content, ownUpload)
  if ("code" in content) return { claimToken, fault: content }
  const { blocks } = content
  const refused = judgeMembers(body)
  if (refused !== null) return { claimToken, fault: refused }
  const { structured_content, is_error, title, metadata, result_type } = body
  const result: CommittedResult = {
    content: blocks,
    output:
      typeof body.content === "string"
        ? body.content
        : blocks.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("\n"),
    ...(structured_content !== undefined && { structured_content }),
    ...(is_error !== undefined && { is_error: is_error as boolean }),
    ...(title !== undefined && { title: title as string }),
    ...(metadata !== undefined && { metadata: metadata as Record<string, unknown> }),
    ...(result_type !== undefined && { result_type: result_type as string })
  }
  return {
    claimToken,
    fault: null,
    outcome: body.outcome === "failed" ? "failed" : "completed",
    result,
    checkpoint: (isObject(metadata) ? metadata.checkpoint : undefined) ?? null
  }
}

export type ExtendJudgement =
  | { readonly claimToken: string | undefined; readonly fault: BodyFault }
  | { readonly claimToken: string; readonly fault: null; readonly timeoutMs: number }

/**
 * An extend body, in order: claim_token missing or blank 400 parameter_missing; timeout_ms not a
 * positive JSON integer 422 invalid_timeout_ms; over one hour 409 extension_too_long.
 */
export const judgeExtendBody = (body: unknown): ExtendJudgement => {
  const claimToken = tokenOf(body)
  if (claimToken === undefined) {
    return { claimToken, fault: fault("parameter_missing", "claim_token", "claim_token is required") }
  }
  const timeoutMs = isObject(body) ? body.timeout_ms : undefined
  if (typeof timeoutMs !== "number" || !Number.isInteger(timeoutMs) || timeoutMs <= 0) {
    return { claimToken, fault: fault("invalid_timeout_ms", "timeout_ms", "timeout_ms is not a positive integer") }
  }
  if (timeoutMs > inboxLimits.extensionMs) {
    return {
      claimToken,
      fault: fault("extension_too_long", "timeout_ms", `timeout_ms is over ${inboxLimits.extensionMs} (one hour)`)
    }
  }
  return { claimToken, fault: null, timeoutMs }
}

export interface TaskFrame {
  readonly kind: "task"
  readonly run_public_id: string
  readonly task_key: string
  readonly claim_token: string
  readonly text_tail?: string
  readonly structured?: Readonly<Record<string, unknown>>
}

/** A process frame names its conversation, or its run when standalone (sent both: the conversation). */
export type ProcessFrame = {
  readonly kind: "process"
  readonly process_id: string
  readonly source: { readonly run_public_id: string; readonly task_key: string; readonly claim_token: string }
  readonly lines: ReadonlyArray<string>
  readonly exit: number | null
} & ({ readonly conversation_public_id: string } | { readonly run_public_id: string })

export type ProgressFrame = TaskFrame | ProcessFrame

export type ProgressJudgement = { readonly fault: BodyFault } | { readonly fault: null; readonly frame: ProgressFrame }

const named = (value: unknown): value is string => typeof value === "string" && value !== ""

const taskFrame = (frame: Record<string, unknown>): TaskFrame | undefined => {
  const { run_public_id, task_key, claim_token, text_tail, structured } = frame
  if (!named(run_public_id) || !named(task_key) || !named(claim_token)) return undefined
  if (!optionalString(text_tail) || (structured !== undefined && !isObject(structured))) return undefined
  return {
    kind: "task",
    run_public_id,
    task_key,
    claim_token,
    ...(text_tail !== undefined && { text_tail: text_tail as string }),
    ...(structured !== undefined && { structured: structured as Record<string, unknown> })
  }
}

const processFrame = (frame: Record<string, unknown>): ProcessFrame | undefined => {
  const { conversation_public_id, run_public_id, process_id, source, lines, exit } = frame
  const subject = named(conversation_public_id)
    ? { conversation_public_id }
    : named(run_public_id)
      ? { run_public_id }
      : undefined
  if (subject === undefined || !named(process_id) || !isObject(source)) return undefined
  if (!named(source.run_public_id) || !named(source.task_key) || !named(source.claim_token)) return undefined
  if (!Array.isArray(lines) || !lines.every((line) => typeof line === "string")) return undefined
  if (exit !== null && !Number.isSafeInteger(exit)) return undefined
  return {
    kind: "process",
    ...subject,
    process_id,
    source: { run_public_id: source.run_public_id, task_key: source.task_key, claim_token: source.claim_token },
    lines,
    exit: exit as number | null
  }
}

/**
 * A progress body `{frame}` (a body that is not an object carries no frame), in order: frame
 * absent 400 parameter_missing; not an object 400 parameter_invalid; neither a complete task
 * frame nor a complete process frame (the task frame is tried first; a member of the wrong type
 * leaves a frame incomplete) 422 invalid_frame; over 16 KiB canonical 413 content_too_large.
 */
export const judgeProgressBody = (body: unknown): ProgressJudgement => {
  const refused = (code: BodyFaultCode, message: string) => ({ fault: fault(code, "frame", message) })
  const frame = isObject(body) ? body.frame : undefined
  if (frame === undefined) return refused("parameter_missing", "frame is required")
  if (!isObject(frame)) return refused("parameter_invalid", "frame is not an object")
  const judged = taskFrame(frame) ?? processFrame(frame)
  if (judged === undefined) return refused("invalid_frame", "frame is neither a task frame nor a process frame")
  if (canonicalBytes(frame) > inboxLimits.frameBytes) {
    return refused("content_too_large", "frame is over 16 KiB of canonical JSON")
  }
  return { fault: null, frame: judged }
}
