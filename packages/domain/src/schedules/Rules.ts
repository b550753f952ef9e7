// A schedule's rule (supplement "Schedules"): its judging and normalization (instants in UTC `Z`)
// and its clock arithmetic, the next occurrence after an instant and the latest at or before one,
// over IANA zones with @js-temporal/polyfill. A daily local time in a DST gap has no occurrence that
// day (the earlier disambiguation lands on another wall time); a repeated one counts once, at its
// earlier instant. Pure: instants are epoch milliseconds.
import { Temporal } from "@js-temporal/polyfill"
import { tenYearsAfter } from "../kernel/Calendar.ts"

export type Rule =
  | { readonly kind: "once"; readonly run_at: string }
  | { readonly kind: "interval"; readonly every_seconds: number; readonly starts_at: string }
  | { readonly kind: "daily"; readonly local_time: string; readonly time_zone: string }

/** A refusal naming the rule's member (422 validation_failed). */
export interface RuleFault {
  readonly field: string
  readonly message: string
}

const fault = (field: string, message: string): RuleFault => ({ field, message })

/** An ISO 8601 instant with an explicit offset (Z or ±HH:MM), else undefined. */
const instantOf = (value: unknown): number | undefined => {
  if (
    typeof value !== "string" ||
    !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/i.test(value)
  ) {
    return undefined
  }
  try {
    return Temporal.Instant.from(value).epochMilliseconds
  } catch {
    return undefined
  }
}

const iso = (millis: number) => new Date(millis).toISOString()

/** An IANA name the tz database knows (its canonical spelling); a bare UTC offset is none. */
const zoneOf = (name: unknown): string | undefined => {
  if (typeof name !== "string" || !/^[A-Za-z]/.test(name)) return undefined
  try {
    return Temporal.Now.zonedDateTimeISO(name).timeZoneId
  } catch {
    return undefined
  }
}

const localTimeOf = (value: unknown) => {
  const match = typeof value === "string" ? /^(\d{2}):(\d{2})$/.exec(value) : null
  if (match === null) return undefined
  const hour = Number(match[1])
  const minute = Number(match[2])
  return hour <= 23 && minute <= 59 ? { hour, minute } : undefined
}

/**
 * Judges a rule as given at `now` (creation or edit): once.run_at with its offset, in the future
 * and within 10 years; interval.every_seconds a JSON integer 60 to 31536000, starts_at optional
 * (default now; past allowed; within 10 years); daily.local_time HH:MM and a known time zone.
 */
export const judgeRule = (raw: unknown, now: number): Rule | RuleFault => {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return fault("rule", "rule must be an object")
  const given = raw as Record<string, unknown>
  switch (given.kind) {
    case "once": {
      const at = instantOf(given.run_at)
      if (at === undefined) return fault("rule.run_at", "rule.run_at must be an instant with an explicit offset")
      if (at <= now) return fault("rule.run_at", "rule.run_at is not in the future")
      if (at > tenYearsAfter(now)) return fault("rule.run_at", "rule.run_at is more than 10 years away")
      return { kind: "once", run_at: iso(at) }
    }
    case "interval": {
      const every = given.every_seconds
      if (typeof every !== "number" || !Number.isInteger(every) || every < 60 || every > 31_536_000) {
        return fault("rule.every_seconds", "rule.every_seconds must be an integer from 60 to 31536000")
      }
      const starts = given.starts_at === undefined || given.starts_at === null ? now : instantOf(given.starts_at)
      if (starts === undefined)
        return fault("rule.starts_at", "rule.starts_at must be an instant with an explicit offset")
      if (starts > tenYearsAfter(now)) return fault("rule.starts_at", "rule.starts_at is more than 10 years away")
      return { kind: "interval", every_seconds: every, starts_at: iso(starts) }
    }
    case "daily": {
      if (localTimeOf(given.local_time) === undefined) {
        return fault("rule.local_time", "rule.local_time must be HH:MM from 00:00 to 23:59")
      }
      const zone = zoneOf(given.time_zone)
      if (zone === undefined) return fault("rule.time_zone", "rule.time_zone must be an IANA time zone name")
      return { kind: "daily", local_time: given.local_time as string, time_zone: zone }
    }
    default:
      return fault("rule.kind", "rule.kind must be once, interval or daily")
  }
}

export const isRuleFault = (value: Rule | RuleFault): value is RuleFault => "field" in value

/** The instant of a daily rule on one calendar date: none in a DST gap, the earlier of a repeat. */
const dailyOn = (rule: Extract<Rule, { kind: "daily" }>, date: Temporal.PlainDate): number | undefined => {
  const { hour, minute } = localTimeOf(rule.local_time)!
  const wall = date.toPlainDateTime({ hour, minute })
  const earlier = wall.toZonedDateTime(rule.time_zone, { disambiguation: "earlier" })
  return earlier.toPlainDateTime().equals(wall) ? earlier.epochMilliseconds : undefined
}

const dateIn = (zone: string, at: number) =>
  Temporal.Instant.fromEpochMilliseconds(at).toZonedDateTimeISO(zone).toPlainDate()

/** The first occurrence strictly after `after`, or null (a once that has passed). */
export const nextAfter = (rule: Rule, after: number): number | null => {
  switch (rule.kind) {
    case "once": {
      const at = Date.parse(rule.run_at)
      return at > after ? at : null
    }
    case "interval": {
      const starts = Date.parse(rule.starts_at)
      const every = rule.every_seconds * 1000
      if (starts > after) return starts
      return starts + (Math.floor((after - starts) / every) + 1) * every
    }
    case "daily": {
      let date = dateIn(rule.time_zone, after)
      for (let day = 0; day < 4; day++, date = date.add({ days: 1 })) {
        const at = dailyOn(rule, date)
        if (at !== undefined && at > after) return at
      }
      return null
    }
  }
}

/** The latest occurrence at or before `at`, or null when none came yet. */
export const latestAtOrBefore = (rule: Rule, at: number): number | null => {
  switch (rule.kind) {
    case "once": {
      const runAt = Date.parse(rule.run_at)
      return runAt <= at ? runAt : null
    }
    case "interval": {
      const starts = Date.parse(rule.starts_at)
      const every = rule.every_seconds * 1000
      return starts > at ? null : starts + Math.floor((at - starts) / every) * every
    }
    case "daily": {
      let date = dateIn(rule.time_zone, at)
      for (let day = 0; day < 4; day++, date = date.subtract({ days: 1 })) {
        const occurrence = dailyOn(rule, date)
        if (occurrence !== undefined && occurrence <= at) return occurrence
      }
      return null
    }
  }
}
