// A schedule's rule arithmetic (supplement "Schedules"): judging and normalization, the next
// occurrence and the latest one due, over IANA zones across DST gaps and repeats.
import { judgeRule, latestAtOrBefore, nextAfter, type Rule } from "@troupe/domain/schedules/Rules"
import { describe, expect, it } from "vitest"

const at = (iso: string) => Date.parse(iso)
const iso = (millis: number | null) => (millis === null ? null : new Date(millis).toISOString())
const rule = (raw: unknown, now = at("2027-01-01T00:00:00Z")) => judgeRule(raw, now) as Rule

/** The next `count` occurrences after `from`. */
const series = (of: Rule, from: string, count: number) => {
  const out: Array<string | null> = []
  let cursor = at(from)
  for (let index = 0; index < count; index++) {
    const next = nextAfter(of, cursor)
    out.push(iso(next))
    if (next === null) break
    cursor = next
  }
  return out
}

describe("schedule rules", () => {
  it("the future bound is 10 calendar years: from 2027-03-01 (three leap days ahead) 2037-03-01T00:00Z is the last instant", () => {
    const now = at("2027-03-01T00:00:00Z")
    expect(rule({ kind: "once", run_at: "2037-02-28T23:00:00Z" }, now)).toEqual({
      kind: "once",
      run_at: "2037-02-28T23:00:00.000Z"
    })
    expect(rule({ kind: "once", run_at: "2037-03-01T00:00:00Z" }, now).kind).toBe("once")
    expect(judgeRule({ kind: "once", run_at: "2037-03-01T00:00:01Z" }, now)).toMatchObject({ field: "rule.run_at" })
    const starts = { kind: "interval", every_seconds: 60 }
    expect(rule({ ...starts, starts_at: "2037-03-01T00:00:00Z" }, now).kind).toBe("interval")
    expect(judgeRule({ ...starts, starts_at: "2037-03-01T00:00:01Z" }, now)).toMatchObject({ field: "rule.starts_at" })
    const leapDay = at("2028-02-29T12:00:00Z")
    expect(rule({ kind: "once", run_at: "2038-02-28T12:00:00Z" }, leapDay).kind).toBe("once")
    expect(judgeRule({ kind: "once", run_at: "2038-02-28T12:00:01Z" }, leapDay)).toMatchObject({ field: "rule.run_at" })
  })

  it("normalizes instants to UTC Z and judges every member", () => {
    expect(rule({ kind: "once", run_at: "2027-06-01T09:00:00+02:00" })).toEqual({
      kind: "once",
      run_at: "2027-06-01T07:00:00.000Z"
    })
    expect(rule({ kind: "interval", every_seconds: 60 })).toEqual({
      kind: "interval",
      every_seconds: 60,
      starts_at: "2027-01-01T00:00:00.000Z"
    })
    const now = at("2027-01-01T00:00:00Z")
    expect(judgeRule({ kind: "once", run_at: "2026-12-31T23:59:59Z" }, now)).toMatchObject({ field: "rule.run_at" })
    expect(judgeRule({ kind: "once", run_at: "2037-01-02T00:00:00Z" }, now)).toMatchObject({ field: "rule.run_at" })
    expect(judgeRule({ kind: "interval", every_seconds: 31_536_001 }, now)).toMatchObject({
      field: "rule.every_seconds"
    })
    expect(judgeRule({ kind: "interval", every_seconds: "60" }, now)).toMatchObject({ field: "rule.every_seconds" })
    expect(judgeRule({ kind: "daily", local_time: "23:60", time_zone: "UTC" }, now)).toMatchObject({
      field: "rule.local_time"
    })
    expect(judgeRule({ kind: "daily", local_time: "23:59", time_zone: "Nowhere/Land" }, now)).toMatchObject({
      field: "rule.time_zone"
    })
  })

  it("daily in America/New_York: the spring gap has no occurrence, the autumn repeat counts once (earlier)", () => {
    const gap = rule({ kind: "daily", local_time: "02:30", time_zone: "America/New_York" })
    expect(series(gap, "2027-03-12T12:00:00Z", 3)).toEqual([
      "2027-03-13T07:30:00.000Z",
      "2027-03-15T06:30:00.000Z",
      "2027-03-16T06:30:00.000Z"
    ])
    const repeat = rule({ kind: "daily", local_time: "01:30", time_zone: "America/New_York" })
    expect(series(repeat, "2027-11-05T12:00:00Z", 3)).toEqual([
      "2027-11-06T05:30:00.000Z",
      "2027-11-07T05:30:00.000Z",
      "2027-11-08T06:30:00.000Z"
    ])
    expect(iso(latestAtOrBefore(repeat, at("2027-11-07T07:00:00Z")))).toBe("2027-11-07T05:30:00.000Z")
    expect(iso(latestAtOrBefore(gap, at("2027-03-14T23:00:00Z")))).toBe("2027-03-13T07:30:00.000Z")
  })

  it("daily in Asia/Tokyo keeps one UTC instant across the same dates", () => {
    const tokyo = rule({ kind: "daily", local_time: "09:00", time_zone: "Asia/Tokyo" })
    expect(series(tokyo, "2027-03-13T00:30:00Z", 3)).toEqual([
      "2027-03-14T00:00:00.000Z",
      "2027-03-15T00:00:00.000Z",
      "2027-03-16T00:00:00.000Z"
    ])
  })

  it("interval: a past starts_at takes its next grid point; missed ones coalesce into the latest", () => {
    const every = rule({ kind: "interval", every_seconds: 300, starts_at: "2026-12-31T23:58:00Z" })
    expect(iso(nextAfter(every, at("2027-01-01T00:00:00Z")))).toBe("2027-01-01T00:03:00.000Z")
    expect(iso(latestAtOrBefore(every, at("2027-01-01T01:01:00Z")))).toBe("2027-01-01T00:58:00.000Z")
    expect(iso(nextAfter(every, at("2027-01-01T01:01:00Z")))).toBe("2027-01-01T01:03:00.000Z")
    const once = rule({ kind: "once", run_at: "2027-02-01T00:00:00Z" })
    expect(nextAfter(once, at("2027-02-01T00:00:00Z"))).toBeNull()
  })
})
