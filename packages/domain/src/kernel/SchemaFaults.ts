// The first fault of a schema decoding failure as the domain reports it: the path of the member
// it names (`tool_definitions[2].function.name`), the message of the schema or check that
// refused it, and the checks it came through (a check of a whole object reports a rule across
// its members). Schemas carry their messages (`annotate({ message })` before any check).
import { type Schema, SchemaIssue } from "effect"

export interface SchemaFault {
  readonly path: ReadonlyArray<PropertyKey>
  readonly message: string
  /** The checks whose failure this is, outermost first, with the path each one judged. */
  readonly checks: ReadonlyArray<{
    readonly at: ReadonlyArray<PropertyKey>
    readonly annotations: Schema.Annotations.Filter | undefined
  }>
}

// A required member without a message of its own is simply "required".
const formatter = SchemaIssue.makeFormatterStandardSchemaV1({
  leafHook: (issue) =>
    issue._tag === "MissingKey" && typeof issue.annotations?.messageMissingKey !== "string"
      ? "is required"
      : SchemaIssue.defaultLeafHook(issue)
})

// The checks along the first failure, the one the formatter names first.
const checksOf = (
  issue: SchemaIssue.Issue,
  at: ReadonlyArray<PropertyKey>,
  found: Array<SchemaFault["checks"][number]>
): SchemaFault["checks"] => {
  switch (issue._tag) {
    case "Filter":
      found.push({ at, annotations: issue.filter.annotations })
      return checksOf(issue.issue, at, found)
    case "Encoding":
      return checksOf(issue.issue, at, found)
    case "Pointer":
      return checksOf(issue.issue, [...at, ...issue.path], found)
    case "Composite":
    case "AnyOf":
      return issue.issues[0] ? checksOf(issue.issues[0], at, found) : found
    default:
      return found
  }
}

export const firstFault = (issue: SchemaIssue.Issue): SchemaFault => {
  const first = formatter(issue).issues[0]
  return {
    path: (first?.path ?? []).map((key) => (typeof key === "object" ? key.key : key)),
    message: first?.message ?? "is invalid",
    checks: checksOf(issue, [], [])
  }
}

/** `tool_definitions[2].function.name`: member names joined by dots, array indexes in brackets. */
export const dottedPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>(
    (text, key) => (typeof key === "number" ? `${text}[${key}]` : text === "" ? String(key) : `${text}.${String(key)}`),
    ""
  )
