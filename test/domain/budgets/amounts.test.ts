// Budget amounts: the grammar (strings of up to 18 digits each side of the point, above zero),
// plain rendering ("0.3", "25") and exact arithmetic at 18 digits.
import { exhausted, headroom, parseAmount, positive, renderAmount } from "@troupe/domain/budgets/Amounts"
import { plainDecimal } from "@troupe/domain/models/Usage"
import { describe, expect, it } from "vitest"

describe("budget amounts", () => {
  it("accepts decimal strings of up to 18 digits each side, above zero, rendered plain", () => {
    expect(parseAmount("25.000")).toBe("25")
    expect(parseAmount("0.30")).toBe("0.3")
    expect(parseAmount("999999999999999999.999999999999999999")).toBe("999999999999999999.999999999999999999")
    expect(parseAmount("000000000000000001")).toBe("1")
  })

  it("refuses numbers, signs, exponents, zero and longer digit runs", () => {
    for (const value of [
      25,
      "-1",
      "+1",
      "1e3",
      "0",
      "0.0",
      "",
      " 1",
      "1.",
      ".1",
      "1234567890123456789",
      "0.1234567890123456789",
      null
    ]) {
      expect(parseAmount(value), JSON.stringify(value)).toBeUndefined()
    }
  })

  it("computes headroom exactly at 18 digits", () => {
    const room = headroom("999999999999999999.999999999999999999", "0.000000000000000001")
    expect(plainDecimal(room)).toBe("999999999999999999.999999999999999998")
    expect(plainDecimal(headroom("0.3", "0.1"))).toBe("0.2")
    expect(exhausted("1", "1")).toBe(true)
    expect(exhausted("1", "1.000000000000000001")).toBe(true)
    expect(exhausted("1.000000000000000001", "1")).toBe(false)
  })

  it("renders stored numerics without trailing zeros and tells a positive cost", () => {
    expect(renderAmount("25.000000")).toBe("25")
    expect(renderAmount("0.300")).toBe("0.3")
    expect(renderAmount("0")).toBe("0")
    expect(positive("0.000000")).toBe(false)
    expect(positive("0.000013")).toBe(true)
  })
})
