// POST /oauth/token: the device grant (polling) and refresh. Token responses follow the spec's
// "Token response" (application client) and SUPPLEMENT's connector shape (never a scope member).

import type { IssuedLineage } from "@troupe/domain/accounts/Credentials"
import { Credentials } from "@troupe/domain/accounts/Credentials"
import { ApplicationLogin } from "@troupe/domain/connections/ApplicationLogin"
import type { ConnectionIssued } from "@troupe/domain/connections/Connections"
import { DeviceFlow } from "@troupe/domain/connections/DeviceFlow"
import { applicationClientId } from "@troupe/domain/connections/DeviceRequest"
import { Effect } from "effect"
import { HttpRouter } from "effect/http"
import { readOAuthParams } from "./Params.ts"
import { clientRefusal, knownClient, oauthError, oauthJson } from "./Responses.ts"

const deviceGrant = "urn:ietf:params:oauth:grant-type:device_code"

const bundle = (issued: IssuedLineage) => ({
  access_token: issued.accessToken,
  token_type: "Bearer",
  expires_in: issued.expiresIn,
  refresh_token: issued.refreshToken,
  plane: issued.plane,
  ...(issued.executorAccessToken === undefined ? {} : { executor_access_token: issued.executorAccessToken })
})

const runnerBundle = (issued: IssuedLineage) => ({
  access_token: issued.accessToken,
  token_type: "Bearer",
  expires_in: issued.expiresIn,
  refresh_token: issued.refreshToken
})

/** The application client's token response, or the connector's device token result. */
const tokenResponse = (clientId: string, issued: ConnectionIssued) => {
  const { human, agent, runner } = issued
  if (clientId === applicationClientId && human) {
    return oauthJson({
      ...bundle(human),
      scope: "application",
      user: { public_id: human.user.public_id, display_name: human.user.display_name, role: human.user.role },
      ...(agent ? { agent: bundle(agent) } : {}),
      ...(runner ? { runner: runnerBundle(runner) } : {})
    })
  }
  if (agent) return oauthJson({ ...bundle(agent), ...(runner ? { runner: runnerBundle(runner) } : {}) })
  return oauthJson(bundle(runner!))
}

export const TokenRoute = HttpRouter.add(
  "POST",
  "/oauth/token",
  Effect.gen(function* () {
    const read = yield* readOAuthParams
    if (read._tag === "Invalid") return oauthError("invalid_request", read.description)
    const params = read.params
    const clientId = params.client_id
    if (!knownClient(clientId)) return clientRefusal(clientId)
    switch (params.grant_type) {
      case deviceGrant: {
        if (!params.device_code) return oauthError("invalid_request", "device_code is required")
        const flow = yield* DeviceFlow
        const answer = yield* flow.poll(params.device_code, clientId)
        switch (answer._tag) {
          case "Pending":
            return oauthError("authorization_pending", "The person has not decided yet")
          case "SlowDown":
            return oauthJson(
              { error: "slow_down", error_description: "Poll less often", interval: answer.interval },
              400
            )
          case "Denied":
            return oauthError("access_denied", "The connection was not authorized")
          case "Expired":
            return oauthError("expired_token", "The device code expired; start again")
          case "InvalidGrant":
            return oauthError("invalid_grant", "Unknown or already used device code")
          case "Issued":
            return tokenResponse(clientId, answer.issued)
        }
        break
      }
      case "authorization_code": {
        if (clientId !== applicationClientId)
          return oauthError("unauthorized_client", "Only svc-application uses codes")
        const { code, redirect_uri: redirectUri, code_verifier: codeVerifier } = params
        if (!code || !redirectUri || !codeVerifier) {
          return oauthError("invalid_request", "code, redirect_uri and code_verifier are required")
        }
        const login = yield* ApplicationLogin
        return yield* login.exchange({ code, clientId, redirectUri, codeVerifier }).pipe(
          Effect.map((issued) => tokenResponse(clientId, issued)),
          Effect.catchTag("InvalidCode", (invalid) => Effect.succeed(oauthError("invalid_grant", invalid.reason)))
        )
      }
      case "refresh_token": {
        if (!params.refresh_token) return oauthError("invalid_request", "refresh_token is required")
        const credentials = yield* Credentials
        return yield* credentials.refresh(params.refresh_token, clientId).pipe(
          Effect.map((issued) =>
            oauthJson(issued.holder === "runner" ? { ...runnerBundle(issued), plane: issued.plane } : bundle(issued))
          ),
          Effect.catchTag("InvalidGrant", () =>
            Effect.succeed(oauthError("invalid_grant", "The refresh token is not valid"))
          )
        )
      }
      case undefined:
        return oauthError("invalid_request", "grant_type is required")
    }
    return oauthError("unsupported_grant_type", "Use the authorization_code, device_code or refresh_token grant")
  })
)
