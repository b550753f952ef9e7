// Grep patterns are JavaScript regular expressions run on RE2: the translation must give the
// engine's own answer on every line, and refuse (with the SUPPLEMENT's codes) what does not compile
// or what RE2 cannot run in linear time.
import { compilePattern, type GrepPattern, isPatternFault } from "@troupe/domain/memory/GrepPattern"
import { describe, expect, it } from "vitest"

const compiled = (pattern: string, ignoreCase = false): GrepPattern => {
  const result = compilePattern(pattern, ignoreCase)
  if (isPatternFault(result)) throw new Error(`${pattern}: ${result.message}`)
  return result
}

const codeOf = (pattern: string, ignoreCase = false) => {
  const result = compilePattern(pattern, ignoreCase)
  return isPatternFault(result) ? result.code : "compiled"
}

describe("the same meaning as JavaScript's RegExp with the u flag", () => {
  const patterns = [
    "a",
    "\\w+",
    "\\W",
    "[\\w-]",
    "\\d{2,3}",
    "\\bfoo\\b",
    "\\Bo",
    "\\s",
    "\\S",
    "[^\\s]",
    "[\\S]",
    "\\p{L}+",
    "\\P{Lu}",
    "[^\\p{Lu}]",
    "\\p{Lu}",
    "\\p{Letter}",
    "\\p{General_Category=Uppercase_Letter}",
    "\\p{Script=Greek}",
    "\\p{sc=Grek}",
    "\\p{scx=Grek}",
    "\\p{Emoji}",
    "(?<word>ab)c",
    "(ab)+c",
    "(?i:ab)C",
    "(?-i:a)B",
    ".",
    "x.y",
    "(?s:x.y)",
    "^a$",
    "^$",
    "\\u{1F600}",
    "[😀-😂]",
    "\\uD83D\\uDE00",
    "σ",
    "ß",
    "k",
    "[a-z]",
    "a*?b",
    "a+?",
    "x|",
    "[]",
    "[^]",
    "\\cJ",
    "\\0",
    "[\\b]",
    "\\u00e9",
    "\\x41",
    "\\/",
    "\\.",
    "a{2}",
    "a{2,}",
    ""
  ]
  const lines = [
    "a",
    "A",
    "foo bar",
    "Foo",
    "foobar",
    "ſ",
    "ΣΑΣ",
    "σ",
    "ς",
    "ß",
    "ẞ",
    "\u00a0",
    "x\ry",
    "x\u2028y",
    "xzy",
    "😀",
    "😁",
    "😃",
    "12",
    "123",
    "ab",
    "abC",
    "AbC",
    "ABC",
    "b",
    "",
    "\u0008",
    "é",
    "É",
    "/",
    "aa",
    "\ufeff",
    "\u212a",
    "Ω",
    "ω"
  ]

  it("every pattern answers what the JavaScript engine answers, with and without ignore_case", () => {
    const differences: Array<string> = []
    for (const pattern of patterns) {
      for (const ignoreCase of [false, true]) {
        const ours = compiled(pattern, ignoreCase)
        const engine = new RegExp(pattern, ignoreCase ? "ui" : "u")
        for (const line of lines) {
          if (ours.line.test(line) !== engine.test(line)) {
            differences.push(`${JSON.stringify(pattern)} ${ignoreCase ? "i" : ""} on ${JSON.stringify(line)}`)
          }
        }
      }
    }
    expect(differences).toEqual([])
  })
})

describe("refusals", () => {
  it("a pattern that does not compile as JavaScript (u flag) is memory_pattern_invalid", () => {
    for (const pattern of ["[", "(", "a**", "(?i)a", "\\k<x>", "\\p{Han}", "\\q", "(?<n>a)(?<n>b)", "a{2,1}"]) {
      expect(codeOf(pattern), pattern).toBe("memory_pattern_invalid")
    }
  })

  it("over 1024 bytes, a backreference or lookaround is memory_pattern_too_costly", () => {
    expect(codeOf("x".repeat(1024))).toBe("compiled")
    expect(codeOf("x".repeat(1025))).toBe("memory_pattern_too_costly")
    expect(codeOf("é".repeat(513))).toBe("memory_pattern_too_costly")
    for (const pattern of ["(a)\\1", "(?<n>a)\\k<n>", "a(?=b)", "a(?!b)", "(?<=a)b", "(?<!a)b"]) {
      expect(codeOf(pattern), pattern).toBe("memory_pattern_too_costly")
    }
  })

  it("what RE2 cannot express or run small is memory_pattern_too_costly", () => {
    for (const pattern of [
      "(?m:^a)",
      "(?m:a$)",
      "a{1001}",
      "((((a{1,100}){1,100}){1,100}){1,100})",
      "(?:abc|def){300}",
      "\\p{L}\\p{Lu}\\p{Ll}\\p{N}\\p{P}\\p{S}\\p{Z}\\p{M}\\p{C}"
    ]) {
      expect(codeOf(pattern), pattern).toBe("memory_pattern_too_costly")
    }
    expect(codeOf("(?m:a)")).toBe("compiled")
  })

  it("pathological backtracking shapes compile and stay linear", () => {
    const pattern = compiled("(a|aa)+$|(x+x+)+y")
    expect(pattern.line.test(`${"a".repeat(50_000)}!`)).toBe(false)
    expect(pattern.line.test(`${"x".repeat(50_000)}`)).toBe(false)
  })
})
