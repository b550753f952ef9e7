// POST /oauth/device_authorization starts a device connection; POST
// /oauth/device_authorization/cancellation asks which side won (canceled or consumed).
import { DeviceFlow } from "@troupe/domain/connections/DeviceFlow"
import { formatUserCode, parseDeviceAuthorizationRequest } from "@troupe/domain/connections/DeviceRequest"
import { RateLimiter } from "@troupe/domain/kernel/RateLimiter"
import { Effect } from "effect"
import { HttpRouter, HttpServerRequest } from "effect/http"
import { clientAddress } from "../conventions/ClientAddress.ts"
import { publicUrl, WebConfig } from "../web/WebConfig.ts"
import { readOAuthParams } from "./Params.ts"
import { clientRefusal, knownClient, oauthError, oauthJson } from "./Responses.ts"

const startLimit = { scope: "oauth.device_authorization", limit: 30, windowSeconds: 60 }
export const cancelLimit = { scope: "oauth.cancellation", limit: 60, windowSeconds: 60 }

/** Counts the request against a per-IP budget; answers the 429 when it is spent. */
export const limited = (limit: { scope: string; limit: number; windowSeconds: number }) =>
  Effect.gen(function* () {
    const limiter = yield* RateLimiter
    return yield* limiter.consume(limit, yield* clientAddress).pipe(
      Effect.as(undefined),
      Effect.catchTag("RateLimitExceeded", (exceeded) =>
        Effect.succeed(
          oauthError("rate_limited", "Too many requests", 429, { "retry-after": String(exceeded.retryAfterSeconds) })
        )
      )
    )
  })

export const DeviceAuthorizationRoute = HttpRouter.add(
  "POST",
  "/oauth/device_authorization",
  Effect.gen(function* () {
    const refused = yield* limited(startLimit)
    if (refused) return refused
    const request = yield* HttpServerRequest.HttpServerRequest
    const body = yield* Effect.orDie(request.text)
    const parsed = parseDeviceAuthorizationRequest(request.headers["content-type"], body)
    if (parsed._tag === "Invalid") return oauthError(parsed.error, parsed.description)
    const config = yield* WebConfig
    const flow = yield* DeviceFlow
    return yield* flow.start(parsed.request).pipe(
      Effect.map((started) => {
        const verification = publicUrl(config.publicBaseUrl, "/oauth/device")
        const complete = new URL(verification)
        complete.searchParams.set("user_code", formatUserCode(started.userCode))
        return oauthJson({
          device_code: started.deviceCode,
          user_code: formatUserCode(started.userCode),
          verification_uri: verification.toString(),
          verification_uri_complete: complete.toString(),
          expires_in: started.expiresIn,
          interval: started.interval
        })
      }),
      Effect.catchTag("NotInitialized", () =>
        Effect.succeed(
          oauthJson(
            {
              error: "initialization_required",
              error_description: "This installation has no owner yet; set it up first",
              initialization_uri: publicUrl(config.publicBaseUrl, "/setup").toString()
            },
            409
          )
        )
      )
    )
  })
)

export const CancellationRoute = HttpRouter.add(
  "POST",
  "/oauth/device_authorization/cancellation",
  Effect.gen(function* () {
    const refused = yield* limited(cancelLimit)
    if (refused) return refused
    const read = yield* readOAuthParams
    if (read._tag === "Invalid") return oauthError("invalid_request", read.description)
    const { client_id: clientId, device_code: deviceCode } = read.params
    if (!knownClient(clientId)) return clientRefusal(clientId)
    if (!deviceCode) return oauthError("invalid_request", "device_code is required")
    const flow = yield* DeviceFlow
    return oauthJson({ status: yield* flow.cancel(deviceCode, clientId) })
  })
)
