// RFC 8414 authorization server metadata, so standard OAuth clients find the endpoints. The
// document depends only on the public base URL, so it is written once when the routes are built.
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { publicUrl, WebConfig } from "../web/WebConfig.ts"

const metadataOf = (publicBaseUrl: URL) => {
  const at = (path: `/${string}`) => publicUrl(publicBaseUrl, path).toString()
  return {
    issuer: at("/").replace(/\/$/, ""),
    authorization_endpoint: at("/oauth/authorize"),
    token_endpoint: at("/oauth/token"),
    device_authorization_endpoint: at("/oauth/device_authorization"),
    revocation_endpoint: at("/oauth/revoke"),
    grant_types_supported: ["authorization_code", "urn:ietf:params:oauth:grant-type:device_code", "refresh_token"],
    response_types_supported: ["code"],
    code_challenge_methods_supported: ["S256"],
    token_endpoint_auth_methods_supported: ["none"],
    revocation_endpoint_auth_methods_supported: ["none"]
  }
}

export const MetadataRoute = Layer.unwrap(
  Effect.map(WebConfig, (config) => {
    const answer = HttpServerResponse.jsonUnsafe(metadataOf(config.publicBaseUrl))
    return HttpRouter.add("GET", "/.well-known/oauth-authorization-server", Effect.succeed(answer))
  })
)
