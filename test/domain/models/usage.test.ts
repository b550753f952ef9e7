// Usage and cost arithmetic (supplement "Projections and reads"): exact plain decimals from bigint
// arithmetic at any size, trailing zeros trimmed, cost_complete false when unpriced,
// cache_hit_rate to 6 decimals and omitted at zero input, summaries over attempts, and the
// pricing states a model row shows.
import type { ProviderUsage } from "@troupe/domain/models/Provider"
import { costAmount, pricingView, usageBlock, usageSummary } from "@troupe/domain/models/Usage"
import { describe, expect, it } from "vitest"

const local = { input_per_mtok: "1.00", output_per_mtok: "2.00" }

const usage = (input: number, output: number, more: Partial<ProviderUsage> = {}): ProviderUsage => ({
  inputTokens: input,
  outputTokens: output,
  reasoningTokens: 0,
  cacheReadTokens: 0,
  cacheCreationTokens: 0,
  ...more
})

describe("costAmount", () => {
  it("is (in × input price + out × output price) / 10^6 as a plain decimal, trailing zeros trimmed", () => {
    expect(costAmount(local, 1_000_000, 0)).toBe("1")
    expect(costAmount(local, 500_000, 250_000)).toBe("1")
    expect(costAmount(local, 6, 3)).toBe("0.000012")
    expect(costAmount(local, 0, 0)).toBe("0")
    expect(costAmount({ input_per_mtok: "0.15", output_per_mtok: "0.60" }, 1, 0)).toBe("0.00000015")
    expect(costAmount(null, 10, 10)).toBeNull()
  })

  it("stays exact for token counts and prices no float holds", () => {
    const max = Number.MAX_SAFE_INTEGER // 9007199254740991
    expect(costAmount(local, max, max)).toBe("27021597764.222973")
    expect(costAmount({ input_per_mtok: "999999999999999999", output_per_mtok: "0" }, 1e15, 0)).toBe(
      "999999999999999999000000000"
    )
    expect(costAmount({ input_per_mtok: "0.000000000000000001", output_per_mtok: "0" }, 1, 0)).toBe(
      "0.000000000000000000000001"
    )
    expect(costAmount({ input_per_mtok: "0.1", output_per_mtok: "0.2" }, 1_000_000, 1_000_000)).toBe("0.3")
  })
})

describe("usageBlock", () => {
  it("derives uncached input, total and the cache hit rate (6 decimals, rounded half up)", () => {
    expect(
      usageBlock("01900000-0000-7000-8000-000000000001", usage(3, 4, { cacheReadTokens: 1 }), local, null)
    ).toEqual({
      usage_record_public_id: "01900000-0000-7000-8000-000000000001",
      input_tokens: 3,
      cache_read_tokens: 1,
      uncached_input_tokens: 2,
      cache_creation_tokens: 0,
      cache_hit_rate: 0.333333,
      output_tokens: 4,
      reasoning_tokens: 0,
      total_tokens: 7,
      cost_amount: "0.000011",
      cost_unit: null,
      cost_complete: true
    })
    expect(usageBlock("u", usage(3, 0, { cacheReadTokens: 2 }), local, "usd").cache_hit_rate).toBe(0.666667)
    expect(usageBlock("u", usage(2_000_000, 0, { cacheReadTokens: 1 }), local, "usd").cache_hit_rate).toBe(0.000001)
  })

  it("omits cache_hit_rate at zero input, and reads cost_complete false with amount 0 when unpriced", () => {
    const free = usageBlock("u", usage(0, 5, { reasoningTokens: 2 }), null, "usd")
    expect(free).not.toHaveProperty("cache_hit_rate")
    expect(free).toMatchObject({ cost_amount: "0", cost_unit: "usd", cost_complete: false, reasoning_tokens: 2 })
  })
})

describe("usageSummary", () => {
  it("reads zeros, amount 0 and complete true before any attempt", () => {
    const none = usageSummary(0, [], null)
    expect(none).toEqual({
      request_count: 0,
      input_tokens: 0,
      cache_read_tokens: 0,
      uncached_input_tokens: 0,
      cache_creation_tokens: 0,
      output_tokens: 0,
      reasoning_tokens: 0,
      total_tokens: 0,
      cost_amount: "0",
      cost_unit: null,
      cost_complete: true
    })
  })

  it("sums the billed attempts exactly, counts every attempt made, and is incomplete once one is unpriced", () => {
    const cheap = { input_per_mtok: "0.1", output_per_mtok: "0.2" }
    const blocks = [
      usageBlock("a", usage(1_000_000, 0, { cacheReadTokens: 250_000 }), cheap, null),
      usageBlock("b", usage(0, 1_000_000, { reasoningTokens: 10 }), cheap, null)
    ]
    expect(usageSummary(3, blocks, null)).toEqual({
      request_count: 3,
      input_tokens: 1_000_000,
      cache_read_tokens: 250_000,
      uncached_input_tokens: 750_000,
      cache_creation_tokens: 0,
      cache_hit_rate: 0.25,
      output_tokens: 1_000_000,
      reasoning_tokens: 10,
      total_tokens: 2_000_000,
      cost_amount: "0.3",
      cost_unit: null,
      cost_complete: true
    })
    const big = usageBlock("c", usage(Number.MAX_SAFE_INTEGER, 0), local, null)
    expect(usageSummary(2, [big, big], null).cost_amount).toBe("18014398509.481982")
    const unpriced = usageBlock("d", usage(10, 10), null, null)
    expect(usageSummary(2, [blocks[0]!, unpriced], null)).toMatchObject({ cost_amount: "0.1", cost_complete: false })
  })
})

describe("pricingView", () => {
  it("is priced when a price is above zero, known_free_candidate when both are zero, else cost_unknown", () => {
    expect(pricingView(local, null)).toEqual({
      state: "priced",
      unit: null,
      input_per_mtok: "1.00",
      output_per_mtok: "2.00"
    })
    expect(pricingView({ input_per_mtok: "0", output_per_mtok: "0.2" }, "usd")).toMatchObject({ state: "priced" })
    expect(pricingView({ input_per_mtok: "0.00", output_per_mtok: "0" }, "usd")).toEqual({
      state: "known_free_candidate",
      unit: "usd",
      input_per_mtok: "0",
      output_per_mtok: "0"
    })
    expect(pricingView(null, "usd")).toEqual({ state: "cost_unknown" })
  })
})
