// The agents and runners pages: what the signed-in human stewards, where to connect more (the
// device verification page), and the ends they may put to them (remove an agent, revoke a
// machine), as CSRF-protected forms.

import { Stewardship } from "@troupe/domain/connections/Stewardship"
import { presenceOf } from "@troupe/domain/executors/Presence"
import { now } from "@troupe/domain/kernel/Now"
import { Effect } from "effect"
import { HttpRouter } from "effect/http"
import { csrfField, csrfValid, grantCsrf } from "./Csrf.ts"
import { readForm } from "./Form.ts"
import { errorBox, escapeHtml, page, redirect, tryAgain } from "./Html.ts"
import { signedInHuman } from "./Session.ts"

const connectLink = `<p><a href="/oauth/device">Connect with a code</a> shown by a program or runner.</p>`

export const AgentsPage = HttpRouter.add(
  "GET",
  "/agents",
  Effect.gen(function* () {
    const human = yield* signedInHuman
    if (!human) return redirect("/login?return_to=%2Fagents")
    const agents = yield* (yield* Stewardship).agents(human)
    const grant = yield* grantCsrf
    const rows = agents
      .map(
        (agent) => `<tr data-agent="${escapeHtml(agent.public_id)}"><td>${escapeHtml(agent.display_name)}</td>
<td>@${escapeHtml(agent.handle)}</td><td><code>${escapeHtml(agent.agent_identifier)}</code></td>
<td class="status">${escapeHtml(agent.status)}</td><td>${
          agent.status === "active"
            ? `<form method="post" action="/agents/${escapeHtml(agent.public_id)}/remove">${csrfField(grant)}<button type="submit">Remove</button></form>`
            : ""
        }</td></tr>`
      )
      .join("")
    return grant.apply(
      page(
        "Agents",
        `<h1>Your agents</h1>${connectLink}${
          agents.length
            ? `<table><tr><th>Name</th><th>Handle</th><th>Identifier</th><th>Status</th><th></th></tr>${rows}</table>`
            : `<p class="hint">You steward no agents yet.</p>`
        }`
      )
    )
  })
)

export const RunnersPage = HttpRouter.add(
  "GET",
  "/runners",
  Effect.gen(function* () {
    const human = yield* signedInHuman
    if (!human) return redirect("/login?return_to=%2Frunners")
    const machines = yield* (yield* Stewardship).machines(human)
    const at = yield* now
    const grant = yield* grantCsrf
    const rows = machines
      .map(
        (machine) => `<tr data-executor="${escapeHtml(machine.public_id)}"><td>${escapeHtml(machine.display_name)}</td>
<td>${escapeHtml(machine.kind)}</td><td><code>${escapeHtml(machine.registration_identifier ?? "")}</code></td>
<td>${escapeHtml(machine.assignment_scope)}</td><td class="status">${escapeHtml(machine.status)}</td>
<td>${machine.status === "active" ? presenceOf(machine, at) : ""}</td><td>${
          machine.status === "active"
            ? `<form method="post" action="/runners/${escapeHtml(machine.public_id)}/revoke">${csrfField(grant)}<button type="submit">Revoke</button></form>`
            : ""
        }</td></tr>`
      )
      .join("")
    return grant.apply(
      page(
        "Runners",
        `<h1>Your runners and tool providers</h1>${connectLink}${
          machines.length
            ? `<table><tr><th>Name</th><th>Kind</th><th>Identifier</th><th>Who may use it</th><th>Status</th><th>Presence</th><th></th></tr>${rows}</table>`
            : `<p class="hint">You have connected no machines yet.</p>`
        }`
      )
    )
  })
)

const action = (
  path: `/${string}`,
  back: `/${string}`,
  run: (
    human: NonNullable<Effect.Success<typeof signedInHuman>>,
    id: string
  ) => Effect.Effect<void, unknown, Stewardship>
) =>
  HttpRouter.add(
    "POST",
    path,
    Effect.gen(function* () {
      const human = yield* signedInHuman
      if (!human) return redirect(`/login?return_to=${encodeURIComponent(back)}`)
      const form = yield* readForm
      if (!(yield* csrfValid(form.csrf_token))) {
        return page(
          "Not done",
          `<h1>Not done</h1>${errorBox("This form expired. Go back and try again.")}${tryAgain(back)}`,
          403
        )
      }
      const { id } = yield* HttpRouter.params
      const done = yield* run(human, id ?? "").pipe(
        Effect.as(true),
        Effect.orElseSucceed(() => false)
      )
      return done ? redirect(back) : page("Not found", `<h1>Not found</h1>`, 404)
    })
  )

export const RemoveAgent = action("/agents/:id/remove", "/agents", (human, id) =>
  Effect.flatMap(Stewardship, (stewardship) => stewardship.removeAgent(human, id))
)

export const RevokeMachine = action("/runners/:id/revoke", "/runners", (human, id) =>
  Effect.flatMap(Stewardship, (stewardship) => stewardship.revokeMachine(human, id))
)
