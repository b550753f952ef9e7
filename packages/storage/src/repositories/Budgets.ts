// Rows of budgets: the account's cost unit, `budgets` (running totals, window, revocation),
// `budget_entries` (the ledger) and `budget_admissions` (the budget that admitted an inference
// request). Amounts travel as decimal strings and are summed by PostgreSQL's numeric, exactly.
// Every write to a budget's totals is one UPDATE of its row, which holds the row's lock for the
// rest of the transaction: writers of one budget take turns, and an entry's sequence is the count
// that UPDATE answered. Rules (gate, grammar, judgement order) live in the domain.
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import * as Rows from "./Rows.ts"

export const BudgetRow = Schema.Struct({
  id: Schema.BigInt,
  public_id: Schema.String,
  user_id: Schema.BigInt,
  user_public_id: Schema.String,
  cost_unit: Schema.String,
  credited_amount: Schema.String,
  debited_amount: Schema.String,
  entry_count: Schema.Number,
  starts_at: Schema.Date,
  expires_at: Schema.NullOr(Schema.Date),
  revoked_at: Schema.NullOr(Schema.Date),
  revocation_reason: Schema.NullOr(Schema.String),
  /** The Idempotency-Key of the revocation, null until revoked. */
  revocation_key: Schema.NullOr(Schema.String),
  created_at: Schema.Date
})
export type BudgetRow = typeof BudgetRow.Type

export const EntryKind = Schema.Literals(["credit", "debit"])
export type EntryKind = typeof EntryKind.Type

export const EntryRow = Schema.Struct({
  sequence: Schema.Number,
  kind: EntryKind,
  amount: Schema.String,
  reason: Schema.String,
  operation_key: Schema.String,
  created_at: Schema.Date
})
export type EntryRow = typeof EntryRow.Type

/** The budget's columns (amounts as text, so numeric keeps every digit), with its user's public id. */
const budgetColumns = `b.id, b.public_id, b.user_id, u.public_id AS user_public_id, b.cost_unit,
  b.credited_amount::text AS credited_amount, b.debited_amount::text AS debited_amount, b.entry_count,
  b.starts_at, b.expires_at, b.revoked_at, b.revocation_reason, b.revocation_key, b.created_at`

const entryColumns = "sequence, kind, amount::text AS amount, reason, operation_key, created_at"

const CostUnit = Schema.Struct({ cost_unit: Schema.NullOr(Schema.String) })

const readCostUnit = Rows.maybe("Budgets.costUnit", {
  Request: Schema.Void,
  Result: CostUnit,
  execute: (_, sql) => sql`SELECT cost_unit FROM accounts LIMIT 1`
})

/** The account's cost unit, null while unset. */
const costUnit = Effect.map(readCostUnit(undefined), (row) => row?.cost_unit ?? null)

/** Sets the unit where none is set yet; answers the unit the account has afterwards. */
const configureCostUnit = Effect.fnUntraced(function* (unit: string) {
  const sql = yield* SqlClient
  yield* sql`UPDATE accounts SET cost_unit = ${unit} WHERE cost_unit IS NULL`
  return yield* costUnit
})

/** Takes the user's row lock (no key update) for the transaction: opens for one user take turns. */
const lockUser = Effect.fnUntraced(function* (userId: bigint) {
  const sql = yield* SqlClient
  yield* sql`SELECT 1 FROM users WHERE id = ${userId} FOR NO KEY UPDATE`
})

const overlapping = Rows.maybe("Budgets.overlapping", {
  Request: Schema.Struct({ userId: Schema.BigInt, startsAt: Schema.Date, expiresAt: Schema.NullOr(Schema.Date) }),
  Result: Schema.Struct({ id: Schema.BigInt }),
  execute: ({ userId, startsAt, expiresAt }, sql) => sql`
    SELECT id FROM budgets
    WHERE user_id = ${userId} AND revoked_at IS NULL
      AND (expires_at IS NULL OR expires_at > ${startsAt})
      AND (${expiresAt}::timestamptz IS NULL OR starts_at < ${expiresAt}::timestamptz)
    LIMIT 1`
})

/** Whether an unrevoked budget of the user has a window intersecting [startsAt, expiresAt). */
const hasOverlap = (userId: bigint, startsAt: Date, expiresAt: Date | null) =>
  Effect.map(overlapping({ userId, startsAt, expiresAt }), (row) => row !== undefined)

