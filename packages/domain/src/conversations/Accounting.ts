// A conversation's usage_summary and context block (supplement "Conversation"): the context block a
// reporting sample makes, and the conversation's account as read. Its own samples (direct replies,
// regenerations, summaries) are accounted on its row by its binding as they settle, each from its
// inference request's own usage_summary; the model calls of the runs it hosts are read from their
// inference requests at read time and merged by the same rules: every attempt counted and its
// billed usage summed, occupancy from the newest sample to report usage.
import type { ConversationRow, HostedRunUsage } from "@troupe/storage/repositories/Conversations"
import type { ModelCatalog } from "../models/ModelCatalog.ts"
import { type UsageBlock, type UsageSummary, usageSummary } from "../models/Usage.ts"

type Catalog = ModelCatalog["Service"]

/** The context block after a sample on `model` reported `usage`. */
export const contextBlock = (catalog: Catalog, usage: Readonly<Record<string, unknown>>, model: string) => {
  const found = catalog.find(model)
  const input = Number(usage.input_tokens ?? 0)
  const output = Number(usage.output_tokens ?? 0)
  const window = found?.context_window ?? 0
  return {
    used_tokens: input + output,
    input_tokens: input,
    output_tokens: output,
    ...(usage.cache_read_tokens === undefined ? {} : { cache_read_tokens: usage.cache_read_tokens }),
    window_tokens: window,
    used_percent: window === 0 ? 0 : Math.round(((input + output) / window) * 10000) / 100,
    as_of_model: { provider_id: found?.provider ?? model.split("/")[0], model_ref: model }
  }
}

type Counted = Omit<UsageSummary, "uncached_input_tokens" | "total_tokens">

/** A summary as one block of a sum (its request_count kept apart). */
const asBlock = (summary: Omit<Counted, "request_count">) =>
  ({
    ...summary,
    usage_record_public_id: "",
    uncached_input_tokens: summary.input_tokens - summary.cache_read_tokens,
    total_tokens: summary.input_tokens + summary.output_tokens
  }) satisfies UsageBlock

/** Two accounts summed: attempts added, billed usage summed, `more`'s cost unit when it has one. */
const plus = (own: UsageSummary, more: Counted) =>
  usageSummary(own.request_count + more.request_count, [asBlock(own), asBlock(more)], more.cost_unit ?? own.cost_unit)

/**
 * The conversation's usage_summary after one of its own samples settled: `request` (the sample's
 * inference request's usage_summary: every attempt it made, each billed one priced as it reported)
 * added to the row's; the context block from the sample's usage on `model` when it reported (null:
 * the context stands).
 */
export const withSample = (
  catalog: Catalog,
  row: ConversationRow,
  request: unknown,
  usage: Readonly<Record<string, unknown>> | null,
  model: string | null
) => ({
  usageSummary: plus(row.usage_summary as UsageSummary, request as UsageSummary),
  context: usage === null || model === null ? null : contextBlock(catalog, usage, model)
})

/**
 * The conversation's usage_summary and context with its hosted runs' model calls: the row's own
 * summary (a usage_summary as inference/Attempts.ts writes one) plus the calls' sums; the context of
 * the newest call when it reported after the conversation's own newest sample.
 */
export const withHostedRuns = (catalog: Catalog, row: ConversationRow, runs: HostedRunUsage | undefined) => {
  if (runs === undefined || runs.request_count === 0) return { context: row.context, usage_summary: row.usage_summary }
  const newest =
    runs.newest_is_latest && runs.newest_usage !== null && runs.newest_model_ref !== null
      ? contextBlock(catalog, runs.newest_usage as Readonly<Record<string, unknown>>, runs.newest_model_ref)
      : row.context
  return { context: newest, usage_summary: plus(row.usage_summary as UsageSummary, runs) }
}
