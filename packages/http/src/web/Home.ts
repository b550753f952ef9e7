// GET /: who is signed in, with sign-out and links; sends newcomers to sign-in or first boot.
import { Accounts } from "@troupe/domain/accounts/Accounts"
import { Effect, Option } from "effect"
import { HttpRouter } from "effect/http"
import { csrfField, grantCsrf } from "./Csrf.ts"
import { escapeHtml, page, redirect } from "./Html.ts"
import { currentBrowserSession } from "./Session.ts"

export const HomePage = HttpRouter.add(
  "GET",
  "/",
  Effect.gen(function* () {
    const accounts = yield* Accounts
    if (!(yield* accounts.isInitialized)) return redirect("/setup")
    const current = yield* currentBrowserSession
    if (Option.isNone(current)) return redirect("/login")
    const { user } = current.value
    const grant = yield* grantCsrf
    return grant.apply(
      page(
        "Troupe",
        `<h1>Troupe</h1>
<p>Signed in as <strong>${escapeHtml(user.display_name)}</strong> (@${escapeHtml(user.handle)}, ${user.role}).</p>
<ul><li><a href="/agents">Your agents</a></li><li><a href="/runners">Your runners</a></li>
<li><a href="/tokens">Personal access tokens</a></li>
<li><a href="/oauth/device">Connect a device</a></li><li><a href="/inspector">State visualizer</a> (owners and admins)</li>
<li><a href="/budgets">Budgets</a> (owners and admins)</li>
<li><a href="/docs">API documentation</a></li><li><a href="/openapi.json">OpenAPI document</a></li></ul>
<form method="post" action="/logout">${csrfField(grant)}<button type="submit">Sign out</button></form>`
      )
    )
  })
)