const insert = Rows.one("Budgets.insertBudget", {
  Request: Schema.Struct({
    publicId: Schema.String,
    userId: Schema.BigInt,
    costUnit: Schema.String,
    startsAt: Schema.Date,
    expiresAt: Schema.NullOr(Schema.Date),
    now: Schema.Date
  }),
  Result: Schema.Struct({ id: Schema.BigInt }),
  execute: (row, sql) => sql`
    INSERT INTO budgets (public_id, user_id, cost_unit, starts_at, expires_at, created_at, updated_at)
    VALUES (${row.publicId}, ${row.userId}, ${row.costUnit}, ${row.startsAt}, ${row.expiresAt}, ${row.now}, ${row.now})
    RETURNING id`
})

/** Inserts a budget with nothing credited yet; answers its internal id. */
const insertBudget = (row: Parameters<typeof insert>[0]) => Effect.map(insert(row), (inserted) => inserted.id)

const byPublicId = Rows.maybe("Budgets.findBudget", {
  Request: Schema.Struct({ publicId: Schema.String }),
  Result: BudgetRow,
  execute: ({ publicId }, sql) => sql`
    SELECT ${sql.literal(budgetColumns)} FROM budgets b JOIN users u ON u.id = b.user_id
    WHERE b.public_id = ${publicId}`
})

const findBudget = (publicId: string) => byPublicId({ publicId })

const byId = Rows.one("Budgets.budgetById", {
  Request: Schema.Struct({ id: Schema.BigInt }),
  Result: BudgetRow,
  execute: ({ id }, sql) => sql`
    SELECT ${sql.literal(budgetColumns)} FROM budgets b JOIN users u ON u.id = b.user_id WHERE b.id = ${id}`
})

const budgetById = (id: bigint) => byId({ id })

const ofUser = Rows.all("Budgets.listForUser", {
  Request: Schema.Struct({ userId: Schema.BigInt }),
  Result: BudgetRow,
  execute: ({ userId }, sql) => sql`
    SELECT ${sql.literal(budgetColumns)} FROM budgets b JOIN users u ON u.id = b.user_id
    WHERE b.user_id = ${userId} ORDER BY b.starts_at, b.id`
})

/** A user's budgets, earliest window first. */
const listForUser = (userId: bigint) => ofUser({ userId })

const usableOf = Rows.maybe("Budgets.usable", {
  Request: Schema.Struct({ userId: Schema.BigInt, at: Schema.Date }),
  Result: BudgetRow,
  execute: ({ userId, at }, sql) => sql`
    SELECT ${sql.literal(budgetColumns)} FROM budgets b JOIN users u ON u.id = b.user_id
    WHERE b.user_id = ${userId} AND b.revoked_at IS NULL AND b.starts_at <= ${at}
      AND (b.expires_at IS NULL OR b.expires_at > ${at})
    ORDER BY b.starts_at DESC LIMIT 1`
})

/** The user's unrevoked budget whose window holds `at`, if any (windows of unrevoked ones never meet). */
const usable = (userId: bigint, at: Date) => usableOf({ userId, at })

const entriesOf = Rows.all("Budgets.entries", {
  Request: Schema.Struct({ budgetId: Schema.BigInt }),
  Result: EntryRow,
  execute: ({ budgetId }, sql) => sql`
    SELECT ${sql.literal(entryColumns)} FROM budget_entries WHERE budget_id = ${budgetId} ORDER BY sequence`
})

/** The budget's ledger, in sequence. */
const entries = (budgetId: bigint) => entriesOf({ budgetId })

const entryByKey = Rows.maybe("Budgets.entryByKey", {
  Request: Schema.Struct({ budgetId: Schema.BigInt, operationKey: Schema.String }),
  Result: EntryRow,
  execute: ({ budgetId, operationKey }, sql) => sql`
    SELECT ${sql.literal(entryColumns)} FROM budget_entries
    WHERE budget_id = ${budgetId} AND operation_key = ${operationKey}`
})

/** The budget's entry written under `operationKey`, if one was. */
const findEntry = (budgetId: bigint, operationKey: string) => entryByKey({ budgetId, operationKey })

const Totals = Schema.Struct({ entry_count: Schema.Number })

