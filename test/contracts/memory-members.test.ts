// The memory members' schemas (contracts/member/MemoryMembers.ts): the path grammar and its
// codes (memory_path_invalid, skill_name_invalid, skill_scope_unavailable), the grep filter, a
// skill description's line, and edit texts, as a decoding failure answers them.
import {
  MemoryDescription,
  MemoryFilterPath,
  MemoryOldText,
  MemoryPath,
  memoryScopes
} from "@troupe/contracts/member/MemoryMembers"
import { filterPathFault, pathFault, scopes } from "@troupe/domain/memory/MemoryRules"
import { describeDecodeFailure } from "@troupe/http/conventions/SchemaIssues"
import { Effect, Schema } from "effect"
import { HttpApiError } from "effect/http-api"
import { describe, expect, it } from "vitest"

/** The code a member's value answers with (undefined when it decodes). */
const codeOf = (member: Schema.Codec<unknown, unknown>, value: unknown) =>
  Effect.runSync(
    Schema.decodeUnknownEffect(Schema.Struct({ member }))({ member: value }).pipe(
      Effect.match({
        onSuccess: () => undefined,
        onFailure: (cause) =>
          describeDecodeFailure(new HttpApiError.HttpApiSchemaError({ kind: "Payload", cause })).code
      })
    )
  )

describe("memory paths", () => {
  it("the scopes are the domain's", () => {
    expect(memoryScopes).toEqual(scopes)
  })

  it("take <scope>/<name>[/...] with a name of at most 128 code points", () => {
    for (const path of [
      "agent/notes/today.md",
      "user/skills/plan-trip",
      "agent/skills",
      `workspace/${"😀".repeat(128)}`,
      `user/notes/${"n".repeat(122)}`
    ]) {
      expect(codeOf(MemoryPath, path), path).toBeUndefined()
    }
  })

  it("refuse anything else with memory_path_invalid", () => {
    for (const path of [
      5,
      null,
      "notes.md",
      "workspace",
      "agent/a\u2028b",
      "agent//a",
      "agent/./a",
      "agent/a/",
      `workspace/${"😀".repeat(129)}`,
      `user/notes/${"n".repeat(123)}`,
      ...["\u202e", "\u200d", "\ufeff", "\u2066", "\t"].map((unprintable) => `agent/a${unprintable}b`)
    ]) {
      expect(codeOf(MemoryPath, path), JSON.stringify(path)).toBe("memory_path_invalid")
    }
  })

  it("skill rows: a malformed name is skill_name_invalid, conversation/skills/ skill_scope_unavailable", () => {
    expect(codeOf(MemoryPath, "agent/skills/a/b")).toBe("skill_name_invalid")
    expect(codeOf(MemoryPath, "agent/skills/Plan")).toBe("skill_name_invalid")
    expect(codeOf(MemoryPath, `agent/skills/${"a".repeat(65)}`)).toBe("skill_name_invalid")
    expect(codeOf(MemoryPath, "conversation/skills/x")).toBe("skill_scope_unavailable")
  })

  it("a grep filter is a scope alone or a path with one optional trailing slash; null is none", () => {
    for (const path of ["agent", "agent/", "agent/notes/", null]) {
      expect(codeOf(MemoryFilterPath, path), String(path)).toBeUndefined()
    }
    for (const path of ["notes", "agent//", `agent/${"n".repeat(129)}`, 5]) {
      expect(codeOf(MemoryFilterPath, path), String(path)).toBe("memory_path_invalid")
    }
  })
})

describe("the domain's restatement (paths no contract decodes: a model's memory calls)", () => {
  it("judges every path as the contract does", () => {
    for (const path of [
      "agent/notes/today.md",
      "user/skills/plan-trip",
      "agent/skills",
      `workspace/${"😀".repeat(128)}`,
      `workspace/${"😀".repeat(129)}`,
      `user/notes/${"n".repeat(122)}`,
      `user/notes/${"n".repeat(123)}`,
      "notes.md",
      "workspace",
      "workspace/",
      "agent/a\u2028b",
      "agent//a",
      "agent/./a",
      "agent/../a",
      "agent/a/",
      "agent/a\u202eb",
      "agent/a\tb",
      "agent/skills/a/b",
      "agent/skills/Plan",
      `agent/skills/${"a".repeat(64)}`,
      `agent/skills/${"a".repeat(65)}`,
      "agent/skills/a--b",
      "conversation/skills/x",
      "conversation/notes"
    ]) {
      expect(pathFault(path)?.code, path).toBe(codeOf(MemoryPath, path))
    }
    for (const path of ["agent", "agent/", "agent/notes/", "notes", "agent//", `agent/${"n".repeat(129)}`]) {
      expect(filterPathFault(path)?.code, path).toBe(codeOf(MemoryFilterPath, path))
    }
  })
})

describe("other members", () => {
  it("a description is one printable line of at most 1024 bytes; blank is left to the path", () => {
    for (const description of [null, "Plans a trip", " ", "\t", "é".repeat(512)]) {
      expect(codeOf(MemoryDescription, description), JSON.stringify(description)).toBeUndefined()
    }
    for (const description of [5, "a\nb", "é".repeat(513)]) {
      expect(codeOf(MemoryDescription, description), JSON.stringify(description)).toBe("memory_description_invalid")
    }
  })

  it("old_text is non-empty text", () => {
    expect(codeOf(MemoryOldText, "a")).toBeUndefined()
    expect(codeOf(MemoryOldText, "")).toBe("memory_edit_invalid")
    expect(codeOf(MemoryOldText, 1)).toBe("memory_edit_invalid")
  })
})
