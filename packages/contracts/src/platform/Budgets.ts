// Platform: budgets (spec "Platform: budgets", "Budget"; supplement "Budgets"): the account's cost
// unit, and a user's budgets opened, adjusted and revoked by a live human owner or admin (an
// agent's only by its steward). Bodies are read loosely (a JSON object): the domain judges the
// gate first, then members (absent 400 parameter_missing, outside the grammar 422
// validation_failed). Budget writes share one Idempotency-Key scope per caller.
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSchema, OpenApi } from "effect/http-api"
import { BadRequest, Conflict, Forbidden, NotFound, Unprocessable } from "../Errors.ts"
import { IdempotencyKeyHeader, IdempotencyScope, Idempotent } from "../Idempotency.ts"
import { optionalBody } from "../member/ConversationShapes.ts"
import { type CurrentPlatformCaller, PlatformAuthentication } from "./Caller.ts"

const Amount = Schema.String.annotate({ description: "An exact decimal string, trailing fractional zeros dropped" })

export const Budget = Schema.Struct({
  public_id: Schema.String,
  user_public_id: Schema.String,
  credited_amount: Amount,
  debited_amount: Amount,
  cost_unit: Schema.String,
  starts_at: Schema.DateFromString,
  expires_at: Schema.NullOr(Schema.DateFromString),
  revoked_at: Schema.NullOr(Schema.DateFromString)
})

export const BudgetEntry = Schema.Struct({
  sequence: Schema.Natural,
  kind: Schema.Literals(["credit", "debit"]),
  amount: Amount,
  reason: Schema.String,
  operation_key: Schema.String,
  created_at: Schema.DateFromString
})

const JsonObject = Schema.Record(Schema.String, Schema.Unknown)

/**
 * Budget administration is for a live human owner or admin (else 403 administrator_required),
 * judged before the Idempotency-Key as every door authorizes before idempotency; the domain judges
 * the same gate again with the target (the budget pages reach it without this API).
 */
export class BudgetAdministrator extends HttpApiMiddleware.Service<
  BudgetAdministrator,
  { requires: CurrentPlatformCaller }
>()("@troupe/contracts/platform/BudgetAdministrator", { error: [Forbidden] }) {}

const userParams = { user_public_id: Schema.String }
const budgetParams = { ...userParams, public_id: Schema.String }
const budgetErrors = [BadRequest, Forbidden, NotFound, Conflict, Unprocessable]
const collection = "/api/v1/admin/users/:user_public_id/budgets"
/** Budget writes reserve keys per caller across targets (supplement: another target is a mismatch). */
const writeScope = "platform.budgets"

export class BudgetsGroup extends HttpApiGroup.make("budgets")
  .add(
    HttpApiEndpoint.put("costUnit", "/api/v1/admin/account/cost_unit", {
      payload: JsonObject.annotate({ description: "{account: {cost_unit}}" }),
      success: Schema.Struct({ account: Schema.Struct({ cost_unit: Schema.String }) }),
      error: budgetErrors
    }).annotate(OpenApi.Description, "Configure the account's cost unit, once: the same unit again answers 200."),
    HttpApiEndpoint.post("open", collection, {
      params: userParams,
      headers: IdempotencyKeyHeader,
      payload: JsonObject.annotate({ description: "{budget: {amount, starts_at, expires_at (nullable), reason}}" }),
      success: Schema.Struct({ budget: Budget }).pipe(HttpApiSchema.status(201)),
      error: budgetErrors
    })
      .annotate(
        OpenApi.Description,
        "Live human owner or admin. Header Idempotency-Key. Opens a budget for the user: 201 {budget}; an overlapping unrevoked window is 409 budget_window_overlap, an unset cost unit 422 account_unit_unconfigured."
      )
      .middleware(Idempotent)
      .annotate(IdempotencyScope, writeScope),
    HttpApiEndpoint.patch("adjust", `${collection}/:public_id`, {
      params: budgetParams,
      headers: IdempotencyKeyHeader,
      payload: JsonObject.annotate({ description: "{budget: {kind credit or debit, amount, reason}}" }),
      success: Schema.Struct({ budget: Budget, entry: BudgetEntry }),
      error: budgetErrors
    })
      .annotate(
        OpenApi.Description,
        "Live human owner or admin. Header Idempotency-Key. Appends a credit or debit entry: 200 {budget, entry}; a debit beyond the headroom is 409 budget_insufficient_headroom."
      )
      .middleware(Idempotent)
      .annotate(IdempotencyScope, writeScope),
    HttpApiEndpoint.post("revoke", `${collection}/:public_id/revocation`, {
      params: budgetParams,
      headers: IdempotencyKeyHeader,
      payload: optionalBody(JsonObject.annotate({ description: "{revocation: {reason}}, optional" })),
      success: Schema.Struct({ budget: Budget }),
      error: budgetErrors
    })
      .annotate(
        OpenApi.Description,
        "Live human owner or admin. Header Idempotency-Key. Revokes the budget: 200 {budget} with revoked_at."
      )
      .middleware(Idempotent)
      .annotate(IdempotencyScope, writeScope)
  )
  .middleware(BudgetAdministrator)
  .middleware(PlatformAuthentication)
  .annotateMerge(OpenApi.annotations({ title: "Platform: budgets" })) {}
