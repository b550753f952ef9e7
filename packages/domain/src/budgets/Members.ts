// The members of budget writes (supplement "Budgets"), judged after the gate: a wrapper or member
// that is absent is parameter_missing; one present but outside its grammar is validation_failed
// (amounts as JSON strings only, reasons 1–255 characters, windows with expires_at after starts_at).
import { Temporal } from "@js-temporal/polyfill"
import { Effect } from "effect"
import { isObject } from "../kernel/Json.ts"
import { BadParameter, Invalid } from "../kernel/Refusals.ts"
import { parseAmount } from "./Amounts.ts"

const instant = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/i

const missing = (name: string) => new BadParameter({ code: "parameter_missing", message: `${name} is required` })
const invalid = (name: string, rule: string) => new Invalid({ code: "validation_failed", message: `${name} ${rule}` })

/** The named wrapper object of a body (`{budget: {...}}`). */
export const wrapper = (body: unknown, name: string) =>
  isObject(body) && isObject(body[name]) ? Effect.succeed(body[name]) : Effect.fail(missing(name))

const present = (members: Readonly<Record<string, unknown>>, name: string, path: string) =>
  members[name] === undefined ? Effect.fail(missing(path)) : Effect.succeed(members[name])

export const amountOf = (members: Readonly<Record<string, unknown>>, path: string) =>
  Effect.flatMap(present(members, "amount", path), (value) => {
    const amount = parseAmount(value)
    return amount === undefined
      ? Effect.fail(invalid(path, "must be a decimal string of up to 18 digits each side of the point, above zero"))
      : Effect.succeed(amount)
  })

/** A reason of 1 to 255 characters. */
export const reasonText = (value: unknown, path: string) =>
  typeof value === "string" && value.length >= 1 && [...value].length <= 255
    ? Effect.succeed(value)
    : Effect.fail(invalid(path, "must be 1 to 255 characters"))

export const reasonOf = (members: Readonly<Record<string, unknown>>, path: string) =>
  Effect.flatMap(present(members, "reason", path), (value) => reasonText(value, path))

/** An RFC 3339 date-time that names a real instant (Temporal refuses 02-30 and 24:00; `Date` rolls them over). */
const instantOf = (value: unknown, path: string) =>
  Effect.try({
    try: () => {
      if (typeof value !== "string" || !instant.test(value)) throw new RangeError(path)
      return new Date(Temporal.Instant.from(value).epochMilliseconds)
    },
    catch: () => invalid(path, "must be an RFC 3339 date-time")
  })

export interface OpenMembers {
  readonly amount: string
  readonly startsAt: Date
  readonly expiresAt: Date | null
  readonly reason: string
}

/** `{budget: {amount, starts_at, expires_at, reason}}` (expires_at null or absent: open-ended). */
export const openMembers = (body: unknown) =>
  Effect.gen(function* () {
    const members = yield* wrapper(body, "budget")
    const amount = yield* amountOf(members, "budget.amount")
    const startsAt = yield* instantOf(yield* present(members, "starts_at", "budget.starts_at"), "budget.starts_at")
    const expiresAt =
      members.expires_at === undefined || members.expires_at === null
        ? null
        : yield* instantOf(members.expires_at, "budget.expires_at")
    if (expiresAt !== null && expiresAt.getTime() <= startsAt.getTime()) {
      return yield* invalid("budget.expires_at", "must be after budget.starts_at")
    }
    const reason = yield* reasonOf(members, "budget.reason")
    return { amount, startsAt, expiresAt, reason } satisfies OpenMembers
  })

export interface AdjustMembers {
  readonly kind: "credit" | "debit"
  readonly amount: string
  readonly reason: string
}

/** `{budget: {kind credit or debit, amount, reason}}`. */
export const adjustMembers = (body: unknown) =>
  Effect.gen(function* () {
    const members = yield* wrapper(body, "budget")
    const kind = yield* present(members, "kind", "budget.kind")
    if (kind !== "credit" && kind !== "debit") return yield* invalid("budget.kind", "must be credit or debit")
    const amount = yield* amountOf(members, "budget.amount")
    const reason = yield* reasonOf(members, "budget.reason")
    return { kind, amount, reason } satisfies AdjustMembers
  })

/** Optional `{revocation: {reason}}`: the reason, or null. */
export const revocationReason = (body: unknown) =>
  Effect.gen(function* () {
    if (body === undefined || body === null) return null
    if (!isObject(body)) return yield* invalid("body", "must be an object")
    const revocation = body.revocation
    if (revocation === undefined || revocation === null) return null
    if (!isObject(revocation)) return yield* invalid("revocation", "must be an object")
    return revocation.reason === undefined ? null : yield* reasonText(revocation.reason, "revocation.reason")
  })

const unitGrammar = /^[A-Z][A-Z0-9_]{0,15}$/

/** `{account: {cost_unit}}`: an upper-case unit of 1 to 16 characters. */
export const costUnitOf = (body: unknown) =>
  Effect.gen(function* () {
    const members = yield* wrapper(body, "account")
    const unit = yield* present(members, "cost_unit", "account.cost_unit")
    if (typeof unit !== "string" || !unitGrammar.test(unit)) {
      return yield* invalid("account.cost_unit", "must match [A-Z][A-Z0-9_]{0,15}")
    }
    return unit
  })
