// Turns a request decoding failure into the spec's answer, naming the first offending member: the
// code of the nearest schema or check annotated with `specCode` (contracts/Codes.ts) on the way
// to the failing issue, at the status the Errors table gives it; else 400 parameter_missing when
// a required member is absent, parameter_invalid otherwise.
import { specCode } from "@troupe/contracts/Codes"
import { type ErrorCode, statusOfCode } from "@troupe/contracts/Errors"
import { SchemaAST, SchemaIssue } from "effect"
import type { HttpApiError } from "effect/http-api"

export interface DecodeFailure {
  readonly code: ErrorCode
  readonly status: number
  readonly message: string
  /** The body was not JSON at all. */
  readonly malformedJson: boolean
}

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

interface First {
  readonly missing: boolean
  readonly path: ReadonlyArray<PropertyKey>
  readonly issue: SchemaIssue.Issue
  /** The code of the nearest annotated schema or check above (or at) the issue. */
  readonly code: ErrorCode | undefined
}

const isCode = (value: unknown): value is ErrorCode => typeof value === "string" && Object.hasOwn(statusOfCode, value)

const codeIn = (annotations: { readonly [key: string]: unknown } | undefined): ErrorCode | undefined => {
  const code = annotations?.[specCode]
  return isCode(code) ? code : undefined
}

/**
 * A schema's own code. Effect puts annotations given to a schema with checks on its last check,
 * so that one is read too (after the node's own, which a code given before the checks sits on).
 */
const codeOfAst = (ast: SchemaAST.AST) => codeIn(ast.annotations) ?? codeIn(SchemaAST.resolve(ast))

const nearer = (issue: SchemaIssue.Issue, code: ErrorCode | undefined): ErrorCode | undefined => {
  switch (issue._tag) {
    case "Filter":
      return codeIn(issue.filter.annotations) ?? code
    case "MissingKey":
    // The member's key annotations: an absent value's own schema has nothing to say.
    case "InvalidValue":
    case "Forbidden":
      return codeIn(issue.annotations) ?? code
    case "Pointer":
      return code
    default:
      return codeOfAst(issue.ast) ?? code
  }
}

const first = (issue: SchemaIssue.Issue, path: ReadonlyArray<PropertyKey>, outer: ErrorCode | undefined): First => {
  const code = nearer(issue, outer)
  switch (issue._tag) {
    case "Pointer":
      return first(issue.issue, [...path, ...issue.path], code)
    case "Composite":
    case "AnyOf":
      return issue.issues[0] ? first(issue.issues[0], path, code) : { missing: false, path, issue, code }
    case "Encoding":
      // A decoding step's own input (a wrapped body's members) failing: name the member inside.
      return ["MissingKey", "Composite", "Pointer"].includes(issue.issue._tag)
        ? first(issue.issue, path, code)
        : { missing: false, path, issue, code }
    case "MissingKey":
      return { missing: true, path, issue, code }
    default:
      return { missing: false, path, issue, code }
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
    return {
      code: "parameter_invalid",
      status: 400,
      message: "The request body is not valid JSON",
      malformedJson: true
    }
  }
  const found = first(root, [], undefined)
  const name = found.path.map(String).join(".")
  const where = name ? `${location[error.kind]} ${name}` : "request body"
  const answer = (fallback: ErrorCode, message: string): DecodeFailure => {
    const code = found.code ?? fallback
    return { code, status: statusOfCode[code], message, malformedJson: false }
  }
  // A check coded parameter_missing (null content) reads as absence too.
  if (found.missing || found.code === "parameter_missing") return answer("parameter_missing", `${where} is required`)
  const detail = formatter(found.issue).issues[0]?.message
  return answer("parameter_invalid", detail ? `${where} is invalid: ${detail}` : `${where} is invalid`)
}
