// The rules of memory documents that need no database (spec "Memory document", Limits): what a
// path names (its scope, a skills/ row), the document size, the description a path takes, edits,
// and grep's line matching (the patterns are GrepPattern.ts's). The path grammar and the shapes
// of members are the contract's schemas (contracts/member/MemoryMembers.ts): paths arrive well
// formed; `pathFault` restates that grammar for paths no contract decoded (a model's memory
// calls). Which scopes a door reaches, fencing and the per-anchor limit are Memory.ts's.

import { codePointLength, isPrintable } from "../kernel/Text.ts"
import type { GrepPattern } from "./GrepPattern.ts"

export const scopes = ["conversation", "workspace", "user", "agent", "speaker"] as const
export type Scope = (typeof scopes)[number]

export const memoryLimits = {
  documentsPerAnchor: 64,
  documentBytes: 64 * 1024,
  grepDefault: 100,
  grepMax: 500,
  lineCharacters: 500,
  /** Scanning stops after this long; the answer is then marked truncated. */
  grepMillis: 2000
} as const

/** A memory rule's refusal: the spec's memory code and a message. */
export interface MemoryFault {
  readonly code:
    | "memory_document_too_large"
    | "memory_description_invalid"
    | "memory_edit_not_found"
    | "memory_edit_ambiguous"
    | "skill_description_required"
  readonly message: string
}

export interface MemoryPath {
  readonly path: string
  readonly scope: Scope
  /** The skill name when the path is <scope>/skills/<name>. */
  readonly skill: string | undefined
}

const fault = (code: MemoryFault["code"], message: string): MemoryFault => ({ code, message })

/** A path outside the grammar: the contract's codes for it. */
export interface PathFault {
  readonly code: "memory_path_invalid" | "skill_name_invalid" | "skill_scope_unavailable"
  readonly message: string
}

const nameCharacters = 128
const skillNameLength = 64
const skillName = /^[a-z0-9]+(?:-[a-z0-9]+)*$/

/** Whether the segments name a skill row's place: `<scope>/skills/<...>`. */
const underSkills = (segments: ReadonlyArray<string>) => segments[1] === "skills" && segments.length > 2

/**
 * The grammar every path and grep filter passes (a filter after its one trailing "/" is
 * dropped): printable, its scope first, a name after it of at most 128 code points, no empty,
 * `.` or `..` segment.
 */
const grammarFault = (path: string): PathFault | undefined => {
  const segments = path.split("/")
  const invalid = (message: string): PathFault => ({ code: "memory_path_invalid", message })
  if (!isPrintable(path)) return invalid("A memory path is printable text")
  if (!(scopes as ReadonlyArray<string>).includes(segments[0]!)) {
    return invalid(`A memory path starts with its scope (${scopes.join(", ")}): <scope>/<name>`)
  }
  if (codePointLength(path) - segments[0]!.length - 1 > nameCharacters) {
    return invalid(`The name after the scope is at most ${nameCharacters} characters`)
  }
  if (segments.some((segment) => segment === "" || segment === "." || segment === "..")) {
    return invalid("A memory path has no empty, . or .. segment")
  }
  return undefined
}

/** A document path's fault (the contract's MemoryPath): `<scope>/<name>[/...]`, skill rows `<scope>/skills/<name>`. */
export const pathFault = (path: string): PathFault | undefined => {
  const segments = path.split("/")
  if (segments.length < 2) return { code: "memory_path_invalid", message: "<scope>/<name>: a bare name has no scope" }
  const grammar = grammarFault(path)
  if (grammar !== undefined || !underSkills(segments)) return grammar
  if (segments[0] === "conversation") {
    return { code: "skill_scope_unavailable", message: "Conversation memory keeps no skills" }
  }
  const name = segments[2]!
  return segments.length === 3 && name.length <= skillNameLength && skillName.test(name)
    ? undefined
    : {
        code: "skill_name_invalid",
        message: `A skill name is 1 to ${skillNameLength} of a-z and 0-9 in words joined by single hyphens`
      }
}

/** A grep filter's fault (the contract's MemoryFilterPath): a scope alone, or a path and what is under it. */
export const filterPathFault = (path: string): PathFault | undefined =>
  grammarFault(path.endsWith("/") ? path.slice(0, -1) : path)

/** Whether a well-formed path is under a scope's skills/ (where the model-facing memory tools never write). */
export const isUnderSkills = (path: string) => underSkills(path.split("/"))

/** What a well-formed document path names: <scope>/<name>[/...], a skill row at <scope>/skills/<name>. */
export const parseDocumentPath = (path: string): MemoryPath => {
  const [scope, second, ...rest] = path.split("/")
  return { path, scope: scope as Scope, skill: second === "skills" && rest.length > 0 ? rest.join("/") : undefined }
}

/** A well-formed grep filter: a scope alone (`agent`), or a path and everything under it. */
export const parseFilterPath = (path: string): { readonly scope: Scope; readonly under: string } => {
  const under = path.endsWith("/") ? path.slice(0, -1) : path
  return { scope: under.split("/")[0] as Scope, under }
}

export const isSkillPath = (path: MemoryPath) => path.skill !== undefined

/** A document's content: at most 64 KiB of UTF-8 (a write's, or an edit's result). */
export const checkContent = (content: string): { readonly bytes: number } | MemoryFault => {
  const bytes = Buffer.byteLength(content, "utf8")
  if (bytes > memoryLimits.documentBytes) {
    return fault(
      "memory_document_too_large",
      `A memory document is at most ${memoryLimits.documentBytes} bytes; this is ${bytes}`
    )
  }
  return { bytes }
}

/**
 * The description of a write (its line and size judged by the contract): required on skill rows
 * (absent, null or blank is skill_description_required), refused elsewhere (absent or null is
 * no description).
 */
export const checkDescription = (
  value: string | null | undefined,
  path: MemoryPath
): { readonly description: string | null } | MemoryFault => {
  if (!isSkillPath(path)) {
    if (value === undefined || value === null) return { description: null }
    return fault("memory_description_invalid", "memory.description is only for skills/ rows (<scope>/skills/<name>)")
  }
  if (value === undefined || value === null || value.trim() === "") {
    return fault("skill_description_required", "A skill row needs memory.description")
  }
  return { description: value }
}

/**
 * The content after replacing the one occurrence of oldText (non-empty, judged by the contract): none
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
