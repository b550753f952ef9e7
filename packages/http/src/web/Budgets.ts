// The budget pages (issue 13): a signed-in owner or admin sees every user it administers (live
// humans, the live agents it stewards) with their budgets and ledgers at /budgets, and configures
// the account's cost unit, opens, credits, debits and revokes there through CSRF-protected forms.
// The forms say what the platform routes say (domain/budgets/Budgets.ts); each form carries its
// own operation key, so a resubmitted form writes once.
import { randomUUID } from "node:crypto"
import { statusOfCode } from "@troupe/contracts/Errors"
import { headroom } from "@troupe/domain/budgets/Amounts"
import { Budgets, type BudgetView, type EntryView, type UserBudgets } from "@troupe/domain/budgets/Budgets"
import { now } from "@troupe/domain/kernel/Now"
import { isRefusal } from "@troupe/domain/kernel/Refusals"
import { plainDecimal } from "@troupe/domain/models/Usage"
import { Effect } from "effect"
import { HttpRouter } from "effect/http"
import { type CsrfGrant, csrfField, csrfValid, grantCsrf } from "./Csrf.ts"
import { readForm } from "./Form.ts"
import { errorBox, escapeHtml, page, redirect, tryAgain } from "./Html.ts"
import { signedInHuman } from "./Session.ts"

const back = "/budgets"

/** This page's tables and forms need more room than the shared layout's column. */
const styles = `<style>
main { max-width: 56rem; }
table { border-collapse: collapse; width: 100%; margin: .5rem 0; }
th, td { text-align: left; padding: .25rem .5rem; border-bottom: 1px solid #ddd; vertical-align: top; }
td.amount, td time { font-variant-numeric: tabular-nums; white-space: nowrap; }
section[data-budget] { border: 1px solid #ddd; border-radius: 6px; padding: 0 1rem 1rem; margin: 1rem 0; }
fieldset { border: 1px solid #ddd; border-radius: 4px; margin: 1rem 0 0; }
.state { font-weight: 600; }
</style>`

const when = (date: Date | null) =>
  date === null ? "" : `<time datetime="${date.toISOString()}">${date.toISOString()}</time>`

/** A labelled input of one form (ids are not used: a page holds many such forms). */
const input = (name: string, label: string, value = "", required = true) =>
  `<label>${escapeHtml(label)} <input name="${name}" value="${escapeHtml(value)}"${required ? " required" : ""}></label>`

const form = (grant: CsrfGrant, action: string, fields: string, submit: string, legend?: string) =>
  `<form method="post" action="${escapeHtml(action)}">${csrfField(grant)}<input type="hidden" name="operation_key" value="${randomUUID()}">${legend === undefined ? fields : `<fieldset><legend>${escapeHtml(legend)}</legend>${fields}`}<button type="submit">${escapeHtml(submit)}</button>${legend === undefined ? "" : "</fieldset>"}</form>`

const entryRow = (entry: EntryView) =>
  `<tr data-sequence="${entry.sequence}"><td>${entry.sequence}</td><td class="kind">${entry.kind}</td><td class="amount">${escapeHtml(entry.amount)}</td><td>${escapeHtml(entry.reason)}</td><td><code>${escapeHtml(entry.operation_key)}</code></td><td>${when(entry.created_at)}</td></tr>`

const budgetBlock = (
  grant: CsrfGrant,
  userPublicId: string,
  shown: { readonly budget: BudgetView; readonly entries: ReadonlyArray<EntryView> }
) => {
  const { budget, entries } = shown
  const base = `/budgets/users/${userPublicId}/${budget.public_id}`
  return `<section data-budget="${escapeHtml(budget.public_id)}">
<p><span class="state">${budget.revoked_at === null ? "open" : "revoked"}</span>, from ${when(budget.starts_at)} to ${budget.expires_at === null ? "open-ended" : when(budget.expires_at)}:
credited <span class="credited">${escapeHtml(budget.credited_amount)}</span>,
debited <span class="debited">${escapeHtml(budget.debited_amount)}</span>,
left <strong class="left">${escapeHtml(plainDecimal(headroom(budget.credited_amount, budget.debited_amount)))}</strong> ${escapeHtml(budget.cost_unit)}.</p>
<table><tr><th>#</th><th>Kind</th><th>Amount</th><th>Reason</th><th>Operation key</th><th>At</th></tr>${entries.map(entryRow).join("")}</table>
${form(
  grant,
  `${base}/adjust`,
  `<label>Kind <select name="kind"><option value="credit">credit</option><option value="debit">debit</option></select></label>${input("amount", "Amount")}${input("reason", "Reason")}`,
  "Record",
  "Credit or debit"
)}
${budget.revoked_at === null ? form(grant, `${base}/revoke`, input("reason", "Reason (optional)", "", false), "Revoke", "Revoke this budget") : ""}
</section>`
}

