// The personal access tokens page (SUPPLEMENT "Human member-plane credentials"): a signed-in
// human lists their tokens, mints one for the platform or member plane (its secret shown once, on
// the answer to the form and never again) and revokes one, through CSRF-protected forms.
import type { User } from "@troupe/domain/accounts/Accounts"
import { Credentials, type PersonalTokenView } from "@troupe/domain/accounts/Credentials"
import { Effect } from "effect"
import { HttpRouter } from "effect/http"
import { type CsrfGrant, csrfField, csrfValid, grantCsrf } from "./Csrf.ts"
import { readForm } from "./Form.ts"
import { errorBox, escapeHtml, field, page, redirect, tryAgain } from "./Html.ts"
import { signedInHuman } from "./Session.ts"

const planes = {
  platform: "Platform API (/api/v1)",
  member: "Member API (/agent_api/v1)"
} as const

type Plane = keyof typeof planes

const isPlane = (value: string | undefined): value is Plane => value === "platform" || value === "member"

const when = (date: Date) =>
  `<time datetime="${date.toISOString()}">${date.toISOString().slice(0, 16).replace("T", " ")} UTC</time>`

const tokenRow = (token: PersonalTokenView, grant: CsrfGrant) =>
  `<tr data-token="${escapeHtml(token.public_id)}"><td>${escapeHtml(token.name)}</td><td>${token.plane}</td>
<td>${when(token.issued_at)}</td><td>${when(token.expires_at)}</td><td class="state">${token.state}</td><td>${
    token.state === "active"
      ? `<form method="post" action="/tokens/${escapeHtml(token.public_id)}/revoke">${csrfField(grant)}<button type="submit">Revoke</button></form>`
      : ""
  }</td></tr>`

const planeChoice = (chosen: Plane) =>
  `<fieldset><legend>Plane</legend>${Object.entries(planes)
    .map(
      ([plane, label]) =>
        `<label><input type="radio" name="plane" value="${plane}"${plane === chosen ? " checked" : ""}> ${label}</label>`
    )
    .join("\n")}</fieldset>`

/** The list and the mint form; after a refused mint, with its values and the reason. */
const tokensPage = (
  human: User,
  refused?: { readonly name: string; readonly plane: Plane; readonly message: string; readonly status: number }
) =>
  Effect.gen(function* () {
    const tokens = yield* (yield* Credentials).personalTokens(human)
    const grant = yield* grantCsrf
    return grant.apply(
      page(
        "Personal access tokens",
        `<h1>Personal access tokens</h1>
<p class="hint">A personal access token acts as you on one plane for 14 days. It is shown once, when you create it.</p>
${errorBox(refused?.message)}
<form method="post" action="/tokens">
${csrfField(grant)}
${field("name", "Name", { value: refused?.name, autocomplete: "off" })}
${planeChoice(refused?.plane ?? "platform")}
<button type="submit">Create token</button>
</form>
<h2>Your tokens</h2>${
          tokens.length
            ? `<table><tr><th>Name</th><th>Plane</th><th>Created</th><th>Expires</th><th>State</th><th></th></tr>${tokens
                .map((token) => tokenRow(token, grant))
                .join("")}</table>`
            : `<p class="hint">You have no personal access tokens.</p>`
        }`,
        refused?.status ?? 200
      )
    )
  })

const formExpired = page(
  "Not done",
  `<h1>Not done</h1>${errorBox("This form expired. Go back and try again.")}${tryAgain("/tokens")}`,
  403
)

export const TokensPage = HttpRouter.add(
  "GET",
  "/tokens",
  Effect.gen(function* () {
    const human = yield* signedInHuman
    if (!human) return redirect("/login?return_to=%2Ftokens")
    return yield* tokensPage(human)
  })
)

export const CreateToken = HttpRouter.add(
  "POST",
  "/tokens",
  Effect.gen(function* () {
    const human = yield* signedInHuman
    if (!human) return redirect("/login?return_to=%2Ftokens")
    const form = yield* readForm
    if (!(yield* csrfValid(form.csrf_token))) return formExpired
    const name = form.name ?? ""
    if (!isPlane(form.plane)) {
      return yield* tokensPage(human, { name, plane: "platform", message: "Choose a plane.", status: 422 })
    }
    const plane = form.plane
    const minted = yield* (yield* Credentials).personalToken(human, plane, name).pipe(Effect.result)
    if (minted._tag === "Failure") {
      return yield* tokensPage(human, { name, plane, message: minted.failure.message, status: 422 })
    }
    // The only time the secret is shown: this answer is never stored (no-store) and not logged.
    return page(
      "Token created",
      `<h1>Token created</h1>
<p>Copy this ${escapeHtml(planes[plane])} token now: it will not be shown again.</p>
<p><code id="token" style="word-break: break-all">${escapeHtml(minted.success)}</code></p>
<p><a href="/tokens">Back to your tokens</a></p>`
    )
  })
)

export const RevokeToken = HttpRouter.add(
  "POST",
  "/tokens/:id/revoke",
  Effect.gen(function* () {
    const human = yield* signedInHuman
    if (!human) return redirect("/login?return_to=%2Ftokens")
    const form = yield* readForm
    if (!(yield* csrfValid(form.csrf_token))) return formExpired
    const { id } = yield* HttpRouter.params
    const revoked = yield* (yield* Credentials).revokePersonalToken(human, id ?? "").pipe(
      Effect.as(true),
      Effect.catchTag("NoSuchToken", () => Effect.succeed(false))
    )
    return revoked ? redirect("/tokens") : page("Not found", `<h1>Not found</h1>`, 404)
  })
)
