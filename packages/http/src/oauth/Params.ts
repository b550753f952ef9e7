// Reads the parameters of an OAuth endpoint from a form or JSON body: one string per name.
// Another media type, an empty body, a repeated name, or a non-string value is a malformed
// request. The body is read through the strict request (conventions/StrictRequest.ts): text that
// is not valid UTF-8 or percent-encoding, or holds U+0000, never gets here.
import { Effect, Redacted } from "effect"
import { HttpServerRequest } from "effect/http"

export type OAuthParams = Readonly<Record<string, string>>

const mediaType = (contentType: string | undefined) => (contentType ?? "").split(";")[0]!.trim().toLowerCase()

/** The parameters, or a description of what is wrong with the request. */
export const readOAuthParams = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const type = mediaType(request.headers["content-type"])
  if (type !== "application/x-www-form-urlencoded" && type !== "application/json") {
    return { _tag: "Invalid", description: "send application/x-www-form-urlencoded or application/json" } as const
  }
  const text = yield* Effect.orDie(request.text)
  if (text.trim() === "") return { _tag: "Invalid", description: "the request body is empty" } as const
  const params: Record<string, string> = {}
  if (type === "application/x-www-form-urlencoded") {
    for (const [name, value] of yield* Effect.orDie(request.urlParamsBody)) {
      if (name in params) return { _tag: "Invalid", description: `${name} is repeated` } as const
      params[name] = typeof value === "string" ? value : Redacted.value(value)
    }
    return { _tag: "Valid", params } as const
  }
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    return { _tag: "Invalid", description: "the body is not valid JSON" } as const
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return { _tag: "Invalid", description: "the body must be a JSON object" } as const
  }
  for (const [name, value] of Object.entries(body)) {
    if (value === null || value === undefined) continue
    if (typeof value !== "string") return { _tag: "Invalid", description: `${name} must be a string` } as const
    params[name] = value
  }
  return { _tag: "Valid", params } as const
})
