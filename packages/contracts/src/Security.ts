// The credentials each plane takes, as OpenAPI security schemes: a bearer per plane and the
// browser session cookie. Each plane's authentication middleware (its Caller.ts) declares them.
import { HttpApiSecurity, OpenApi } from "effect/http-api"

/** The browser session cookie, set when a human signs in (/login, /setup). */
export const browserSessionCookie = "troupe_session"

/** The OpenAPI name of the browser session scheme. */
export const browserSessionScheme = "browser_session"

const described = <A extends HttpApiSecurity.HttpApiSecurity>(security: A, description: string) =>
  HttpApiSecurity.annotate(security, OpenApi.Description, description)

export const platformBearer = described(
  HttpApiSecurity.bearer,
  "Platform plane (/api/v1): an API session token (POST /api/v1/session) or a platform access token " +
    "(the application client's human token, or a platform personal token)."
)

export const memberBearer = described(
  HttpApiSecurity.bearer,
  "Member plane (/agent_api/v1): a member access token (an agent's, from the device flow at " +
    "/oauth/token) or a human's member personal token."
)

export const executorBearer = described(
  HttpApiSecurity.bearer,
  "Executor transport: the executor_access_token of a connection (/oauth/token)."
)

export const browserSession = described(
  HttpApiSecurity.apiKey({ in: "cookie", key: browserSessionCookie }),
  "A signed-in human's browser session. On /api/v1 it authorizes same-site GET and HEAD only, and " +
    "never when an Authorization header is present."
)
