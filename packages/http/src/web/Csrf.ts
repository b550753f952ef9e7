// CSRF protection for every browser form (signed double submit): a random nonce in an httpOnly
// cookie, and in the form an HMAC of that nonce under the installation's CSRF key. A forged
// cross-site post has neither the cookie's nonce nor the key to sign it.
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import { InstallationSecrets } from "@troupe/domain/accounts/InstallationSecrets"
import { Context, Effect, Layer } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { csrfCookie } from "./Cookies.ts"
import { WebConfig } from "./WebConfig.ts"

export class CsrfKey extends Context.Service<CsrfKey, Uint8Array>()("@troupe/http/web/CsrfKey") {
  static readonly layer = Layer.effect(
    CsrfKey,
    Effect.flatMap(InstallationSecrets, (secrets) => secrets.secret("csrf"))
  )
}

const sign = (key: Uint8Array, nonce: string) => createHmac("sha256", key).update(nonce).digest("base64url")

export interface CsrfGrant {
  /** The hidden form field's value. */
  readonly token: string
  /** Sets the nonce cookie on a response when the browser did not have one. */
  readonly apply: (response: HttpServerResponse.HttpServerResponse) => HttpServerResponse.HttpServerResponse
}

/** The token to embed in a form, reusing the browser's nonce when it has one. */
export const grantCsrf = Effect.gen(function* () {
  const key = yield* CsrfKey
  const config = yield* WebConfig
  const request = yield* HttpServerRequest.HttpServerRequest
  const existing = request.cookies[csrfCookie]
  const nonce = existing && /^[A-Za-z0-9_-]{43}$/.test(existing) ? existing : randomBytes(32).toString("base64url")
  return {
    token: sign(key, nonce),
    apply: (response) =>
      nonce === existing
        ? response
        : HttpServerResponse.setCookieUnsafe(response, csrfCookie, nonce, {
            httpOnly: true,
            sameSite: "lax",
            path: "/",
            secure: config.secureCookies
          })
  } satisfies CsrfGrant
})

/** True when the form's token is the signature of the browser's nonce. */
export const csrfValid = (formToken: string | undefined) =>
  Effect.gen(function* () {
    const key = yield* CsrfKey
    const request = yield* HttpServerRequest.HttpServerRequest
    const nonce = request.cookies[csrfCookie]
    if (!nonce || !formToken) return false
    const expected = Buffer.from(sign(key, nonce))
    const actual = Buffer.from(formToken)
    return expected.length === actual.length && timingSafeEqual(expected, actual)
  })

export const csrfField = (grant: CsrfGrant) => `<input type="hidden" name="csrf_token" value="${grant.token}">`
