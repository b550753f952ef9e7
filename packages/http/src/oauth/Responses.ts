// OAuth answers (SUPPLEMENT: `/oauth/*` errors use the RFC 6749 shape
// `{"error": "<code>", "error_description": "..."}`), never cached.
import { applicationClientId, connectorClientId } from "@troupe/domain/connections/DeviceRequest"
import { HttpServerResponse } from "effect/http"

const noStore = { "cache-control": "no-store", pragma: "no-cache" }

export const oauthJson = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  HttpServerResponse.jsonUnsafe(body, { status, headers: { ...noStore, ...headers } })

export const oauthError = (error: string, description: string, status = 400, headers: Record<string, string> = {}) =>
  oauthJson({ error, error_description: description }, status, headers)

/** One of the two public clients (spec "Clients": the client_id must be exactly its value). */
export const knownClient = (
  clientId: string | undefined
): clientId is typeof connectorClientId | typeof applicationClientId =>
  clientId === connectorClientId || clientId === applicationClientId

/** invalid_client, telling an omitted client_id from a wrong one. */
export const clientRefusal = (clientId: string | undefined) =>
  oauthError("invalid_client", clientId === undefined ? "client_id is required" : "Unknown client_id")
