// Settlement of one priced attempt (supplement "Budgets"): its cost, exact, debited to the budget
// that admitted its request unless that budget was revoked since (entry kind debit, reason
// `usage`, operation_key `usage:<usage_record_public_id>`); it may overdraw. Unpriced work, a
// zero cost, or a unit other than the budget's debits nothing. Run in the step that records the
// attempt's usage: the operation key makes a repeat harmless.
import { BudgetsRepository } from "@troupe/storage/repositories/Budgets"
import { Effect } from "effect"
import { positive } from "./Amounts.ts"

export const settle = (requestPublicId: string, usage: Readonly<Record<string, unknown>>, at: Date) =>
  Effect.gen(function* () {
    const budgets = yield* BudgetsRepository.make
    const budget = yield* budgets.admittedBy(requestPublicId)
    const { usage_record_public_id: record, cost_amount: amount, cost_unit: unit, cost_complete: complete } = usage
    if (
      budget === undefined ||
      budget.revoked_at !== null ||
      typeof record !== "string" ||
      typeof amount !== "string" ||
      complete !== true ||
      unit !== budget.cost_unit ||
      !positive(amount)
    ) {
      return
    }
    const operationKey = `usage:${record}`
    if ((yield* budgets.findEntry(budget.id, operationKey)) !== undefined) return
    yield* budgets.write({
      budgetId: budget.id,
      kind: "debit",
      amount,
      reason: "usage",
      operationKey,
      withinHeadroom: false,
      now: at
    })
  })
