// The pure assembly of a conversation's next model call (supplement "Assembly, estimate,
// compaction"), counted with the local tokenizer (ceil(bytes / 4) + 4 per merged message).
import {
  assemble,
  candidateLimit,
  compactable,
  type HistoryTurn,
  type Material,
  type Message,
  merged,
  summaryRequest,
  turnMessages
} from "@troupe/domain/conversations/Assembly"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"

const local = (messages: ReadonlyArray<Message>) =>
  Effect.succeed(messages.reduce((sum, message) => sum + Math.ceil(Buffer.byteLength(message.content) / 4) + 4, 0))

const material = (overrides: Partial<Material> = {}): Material => ({
  slots: [],
  memory: null,
  history: [],
  input: null,
  ...overrides
})

const reply = (prompt: string, content: string): HistoryTurn => ({
  kind: "direct_reply",
  role: "assistant",
  status: "completed",
  promptText: prompt,
  content
})
const message = (content: string, role = "user"): HistoryTurn => ({
  kind: "message",
  role,
  status: "completed",
  promptText: null,
  content
})
const summary = (content: string, status = "completed"): HistoryTurn => ({
  kind: "compaction_summary",
  role: "user",
  status,
  promptText: null,
  content
})

const run = (m: Material, bound = {}, limit = 32768) => Effect.runSync(assemble(m, bound, limit, local))

