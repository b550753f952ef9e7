// Turns a request decoding failure into the spec's 400: parameter_missing when a required member
// is absent, parameter_invalid otherwise, naming the first offending member.
import { SchemaIssue } from "effect"
import type { HttpApiError } from "effect/http-api"

export interface DecodeFailure {
  readonly code: "parameter_missing" | "parameter_invalid"
  readonly message: string
  /** The body was not JSON at all. */
  readonly malformedJson: boolean
}

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

interface First {
  readonly missing: boolean
  readonly path: ReadonlyArray<PropertyKey>
  readonly issue: SchemaIssue.Issue
}

const first = (issue: SchemaIssue.Issue, path: ReadonlyArray<PropertyKey>): First => {
  switch (issue._tag) {
    case "Pointer":
      return first(issue.issue, [...path, ...issue.path])
    case "Composite":
    case "AnyOf":
      return issue.issues[0] ? first(issue.issues[0], path) : { missing: false, path, issue }
    case "Encoding":
      // A decoding step's own input (a wrapped body's members) failing: name the member inside.
      return ["MissingKey", "Composite", "Pointer"].includes(issue.issue._tag)
        ? first(issue.issue, path)
        : { missing: false, path, issue }
    case "MissingKey":
      return { missing: true, path, issue }
    default:
      return { missing: false, path, issue }
  }
}

const location: Record<HttpApiError.HttpApiSchemaError["kind"], string> = {
  Params: "path parameter",
  Query: "query parameter",
  Headers: "header",
  Payload: "body member",
  Body: "response body",
  ResponseHeaders: "response header"
}

export const describeDecodeFailure = (error: HttpApiError.HttpApiSchemaError): DecodeFailure => {
  const root = error.cause.issue
  if (
    error.kind === "Payload" &&
    root._tag === "InvalidValue" &&
    root.annotations?.message === "Expected a valid JSON body"
  ) {
    return { code: "parameter_invalid", message: "The request body is not valid JSON", malformedJson: true }
  }
  const found = first(root, [])
  const name = found.path.map(String).join(".")
  const where = name ? `${location[error.kind]} ${name}` : "request body"
  if (found.missing) return { code: "parameter_missing", message: `${where} is required`, malformedJson: false }
  const detail = formatter(found.issue).issues[0]?.message
  return {
    code: "parameter_invalid",
    message: detail ? `${where} is invalid: ${detail}` : `${where} is invalid`,
    malformedJson: false
  }
}
