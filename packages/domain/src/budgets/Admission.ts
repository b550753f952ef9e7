// Admission before inference work starts (supplement "Budgets"), the one place it is judged: the
// payer's usable budget is its unrevoked one whose window holds now; none means no cap; one with
// credited − debited ≤ 0 refuses (budget_exhausted). Nothing is reserved: an admitted request
// only records the budget that admitted it, which its settlements debit.
import { type BudgetRow, BudgetsRepository } from "@troupe/storage/repositories/Budgets"
import { Effect } from "effect"
import { Invalid } from "../kernel/Refusals.ts"
import { exhausted } from "./Amounts.ts"

const refusal = () => new Invalid({ code: "budget_exhausted", message: "The payer's budget has nothing left to spend" })

/** The account's cost unit, null while unset. */
export const accountCostUnit = Effect.flatMap(BudgetsRepository.make, (budgets) => budgets.costUnit)

/** The payer's usable budget at `at`, when it has one with something left; refused when exhausted. */
export const admit = (payerId: bigint, at: Date) =>
  Effect.gen(function* () {
    const budget = yield* (yield* BudgetsRepository.make).usable(payerId, at)
    if (budget !== undefined && exhausted(budget.credited_amount, budget.debited_amount)) return yield* refusal()
    return budget
  })

/**
 * The payer of a run's rounds: its creator, or for a run hosted by a conversation (a run-backed
 * reply, created by the answerer) the author of the input its turn answers, as a direct reply's.
 */
export const runPayer = (run: { readonly creator_id: bigint; readonly turn_public_id: string | null }) =>
  Effect.gen(function* () {
    const turn = run.turn_public_id
    if (turn === null) return run.creator_id
    return (yield* (yield* BudgetsRepository.make).hostedPayer(turn)) ?? run.creator_id
  })

/** Whether the payer's work would be refused now (a conversation input then blocks). */
export const refused = (payerId: bigint, at: Date) =>
  Effect.match(admit(payerId, at), { onFailure: () => true, onSuccess: () => false })

/** Records the budget that admitted the inference request `requestId` (none: nothing to record). */
export const recordAdmission = (requestId: bigint, budget: BudgetRow | undefined, at: Date) =>
  budget === undefined
    ? Effect.void
    : Effect.flatMap(BudgetsRepository.make, (budgets) => budgets.recordAdmission(requestId, budget.id, at))

/**
 * Records the payer's usable budget, if any, as the one that admitted `requestId`, without judging
 * it again (work judged earlier, such as a conversation input's head, starts now).
 */
export const recordPayer = (requestId: bigint, payerId: bigint, at: Date) =>
  Effect.gen(function* () {
    const budget = yield* (yield* BudgetsRepository.make).usable(payerId, at)
    yield* recordAdmission(requestId, budget, at)
  })