describe("assembly", () => {
  it("anchors: hello is 6 tokens in one message; after its reply, again is 19 in 3; after a message, 7 in 1", () => {
    const first = run(material({ input: "hello" }))
    expect([first.tokens, first.messages.length, first.history.selected]).toEqual([6, 1, 0])
    const second = run(material({ history: [reply("hello", "echo: hello")], input: "again" }))
    expect([second.tokens, second.messages.length, second.history.selected]).toEqual([19, 3, 1])
    const third = run(material({ history: [message("note")], input: "hello" }))
    expect(third.messages).toEqual([{ role: "user", content: "note\n\nhello" }])
    expect(third.tokens).toBe(7)
  })

  it("order: system_prompt, character, persona, memory, history, input", () => {
    const assembled = run(
      material({
        slots: [
          { name: "system_prompt", role: "system", text: "S" },
          { name: "character", role: "developer", text: "C" },
          { name: "persona", role: "user", text: "P" }
        ],
        memory: "Memory:\n\nuser/a\nremembered",
        history: [reply("q", "a")],
        input: "now"
      })
    )
    expect(assembled.messages).toEqual([
      { role: "system", content: "S" },
      { role: "developer", content: "C" },
      { role: "user", content: "P" },
      { role: "system", content: "Memory:\n\nuser/a\nremembered" },
      { role: "user", content: "q" },
      { role: "assistant", content: "a" },
      { role: "user", content: "now" }
    ])
    expect(assembled.blocks.map((block) => [block.block, block.state])).toEqual([
      ["slot:system_prompt", "selected"],
      ["slot:character", "selected"],
      ["slot:persona", "selected"],
      ["memory", "selected"],
      ["history", "selected"],
      ["input", "selected"]
    ])
  })

  it("memory sits between the slots and the history; nothing is sent when it is empty", () => {
    const withMemory = run(material({ memory: "Memory:\n\nuser/a\nx", input: "hi" }))
    expect(withMemory.messages[0]).toEqual({ role: "system", content: "Memory:\n\nuser/a\nx" })
    const without = run(material({ input: "hi" }))
    expect(without.messages).toEqual([{ role: "user", content: "hi" }])
    expect(without.blocks.find((block) => block.block === "memory")).toMatchObject({ state: "empty", tokens: 0 })
  })

  it("a turn's messages: a reply its prompt then content, a summary one user message, empty parts left out", () => {
    expect(turnMessages(reply("", "answer"))).toEqual([{ role: "assistant", content: "answer" }])
    expect(turnMessages(reply("q", ""))).toEqual([{ role: "user", content: "q" }])
    expect(turnMessages(summary("so far"))).toEqual([{ role: "user", content: "so far" }])
    expect(turnMessages(message("aside", "assistant"))).toEqual([{ role: "assistant", content: "aside" }])
    expect(merged([])).toEqual([])
  })

  it("history starts at the newest completed summary, which bounds it (compacted)", () => {
    const history = [reply("old", "older"), summary("S1"), reply("mid", "m"), summary("failed", "failed"), message("x")]
    const assembled = run(material({ history, input: "go" }))
    // The failed summary is no summary: it bounds nothing and is no entry.
    expect(assembled.history).toEqual({ selected: 3, skipped: 0, skipped_reason: null, compacted: true })
    expect(assembled.messages[0]).toEqual({ role: "user", content: "S1\n\nmid" })
    expect(run(material({ history: [message("x")] })).history.compacted).toBe(false)
  })

  it("max_entries keeps the newest entries (skipped_reason max_entries); 0 keeps none", () => {
    const history = [message("one"), reply("two", "2"), message("three")]
    expect(run(material({ history, input: "now" }), { max_entries: 2 }).history).toEqual({
      selected: 2,
      skipped: 1,
      skipped_reason: "max_entries",
      compacted: false
    })
    const none = run(material({ history, input: "now" }), { max_entries: 0 })
    expect(none.history).toMatchObject({ selected: 0, skipped: 3, skipped_reason: "max_entries" })
    expect(none.messages).toEqual([{ role: "user", content: "now" }])
  })

  it("the budget: limit × token_budget_share, else the limit minus the rest; the oldest are cut first", () => {
    const history = [message("a".repeat(40)), message("b".repeat(40)), message("c".repeat(40))]
    // Each entry alone is 14 tokens; two merged are 25, three 35.
    const shared = run(material({ history, input: "x" }), { token_budget_share: 0.5 }, 60)
    expect(shared.history).toMatchObject({ selected: 2, skipped: 1, skipped_reason: "budget_exceeded" })
    expect(shared.blocks.find((block) => block.block === "history")).toMatchObject({ allocated_tokens: 30, tokens: 25 })
    const rest = run(material({ history, input: "x" }), {}, 29)
    expect(rest.restTokens).toBe(5)
    expect(rest.history).toMatchObject({ selected: 1, skipped: 2, skipped_reason: "budget_exceeded" })
    expect(rest.messages[0]!.content.startsWith("c")).toBe(true)
  })

  it(`without max_entries at most ${candidateLimit} entries are weighed (candidate_limit)`, () => {
    const history = Array.from({ length: candidateLimit + 3 }, (_, index) => reply(`q${index}`, `a${index}`))
    expect(run(material({ history, input: "x" }), {}, 10_000_000).history).toEqual({
      selected: candidateLimit,
      skipped: 3,
      skipped_reason: "candidate_limit",
      compacted: false
    })
  })

  it("compactable: something follows the newest completed summary", () => {
    expect(compactable([])).toBe(false)
    expect(compactable([message("x")])).toBe(true)
    expect(compactable([message("x"), summary("S")])).toBe(false)
    expect(compactable([summary("S"), reply("q", "a")])).toBe(true)
  })

  it("the summarizer reads its instructions and the transcript since the newest summary, oldest cut to fit", () => {
    const turns = [message("gone"), summary("S"), reply("q1", "a1"), reply("q2", "a2")]
    const all = Effect.runSync(summaryRequest("Summarize.", turns, 1000, local))
    expect(all).toEqual([
      { role: "system", content: "Summarize." },
      {
        role: "user",
        content: "The conversation so far:\n\nuser: S\n\nuser: q1\n\nassistant: a1\n\nuser: q2\n\nassistant: a2"
      }
    ])
    const trimmed = Effect.runSync(summaryRequest("Summarize.", turns, 20, local))
    expect(trimmed[1]!.content).toBe("The conversation so far:\n\nuser: q2\n\nassistant: a2")
  })
})
