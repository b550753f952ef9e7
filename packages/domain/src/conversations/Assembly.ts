// What a conversation's next model call reads (supplement "Assembly, estimate, compaction"), as
// pure functions over material already loaded (Replies.ts loads it): the order system_prompt,
// character, persona, memory, history, input; the history from the newest completed summary, a
// turn as its messages, chosen newest-first within max_entries and a token budget; adjacent
// same-role messages merged. Counting is the model's (`Count`); walls and sealing are Replies.ts's.
import { Effect } from "effect"

export type Role = "system" | "developer" | "user" | "assistant"

export interface Message {
  readonly role: Role
  readonly content: string
}

/** Counts the tokens of messages as the model's tokenizer would (merged messages, as sent). */
export type Count = (messages: ReadonlyArray<Message>) => Effect.Effect<number>

/** A prompt document in its slot, its macros rendered. */
export interface Slot {
  readonly name: "system_prompt" | "character" | "persona"
  readonly role: Role
  readonly text: string
}

export const slotNames = ["system_prompt", "character", "persona"] as const

/** A settled visible turn as history reads it: its active candidate's text. */
export interface HistoryTurn {
  readonly kind: string
  readonly role: string
  readonly status: string
  readonly promptText: string | null
  readonly content: string
}

export interface Material {
  readonly slots: ReadonlyArray<Slot>
  /** The memory block's text; null when there is nothing to remember. */
  readonly memory: string | null
  /** Every settled visible turn of the timeline, oldest first. */
  readonly history: ReadonlyArray<HistoryTurn>
  /** The input's text; null or empty: none. */
  readonly input: string | null
}

/** The input's (or the estimate's) history members: a stated bound when either is given. */
export interface HistoryBound {
  readonly max_entries?: number | null | undefined
  readonly token_budget_share?: number | null | undefined
}

export type SkippedReason = "max_entries" | "budget_exceeded" | "candidate_limit"

export interface HistoryOutcome {
  readonly selected: number
  readonly skipped: number
  readonly skipped_reason: SkippedReason | null
  /** A completed summary bounded the history. */
  readonly compacted: boolean
}

/** A render's block row (a type alias: the contract reads blocks as open records). */
export type Block = {
  readonly block: string
  readonly index: number
  readonly type: "slot" | "memory" | "history" | "input"
  readonly role: Role | null
  readonly state: "selected" | "empty"
  readonly tokens: number
  readonly allocated_tokens: number | null
}

export interface Assembled {
  /** What is sent, merged. */
  readonly messages: ReadonlyArray<Message>
  readonly tokens: number
  /** Everything but the history, counted alone. */
  readonly restTokens: number
  /** The turns after the newest completed summary (the summary included) that history could read. */
  readonly candidates: number
  readonly history: HistoryOutcome
  readonly blocks: ReadonlyArray<Block>
}

/** At most this many of the newest history entries are weighed when no max_entries is stated. */
export const candidateLimit = 200

/** Adjacent messages of one role become one, their texts joined by a blank line. */
export const merged = (messages: ReadonlyArray<Message>): Array<Message> => {
  const out: Array<Message> = []
  for (const message of messages) {
    const last = out.at(-1)
    if (last !== undefined && last.role === message.role) {
      out[out.length - 1] = { role: last.role, content: `${last.content}\n\n${message.content}` }
    } else out.push(message)
  }
  return out
}

const roleOf = (role: string): Role =>
  role === "system" || role === "developer" || role === "assistant" ? role : "user"

/** A turn's messages: a reply its prompt then its content, a summary one user message, a message its role's. */
export const turnMessages = (turn: HistoryTurn): Array<Message> => {
  if (turn.kind === "direct_reply") {
    return [
      ...(turn.promptText === null || turn.promptText === ""
        ? []
        : [{ role: "user" as const, content: turn.promptText }]),
      ...(turn.content === "" ? [] : [{ role: "assistant" as const, content: turn.content }])
    ]
  }
  if (turn.content === "") return []
  return [{ role: turn.kind === "compaction_summary" ? "user" : roleOf(turn.role), content: turn.content }]
}

const summarized = (turn: HistoryTurn) => turn.kind === "compaction_summary" && turn.status === "completed"

/**
 * History from the newest completed summary (itself included): the entries with messages, oldest
 * first; a summary that did not complete is no entry.
 */
export const sinceNewestSummary = (turns: ReadonlyArray<HistoryTurn>) => {
  const start = turns.findLastIndex(summarized)
  const entries = turns
    .slice(Math.max(0, start))
    .filter((turn) => turn.kind !== "compaction_summary" || summarized(turn))
    .map(turnMessages)
    .filter((messages) => messages.length > 0)
  return { entries, compacted: start >= 0 }
}

/** Whether anything follows the newest completed summary (what a compaction would summarize). */
export const compactable = (turns: ReadonlyArray<HistoryTurn>) => {
  const { entries, compacted } = sinceNewestSummary(turns)
  return entries.length > (compacted ? 1 : 0)
}

