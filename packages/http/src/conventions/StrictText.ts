// Request text read faithfully or not at all: bytes are UTF-8 decoded with a fatal decoder (never
// U+FFFD), form bodies and request targets are percent-decoded strictly, and a JSON body is walked
// once, without recursion, refusing nesting deeper than 256 levels and any string (member names
// included) PostgreSQL cannot store: U+0000 or a lone surrogate. Refusals name the member.
import { RequestRefused } from "./Refusal.ts"

/** Containers nested deeper than this (the body itself is level 1) are refused. */
export const maxJsonDepth = 256

const invalid = (message: string) => new RequestRefused({ status: 400, code: "parameter_invalid", message })

/** A well-formed JSON body holding a value PostgreSQL cannot store (the session door reads it as bad credentials). */
const unstorable = (message: string) =>
  new RequestRefused({ status: 400, code: "parameter_invalid", message, unstorableValue: true })

const utf8 = new TextDecoder("utf-8", { fatal: true })

export const decodeUtf8 = (bytes: ArrayBuffer | Uint8Array): string | RequestRefused => {
  try {
    return utf8.decode(bytes)
  } catch {
    return invalid("The request body is not valid UTF-8; send UTF-8 text")
  }
}

/** Why PostgreSQL could not store this text, if it could not. */
const textProblem = (text: string): string | undefined =>
  text.includes("\u0000")
    ? "holds U+0000 (NUL), which is not accepted"
    : text.isWellFormed()
      ? undefined
      : "holds a lone surrogate (text must be well-formed Unicode)"

/** decodeURIComponent that answers undefined for malformed escapes and invalid UTF-8. */
const percentDecoded = (text: string): string | undefined => {
  try {
    return decodeURIComponent(text)
  } catch {
    return undefined
  }
}

/** The path and query string must percent-decode to UTF-8 without U+0000. */
export const targetProblem = (target: string): RequestRefused | undefined => {
  const decoded = percentDecoded(target)
  if (decoded === undefined) return invalid("The path or query string is not valid percent-encoded UTF-8")
  const problem = textProblem(decoded)
  return problem === undefined ? undefined : invalid(`The path or query string ${problem}`)
}

/** The fields of an application/x-www-form-urlencoded body, in order, repeats kept. */
export const parseForm = (text: string): ReadonlyArray<readonly [string, string]> | RequestRefused => {
  const fields: Array<readonly [string, string]> = []
  for (const segment of text.split("&")) {
    if (segment === "") continue
    const eq = segment.indexOf("=")
    const name = percentDecoded((eq < 0 ? segment : segment.slice(0, eq)).replaceAll("+", " "))
    const value = percentDecoded((eq < 0 ? "" : segment.slice(eq + 1)).replaceAll("+", " "))
    if (name === undefined || value === undefined) {
      return invalid("The form body is not valid percent-encoded UTF-8")
    }
    const problem = textProblem(name) ?? textProblem(value)
    if (problem !== undefined) return invalid(`Form field ${JSON.stringify(name)} ${problem}`)
    fields.push([name, value])
  }
  return fields
}

interface Path {
  readonly segment: string | number
  readonly parent: Path | undefined
}

const shownSegments = 8

const render = (path: Path): string => {
  const segments: Array<string> = []
  for (let at: Path | undefined = path; at !== undefined; at = at.parent) {
    const { segment } = at
    segments.push(typeof segment === "number" || /^[\w-]+$/.test(segment) ? String(segment) : JSON.stringify(segment))
  }
  segments.reverse()
  const shown = segments.slice(0, shownSegments).join(".")
  return segments.length > shownSegments ? `${shown}...` : shown
}

const where = (path: Path | undefined) => (path === undefined ? "The request body" : `Body member ${render(path)}`)
const nameOf = (path: Path) => `The name of body member ${render(path)}`

interface Visit {
  readonly value: unknown
  readonly depth: number
  readonly path: Path | undefined
}

/**
 * Refuses a JSON text that nests too deep or holds text PostgreSQL cannot store. A text that is
 * not JSON passes: malformed JSON is each door's to answer in its own words.
 */
export const jsonProblem = (text: string): RequestRefused | undefined => {
  let root: unknown
  try {
    root = JSON.parse(text)
  } catch {
    return undefined
  }
  const stack: Array<Visit> = [{ value: root, depth: 1, path: undefined }]
  for (let visit = stack.pop(); visit !== undefined; visit = stack.pop()) {
    const { value, depth, path } = visit
    if (path !== undefined && typeof path.segment === "string") {
      const problem = textProblem(path.segment)
      if (problem !== undefined) return unstorable(`${nameOf(path)} ${problem}`)
    }
    if (typeof value === "string") {
      const problem = textProblem(value)
      if (problem !== undefined) return unstorable(`${where(path)} ${problem}`)
      continue
    }
    if (typeof value !== "object" || value === null) continue
    if (depth > maxJsonDepth) return invalid(`${where(path)} is nested deeper than ${maxJsonDepth} levels`)
    // Children are pushed last-first so members are judged in document order.
    if (Array.isArray(value)) {
      for (let index = value.length - 1; index >= 0; index--) {
        stack.push({ value: value[index], depth: depth + 1, path: { segment: index, parent: path } })
      }
    } else {
      const names = Object.keys(value)
      for (let index = names.length - 1; index >= 0; index--) {
        const name = names[index]!
        stack.push({
          value: (value as Record<string, unknown>)[name],
          depth: depth + 1,
          path: { segment: name, parent: path }
        })
      }
    }
  }
  return undefined
}
