// Browser sign-in: GET/POST /login sets the session cookie (kind browser); POST /logout revokes
// it. Attempts share the session login budget (10 per 3 minutes per source IP).
import { Accounts } from "@troupe/domain/accounts/Accounts"
import { Sessions } from "@troupe/domain/accounts/Sessions"
import { RateLimiter, sessionLoginLimit } from "@troupe/domain/kernel/RateLimiter"
import { Effect, Option } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { clientAddress } from "../conventions/ClientAddress.ts"
import { csrfField, csrfValid, grantCsrf } from "./Csrf.ts"
import { readForm } from "./Form.ts"
import { errorBox, escapeHtml, field, page, redirect, tryAgain } from "./Html.ts"
import { currentBrowserSession, safeReturnTo, withoutSessionCookie, withSessionCookie } from "./Session.ts"

const loginForm = (
  values: { readonly email?: string | undefined; readonly return_to?: string | undefined },
  error?: string,
  status = 200
) =>
  Effect.map(grantCsrf, (grant) =>
    grant.apply(
      page(
        "Sign in",
        `<h1>Sign in to Troupe</h1>
${errorBox(error)}
<form method="post" action="/login">
${csrfField(grant)}
<input type="hidden" name="return_to" value="${escapeHtml(safeReturnTo(values.return_to))}">
${field("email", "Email", { type: "email", value: values.email, autocomplete: "email" })}
${field("password", "Password", { type: "password", autocomplete: "current-password" })}
<button type="submit">Sign in</button>
</form>`,
        status
      )
    )
  )

const returnToQuery = Effect.map(
  HttpServerRequest.HttpServerRequest,
  (request) => new URL(request.url, "http://troupe.invalid").searchParams.get("return_to") ?? undefined
)

export const LoginPage = HttpRouter.add(
  "GET",
  "/login",
  Effect.gen(function* () {
    const accounts = yield* Accounts
    if (!(yield* accounts.isInitialized)) return redirect("/setup")
    const returnTo = yield* returnToQuery
    if (Option.isSome(yield* currentBrowserSession)) return redirect(safeReturnTo(returnTo))
    return yield* loginForm({ return_to: returnTo })
  })
)

export const LoginSubmit = HttpRouter.add(
  "POST",
  "/login",
  Effect.gen(function* () {
    const form = yield* readForm
    if (!(yield* csrfValid(form.csrf_token))) {
      return yield* loginForm(form, "This form expired. Please sign in again.", 403)
    }
    const limiter = yield* RateLimiter
    const limited = yield* limiter.consume(sessionLoginLimit, yield* clientAddress).pipe(
      Effect.as(undefined),
      Effect.catchTag("RateLimitExceeded", (exceeded) => Effect.succeed(exceeded.retryAfterSeconds))
    )
    if (limited !== undefined) {
      const response = yield* loginForm(form, "Too many sign-in attempts. Wait a few minutes and try again.", 429)
      return HttpServerResponse.setHeader(response, "retry-after", String(limited))
    }
    const sessions = yield* Sessions
    const signedIn = yield* Effect.option(sessions.signIn(form.email, form.password, "browser"))
    if (Option.isNone(signedIn)) return yield* loginForm(form, "The email or password is not correct.", 401)
    return yield* withSessionCookie(redirect(safeReturnTo(form.return_to)), signedIn.value.token)
  })
)

export const LogoutSubmit = HttpRouter.add(
  "POST",
  "/logout",
  Effect.gen(function* () {
    const form = yield* readForm
    if (!(yield* csrfValid(form.csrf_token))) {
      return page(
        "Sign out",
        `<h1>Sign out</h1>${errorBox("This form expired. Go back and try again.")}${tryAgain("/")}`,
        403
      )
    }
    const current = yield* currentBrowserSession
    if (Option.isSome(current)) {
      const sessions = yield* Sessions
      yield* sessions.revoke(current.value.session.public_id)
    }
    return yield* withoutSessionCookie(redirect("/login"))
  })
)
