// Calendar arithmetic shared by the doors that bound how far ahead something may be asked for
// (a schedule's instants, an input's deliver_at and deliver_in): in UTC, by calendar, not by a
// fixed count of milliseconds.
import { Temporal } from "@js-temporal/polyfill"

/**
 * The future bound "10 years from now": 10 calendar years after `now` in UTC (29 February
 * constrains to the 28th), not 10 × 365.25 days, which falls half a day short across three leap days.
 */
export const tenYearsAfter = (now: number): number =>
  Temporal.Instant.fromEpochMilliseconds(now).toZonedDateTimeISO("UTC").add({ years: 10 }).epochMilliseconds
