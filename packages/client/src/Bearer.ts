// The credential a client presents, and what happens on a 401: a fixed token, or a renewing one
// (an OAuth lineage) that refreshes once, for every caller at a time, and sends the request again.
import { Effect, Redacted, Ref, Semaphore } from "effect"
import { HttpClient, HttpClientRequest } from "effect/http"

export interface Bearer {
  /** The token to present now. */
  readonly token: Effect.Effect<Redacted.Redacted<string>>
  /**
   * Asked after a 401 answered `rejected`: renews the credential unless another caller already
   * did. Answers whether the request should be sent again.
   */
  readonly renew: (rejected: Redacted.Redacted<string>) => Effect.Effect<boolean>
}

/** A token that never changes (a personal access token, a session): a 401 stands. */
export const fixedBearer = (token: Redacted.Redacted<string>): Bearer => ({
  token: Effect.succeed(token),
  renew: () => Effect.succeed(false)
})

/** What a lineage holds: the access token and the refresh token that renews it. */
export interface LineageTokens {
  readonly access_token: string
  readonly refresh_token: string
}

/**
 * A lineage's access token, refreshed through `refresh` after a 401 (one refresh at a time: a
 * refresh token is single use). `refresh` answers the new pair, or fails when the lineage ended
 * (then the 401 stands). `saved` runs with every new pair, before it is used.
 */
export const renewingBearer = <E>(options: {
  readonly tokens: LineageTokens
  readonly refresh: (refreshToken: string) => Effect.Effect<LineageTokens, E>
  readonly saved?: (tokens: LineageTokens) => Effect.Effect<void>
}) =>
  Effect.gen(function* () {
    const current = yield* Ref.make(options.tokens)
    const oneAtATime = yield* Semaphore.make(1)
    const renew = (rejected: Redacted.Redacted<string>) =>
      Effect.gen(function* () {
        const held = yield* Ref.get(current)
        if (held.access_token !== Redacted.value(rejected)) return true
        const renewed = yield* options.refresh(held.refresh_token).pipe(Effect.option)
        if (renewed._tag === "None") return false
        yield* options.saved?.(renewed.value) ?? Effect.void
        yield* Ref.set(current, renewed.value)
        return true
      }).pipe(oneAtATime.withPermit)
    return {
      token: Effect.map(Ref.get(current), (tokens) => Redacted.make(tokens.access_token)),
      renew
    } satisfies Bearer
  })

/** `client` presenting `bearer` on every request, renewing and sending once more after a 401. */
export const withBearer = (client: HttpClient.HttpClient, bearer: Bearer): HttpClient.HttpClient => {
  const send = (request: HttpClientRequest.HttpClientRequest) =>
    Effect.flatMap(bearer.token, (token) =>
      Effect.map(client.execute(HttpClientRequest.bearerToken(request, Redacted.value(token))), (response) => ({
        response,
        token
      }))
    )
  return HttpClient.transform(client, (_unauthenticated, request) =>
    Effect.flatMap(send(request), ({ response, token }) =>
      response.status !== 401
        ? Effect.succeed(response)
        : Effect.flatMap(bearer.renew(token), (again) =>
            again ? Effect.map(send(request), (retried) => retried.response) : Effect.succeed(response)
          )
    )
  )
}
