// The rules of memory documents that need no database (spec "Memory document", Limits): the path
// grammar (scope as the first segment, skills/ rows), content and description checks, edits, and
// grep's line matching (the patterns are GrepPattern.ts's). Which scopes a door reaches, fencing
// and the per-anchor limit are Memory.ts's.

import { codePointLength, isPrintable } from "../kernel/Text.ts"
import type { GrepPattern } from "./GrepPattern.ts"

export const scopes = ["conversation", "workspace", "user", "agent", "speaker"] as const
export type Scope = (typeof scopes)[number]

export const memoryLimits = {
  documentsPerAnchor: 64,
  documentBytes: 64 * 1024,
  /** Code points of the name after the scope segment. */
  nameCharacters: 128,
  skillName: 64,
  descriptionBytes: 1024,
  grepDefault: 100,
  grepMax: 500,
  lineCharacters: 500,
  /** Scanning stops after this long; the answer is then marked truncated. */
  grepMillis: 2000
} as const

/** A memory rule's refusal: the spec's memory code and a message. */
export interface MemoryFault {
  readonly code:
    | "memory_path_invalid"
    | "memory_document_too_large"
    | "memory_content_invalid"
    | "memory_description_invalid"
    | "memory_edit_not_found"
    | "memory_edit_ambiguous"
    | "memory_edit_invalid"
    | "skill_description_required"
    | "skill_name_invalid"
    | "skill_scope_unavailable"
  readonly message: string
}

export interface MemoryPath {
  readonly path: string
  readonly scope: Scope
  /** The skill name when the path is <scope>/skills/<name>. */
  readonly skill: string | undefined
}

const isScope = (value: string): value is Scope => (scopes as ReadonlyArray<string>).includes(value)

const skillName = /^[a-z0-9]+(?:-[a-z0-9]+)*$/

const fault = (code: MemoryFault["code"], message: string): MemoryFault => ({ code, message })
const pathInvalid = (message: string) => fault("memory_path_invalid", message)

/**
 * The segments of a well-formed path (or its fault): printable (Text.ts), a known scope first, a
 * name after it of at most 128 code points, no empty, "." or ".." segment.
 */
const segmentsOf = (value: unknown): ReadonlyArray<string> | MemoryFault => {
  if (typeof value !== "string") return pathInvalid("memory.path must be a string")
  if (!isPrintable(value)) return pathInvalid("memory.path must be printable text (no control or format characters)")
  const segments = value.split("/")
  const scope = segments[0]!
  if (!isScope(scope)) {
    return pathInvalid(`memory.path must start with its scope (${scopes.join(", ")}): <scope>/<name>`)
  }
  if (codePointLength(value) - scope.length - 1 > memoryLimits.nameCharacters) {
    return pathInvalid(`memory.path's name after ${scope}/ is at most ${memoryLimits.nameCharacters} characters`)
  }
  if (segments.some((segment) => segment === "" || segment === "." || segment === "..")) {
    return pathInvalid("memory.path has an empty, . or .. segment")
  }
  return segments
}

const isFault = (value: unknown): value is MemoryFault =>
  typeof value === "object" && value !== null && "code" in value && !Array.isArray(value)

/**
 * A document path: <scope>/<name>[/...]. A bare name (no scope segment) is memory_path_invalid;
 * <scope>/skills/<name> is a skill row (skill_name_invalid for another name shape, and
 * skill_scope_unavailable under conversation/).
 */
export const parseDocumentPath = (value: unknown): MemoryPath | MemoryFault => {
  const segments = segmentsOf(value)
  if (isFault(segments)) return segments
  if (segments.length < 2) return pathInvalid("memory.path must be <scope>/<name>: a bare name has no scope")
  const scope = segments[0] as Scope
  if (segments[1] === "skills" && segments.length > 2) {
    if (scope === "conversation") {
      return fault("skill_scope_unavailable", "Skills are not kept in conversation memory (conversation/skills/)")
    }
    const name = segments.slice(2).join("/")
    if (segments.length !== 3 || name.length > memoryLimits.skillName || !skillName.test(name)) {
      return fault(
        "skill_name_invalid",
        `A skill name is 1 to ${memoryLimits.skillName} of a-z and 0-9 in words joined by single hyphens`
      )
    }
    return { path: value as string, scope, skill: name }
  }
  return { path: value as string, scope, skill: undefined }
}

/** A grep filter: a scope alone (`agent`), or a path and everything under it. */
export const parseFilterPath = (value: unknown): { readonly scope: Scope; readonly under: string } | MemoryFault => {
  const trimmed = typeof value === "string" && value.endsWith("/") ? value.slice(0, -1) : value
  const segments = segmentsOf(trimmed)
  if (isFault(segments)) return segments
  return { scope: segments[0] as Scope, under: trimmed as string }
}

