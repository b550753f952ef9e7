// The typed SDK of Troupe's JSON API: an HttpApiClient of the contracts' TroupeApi (the same
// declaration the server is built from) at a base URL, with a bearer token on every request.
import { TroupeApi } from "@troupe/contracts/Api"
import { type ErrorBody, statusOfCode } from "@troupe/contracts/Errors"
import { Context, Layer, Redacted } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import { HttpApiClient } from "effect/http-api"
import { type Bearer, withBearer } from "./Bearer.ts"

export interface TroupeClientConfig {
  /** Where the server answers, e.g. http://localhost:4000. */
  readonly baseUrl: string | URL
  /** The plane's bearer credential (API session token, access token or personal token), if any. */
  readonly token?: Redacted.Redacted<string> | undefined
  /** Instead of `token`: a credential that may renew itself after a 401 (Bearer.ts). */
  readonly bearer?: Bearer | undefined
}

/** Every group of the API as typed methods: `client.admin.supervisors()`, `client.workspaces.create(...)`. */
export type TroupeApiClient = HttpApiClient.ForApi<typeof TroupeApi>

/** The client over the `HttpClient` in context (fetch, Node, or a test double). */
export const makeTroupeClient = (config: TroupeClientConfig) =>
  HttpApiClient.make(TroupeApi, {
    baseUrl: config.baseUrl,
    transformClient: (client) => {
      const token = config.token
      if (config.bearer !== undefined) return withBearer(client, config.bearer)
      return token === undefined
        ? client
        : HttpClient.mapRequest(client, HttpClientRequest.bearerToken(Redacted.value(token)))
    }
  })

export class TroupeClient extends Context.Service<TroupeClient, TroupeApiClient>()("@troupe/client/TroupeClient") {
  /** The client over the platform's `fetch`. */
  static readonly layer = (config: TroupeClientConfig) =>
    Layer.effect(TroupeClient, makeTroupeClient(config)).pipe(Layer.provide(FetchHttpClient.layer))
}

/** The HTTP status the spec's Errors table gives an envelope refusal's code (undefined when unlisted). */
export const statusOfRefusal = (error: { readonly error: ErrorBody }): number | undefined =>
  (statusOfCode as Record<string, number>)[error.error.code]
