// Reads an application/x-www-form-urlencoded body into first-value-per-name fields. The strict
// request decodes it (conventions/StrictRequest.ts): a body that is not valid percent-encoded
// UTF-8, or holds U+0000, fails here and is answered 400 by the error envelope, never rewritten.
import { Effect, Redacted } from "effect"
import { HttpServerRequest } from "effect/http"

export const readForm = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const contentType = request.headers["content-type"] ?? ""
  if (!contentType.startsWith("application/x-www-form-urlencoded")) return {} as Record<string, string | undefined>
  const params = yield* request.urlParamsBody
  const fields: Record<string, string | undefined> = {}
  for (const [name, value] of params) {
    if (!(name in fields)) fields[name] = typeof value === "string" ? value : Redacted.value(value)
  }
  return fields
})
