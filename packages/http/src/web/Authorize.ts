// The application client's consent (GET/POST /oauth/authorize). A request that cannot be sent
// back (unknown client or callback) gets an error page; other faults go back to the validated
// callback as RFC 6749 errors. The human must be signed in; before first boot the validated
// request waits behind /setup and resumes after the owner exists. Approving issues a code.

import { Accounts } from "@troupe/domain/accounts/Accounts"
import { ApplicationLogin, type AuthorizeRequest, validateAuthorize } from "@troupe/domain/connections/ApplicationLogin"
import { Effect, Option } from "effect"
import { HttpRouter, HttpServerRequest } from "effect/http"
import { csrfField, csrfValid, grantCsrf } from "./Csrf.ts"
import { readForm } from "./Form.ts"
import { errorBox, escapeHtml, page, redirect } from "./Html.ts"
import { currentBrowserSession } from "./Session.ts"
import { WebConfig } from "./WebConfig.ts"

const back = (redirectUri: string, params: Record<string, string | undefined>) => {
  const url = new URL(redirectUri)
  for (const [name, value] of Object.entries(params)) if (value !== undefined) url.searchParams.set(name, value)
  return redirect(url.toString())
}

const describe = (request: AuthorizeRequest) => {
  const r = request.registration
  const rows: Array<[string, string]> = [["Signs you in as", "you"]]
  if (request.mode === "connect" && (r?.branch === "agent" || r?.branch === "combined")) {
    rows.push(["Connects its agent", `${r.agentDisplayName} (${r.agentIdentifier})`])
  }
  if (request.mode === "connect" && (r?.branch === "machine" || r?.branch === "combined")) {
    rows.push(["And its runner", `${r.runnerDisplayName} (${r.registrationIdentifier})`])
  }
  return `<table>${rows.map(([k, v]) => `<tr><th>${escapeHtml(k)}</th><td>${escapeHtml(v)}</td></tr>`).join("")}</table>`
}

/**
 * The consent page's policy: its form may post here and be sent on to the validated (http or https)
 * callback's origin, as browsers hold a form's redirects to form-action. CSP has no IPv6 host
 * source, so a callback at an IPv6 literal lifts form-action on this page alone.
 */
const consentPolicy = (redirectUri: string) => {
  const callback = new URL(redirectUri)
  const formAction = callback.hostname.startsWith("[") ? "" : ` form-action 'self' ${callback.origin};`
  return `default-src 'none'; style-src 'unsafe-inline';${formAction} frame-ancestors 'none'`
}

/**
 * The authorization request in the query, validated; or, for one that cannot go on, its answer:
 * an error page when it cannot be sent back, else the fault back at the client's callback.
 */
const authorizationRequest = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const query = new URL(request.url, "http://troupe.invalid").searchParams
  const config = yield* WebConfig
  const validation = validateAuthorize(query, config.redirectPolicy)
  switch (validation._tag) {
    case "Unredirectable":
      return {
        _tag: "Answered",
        answer: page("Cannot connect", `<h1>Cannot connect</h1>${errorBox(validation.description)}`, 400)
      } as const
    case "RedirectError":
      return {
        _tag: "Answered",
        answer: back(validation.redirectUri, {
          error: validation.error,
          error_description: validation.description,
          state: validation.state
        })
      } as const
    default:
      return { _tag: "Valid", query, authorization: validation.request } as const
  }
})

export const AuthorizePage = HttpRouter.add(
  "GET",
  "/oauth/authorize",
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const valid = yield* authorizationRequest
    if (valid._tag === "Answered") return valid.answer
    const { query, authorization } = valid
    const accounts = yield* Accounts
    if (!(yield* accounts.isInitialized)) return redirect(`/setup?return_to=${encodeURIComponent(request.url)}`)
    const current = yield* currentBrowserSession
    if (Option.isNone(current)) return redirect(`/login?return_to=${encodeURIComponent(request.url)}`)
    const grant = yield* grantCsrf
    return grant.apply(
      page(
        "Connect an application",
        `<h1>Connect an application</h1>
<p>An application at <code>${escapeHtml(new URL(authorization.redirectUri).host)}</code> asks to:</p>
${describe(authorization)}
<form method="post" action="/oauth/authorize?${escapeHtml(query.toString())}">
${csrfField(grant)}
<button type="submit" name="decision" value="approve" id="approve">Approve</button>
<button type="submit" name="decision" value="deny" id="deny">Deny</button>
</form>`,
        200,
        { "content-security-policy": consentPolicy(authorization.redirectUri) }
      )
    )
  })
)

export const AuthorizeSubmit = HttpRouter.add(
  "POST",
  "/oauth/authorize",
  Effect.gen(function* () {
    const valid = yield* authorizationRequest
    if (valid._tag === "Answered") return valid.answer
    const { query, authorization } = valid
    const current = yield* currentBrowserSession
    if (Option.isNone(current)) return redirect(`/login?return_to=${encodeURIComponent(`/oauth/authorize?${query}`)}`)
    const form = yield* readForm
    if (!(yield* csrfValid(form.csrf_token))) {
      return page(
        "Connect an application",
        `<h1>Connect an application</h1>${errorBox("This form expired. Start again.")}`,
        403
      )
    }
    const { redirectUri, state } = authorization
    if (form.decision !== "approve") return back(redirectUri, { error: "access_denied", state })
    const login = yield* ApplicationLogin
    return yield* login.issueCode(authorization, current.value.user).pipe(
      Effect.map((code) => back(redirectUri, { code, state })),
      Effect.catchTag("CodeRefused", (refused) =>
        Effect.succeed(back(redirectUri, { error: "access_denied", error_description: refused.reason, state }))
      )
    )
  })
)
