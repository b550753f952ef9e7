// The state visualizer at /inspector for a signed-in owner or admin: the page shell (with the
// CSRF token its restart buttons send), its static assets, and the restart actions. Reads go to
// the admin API with the browser session; restarts come here because the cookie may not write
// to /api/v1.
import { readFile } from "node:fs/promises"
import { ActorHost } from "@troupe/actors/ActorHost"
import { RuntimeOperations } from "@troupe/domain/runtime/RuntimeOperations"
import { inspectorAssets } from "@troupe/inspector/Assets"
import { Effect, Layer, Option } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { envelope } from "../conventions/ErrorEnvelope.ts"
import { csrfValid, grantCsrf } from "./Csrf.ts"
import { escapeHtml, page, redirect } from "./Html.ts"
import { currentBrowserSession } from "./Session.ts"

const operator = Effect.map(currentBrowserSession, (current) =>
  Option.filter(current, ({ user }) => user.role === "owner" || user.role === "admin")
)

const shell = (name: string, token: string) =>
  HttpServerResponse.text(
    `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="csrf-token" content="${token}">
<title>State visualizer · Troupe</title>
<link rel="stylesheet" href="/inspector/style.css">
</head>
<body>
<header><h1>Troupe · state visualizer</h1><span class="who">${escapeHtml(name)}</span></header>
<div id="message"></div>
<main>
<div>
<section><h2>Supervisors</h2><div id="supervisors"><p class="empty">Loading…</p></div></section>
<section><h2>Actors</h2>
<div class="filters">
<select id="kind" aria-label="kind"></select><select id="state" aria-label="state"></select>
<label><input type="checkbox" id="stuck"> stuck</label><label><input type="checkbox" id="quarantined"> quarantined</label>
</div>
<div id="actors"></div></section>
</div>
<section id="detail"><p class="empty">Select an actor to see its statechart, context, timers, jobs and journal.</p></section>
</main>
<script src="/inspector/mermaid.min.js"></script>
<script type="module" src="/inspector/app.js"></script>
</body>
</html>`,
    {
      contentType: "text/html; charset=utf-8",
      headers: {
        "cache-control": "no-store",
        "content-security-policy":
          "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'",
        "x-frame-options": "DENY"
      }
    }
  )

export const InspectorPage = HttpRouter.add(
  "GET",
  "/inspector",
  Effect.gen(function* () {
    const current = yield* currentBrowserSession
    if (Option.isNone(current)) {
      const request = yield* HttpServerRequest.HttpServerRequest
      return redirect(`/login?return_to=${encodeURIComponent(request.url)}`)
    }
    const user = current.value.user
    if (user.role !== "owner" && user.role !== "admin") {
      return page("Not allowed", "<h1>Not allowed</h1><p>The state visualizer is for owners and admins.</p>", 403)
    }
    const grant = yield* grantCsrf
    return grant.apply(shell(`${user.display_name} (${user.role})`, grant.token))
  })
)

const assetCache = new Map<string, Uint8Array>()

export const InspectorAssets = HttpRouter.add(
  "GET",
  "/inspector/:file",
  Effect.gen(function* () {
    const { file } = yield* HttpRouter.params
    const asset = file === undefined ? undefined : inspectorAssets[file]
    if (!asset || file === undefined) return envelope(404, "not_found", "Not found")
    const bytes = assetCache.get(file) ?? (yield* Effect.promise(() => readFile(asset.path)))
    assetCache.set(file, bytes)
    return HttpServerResponse.uint8Array(bytes, {
      contentType: asset.contentType,
      headers: { "cache-control": "public, max-age=300" }
    })
  })
)

/** Runs a restart for a signed-in operator whose request carries the page's CSRF token. */
const restart = (
  action: string,
  target: (params: Readonly<Record<string, string | undefined>>) => string | undefined,
  run: (
    params: Readonly<Record<string, string | undefined>>
  ) => Effect.Effect<boolean, never, ActorHost | RuntimeOperations>
) =>
  Effect.gen(function* () {
    const current = yield* operator
    if (Option.isNone(current)) return envelope(403, "not_authorized", "Only a signed-in owner or admin may restart")
    const request = yield* HttpServerRequest.HttpServerRequest
    if (!(yield* csrfValid(request.headers["x-csrf-token"]))) {
      return envelope(403, "not_authorized", "The page's CSRF token is missing or stale; reload the page")
    }
    const params = yield* HttpRouter.params
    const name = target(params)
    if (name === undefined || !(yield* run(params))) return envelope(404, "not_found", "Not found")
    const operations = yield* RuntimeOperations
    yield* operations.audit({ userId: current.value.user.id, action, target: name, details: { via: "inspector" } })
    return HttpServerResponse.jsonUnsafe({ restarted: name })
  })

export const InspectorRestartSupervisor = HttpRouter.add(
  "POST",
  "/inspector/supervisors/:kind/restart",
  restart(
    "supervisor.restart",
    (params) => params.kind,
    (params) =>
      Effect.flatMap(ActorHost, (host) =>
        host.restartKind(params.kind ?? "").pipe(
          Effect.as(true),
          Effect.catchTag("UnknownKind", () => Effect.succeed(false))
        )
      )
  )
)

export const InspectorRestartActor = HttpRouter.add(
  "POST",
  "/inspector/actors/:kind/:id/restart",
  restart(
    "actor.restart",
    (params) => (params.kind && params.id ? `${params.kind}/${params.id}` : undefined),
    (params) =>
      Effect.gen(function* () {
        const host = yield* ActorHost
        const kind = params.kind ?? ""
        const id = params.id ?? ""
        const bound = yield* host.binding(kind).pipe(
          Effect.as(true),
          Effect.catchTag("UnknownKind", () => Effect.succeed(false))
        )
        if (!bound) return false
        const seq = yield* Effect.flatMap(RuntimeOperations, (operations) => operations.currentSeq(kind, id))
        return seq !== undefined && (yield* host.restartActor(kind, id))
      })
  )
)

export const InspectorRoutes = Layer.mergeAll(
  InspectorPage,
  InspectorAssets,
  InspectorRestartSupervisor,
  InspectorRestartActor
)
