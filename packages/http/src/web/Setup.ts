// First boot: GET/POST /setup creates the owner while the instance is uninitialized (with the
// setup secret when SERVICE_SETUP_SECRET is set), signs them in, and refuses afterwards.
import { timingSafeEqual } from "node:crypto"
import { Accounts } from "@troupe/domain/accounts/Accounts"
import { Sessions } from "@troupe/domain/accounts/Sessions"
import { RateLimiter } from "@troupe/domain/kernel/RateLimiter"
import { Effect, Redacted } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { clientAddress } from "../conventions/ClientAddress.ts"
import { csrfField, csrfValid, grantCsrf } from "./Csrf.ts"
import { readForm } from "./Form.ts"
import { errorBox, escapeHtml, field, page, redirect } from "./Html.ts"
import { safeReturnTo, withSessionCookie } from "./Session.ts"
import { WebConfig } from "./WebConfig.ts"

const setupLimit = { scope: "web.setup", limit: 10, windowSeconds: 180 }

interface SetupValues {
  readonly display_name?: string | undefined
  readonly email?: string | undefined
  readonly handle?: string | undefined
  readonly return_to?: string | undefined
}

const setupForm = (values: SetupValues, error?: string, status = 200) =>
  Effect.gen(function* () {
    const grant = yield* grantCsrf
    const config = yield* WebConfig
    const secret = config.setupSecret
      ? field("setup_secret", "Setup secret", { type: "password", autocomplete: "off" }) +
        `<p class="hint">Printed by whoever installed this server (SERVICE_SETUP_SECRET).</p>`
      : ""
    return grant.apply(
      page(
        "Set up Troupe",
        `<h1>Set up Troupe</h1>
<p>Create the owner of this installation. You can invite admins and members afterwards.</p>
${errorBox(error)}
<form method="post" action="/setup">
${csrfField(grant)}
<input type="hidden" name="return_to" value="${escapeHtml(values.return_to ?? "/")}">
${field("display_name", "Your name", { value: values.display_name, autocomplete: "name" })}
${field("email", "Email", { type: "email", value: values.email, autocomplete: "email" })}
${field("handle", "Handle (optional)", { value: values.handle, required: false, autocomplete: "username" })}
${field("password", "Password (at least 8 characters)", { type: "password", autocomplete: "new-password" })}
${secret}
<button type="submit">Create owner</button>
</form>`,
        status
      )
    )
  })

const alreadySetUp = page(
  "Already set up",
  `<h1>Already set up</h1><p>This installation already has an owner. <a href="/login">Sign in</a>.</p>`,
  403
)

const secretMatches = (expected: Redacted.Redacted<string>, presented: string | undefined) => {
  const a = Buffer.from(Redacted.value(expected))
  const b = Buffer.from(presented ?? "")
  return a.length === b.length && timingSafeEqual(a, b)
}

export const SetupPage = HttpRouter.add(
  "GET",
  "/setup",
  Effect.gen(function* () {
    const accounts = yield* Accounts
    const request = yield* HttpServerRequest.HttpServerRequest
    const returnTo = new URL(request.url, "http://troupe.invalid").searchParams.get("return_to") ?? undefined
    if (yield* accounts.isInitialized) {
      return redirect(
        returnTo === undefined ? "/login" : `/login?return_to=${encodeURIComponent(safeReturnTo(returnTo))}`
      )
    }
    return yield* setupForm({ return_to: safeReturnTo(returnTo) })
  })
)

export const SetupSubmit = HttpRouter.add(
  "POST",
  "/setup",
  Effect.gen(function* () {
    const form = yield* readForm
    if (!(yield* csrfValid(form.csrf_token))) {
      return yield* setupForm(form, "This form expired. Please submit it again.", 403)
    }
    const accounts = yield* Accounts
    if (yield* accounts.isInitialized) return alreadySetUp
    const limiter = yield* RateLimiter
    const limited = yield* limiter.consume(setupLimit, yield* clientAddress).pipe(
      Effect.as(undefined),
      Effect.catchTag("RateLimitExceeded", (exceeded) => Effect.succeed(exceeded.retryAfterSeconds))
    )
    if (limited !== undefined) {
      const response = yield* setupForm(form, "Too many attempts. Wait a few minutes and try again.", 429)
      return HttpServerResponse.setHeader(response, "retry-after", String(limited))
    }
    const config = yield* WebConfig
    if (config.setupSecret && !secretMatches(config.setupSecret, form.setup_secret)) {
      return yield* setupForm(form, "The setup secret is not correct.", 403)
    }
    const created = yield* accounts
      .createOwner({
        email: form.email ?? "",
        password: form.password ?? "",
        displayName: form.display_name ?? "",
        handle: form.handle
      })
      .pipe(
        Effect.map(() => undefined),
        Effect.catchTags({
          AlreadyInitialized: () => Effect.succeed("already" as const),
          InvalidInput: (e) => Effect.succeed(e.message),
          EmailTaken: () => Effect.succeed("That email is already in use."),
          HandleTaken: () => Effect.succeed("That handle is taken; choose another.")
        })
      )
    if (created === "already") return alreadySetUp
    if (created !== undefined) return yield* setupForm(form, created, 422)
    const sessions = yield* Sessions
    const signedIn = yield* sessions.signIn(form.email, form.password, "browser").pipe(Effect.orDie)
    return yield* withSessionCookie(redirect(safeReturnTo(form.return_to)), signedIn.token)
  })
)
