// Memory rules without a database: what a path names and grep's whole-document pre-test, which must
// never hide a line that matches on its own.
import { compilePattern, type GrepPattern, isPatternFault } from "@troupe/domain/memory/GrepPattern"
import { applyEdit, matchingLines, parseDocumentPath, parseFilterPath } from "@troupe/domain/memory/MemoryRules"
import { describe, expect, it } from "vitest"

const compiled = (pattern: string, ignoreCase = false) => {
  const result = compilePattern(pattern, ignoreCase)
  if (isPatternFault(result)) throw new Error(result.message)
  return result
}

describe("paths", () => {
  it("reads the scope and skill rows of a well-formed path (the grammar is the contract's)", () => {
    expect(parseDocumentPath("agent/notes/today.md")).toEqual({
      path: "agent/notes/today.md",
      scope: "agent",
      skill: undefined
    })
    expect(parseDocumentPath("user/skills/plan-trip")).toEqual({
      path: "user/skills/plan-trip",
      scope: "user",
      skill: "plan-trip"
    })
    expect(parseDocumentPath("agent/skills")).toMatchObject({ skill: undefined })
    expect(parseFilterPath("agent")).toEqual({ scope: "agent", under: "agent" })
    expect(parseFilterPath("agent/notes/")).toEqual({ scope: "agent", under: "agent/notes" })
  })
})

describe("grep lines", () => {
  const content = "first line\r\nsecond\n\nfoo bar\nend foo\n"

  /** The same pattern with the whole-document pre-test turned off. */
  const lineByLine = (pattern: GrepPattern): GrepPattern => ({ line: pattern.line, document: undefined })

  it("numbers lines from 1, drops the \\r of CRLF, adds no line after a final newline", () => {
    expect(matchingLines(compiled("^"), "agent/x", content, 100).map((m) => [m.line_number, m.text])).toEqual([
      [1, "first line"],
      [2, "second"],
      [3, ""],
      [4, "foo bar"],
      [5, "end foo"]
    ])
  })

  it("the whole-document pre-test never hides a matching line", () => {
    const patterns = ["^foo", "foo$", "^$", "(?-i:foo)", "(?s:foo.bar)", "line$", "\\bbar\\b", "foo.bar", "[^x]", "x"]
    const documents = [content, "bar\nfoo\nend foo\nline x", "foo\nbar", "end foo", "foo bar", "line\r\nline", ""]
    for (const pattern of patterns) {
      for (const document of documents) {
        for (const ignoreCase of [false, true]) {
          const p = compiled(pattern, ignoreCase)
          expect(matchingLines(p, "agent/x", document, 100), `${pattern} over ${JSON.stringify(document)}`).toEqual(
            matchingLines(lineByLine(p), "agent/x", document, 100)
          )
        }
      }
    }
  })

  it("stops at the room it is given", () => {
    expect(matchingLines(compiled("o"), "agent/x", content, 2)).toHaveLength(2)
  })
})

describe("edits", () => {
  it("replace exactly one occurrence: none is memory_edit_not_found, several memory_edit_ambiguous", () => {
    expect(applyEdit("alpha beta", "beta", "B")).toBe("alpha B")
    expect(applyEdit("alpha beta", "gamma", "G")).toMatchObject({ code: "memory_edit_not_found" })
    expect(applyEdit("beta beta", "beta", "B")).toMatchObject({ code: "memory_edit_ambiguous" })
    expect(applyEdit("aaa", "aa", "b")).toMatchObject({ code: "memory_edit_ambiguous" })
  })
})
