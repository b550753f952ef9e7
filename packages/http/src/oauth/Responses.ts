// OAuth answers (SUPPLEMENT: `/oauth/*` errors use the RFC 6749 shape
// `{"error": "<code>", "error_description": "..."}`), never cached.
import { HttpServerResponse } from "effect/http"

const noStore = { "cache-control": "no-store", pragma: "no-cache" }

export const oauthJson = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  HttpServerResponse.jsonUnsafe(body, { status, headers: { ...noStore, ...headers } })

export const oauthError = (error: string, description: string, status = 400, headers: Record<string, string> = {}) =>
  oauthJson({ error, error_description: description }, status, headers)