const credited = Rows.one("Budgets.credit", {
  Request: Schema.Struct({ id: Schema.BigInt, amount: Schema.String, now: Schema.Date }),
  Result: Totals,
  execute: ({ id, amount, now }, sql) => sql`
    UPDATE budgets SET credited_amount = credited_amount + ${amount}::numeric, entry_count = entry_count + 1,
      updated_at = ${now}
    WHERE id = ${id}
    RETURNING entry_count`
})

const debited = Rows.maybe("Budgets.debit", {
  Request: Schema.Struct({
    id: Schema.BigInt,
    amount: Schema.String,
    /** Only within credited − debited (an administrator's debit); a settlement may overdraw. */
    withinHeadroom: Schema.Boolean,
    now: Schema.Date
  }),
  Result: Totals,
  execute: ({ id, amount, withinHeadroom, now }, sql) => sql`
    UPDATE budgets SET debited_amount = debited_amount + ${amount}::numeric, entry_count = entry_count + 1,
      updated_at = ${now}
    WHERE id = ${id} AND revoked_at IS NULL
      AND (NOT ${withinHeadroom} OR credited_amount - debited_amount >= ${amount}::numeric)
    RETURNING entry_count`
})

const appendEntry = Rows.one("Budgets.appendEntry", {
  Request: Schema.Struct({
    budgetId: Schema.BigInt,
    sequence: Schema.Number,
    kind: EntryKind,
    amount: Schema.String,
    reason: Schema.String,
    operationKey: Schema.String,
    now: Schema.Date
  }),
  Result: EntryRow,
  execute: (entry, sql) => sql`
    INSERT INTO budget_entries (budget_id, sequence, kind, amount, reason, operation_key, created_at)
    VALUES (${entry.budgetId}, ${entry.sequence}, ${entry.kind}, ${entry.amount}::numeric, ${entry.reason},
            ${entry.operationKey}, ${entry.now})
    RETURNING ${sql.literal(entryColumns)}`
})

export interface EntryWrite {
  readonly budgetId: bigint
  readonly kind: EntryKind
  readonly amount: string
  readonly reason: string
  readonly operationKey: string
  /** Debits only: refused (undefined) beyond credited − debited. */
  readonly withinHeadroom: boolean
  readonly now: Date
}

/**
 * Adds the amount to the budget's totals and appends the entry; answers undefined when a debit
 * was refused (the budget is revoked, or a debit within headroom would pass it).
 */
const write = Effect.fnUntraced(function* (entry: EntryWrite) {
  const totals =
    entry.kind === "credit"
      ? yield* credited({ id: entry.budgetId, amount: entry.amount, now: entry.now })
      : yield* debited({
          id: entry.budgetId,
          amount: entry.amount,
          withinHeadroom: entry.withinHeadroom,
          now: entry.now
        })
  if (totals === undefined) return undefined
  return yield* appendEntry({ ...entry, sequence: totals.entry_count })
})

const revoke = Rows.maybe("Budgets.revoke", {
  Request: Schema.Struct({
    id: Schema.BigInt,
    reason: Schema.NullOr(Schema.String),
    operationKey: Schema.String,
    now: Schema.Date
  }),
  Result: Schema.Struct({ id: Schema.BigInt }),
  execute: ({ id, reason, operationKey, now }, sql) => sql`
    UPDATE budgets SET revoked_at = ${now}, revocation_reason = ${reason}, revocation_key = ${operationKey},
      updated_at = ${now}
    WHERE id = ${id} AND revoked_at IS NULL
    RETURNING id`
})

/** Revokes the budget under `operationKey`; answers whether it did (false: it was already revoked). */
const revokeBudget = (id: bigint, reason: string | null, operationKey: string, now: Date) =>
  Effect.map(revoke({ id, reason, operationKey, now }), (row) => row !== undefined)

const openedUnderKey = Rows.maybe("Budgets.openedUnder", {
  Request: Schema.Struct({ userId: Schema.BigInt, operationKey: Schema.String }),
  Result: Schema.Struct({ ...BudgetRow.fields, opening_amount: Schema.String, opening_reason: Schema.String }),
  execute: ({ userId, operationKey }, sql) => sql`
    SELECT ${sql.literal(budgetColumns)}, e.amount::text AS opening_amount, e.reason AS opening_reason
    FROM budgets b JOIN users u ON u.id = b.user_id
    JOIN budget_entries e ON e.budget_id = b.id AND e.sequence = 1
    WHERE b.user_id = ${userId} AND e.operation_key = ${operationKey}`
})

