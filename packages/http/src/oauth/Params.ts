// Reads the parameters of an OAuth endpoint from a form or JSON body: one string per name.
// Another media type, a repeated name, or a non-string value is a malformed request.
import { Effect } from "effect"
import { HttpServerRequest } from "effect/http"

export type OAuthParams = Readonly<Record<string, string>>

const mediaType = (contentType: string | undefined) => (contentType ?? "").split(";")[0]!.trim().toLowerCase()

/** The parameters, or a description of what is wrong with the request. */
export const readOAuthParams = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const text = yield* Effect.orDie(request.text)
  const type = mediaType(request.headers["content-type"])
  const params: Record<string, string> = {}
  if (type === "application/x-www-form-urlencoded") {
    for (const [name, value] of new URLSearchParams(text)) {
      if (name in params) return { _tag: "Invalid", description: `${name} is repeated` } as const
      params[name] = value
    }
    return { _tag: "Valid", params } as const
  }
  if (type === "application/json") {
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
  }
  return { _tag: "Invalid", description: "send application/x-www-form-urlencoded or application/json" } as const
})
