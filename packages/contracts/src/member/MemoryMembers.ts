// The members of memory bodies whose faults are the spec's 422s (spec "Memory document",
// SUPPLEMENT "Memory documents"), as schemas carrying their codes: the path grammar
// `<scope>/<name>[/...]` with skills/ rows, a grep filter path, content, a skill description and
// edit texts. What depends on more than one member (a description only on skills/ rows) and on
// the stored document (sizes after an edit) is the domain's.
import { Schema } from "effect"
import { coded, specCode } from "../Codes.ts"
import { codePointLength, isPrintable } from "../Text.ts"

export const memoryScopes = ["conversation", "workspace", "user", "agent", "speaker"] as const

const nameCharacters = 128
const skillNameLength = 64
const descriptionBytes = 1024
const skillName = /^[a-z0-9]+(?:-[a-z0-9]+)*$/

/** The checks every path passes, a filter's after its one trailing "/" is dropped (`trim`). */
const grammar = (trim: (path: string) => string) => {
  const segments = (path: string) => trim(path).split("/")
  return [
    Schema.makeFilter((path: string) => isPrintable(path), {
      expected: "printable text (no control or format characters)"
    }),
    Schema.makeFilter((path: string) => (memoryScopes as ReadonlyArray<string>).includes(segments(path)[0]!), {
      expected: `a path that starts with its scope (${memoryScopes.join(", ")}): <scope>/<name>`
    }),
    Schema.makeFilter((path: string) => codePointLength(trim(path)) - segments(path)[0]!.length - 1 <= nameCharacters, {
      expected: `a name after the scope of at most ${nameCharacters} characters`
    }),
    Schema.makeFilter(
      (path: string) => !segments(path).some((segment) => segment === "" || segment === "." || segment === ".."),
      { expected: "a path without an empty, . or .. segment" }
    )
  ] as const
}

const isSkillRow = (segments: ReadonlyArray<string>) => segments[1] === "skills" && segments.length > 2

/**
 * A document path: `<scope>/<name>[/...]` (422 memory_path_invalid, a non-string too);
 * `<scope>/skills/<name>` is a skill row (skill_name_invalid for another name shape, and
 * skill_scope_unavailable under conversation/).
 */
export const MemoryPath = Schema.String.annotate({
  description: "<scope>/<name>: user/, workspace/, agent/ or conversation/ (422 memory_path_invalid)"
})
  .pipe(coded("memory_path_invalid"))
  .check(
    ...grammar((path) => path),
    Schema.makeFilter((path: string) => path.split("/").length > 1, {
      expected: "<scope>/<name>: a bare name has no scope"
    }),
    Schema.makeFilter((path: string) => !(path.startsWith("conversation/") && isSkillRow(path.split("/"))), {
      expected: "a skill outside conversation/ (conversation memory keeps no skills)",
      [specCode]: "skill_scope_unavailable"
    }),
    Schema.makeFilter(
      (path: string) => {
        const segments = path.split("/")
        if (!isSkillRow(segments)) return true
        return segments.length === 3 && segments[2]!.length <= skillNameLength && skillName.test(segments[2]!)
      },
      {
        expected: `a skill name of 1 to ${skillNameLength} of a-z and 0-9 in words joined by single hyphens`,
        [specCode]: "skill_name_invalid"
      }
    )
  )

/** A grep filter: a scope alone (`agent`), or a path and everything under it (`agent/notes/`); null is none. */
export const MemoryFilterPath = Schema.NullOr(
  Schema.String.check(...grammar((path) => (path.endsWith("/") ? path.slice(0, -1) : path)))
).pipe(coded("memory_path_invalid"))

/** Content: text (422 memory_content_invalid); its 64 KiB bound is judged with the document. */
export const MemoryContent = Schema.String.annotate({
  description: "text, at most 64 KiB (422 memory_document_too_large)"
}).pipe(coded("memory_content_invalid"))

/**
 * A skill row's description: one printable line of at most 1024 UTF-8 bytes (422
 * memory_description_invalid). Blank is judged with the path (skill_description_required).
 */
export const MemoryDescription = Schema.NullOr(
  Schema.String.check(
    Schema.makeFilter(
      (text: string) =>
        text.trim() === "" || (isPrintable(text) && new TextEncoder().encode(text).length <= descriptionBytes),
      { expected: `one printable line of at most ${descriptionBytes} bytes` }
    )
  )
)
  .annotate({ description: "skills/ documents only: one printable line of 1 to 1024 bytes" })
  .pipe(coded("memory_description_invalid"))

/** An edit's old_text: non-empty text (422 memory_edit_invalid). */
export const MemoryOldText = Schema.String.pipe(coded("memory_edit_invalid")).check(
  Schema.makeFilter((text: string) => text !== "", { expected: "a non-empty text that occurs once" })
)

/** An edit's new_text: text (422 memory_content_invalid, since it becomes content). */
export const MemoryNewText = Schema.String.pipe(coded("memory_content_invalid"))
