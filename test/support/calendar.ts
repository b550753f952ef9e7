// Calendar arithmetic for tests that must hold on whatever day they run, worked out apart from
// the product's own (domain/kernel/Calendar.ts), so a test checks it rather than repeats it.

/** 10 calendar years after `millis` in UTC; from 29 February, the 28th (the year has none). */
export const tenYearsAfter = (millis: number): number => {
  const date = new Date(millis)
  const day = date.getUTCDate()
  date.setUTCFullYear(date.getUTCFullYear() + 10)
  // `Date` rolls 29 February over into 1 March; step back to the month's last day.
  if (date.getUTCDate() !== day) date.setUTCDate(0)
  return date.getTime()
}
