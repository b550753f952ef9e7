// RFC 8414 authorization server metadata, so standard OAuth clients find the endpoints.
import { Effect } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { WebConfig } from "../web/WebConfig.ts"

export const MetadataRoute = HttpRouter.add(
  "GET",
  "/.well-known/oauth-authorization-server",
  Effect.map(WebConfig, (config) => {
    const at = (path: string) => new URL(path, config.publicBaseUrl).toString()
    return HttpServerResponse.jsonUnsafe({
      issuer: config.publicBaseUrl.toString().replace(/\/$/, ""),
      authorization_endpoint: at("/oauth/authorize"),
      token_endpoint: at("/oauth/token"),
      device_authorization_endpoint: at("/oauth/device_authorization"),
      revocation_endpoint: at("/oauth/revoke"),
      grant_types_supported: ["authorization_code", "urn:ietf:params:oauth:grant-type:device_code", "refresh_token"],
      response_types_supported: ["code"],
      code_challenge_methods_supported: ["S256"],
      token_endpoint_auth_methods_supported: ["none"],
      revocation_endpoint_auth_methods_supported: ["none"]
    })
  })
)