/** The user's budget opened under `operationKey` (its entry 1's key), with that entry's amount and reason. */
const openedUnder = (userId: bigint, operationKey: string) => openedUnderKey({ userId, operationKey })

export const AdministrableUser = Schema.Struct({
  id: Schema.BigInt,
  public_id: Schema.String,
  kind: Schema.Literals(["human", "agent"]),
  display_name: Schema.String,
  handle: Schema.String
})
export type AdministrableUser = typeof AdministrableUser.Type

const administrableOf = Rows.all("Budgets.administrableUsers", {
  Request: Schema.Struct({ accountId: Schema.BigInt, stewardId: Schema.BigInt }),
  Result: AdministrableUser,
  execute: ({ accountId, stewardId }, sql) => sql`
    SELECT id, public_id, kind, display_name, handle FROM users
    WHERE account_id = ${accountId} AND status <> 'removed'
      AND (kind = 'human' OR (kind = 'agent' AND steward_id = ${stewardId}))
    ORDER BY kind DESC, display_name, id`
})

/** The users an administrator may administer budgets of: live humans and the live agents it stewards. */
const administrableUsers = (accountId: bigint, stewardId: bigint) => administrableOf({ accountId, stewardId })

/** Records the budget that admitted an inference request. */
const recordAdmission = Effect.fnUntraced(function* (requestId: bigint, budgetId: bigint, now: Date) {
  const sql = yield* SqlClient
  yield* sql`
    INSERT INTO budget_admissions (inference_request_id, budget_id, created_at)
    VALUES (${requestId}, ${budgetId}, ${now})
    ON CONFLICT (inference_request_id) DO NOTHING`
})

const admitting = Rows.maybe("Budgets.admittedBy", {
  Request: Schema.Struct({ requestPublicId: Schema.String }),
  Result: BudgetRow,
  execute: ({ requestPublicId }, sql) => sql`
    SELECT ${sql.literal(budgetColumns)} FROM budget_admissions a
    JOIN inference_requests r ON r.id = a.inference_request_id
    JOIN budgets b ON b.id = a.budget_id JOIN users u ON u.id = b.user_id
    WHERE r.public_id = ${requestPublicId}`
})

/** The budget that admitted the inference request, if one did. */
const admittedBy = (requestPublicId: string) => admitting({ requestPublicId })

const hostedPayerOf = Rows.maybe("Budgets.hostedPayer", {
  Request: Schema.Struct({ turnPublicId: Schema.String }),
  Result: Schema.Struct({ payer_id: Schema.BigInt }),
  execute: ({ turnPublicId }, sql) => sql`
    SELECT COALESCE(i.author_id, c.creator_id) AS payer_id
    FROM conversation_turns t JOIN conversations c ON c.id = t.conversation_id
    LEFT JOIN conversation_inputs i
      ON i.public_id = t.input_public_id OR (t.input_public_id IS NULL AND i.turn_public_id = t.public_id)
    WHERE t.public_id = ${turnPublicId}::uuid
    ORDER BY i.id NULLS LAST LIMIT 1`
})

/**
 * Who pays for the work of a run answering the turn `turnPublicId`: the author of the input the
 * turn answers, else the conversation's creator (a turn without an input, such as a regeneration).
 */
const hostedPayer = (turnPublicId: string) => Effect.map(hostedPayerOf({ turnPublicId }), (row) => row?.payer_id)

export class BudgetsRepository extends Context.Service<BudgetsRepository>()("@troupe/storage/BudgetsRepository", {
  make: Effect.map(SqlClient, (sql) =>
    Rows.bind(sql, {
      costUnit,
      configureCostUnit,
      lockUser,
      hasOverlap,
      insertBudget,
      findBudget,
      budgetById,
      listForUser,
      administrableUsers,
      usable,
      entries,
      findEntry,
      write,
      revokeBudget,
      openedUnder,
      hostedPayer,
      recordAdmission,
      admittedBy
    })
  )
}) {
  static readonly layer = Layer.effect(BudgetsRepository, BudgetsRepository.make)
}
