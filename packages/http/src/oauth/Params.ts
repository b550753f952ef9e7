// Reads the parameters of an OAuth endpoint from a form or JSON body: one string per name, an
// empty value counting as omitted. Another media type, an empty body, a repeated name (form or
// JSON), or a non-string value is a malformed request. The body is read through the strict
// request (conventions/StrictRequest.ts): text that is not valid UTF-8 or percent-encoding, or
// holds U+0000, never gets here.
import { topLevelNames } from "@troupe/domain/connections/DeviceRequest"
import { Effect, Redacted } from "effect"
import { HttpServerRequest } from "effect/http"

export type OAuthParams = Readonly<Record<string, string>>

const mediaType = (contentType: string | undefined) => (contentType ?? "").split(";")[0]!.trim().toLowerCase()

/** RFC 6749 §3.2: a parameter sent without a value is treated as omitted. */
const withValues = (params: Record<string, string>): OAuthParams =>
  Object.fromEntries(Object.entries(params).filter(([, value]) => value !== ""))

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
    return { _tag: "Valid", params: withValues(params) } as const
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
  // JSON.parse keeps only the last of a repeated name: read the names as written.
  const names = topLevelNames(text)
  const twice = names.find((name, index) => names.indexOf(name) !== index)
  if (twice !== undefined) return { _tag: "Invalid", description: `${twice} is repeated` } as const
  for (const [name, value] of Object.entries(body)) {
    if (value === null || value === undefined) continue
    if (typeof value !== "string") return { _tag: "Invalid", description: `${name} must be a string` } as const
    params[name] = value
  }
  return { _tag: "Valid", params: withValues(params) } as const
})
