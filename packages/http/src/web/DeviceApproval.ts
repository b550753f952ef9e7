// The human verification page (GET/POST /oauth/device): a signed-in human enters or confirms a
// user code, sees what will be connected, chooses who may use a fresh standalone machine, and
// approves or denies. Approval is refused before any credential exists when another human
// stewards the agent.

import {
  type AlreadyDecided,
  type ApprovalRefused,
  DeviceFlow,
  type PendingConnection,
  type UnknownUserCode
} from "@troupe/domain/connections/DeviceFlow"
import { formatUserCode, normalizeUserCode } from "@troupe/domain/connections/DeviceRequest"
import { Effect, Option } from "effect"
import { HttpRouter, HttpServerRequest } from "effect/http"
import { csrfField, csrfValid, grantCsrf } from "./Csrf.ts"
import { readForm } from "./Form.ts"
import { errorBox, escapeHtml, field, page, redirect, tryAgain } from "./Html.ts"
import { currentBrowserSession } from "./Session.ts"

const describe = (pending: PendingConnection) => {
  const r = pending.request
  const rows: Array<[string, string]> = []
  if (r.branch === "agent" || r.branch === "combined") {
    rows.push(["Agent", `${r.agentDisplayName} (${r.agentIdentifier})`], ["Agent's application", r.executorDisplayName])
  }
  if (r.branch === "machine" || r.branch === "combined") {
    rows.push([
      r.executorKind === "tool_provider" ? "Tool provider" : "Runner",
      `${r.runnerDisplayName} (${r.registrationIdentifier})`
    ])
  }
  return `<table>${rows.map(([k, v]) => `<tr><th>${escapeHtml(k)}</th><td>${escapeHtml(v)}</td></tr>`).join("")}</table>`
}

const scopeChoice = `<fieldset><legend>Who may use this machine?</legend>
<label><input type="radio" name="assignment_scope" value="user_private" checked> Only me</label>
<label><input type="radio" name="assignment_scope" value="account_wide"> Everyone in this installation</label>
</fieldset>`

const enterCode = (error?: string, status = 200) =>
  Effect.map(grantCsrf, (grant) =>
    grant.apply(
      page(
        "Connect a device",
        `<h1>Connect a device</h1>${errorBox(error)}
<form method="get" action="/oauth/device">
${field("user_code", "Code shown by the program", { autocomplete: "off" })}
<button type="submit">Continue</button>
</form>`,
        status
      )
    )
  )

const confirm = (pending: PendingConnection, error?: string) =>
  Effect.map(grantCsrf, (grant) =>
    grant.apply(
      page(
        "Connect a device",
        `<h1>Connect a device</h1>${errorBox(error)}
<p>Code <strong id="user-code">${escapeHtml(formatUserCode(pending.device.user_code))}</strong> asks to connect:</p>
${describe(pending)}
<form method="post" action="/oauth/device">
${csrfField(grant)}
<input type="hidden" name="user_code" value="${escapeHtml(pending.device.user_code)}">
${pending.chooseScope ? scopeChoice : ""}
<button type="submit" name="decision" value="approve" id="approve">Approve</button>
<button type="submit" name="decision" value="deny" id="deny">Deny</button>
</form>`
      )
    )
  )

/** Where to try again: the confirm page of a well-formed code (its URL carries only the code), else the entry page. */
const tryAgainLink = (userCode: string | undefined, label: string) => {
  const code = userCode === undefined ? undefined : normalizeUserCode(userCode)
  return tryAgain(
    code === undefined ? "/oauth/device" : `/oauth/device?user_code=${encodeURIComponent(formatUserCode(code))}`,
    label
  )
}

/** A code this same human already decided (a reload, a second submit): what it was, what happens next. */
const alreadyDecided = ({ decision }: AlreadyDecided) =>
  decision === "denied"
    ? page(
        "Denied",
        `<h1 id="outcome">Already denied</h1><p>You denied this code; the program was not connected. To connect it, start again in the program: it shows a new code.</p>
${tryAgainLink(undefined, "Enter a new code")}`
      )
    : page(
        "Connected",
        decision === "connected"
          ? `<h1 id="outcome">Already approved</h1><p>You approved this code and the program has connected. You can close this page.</p>`
          : `<h1 id="outcome">Already approved</h1><p>You approved this code. The program gets its credentials the next time it checks, on its own. You can close this page.</p>`
      )

const signedIn = Effect.gen(function* () {
  const current = yield* currentBrowserSession
  if (Option.isNone(current)) return undefined
  return current.value.user
})

export const DeviceApprovalPage = HttpRouter.add(
  "GET",
  "/oauth/device",
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const human = yield* signedIn
    if (!human) return redirect(`/login?return_to=${encodeURIComponent(request.url)}`)
    const code = new URL(request.url, "http://troupe.invalid").searchParams.get("user_code")
    if (!code) return yield* enterCode()
    const flow = yield* DeviceFlow
    return yield* flow.pending(code, human).pipe(
      Effect.flatMap((pending) => confirm(pending)),
      Effect.catchTags({
        UnknownUserCode: () => enterCode("That code is unknown or expired. Check the program's screen.", 404),
        AlreadyDecided: (decided) => Effect.succeed(alreadyDecided(decided)),
        ApprovalRefused: (refused) =>
          Effect.succeed(page("Not allowed", `<h1>Not allowed</h1>${errorBox(refused.reason)}`, 403))
      })
    )
  })
)

export const DeviceApprovalSubmit = HttpRouter.add(
  "POST",
  "/oauth/device",
  Effect.gen(function* () {
    const human = yield* signedIn
    if (!human) return redirect("/login?return_to=%2Foauth%2Fdevice")
    const form = yield* readForm
    if (!(yield* csrfValid(form.csrf_token))) {
      return page(
        "Connect a device",
        `<h1>Connect a device</h1>${errorBox("This form expired. Nothing was decided.")}
${tryAgainLink(form.user_code, "Go back to the code and try again")}`,
        403
      )
    }
    const flow = yield* DeviceFlow
    const code = form.user_code ?? ""
    const scope = form.assignment_scope
    const decided: Effect.Effect<
      "approved" | "denied" | undefined,
      UnknownUserCode | AlreadyDecided | ApprovalRefused
    > =
      form.decision === "deny"
        ? flow.deny(code, human).pipe(Effect.as("denied" as const))
        : form.decision === "approve"
          ? flow
              .approve(code, human, scope === "user_private" || scope === "account_wide" ? scope : undefined)
              .pipe(Effect.as("approved" as const))
          : Effect.succeed(undefined)
    return yield* decided.pipe(
      Effect.map((outcome) =>
        outcome === undefined
          ? page(
              "Connect a device",
              `<h1>Connect a device</h1>${errorBox("Choose approve or deny.")}
${tryAgainLink(code, "Go back to the code")}`,
              400
            )
          : page(
              outcome === "approved" ? "Connected" : "Denied",
              outcome === "approved"
                ? `<h1 id="outcome">Approved</h1><p>The program will finish connecting on its own. You can close this page.</p>`
                : `<h1 id="outcome">Denied</h1><p>The program was not connected.</p>`
            )
      ),
      Effect.catchTags({
        UnknownUserCode: () => enterCode("That code is unknown or expired. Check the program's screen.", 404),
        AlreadyDecided: (decided) => Effect.succeed(alreadyDecided(decided)),
        ApprovalRefused: (refused) =>
          Effect.succeed(page("Not allowed", `<h1>Not allowed</h1>${errorBox(refused.reason)}`, 403))
      })
    )
  })
)
