// Grep patterns (SUPPLEMENT "Memory documents"): JavaScript regular expressions in Unicode mode,
// judged by the JavaScript engine and run on RE2 (re2js), so matching stays linear in the text
// and no pattern can stall the server. A pattern is translated node by node into RE2 syntax with
// the same meaning; what RE2 cannot express (backreferences, lookaround) is too costly.
import { type AST, RegExpParser, RegExpSyntaxError } from "@eslint-community/regexpp"
import { RE2JS } from "re2js"

export const patternLimits = {
  /** UTF-8 bytes of the pattern. */
  bytes: 1024,
  /** RE2 program size (approximate instruction count) a pattern may compile to. */
  programSize: 2000,
  /** Distinct \p{...} escapes in one pattern: each costs a scan of every code point once. */
  propertyEscapes: 8
} as const

export interface GrepPattern {
  /** Matches one line. */
  readonly line: RE2JS
  /**
   * The same pattern over a whole document with ^ and $ at line ends: a document it does not
   * match has no matching line, so it is skipped (absent: test every line).
   */
  readonly document: RE2JS | undefined
}

export interface PatternFault {
  readonly code: "memory_pattern_invalid" | "memory_pattern_too_costly"
  readonly message: string
}

class TooCostly {
  readonly reason: string
  constructor(reason: string) {
    this.reason = reason
  }
}

type Range = readonly [from: number, to: number]

/** The flags in force at a node: the request's ignore_case, then (?ims-ims:...) modifiers. */
interface Flags {
  readonly ignoreCase: boolean
  readonly multiline: boolean
  readonly dotAll: boolean
}

const maxCodePoint = 0x10ffff
const hex = (codePoint: number) => `\\x{${codePoint.toString(16)}}`
const rangeText = ([from, to]: Range) => (from === to ? hex(from) : `${hex(from)}-${hex(to)}`)
const classOf = (body: string, negate: boolean) =>
  body === ""
    ? negate
      ? `[${rangeText([0, maxCodePoint])}]`
      : `[^${rangeText([0, maxCodePoint])}]`
    : negate
      ? `[^${body}]`
      : `[${body}]`

// JavaScript's `.` without the s flag: anything but a line terminator.
const notLineTerminator = `[^\\x{a}\\x{d}\\x{2028}\\x{2029}]`

let everyCodePoint: string | undefined
const propertyRanges = new Map<string, ReadonlyArray<Range>>()

/**
 * The code points a class escape (`\s`, `\p{...}`) matches, as the JavaScript engine sees them
 * (its Unicode version, its aliases): found by one scan of a text of every code point in order,
 * each run of matches being one range. Cached per escape. Surrogate code points never occur in
 * well-formed text, so a range may span them.
 */
const rangesOf = (classEscape: string): ReadonlyArray<Range> => {
  const cached = propertyRanges.get(classEscape)
  if (cached) return cached
  everyCodePoint ??= Array.from({ length: maxCodePoint + 1 }, (_, codePoint) =>
    codePoint >= 0xd800 && codePoint <= 0xdfff ? "" : String.fromCodePoint(codePoint)
  ).join("")
  const ranges: Array<Range> = []
  for (const run of everyCodePoint.matchAll(new RegExp(`${classEscape}+`, "gu"))) {
    const text = run[0]
    const lastUnit = text.charCodeAt(text.length - 1)
    const last = lastUnit >= 0xdc00 && lastUnit <= 0xdfff ? text.codePointAt(text.length - 2)! : lastUnit
    ranges.push([text.codePointAt(0)!, last])
  }
  propertyRanges.set(classEscape, ranges)
  return ranges
}

const complement = (ranges: ReadonlyArray<Range>): ReadonlyArray<Range> => {
  const gaps: Array<Range> = []
  let next = 0
  for (const [from, to] of ranges) {
    if (from > next) gaps.push([next, from - 1])
    next = to + 1
  }
  if (next <= maxCodePoint) gaps.push([next, maxCodePoint])
  return gaps
}

