// The platform-plane caller: who an authenticated /api/v1 request acts as, and the credential
// it presented. Declared here so endpoint definitions can require it; the http package
// implements the middleware that provides it.
import { Context } from "effect"
import { HttpApiMiddleware } from "effect/http-api"
import { NotFound, Unauthorized } from "../Errors.ts"
import type { CallerIdentity } from "../Idempotency.ts"
import { browserSession, browserSessionScheme, platformBearer } from "../Security.ts"

export type Role = "owner" | "admin" | "member"

export interface PlatformCaller {
  readonly user: {
    readonly id: bigint
    readonly publicId: string
    readonly role: Role
    readonly email: string
    readonly displayName: string
    readonly handle: string
  }
  readonly credential:
    | {
        readonly kind: "session"
        readonly id: bigint
        readonly publicId: string
        readonly sessionKind: "api" | "browser"
        readonly expiresAt: Date
      }
    | {
        /** A platform access token: the application client's human lineage, or a personal token. */
        readonly kind: "access_token"
        readonly id: bigint
        readonly publicId: string
        readonly expiresAt: Date | null
      }
}

export class CurrentPlatformCaller extends Context.Service<CurrentPlatformCaller, PlatformCaller>()(
  "@troupe/contracts/platform/CurrentPlatformCaller"
) {}

/**
 * Platform-plane authentication. A present Authorization header is authoritative (no cookie
 * fallback); without one, the browser session cookie authorizes safe reads only. The bearer is
 * listed first because the server tries the schemes in this order and API clients send it;
 * /openapi.json lists the cookie first (Api.ts).
 */
export class PlatformAuthentication extends HttpApiMiddleware.Service<
  PlatformAuthentication,
  { provides: CurrentPlatformCaller | CallerIdentity }
>()("@troupe/contracts/platform/PlatformAuthentication", {
  error: [Unauthorized, NotFound],
  security: { platform_bearer: platformBearer, [browserSessionScheme]: browserSession }
}) {}
