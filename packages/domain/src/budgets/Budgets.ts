// Administering budgets (spec "Platform: budgets", supplement "Budgets"): the account's cost unit
// (configured once), opening a user's budget (entry 1, a credit), credits and debits (entry n+1;
// an administrator's debit never passes credited − debited), revocation, and what the budget pages
// read. Each command is one transaction; writes to one budget take turns on its row's lock.
import { withDatabase } from "@troupe/storage/Defects"
import { isUuid, newPublicId } from "@troupe/storage/Ids"
import { type BudgetRow, BudgetsRepository, type EntryRow } from "@troupe/storage/repositories/Budgets"
import { BigDecimal, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { now } from "../kernel/Now.ts"
import { Absent, type BadParameter, Invalid, type NotPermitted, StateConflict } from "../kernel/Refusals.ts"
import { headroom, renderAmount } from "./Amounts.ts"
import { administrable, administrator } from "./Gate.ts"
import {
  type AdjustMembers,
  adjustMembers,
  costUnitOf,
  type OpenMembers,
  openMembers,
  revocationReason
} from "./Members.ts"

/** The budget projection (spec "Budget"). */
export interface BudgetView {
  readonly public_id: string
  readonly user_public_id: string
  readonly credited_amount: string
  readonly debited_amount: string
  readonly cost_unit: string
  readonly starts_at: Date
  readonly expires_at: Date | null
  readonly revoked_at: Date | null
}

/** A ledger entry (spec "Budget"). */
export interface EntryView {
  readonly sequence: number
  readonly kind: "credit" | "debit"
  readonly amount: string
  readonly reason: string
  readonly operation_key: string
  readonly created_at: Date
}

export const budgetView = (row: BudgetRow): BudgetView => ({
  public_id: row.public_id,
  user_public_id: row.user_public_id,
  credited_amount: renderAmount(row.credited_amount),
  debited_amount: renderAmount(row.debited_amount),
  cost_unit: row.cost_unit,
  starts_at: row.starts_at,
  expires_at: row.expires_at,
  revoked_at: row.revoked_at
})

export const entryView = (row: EntryRow): EntryView => ({ ...row, amount: renderAmount(row.amount) })

/** Whether an entry is the write `members` asks for (amounts compared as rendered). */
const sameWrite = (entry: EntryView, members: AdjustMembers) =>
  entry.kind === members.kind && entry.amount === members.amount && entry.reason === members.reason

/** Whether a budget opened under a key is the opening `members` asks for. */
const sameOpening = (
  budget: BudgetRow & { readonly opening_amount: string; readonly opening_reason: string },
  members: OpenMembers
) =>
  renderAmount(budget.opening_amount) === members.amount &&
  budget.opening_reason === members.reason &&
  budget.starts_at.getTime() === members.startsAt.getTime() &&
  (budget.expires_at?.getTime() ?? null) === (members.expiresAt?.getTime() ?? null)

/** The key names another write than this one (a retry's receipt lost, or another caller's key). */
const keyNamesAnother = () =>
  new StateConflict({
    code: "idempotency_envelope_mismatch",
    message: "This Idempotency-Key already names another write of this budget"
  })

/** One user as the budget pages show it: its budgets, each with its ledger. */
export interface UserBudgets {
  readonly user: { readonly public_id: string; readonly kind: "human" | "agent"; readonly display_name: string }
  readonly handle: string
  readonly budgets: ReadonlyArray<{ readonly budget: BudgetView; readonly entries: ReadonlyArray<EntryView> }>
}

type Refused = BadParameter | Absent | NotPermitted | StateConflict | Invalid

export class Budgets extends Context.Service<
  Budgets,
  {
    /** The account's cost unit, null while unset. */
    readonly costUnit: Effect.Effect<string | null>
    /** Sets the account's cost unit once; the same unit again answers it, another conflicts. */
    readonly configureCostUnit: (actorId: bigint, body: unknown) => Effect.Effect<string, Refused>
    /** Opens a budget for the user; `operationKey` names its first entry (the credit). */
    readonly open: (
      actorId: bigint,
      userPublicId: string,
      body: unknown,
      operationKey: string
    ) => Effect.Effect<BudgetView, Refused>
    /** A credit or debit; an entry already written under `operationKey` is answered again. */
    readonly adjust: (
      actorId: bigint,
      userPublicId: string,
      budgetPublicId: string,
      body: unknown,
      operationKey: string
    ) => Effect.Effect<{ readonly budget: BudgetView; readonly entry: EntryView }, Refused>
    /** Revokes the budget under `operationKey`; a revocation made under it is answered again. */
    readonly revoke: (
      actorId: bigint,
      userPublicId: string,
      budgetPublicId: string,
      body: unknown,
      operationKey: string
    ) => Effect.Effect<BudgetView, Refused>
    /** Every user the actor administers, with budgets and ledgers; and the account's unit. */
    readonly overview: (
      actorId: bigint
    ) => Effect.Effect<{ readonly costUnit: string | null; readonly users: ReadonlyArray<UserBudgets> }, NotPermitted>
  }
>()("@troupe/domain/budgets/Budgets") {
  static readonly layer = Layer.effect(
    Budgets,
    Effect.gen(function* () {
      const sql = yield* SqlClient
      const db = withDatabase(sql)
      const repository = BudgetsRepository.make

      /** The budget of the target user, 404 when unknown or another user's. */
      const budgetOf = (userId: bigint, budgetPublicId: string) =>
        Effect.gen(function* () {
          const budgets = yield* repository
          const row = isUuid(budgetPublicId) ? yield* budgets.findBudget(budgetPublicId) : undefined
          if (row === undefined || row.user_id !== userId) {
            return yield* new Absent({ code: "not_found", message: "No such budget" })
          }
          return row
        })

      /** The gate, the target user and its budget: what an adjustment and a revocation act on. */
      const gatedBudget = (actorId: bigint, userPublicId: string, budgetPublicId: string) =>
        Effect.gen(function* () {
          const target = yield* administrable(yield* administrator(actorId), userPublicId)
          return yield* budgetOf(target.id, budgetPublicId)
        })

      const configureCostUnit = (actorId: bigint, body: unknown) =>
        db(
          Effect.gen(function* () {
            yield* administrator(actorId)
            const unit = yield* costUnitOf(body)
            const configured = yield* (yield* repository).configureCostUnit(unit)
            if (configured !== unit) {
              return yield* new StateConflict({
                code: "cost_unit_conflict",
                message: `The account's cost unit is already ${configured}`
              })
            }
            return unit
          })
        )

      const open = (actorId: bigint, userPublicId: string, body: unknown, operationKey: string) =>
        db(
          Effect.gen(function* () {
            const budgets = yield* repository
            const actor = yield* administrator(actorId)
            const target = yield* administrable(actor, userPublicId)
            const unit = yield* budgets.costUnit
            if (unit === null) {
              return yield* new Invalid({
                code: "account_unit_unconfigured",
                message: "Configure the account's cost unit first"
              })
            }
            const members = yield* openMembers(body)
            const at = yield* now
            yield* budgets.lockUser(target.id)
            // A retry whose receipt was lost (or another administrator's key) finds its budget.
            const earlier = yield* budgets.openedUnder(target.id, operationKey)
            if (earlier !== undefined) {
              if (!sameOpening(earlier, members)) return yield* keyNamesAnother()
              return budgetView(earlier)
            }
            if (yield* budgets.hasOverlap(target.id, members.startsAt, members.expiresAt)) {
              return yield* new StateConflict({
                code: "budget_window_overlap",
                message: "Another budget of this user covers part of that window"
              })
            }
            const id = yield* budgets.insertBudget({
              publicId: newPublicId(),
              userId: target.id,
              costUnit: unit,
              startsAt: members.startsAt,
              expiresAt: members.expiresAt,
              now: at
            })
            yield* budgets.write({
              budgetId: id,
              kind: "credit",
              amount: members.amount,
              reason: members.reason,
              operationKey,
              withinHeadroom: false,
              now: at
            })
            return budgetView(yield* budgets.budgetById(id))
          }).pipe(sql.withTransaction)
        )

      const adjust = (
        actorId: bigint,
        userPublicId: string,
        budgetPublicId: string,
        body: unknown,
        operationKey: string
      ) =>
        db(
          Effect.gen(function* () {
            const budgets = yield* repository
            const budget = yield* gatedBudget(actorId, userPublicId, budgetPublicId)
            const members = yield* adjustMembers(body)
            const earlier = yield* budgets.findEntry(budget.id, operationKey)
            // The key already names an entry (a retry whose receipt was lost, or another
            // administrator's key): answered again only when it is this very write.
            if (earlier !== undefined && !sameWrite(entryView(earlier), members)) return yield* keyNamesAnother()
            const entry =
              earlier ??
              (yield* budgets.write({
                budgetId: budget.id,
                kind: members.kind,
                amount: members.amount,
                reason: members.reason,
                operationKey,
                withinHeadroom: true,
                now: yield* now
              }))
            const current = yield* budgets.budgetById(budget.id)
            if (entry === undefined) {
              const room = headroom(current.credited_amount, current.debited_amount)
              return yield* BigDecimal.isLessThan(room, BigDecimal.fromStringUnsafe(members.amount))
                ? new StateConflict({
                    code: "budget_insufficient_headroom",
                    message: "The debit is more than the budget's credited − debited"
                  })
                : new StateConflict({ code: "budget_already_revoked", message: "The budget is revoked" })
            }
            return { budget: budgetView(current), entry: entryView(entry) }
          }).pipe(sql.withTransaction)
        )

      const revoke = (
        actorId: bigint,
        userPublicId: string,
        budgetPublicId: string,
        body: unknown,
        operationKey: string
      ) =>
        db(
          Effect.gen(function* () {
            const budgets = yield* repository
            const budget = yield* gatedBudget(actorId, userPublicId, budgetPublicId)
            const reason = yield* revocationReason(body)
            // A retry whose receipt was lost answers the revocation it made.
            if (budget.revocation_key === operationKey && budget.revocation_reason === reason) {
              return budgetView(budget)
            }
            if (!(yield* budgets.revokeBudget(budget.id, reason, operationKey, yield* now))) {
              return yield* new StateConflict({ code: "budget_already_revoked", message: "The budget is revoked" })
            }
            return budgetView(yield* budgets.budgetById(budget.id))
          }).pipe(sql.withTransaction)
        )

      const overview = (actorId: bigint) =>
        db(
          Effect.gen(function* () {
            const budgets = yield* repository
            const actor = yield* administrator(actorId)
            const users = yield* budgets.administrableUsers(actor.account_id, actor.id)
            const shown = yield* Effect.forEach(users, (user) =>
              Effect.gen(function* () {
                const rows = yield* budgets.listForUser(user.id)
                const withEntries = yield* Effect.forEach(rows, (row) =>
                  Effect.map(budgets.entries(row.id), (entries) => ({
                    budget: budgetView(row),
                    entries: entries.map(entryView)
                  }))
                )
                return {
                  user: { public_id: user.public_id, kind: user.kind, display_name: user.display_name },
                  handle: user.handle,
                  budgets: withEntries
                }
              })
            )
            return { costUnit: yield* budgets.costUnit, users: shown }
          })
        )

      return Budgets.of({
        costUnit: db(Effect.flatMap(repository, (budgets) => budgets.costUnit)),
        configureCostUnit,
        open,
        adjust,
        revoke,
        overview
      })
    })
  )
}