/** Translates a parsed pattern into RE2 syntax with the same meaning on well-formed text. */
const translate = (pattern: AST.Pattern, ignoreCase: boolean): string => {
  const properties = new Set<string>()

  /** The ranges of `\s`, `\S`, `\p{..}` or `\P{..}`. */
  const escapeRanges = (set: AST.EscapeCharacterSet | AST.CharacterUnicodePropertyCharacterSet) => {
    let classEscape = "\\s"
    if (set.kind === "property") {
      classEscape = set.value === null ? `\\p{${set.key}}` : `\\p{${set.key}=${set.value}}`
      properties.add(classEscape)
      if (properties.size > patternLimits.propertyEscapes) {
        throw new TooCostly(`more than ${patternLimits.propertyEscapes} different \\p{...} escapes`)
      }
    }
    const ranges = rangesOf(classEscape)
    return set.negate ? complement(ranges) : ranges
  }

  /** A class member as RE2 class text (RE2's \d and \w are ASCII, as in JavaScript). */
  const classMember = (element: AST.CharacterClassElement): string => {
    switch (element.type) {
      case "Character":
        return hex(element.value)
      case "CharacterClassRange":
        return rangeText([element.min.value, element.max.value])
      case "CharacterSet":
        if (element.kind === "digit") return element.negate ? "\\D" : "\\d"
        if (element.kind === "word") return element.negate ? "\\W" : "\\w"
        if (element.kind === "property" && element.strings) throw new TooCostly("a property of strings")
        return escapeRanges(element).map(rangeText).join("")
      default:
        throw new TooCostly("a class set expression")
    }
  }

  const alternatives = (list: ReadonlyArray<AST.Alternative>, flags: Flags) =>
    list.map((alternative) => alternative.elements.map((element) => node(element, flags)).join("") || "(?:)").join("|")

  const node = (element: AST.Element, flags: Flags): string => {
    switch (element.type) {
      case "Character":
        return hex(element.value)
      case "CharacterClass":
        return classOf(element.elements.map(classMember).join(""), element.negate)
      case "CharacterSet":
        if (element.kind === "any")
          return flags.dotAll ? classOf(rangeText([0, maxCodePoint]), false) : notLineTerminator
        return classOf(classMember(element), false)
      case "CapturingGroup":
        return `(?:${alternatives(element.alternatives, flags)})`
      case "Group": {
        const inner = modified(flags, element.modifiers)
        const open = inner.ignoreCase === flags.ignoreCase ? "(?:" : inner.ignoreCase ? "(?i:" : "(?-i:"
        return `${open}${alternatives(element.alternatives, inner)})`
      }
      case "Quantifier":
        return `(?:${node(element.element, flags)})${quantifier(element)}`
      case "Assertion":
        if (element.kind === "word") return element.negate ? "\\B" : "\\b"
        if (element.kind === "lookahead" || element.kind === "lookbehind") throw new TooCostly("lookaround")
        // Under m, JavaScript's ^ and $ also see \r, U+2028 and U+2029 inside a line: RE2 cannot.
        if (flags.multiline) throw new TooCostly("^ or $ under the m modifier")
        return element.kind === "start" ? "^" : "$"
      case "Backreference":
        throw new TooCostly("a backreference")
      default:
        throw new TooCostly("a class set expression")
    }
  }

  const body = alternatives(pattern.alternatives, { ignoreCase, multiline: false, dotAll: false })
  return ignoreCase ? `(?i:${body})` : body
}

const modified = (flags: Flags, modifiers: AST.Modifiers | null): Flags => {
  if (modifiers === null) return flags
  const { add, remove } = modifiers
  const apply = (member: keyof Flags) => (add[member] ? true : remove?.[member] ? false : flags[member])
  return { ignoreCase: apply("ignoreCase"), multiline: apply("multiline"), dotAll: apply("dotAll") }
}

const quantifier = ({ min, max, greedy }: AST.Quantifier) => {
  const lazy = greedy ? "" : "?"
  if (max === Number.POSITIVE_INFINITY) return `${min === 0 ? "*" : min === 1 ? "+" : `{${min},}`}${lazy}`
  if (min === 0 && max === 1) return `?${lazy}`
  return `${min === max ? `{${min}}` : `{${min},${max}}`}${lazy}`
}

const parser = new RegExpParser({ ecmaVersion: 2025 })
const invalid = (message: string): PatternFault => ({ code: "memory_pattern_invalid", message })
const tooCostly = (reason: string): PatternFault => ({
  code: "memory_pattern_too_costly",
  message: `memory.pattern cannot be matched in linear time: ${reason}`
})

/**
 * Compiles a grep pattern: a JavaScript regular expression (the u flag; ignore_case adds i).
 * One that does not compile is memory_pattern_invalid; one over 1024 bytes, or using what RE2
 * cannot run, or whose RE2 program is too large, is memory_pattern_too_costly.
 */
export const compilePattern = (pattern: string, ignoreCase: boolean): GrepPattern | PatternFault => {
  if (Buffer.byteLength(pattern, "utf8") > patternLimits.bytes) {
    return tooCostly(`it is over ${patternLimits.bytes} bytes`)
  }
  try {
    new RegExp(pattern, ignoreCase ? "ui" : "u")
  } catch (error) {
    return invalid(`memory.pattern is not a JavaScript regular expression: ${(error as Error).message}`)
  }
  let source: string
  try {
    source = translate(parser.parsePattern(pattern, 0, pattern.length, { unicode: true }), ignoreCase)
  } catch (error) {
    if (error instanceof TooCostly) return tooCostly(`it uses ${error.reason}`)
    // The engine compiled it, but the parser behind the translation does not know it.
    if (error instanceof RegExpSyntaxError) return tooCostly("syntax the RE2 translation does not know")
    throw error
  }
  let line: RE2JS
  try {
    line = RE2JS.compile(source)
  } catch {
    return tooCostly("RE2 refuses it (a repetition over 1000, or too large)")
  }
  if (line.programSize() > patternLimits.programSize) return tooCostly("it compiles to too large a program")
  return { line, document: RE2JS.compile(source, RE2JS.MULTILINE) }
}

export const isPatternFault = (value: GrepPattern | PatternFault): value is PatternFault => "code" in value
