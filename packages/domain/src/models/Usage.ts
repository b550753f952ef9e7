// Prices and usage: the one place a catalog price becomes a cost. The usage block of one billed
// attempt, the usage_summary over a request's attempts, and the pricing a model row shows
// (supplement "Projections and reads", "Models and providers"). Amounts are exact decimals
// (effect's BigDecimal, bigint underneath), never floats. The cost unit is the account's, a
// parameter here: null while the account has none (budgets/Admission.ts reads it).
import { BigDecimal } from "effect"
import type { Pricing } from "./Catalog.ts"
import type { ProviderUsage } from "./Provider.ts"

/** Token counts and cost of one billed attempt or call. */
export interface UsageBlock {
  /** The attempt's own UUIDv7. */
  readonly usage_record_public_id: string
  readonly input_tokens: number
  readonly cache_read_tokens: number
  readonly uncached_input_tokens: number
  readonly cache_creation_tokens: number
  /** cache_read / input to 6 decimals; absent when input is 0. */
  readonly cache_hit_rate?: number
  readonly output_tokens: number
  /** Counted within output_tokens. */
  readonly reasoning_tokens: number
  readonly total_tokens: number
  /** A plain decimal, trailing zeros trimmed. */
  readonly cost_amount: string
  readonly cost_unit: string | null
  /** false when a counted attempt had no price. */
  readonly cost_complete: boolean
}

/** A request's usage over its attempts. */
export type UsageSummary = Omit<UsageBlock, "usage_record_public_id"> & {
  /** Attempts made (failed ones bill nothing but count here). */
  readonly request_count: number
}

/** amount / 10^6, exactly: the same digits, six places further right. */
const perMillion = (amount: BigDecimal.BigDecimal) => BigDecimal.make(amount.value, amount.scale + 6)

/** A plain decimal without exponent, trailing zeros trimmed ("1.5", "0", "12000000000000000000000"). */
export const plainDecimal = (amount: BigDecimal.BigDecimal): string => {
  const { value, scale } = BigDecimal.normalize(amount)
  const negative = value < 0n
  const digits = `${negative ? -value : value}`
  const plain =
    scale <= 0
      ? `${digits}${"0".repeat(-scale)}`
      : `${digits.padStart(scale + 1, "0").slice(0, -scale)}.${digits.padStart(scale + 1, "0").slice(-scale)}`
  return negative ? `-${plain}` : plain
}

const decimalOf = (text: string) => BigDecimal.fromStringUnsafe(text)

/**
 * The cost of `input` and `output` tokens: (in × input price + out × output price) / 10^6 as a
 * plain decimal; null when the model has no price.
 */
export const costAmount = (pricing: Pricing | null, input: number, output: number): string | null => {
  if (pricing === null) return null
  const sum = BigDecimal.sum(
    BigDecimal.multiply(BigDecimal.fromBigInt(BigInt(input)), decimalOf(pricing.input_per_mtok)),
    BigDecimal.multiply(BigDecimal.fromBigInt(BigInt(output)), decimalOf(pricing.output_per_mtok))
  )
  return plainDecimal(perMillion(sum))
}

/** cache_read / input rounded half up to 6 decimals (exact in bigint), absent when input is 0. */
const cacheHitRate = (cacheRead: number, input: number): { readonly cache_hit_rate?: number } => {
  if (input === 0) return {}
  const millionths = (BigInt(cacheRead) * 2_000_000n + BigInt(input)) / (2n * BigInt(input))
  return { cache_hit_rate: Number(millionths) / 1_000_000 }
}

/** The usage block of one billed attempt, priced with its model's catalog pricing. */
export const usageBlock = (
  usageRecordPublicId: string,
  usage: ProviderUsage,
  pricing: Pricing | null,
  costUnit: string | null
): UsageBlock => {
  const cost = costAmount(pricing, usage.inputTokens, usage.outputTokens)
  return {
    usage_record_public_id: usageRecordPublicId,
    input_tokens: usage.inputTokens,
    cache_read_tokens: usage.cacheReadTokens,
    uncached_input_tokens: usage.inputTokens - usage.cacheReadTokens,
    cache_creation_tokens: usage.cacheCreationTokens,
    ...cacheHitRate(usage.cacheReadTokens, usage.inputTokens),
    output_tokens: usage.outputTokens,
    reasoning_tokens: usage.reasoningTokens,
    total_tokens: usage.inputTokens + usage.outputTokens,
    cost_amount: cost ?? "0",
    cost_unit: costUnit,
    cost_complete: cost !== null
  }
}

/** The usage_summary of a request that made `requestCount` attempts and billed `blocks`. */
export const usageSummary = (
  requestCount: number,
  blocks: ReadonlyArray<UsageBlock>,
  costUnit: string | null
): UsageSummary => {
  const total = (member: (block: UsageBlock) => number) => blocks.reduce((sum, block) => sum + member(block), 0)
  const input = total((block) => block.input_tokens)
  const cacheRead = total((block) => block.cache_read_tokens)
  const output = total((block) => block.output_tokens)
  return {
    request_count: requestCount,
    input_tokens: input,
    cache_read_tokens: cacheRead,
    uncached_input_tokens: input - cacheRead,
    cache_creation_tokens: total((block) => block.cache_creation_tokens),
    ...cacheHitRate(cacheRead, input),
    output_tokens: output,
    reasoning_tokens: total((block) => block.reasoning_tokens),
    total_tokens: input + output,
    cost_amount: plainDecimal(
      blocks.reduce((sum, block) => BigDecimal.sum(sum, decimalOf(block.cost_amount)), BigDecimal.fromBigInt(0n))
    ),
    cost_unit: costUnit,
    cost_complete: blocks.every((block) => block.cost_complete)
  }
}

/** How a model's prices read in its catalog row. */
export type PricingView =
  | {
      readonly state: "priced" | "known_free_candidate"
      readonly unit: string | null
      readonly input_per_mtok: string
      readonly output_per_mtok: string
    }
  | { readonly state: "cost_unknown" }

/** priced when a price is above zero, known_free_candidate when both are zero, else cost_unknown. */
export const pricingView = (pricing: Pricing | null, costUnit: string | null): PricingView => {
  if (pricing === null) return { state: "cost_unknown" }
  const free =
    BigDecimal.isZero(decimalOf(pricing.input_per_mtok)) && BigDecimal.isZero(decimalOf(pricing.output_per_mtok))
  return free
    ? { state: "known_free_candidate", unit: costUnit, input_per_mtok: "0", output_per_mtok: "0" }
    : { state: "priced", unit: costUnit, ...pricing }
}
