// The device flow (RFC 8628) of an agent program or runner, through the contract's OAuth group:
// start a connection, poll /oauth/token at the server's interval (slow_down raises it), refresh.
import { DocumentedApi } from "@troupe/contracts/Api"
import { Data, Duration, Effect } from "effect"
import { FetchHttpClient, HttpClient } from "effect/http"
import { HttpApiClient } from "effect/http-api"

const connector = "svc-first-party-connector"
const deviceGrant = "urn:ietf:params:oauth:grant-type:device_code"

/** What the server answers while a connection is not yet approved (RFC 8628 section 3.5). */
interface TokenRefusal {
  readonly error: string
  readonly error_description: string
  readonly interval?: number | undefined
}

const isTokenRefusal = (error: unknown): error is TokenRefusal =>
  typeof error === "object" && error !== null && typeof (error as { error?: unknown }).error === "string"

/** An OAuth refusal that ends polling: denied, expired, or anything but pending and slow_down. */
export class DeviceFlowRefused extends Data.TaggedError("DeviceFlowRefused")<{ readonly refusal: TokenRefusal }> {
  override get message() {
    return `${this.refusal.error}: ${this.refusal.error_description}`
  }
}

/** The OAuth client of the server at `baseUrl`, over the `HttpClient` in context. */
export const makeDeviceFlow = (baseUrl: string | URL) =>
  Effect.gen(function* () {
    const oauth = yield* HttpApiClient.group(DocumentedApi, {
      group: "oauth",
      httpClient: yield* HttpClient.HttpClient,
      baseUrl
    })
    type StartRequest = Omit<Parameters<typeof oauth.deviceAuthorization>[0]["payload"], "client_id">

    /** Starts a connection (branch A: agent_identifier...; branch B: registration_identifier...). */
    const start = (request: StartRequest) =>
      oauth.deviceAuthorization({ payload: { ...request, client_id: connector } })

    const exchange = (deviceCode: string) =>
      oauth.token({ payload: { grant_type: deviceGrant, client_id: connector, device_code: deviceCode } })

    /**
     * Asks for the credentials now, then every `interval` seconds while the answer is
     * authorization_pending; slow_down sets the interval the server names (else adds 5 s).
     */
    const poll = (authorization: { readonly device_code: string; readonly interval: number }) =>
      Effect.gen(function* () {
        let interval = authorization.interval
        while (true) {
          const answer = yield* exchange(authorization.device_code).pipe(
            Effect.map((tokens) => ({ tokens }) as const),
            Effect.catchIf(isTokenRefusal, (refusal) => Effect.succeed({ refusal }))
          )
          if ("tokens" in answer) return answer.tokens
          const { refusal } = answer
          if (refusal.error === "slow_down") interval = refusal.interval ?? interval + 5
          else if (refusal.error !== "authorization_pending")
            return yield* Effect.fail(new DeviceFlowRefused({ refusal }))
          yield* Effect.sleep(Duration.seconds(interval))
        }
      })

    /** Rotates the lineage: the newest refresh token in, a fresh bundle out. */
    const refresh = (refreshToken: string) =>
      oauth.token({ payload: { grant_type: "refresh_token", client_id: connector, refresh_token: refreshToken } })

    return { start, poll, refresh, cancel: oauth.deviceAuthorizationCancellation, revoke: oauth.revoke } as const
  })

/** The device flow over the platform's `fetch`. */
export const deviceFlow = (baseUrl: string | URL) => makeDeviceFlow(baseUrl).pipe(Effect.provide(FetchHttpClient.layer))
