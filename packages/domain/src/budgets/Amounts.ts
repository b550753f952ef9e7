// Budget amounts (supplement "Budgets"): JSON strings of up to 18 integer and 18 fractional
// digits, above zero; exact arithmetic (effect's BigDecimal); rendered plain with trailing
// fractional zeros dropped ("0.3", "25"). PostgreSQL's numeric sums them in storage.
import { BigDecimal } from "effect"
import { plainDecimal } from "../models/Usage.ts"

const grammar = /^\d{1,18}(\.\d{1,18})?$/

/** The amount when `value` is a string of the grammar above zero; undefined otherwise. */
export const parseAmount = (value: unknown): string | undefined => {
  if (typeof value !== "string" || !grammar.test(value)) return undefined
  const amount = BigDecimal.fromStringUnsafe(value)
  return BigDecimal.isPositive(amount) ? plainDecimal(amount) : undefined
}

/** A stored amount (numeric text) as the wire shows it. */
export const renderAmount = (stored: string): string => plainDecimal(BigDecimal.fromStringUnsafe(stored))

/** credited − debited, exactly. */
export const headroom = (credited: string, debited: string): BigDecimal.BigDecimal =>
  BigDecimal.subtract(BigDecimal.fromStringUnsafe(credited), BigDecimal.fromStringUnsafe(debited))

/** Whether nothing is left to spend (credited − debited ≤ 0). */
export const exhausted = (credited: string, debited: string): boolean =>
  !BigDecimal.isPositive(headroom(credited, debited))

/** Whether a cost is above zero (a zero cost debits nothing). */
export const positive = (amount: string): boolean => BigDecimal.isPositive(BigDecimal.fromStringUnsafe(amount))