const memoryMessage = (text: string): Message => ({ role: "system", content: text })

/**
 * The messages of `material` for a model whose input limit is `limit` tokens: the history chosen
 * newest-first, at most max_entries (else the candidate limit) entries whose messages, counted
 * alone, fit the budget (limit × token_budget_share, else the limit minus the rest).
 */
export const assemble = (material: Material, bound: HistoryBound, limit: number, count: Count) =>
  Effect.gen(function* () {
    const lead: Array<Message> = [
      ...material.slots.map((slot) => ({ role: slot.role, content: slot.text })),
      ...(material.memory === null ? [] : [memoryMessage(material.memory)])
    ]
    const tail: Array<Message> =
      material.input === null || material.input === "" ? [] : [{ role: "user", content: material.input }]
    const restTokens = yield* count(merged([...lead, ...tail]))
    const { entries, compacted } = sinceNewestSummary(material.history)
    const share = bound.token_budget_share ?? null
    const budget = share === null ? limit - restTokens : Math.floor(limit * share)
    const maxEntries = bound.max_entries ?? null
    const most = maxEntries ?? candidateLimit
    let selected = 0
    let reason: SkippedReason | null = null
    let historyTokens = 0
    while (selected < entries.length) {
      if (selected >= most) {
        reason = maxEntries === null ? "candidate_limit" : "max_entries"
        break
      }
      const tokens = yield* count(merged(entries.slice(entries.length - selected - 1).flat()))
      if (tokens > budget) {
        reason = "budget_exceeded"
        break
      }
      historyTokens = tokens
      selected += 1
    }
    const history = entries.slice(entries.length - selected).flat()
    const messages = merged([...lead, ...history, ...tail])
    const tokens = messages.length === 0 ? 0 : yield* count(messages)
    const blocks = yield* blocksOf(material, { tokens: historyTokens, budget, selected }, count)
    return {
      messages,
      tokens,
      restTokens,
      candidates: entries.length,
      history: {
        selected,
        skipped: entries.length - selected,
        skipped_reason: selected < entries.length ? reason : null,
        compacted
      },
      blocks
    } satisfies Assembled
  })

/** The render's blocks in order: each slot, memory, history (its budget allocated), input. */
const blocksOf = (
  material: Material,
  history: { readonly tokens: number; readonly budget: number; readonly selected: number },
  count: Count
) =>
  Effect.gen(function* () {
    const blocks: Array<Block> = []
    const add = (block: string, type: Block["type"], message: Message | null, role: Role | null) =>
      Effect.map(message === null ? Effect.succeed(0) : count([message]), (tokens) => {
        blocks.push({
          block,
          index: blocks.length,
          type,
          role: message?.role ?? role,
          state: message === null ? "empty" : "selected",
          tokens,
          allocated_tokens: message === null ? null : tokens
        })
      })
    for (const name of slotNames) {
      const slot = material.slots.find((each) => each.name === name)
      yield* add(`slot:${name}`, "slot", slot === undefined ? null : { role: slot.role, content: slot.text }, null)
    }
    yield* add("memory", "memory", material.memory === null ? null : memoryMessage(material.memory), "system")
    blocks.push({
      block: "history",
      index: blocks.length,
      type: "history",
      role: null,
      state: history.selected > 0 ? "selected" : "empty",
      tokens: history.tokens,
      allocated_tokens: Math.max(0, history.budget)
    })
    const input = material.input === null || material.input === "" ? null : material.input
    yield* add("input", "input", input === null ? null : { role: "user", content: input }, "user")
    return blocks
  })

/** One line of a summarizer's transcript. */
const transcriptLine = (message: Message) => `${message.role}: ${message.content}`

/**
 * The summarizer's request: its instructions, then the transcript of the history since the newest
 * completed summary as one user message, its oldest entries cut until it fits `limit`.
 */
export const summaryRequest = (instructions: string, turns: ReadonlyArray<HistoryTurn>, limit: number, count: Count) =>
  Effect.gen(function* () {
    const { entries } = sinceNewestSummary(turns)
    const messagesOf = (kept: ReadonlyArray<ReadonlyArray<Message>>): Array<Message> => [
      { role: "system", content: instructions },
      {
        role: "user",
        content: `The conversation so far:\n\n${kept.flat().map(transcriptLine).join("\n\n")}`
      }
    ]
    let from = 0
    while (from < entries.length - 1 && (yield* count(messagesOf(entries.slice(from)))) > limit) from += 1
    return messagesOf(entries.slice(from))
  })

/** Built-in summarizer instructions (an agent's summarizer prompt document replaces them). */
export const defaultSummarizerInstructions =
  "Summarize the conversation below so that it can go on from the summary alone: keep the facts, " +
  "decisions, open questions and what each participant wants. Answer with the summary only."
