// Reading a model's memory call arguments (runs supplement "Tool catalog": memory_read, _write,
// _edit, _ls, _grep, _delete) with the rules the memory doors' contract applies to the same
// members (SUPPLEMENT "Memory documents"): a path of the grammar (memory_path_invalid,
// skill_name_invalid, skill_scope_unavailable), content and new_text text (memory_content_invalid),
// a non-empty old_text (memory_edit_invalid), a grep limit of 1 to 500. The model-facing tools
// never author skills/ rows: write, edit and delete there fail memory_reserved_prefix. An absent
// required member is parameter_missing; other shapes parameter_invalid (ToolArguments.ts).
import { Effect } from "effect"
import { filterPathFault, isUnderSkills, memoryLimits, pathFault } from "../memory/MemoryRules.ts"
import { type Arguments, optionalBoolean, optionalInteger, type Refusal } from "./ToolArguments.ts"

const missing = (name: string) => Effect.fail<Refusal>({ code: "parameter_missing", message: `${name} is required` })

/** A required member: absent (or null) is parameter_missing, another type `code`. */
const requiredText = (input: Arguments, name: string, code: string) => {
  const value = input[name] ?? undefined
  if (value === undefined) return missing(name)
  return typeof value === "string"
    ? Effect.succeed(value)
    : Effect.fail<Refusal>({ code, message: `${name} must be a string` })
}

/** The document path of a call; `writing` refuses skills/ rows (memory_reserved_prefix). */
export const documentPath = (input: Arguments, writing: boolean) =>
  Effect.gen(function* () {
    const path = yield* requiredText(input, "path", "memory_path_invalid")
    const fault = pathFault(path)
    // A well-formed path under skills/ (a skill name's own faults included) is reserved.
    if (writing && isUnderSkills(path) && fault?.code !== "memory_path_invalid") {
      return yield* Effect.fail<Refusal>({
        code: "memory_reserved_prefix",
        message: "skills/ rows are authored through the memory doors, not by memory tools"
      })
    }
    return fault === undefined ? path : yield* Effect.fail<Refusal>(fault)
  })

/** memory_write's content: text (its 64 KiB bound is the document's). */
export const content = (input: Arguments) => requiredText(input, "content", "memory_content_invalid")

/** memory_edit's texts: old_text non-empty (memory_edit_invalid), new_text text (memory_content_invalid). */
export const editTexts = (input: Arguments) =>
  Effect.gen(function* () {
    const oldText = yield* requiredText(input, "old_text", "memory_edit_invalid")
    if (oldText === "") {
      return yield* Effect.fail<Refusal>({ code: "memory_edit_invalid", message: "old_text must not be empty" })
    }
    return { old_text: oldText, new_text: yield* requiredText(input, "new_text", "memory_content_invalid") }
  })

/** memory_read's window: a 1-based first line and a number of lines, both optional. */
export const readWindow = (input: Arguments) =>
  Effect.all({
    offset: optionalInteger(input, "offset", 1, Number.MAX_SAFE_INTEGER),
    limit: optionalInteger(input, "limit", 1, Number.MAX_SAFE_INTEGER)
  })

/** memory_grep's members: a pattern, an optional filter path, ignore_case and a limit of 1 to 500. */
export const grepMembers = (input: Arguments) =>
  Effect.gen(function* () {
    const pattern = yield* requiredText(input, "pattern", "parameter_invalid")
    const path = input.path ?? undefined
    if (path !== undefined) {
      if (typeof path !== "string") {
        return yield* Effect.fail<Refusal>({ code: "memory_path_invalid", message: "path must be a string" })
      }
      const fault = filterPathFault(path)
      if (fault !== undefined) return yield* Effect.fail<Refusal>(fault)
    }
    const ignoreCase = yield* optionalBoolean(input, "ignore_case")
    const limit = yield* optionalInteger(input, "limit", 1, memoryLimits.grepMax)
    return {
      pattern,
      ...(path === undefined ? {} : { path }),
      ...(ignoreCase === undefined ? {} : { ignore_case: ignoreCase }),
      ...(limit === undefined ? {} : { limit })
    }
  })