export const isSkillPath = (path: MemoryPath) => path.skill !== undefined

/** Content: a string of valid text (no NUL, no lone surrogate) of at most 64 KiB. */
export const checkContent = (value: unknown, field = "memory.content"): { readonly bytes: number } | MemoryFault => {
  if (typeof value !== "string") return fault("memory_content_invalid", `${field} must be a string`)
  if (!value.isWellFormed() || value.includes("\u0000")) {
    return fault("memory_content_invalid", `${field} must be valid text (no NUL, no lone surrogate)`)
  }
  const bytes = Buffer.byteLength(value, "utf8")
  if (bytes > memoryLimits.documentBytes) {
    return fault(
      "memory_document_too_large",
      `A memory document is at most ${memoryLimits.documentBytes} bytes; this is ${bytes}`
    )
  }
  return { bytes }
}

/**
 * The description of a write: required on skill rows (one printable line of 1 to 1024 bytes),
 * refused elsewhere (absent or null is no description).
 */
export const checkDescription = (
  value: unknown,
  path: MemoryPath
): { readonly description: string | null } | MemoryFault => {
  if (!isSkillPath(path)) {
    if (value === undefined || value === null) return { description: null }
    return fault("memory_description_invalid", "memory.description is only for skills/ rows (<scope>/skills/<name>)")
  }
  if (value === undefined || value === null || (typeof value === "string" && value.trim() === "")) {
    return fault("skill_description_required", "A skill row needs memory.description")
  }
  if (typeof value !== "string" || !isPrintable(value)) {
    return fault("memory_description_invalid", "memory.description must be one printable line")
  }
  if (Buffer.byteLength(value, "utf8") > memoryLimits.descriptionBytes) {
    return fault("memory_description_invalid", `memory.description is at most ${memoryLimits.descriptionBytes} bytes`)
  }
  return { description: value }
}

/**
 * An edit's old_text (a non-empty string of valid text, else memory_edit_invalid) or new_text
 * (valid text, else memory_content_invalid: it becomes content).
 */
export const checkEditText = (value: unknown, member: "old_text" | "new_text"): string | MemoryFault => {
  const code = member === "old_text" ? "memory_edit_invalid" : "memory_content_invalid"
  if (typeof value !== "string" || !value.isWellFormed() || value.includes("\u0000")) {
    return fault(code, `memory.${member} must be a string of valid text`)
  }
  if (member === "old_text" && value === "") return fault(code, "memory.old_text must not be empty")
  return value
}

/**
 * The content after replacing the one occurrence of oldText (non-empty, see checkEditText): none
 * is memory_edit_not_found, several memory_edit_ambiguous.
 */
export const applyEdit = (content: string, oldText: string, newText: string): string | MemoryFault => {
  const first = content.indexOf(oldText)
  if (first === -1) return fault("memory_edit_not_found", "memory.old_text does not occur in the document")
  if (content.indexOf(oldText, first + 1) !== -1) {
    return fault("memory_edit_ambiguous", "memory.old_text occurs more than once; include more surrounding text")
  }
  return content.slice(0, first) + newText + content.slice(first + oldText.length)
}

export interface GrepMatch {
  readonly path: string
  readonly line_number: number
  readonly text: string
}

/** The first 500 characters (code points) of a line. */
export const capLine = (line: string) => {
  if (line.length <= memoryLimits.lineCharacters) return line
  return Array.from(line.slice(0, memoryLimits.lineCharacters * 2))
    .slice(0, memoryLimits.lineCharacters)
    .join("")
}

/**
 * The matching lines of one document (1-based line numbers; a line ends at \n, a \r before it
 * is not part of the line; a final newline does not start another line), at most `room` of them.
 */
export const matchingLines = (pattern: GrepPattern, path: string, content: string, room: number): Array<GrepMatch> => {
  const matches: Array<GrepMatch> = []
  if (room <= 0 || content === "") return matches
  if (pattern.document !== undefined && !content.includes("\r") && !pattern.document.test(content)) return matches
  const lines = content.split("\n")
  if (lines[lines.length - 1] === "") lines.pop()
  for (let index = 0; index < lines.length && matches.length < room; index++) {
    let line = lines[index]!
    if (line.endsWith("\r")) line = line.slice(0, -1)
    if (pattern.line.test(line)) matches.push({ path, line_number: index + 1, text: capLine(line) })
  }
  return matches
}