const userBlock = (grant: CsrfGrant, at: Date, shown: UserBudgets) =>
  `<section data-user="${escapeHtml(shown.user.public_id)}">
<h2>${escapeHtml(shown.user.display_name)} <small>@${escapeHtml(shown.handle)} (${shown.user.kind})</small></h2>
${shown.budgets.length === 0 ? `<p class="hint">No budgets.</p>` : shown.budgets.map((each) => budgetBlock(grant, shown.user.public_id, each)).join("")}
<details><summary>Open a budget</summary>${form(
    grant,
    `/budgets/users/${shown.user.public_id}/open`,
    `${input("amount", "Amount")}${input("starts_at", "Starts at (RFC 3339)", at.toISOString())}${input("expires_at", "Expires at (empty: open-ended)", "", false)}${input("reason", "Reason")}`,
    "Open"
  )}</details>
</section>`

/** The page for `human`, with a refused form's message when there is one. */
const budgetsPage = (humanId: bigint, refused?: { readonly message: string; readonly status: number }) =>
  Effect.gen(function* () {
    const overview = yield* Effect.result((yield* Budgets).overview(humanId))
    if (overview._tag === "Failure") {
      return page("Budgets", `<h1>Budgets</h1>${errorBox(overview.failure.message)}`, 403)
    }
    const { costUnit, users } = overview.success
    const grant = yield* grantCsrf
    const at = yield* now
    const unit =
      costUnit === null
        ? `<p class="hint">The account has no cost unit yet; set it once before opening budgets.</p>${form(grant, "/budgets/cost_unit", input("cost_unit", "Cost unit"), "Set cost unit")}`
        : `<p>Cost unit: <strong class="cost-unit">${escapeHtml(costUnit)}</strong></p>`
    return grant.apply(
      page(
        "Budgets",
        `${styles}<h1>Budgets</h1>${errorBox(refused?.message)}${unit}${users.map((shown) => userBlock(grant, at, shown)).join("")}`,
        refused?.status ?? 200
      )
    )
  })

export const BudgetsPage = HttpRouter.add(
  "GET",
  back,
  Effect.gen(function* () {
    const human = yield* signedInHuman
    if (!human) return redirect("/login?return_to=%2Fbudgets")
    return yield* budgetsPage(human.id)
  })
)

type Command = (
  budgets: Budgets["Service"],
  humanId: bigint,
  params: Readonly<Record<string, string | undefined>>,
  fields: Readonly<Record<string, string | undefined>>
) => Effect.Effect<unknown, unknown>

/** A form's POST: signed in, CSRF-checked, then the command; a refusal shows on the page. */
const action = (path: `/${string}`, command: Command) =>
  HttpRouter.add(
    "POST",
    path,
    Effect.gen(function* () {
      const human = yield* signedInHuman
      if (!human) return redirect("/login?return_to=%2Fbudgets")
      const fields = yield* readForm
      if (!(yield* csrfValid(fields.csrf_token))) {
        return page(
          "Not done",
          `<h1>Not done</h1>${errorBox("This form expired. Go back and try again.")}${tryAgain(back)}`,
          403
        )
      }
      const params = yield* HttpRouter.params
      const outcome = yield* Effect.result(command(yield* Budgets, human.id, params, fields))
      if (outcome._tag === "Success") return redirect(back)
      const failure = outcome.failure
      if (!isRefusal(failure)) return yield* Effect.die(failure)
      return yield* budgetsPage(human.id, {
        message: failure.message,
        status: statusOfCode[failure.code as keyof typeof statusOfCode] ?? 400
      })
    })
  )

const text = (value: string | undefined) => value ?? ""

export const SetCostUnit = action("/budgets/cost_unit", (budgets, humanId, _, fields) =>
  budgets.configureCostUnit(humanId, { account: { cost_unit: text(fields.cost_unit) } })
)

export const OpenBudget = action("/budgets/users/:user/open", (budgets, humanId, params, fields) =>
  budgets.open(
    humanId,
    text(params.user),
    {
      budget: {
        amount: text(fields.amount),
        starts_at: text(fields.starts_at),
        expires_at: fields.expires_at === undefined || fields.expires_at === "" ? null : fields.expires_at,
        reason: text(fields.reason)
      }
    },
    text(fields.operation_key) || randomUUID()
  )
)

export const AdjustBudget = action("/budgets/users/:user/:budget/adjust", (budgets, humanId, params, fields) =>
  budgets.adjust(
    humanId,
    text(params.user),
    text(params.budget),
    { budget: { kind: text(fields.kind), amount: text(fields.amount), reason: text(fields.reason) } },
    text(fields.operation_key) || randomUUID()
  )
)

export const RevokeBudget = action("/budgets/users/:user/:budget/revoke", (budgets, humanId, params, fields) =>
  budgets.revoke(
    humanId,
    text(params.user),
    text(params.budget),
    { revocation: fields.reason === undefined || fields.reason === "" ? {} : { reason: fields.reason } },
    text(fields.operation_key) || randomUUID()
  )
)
