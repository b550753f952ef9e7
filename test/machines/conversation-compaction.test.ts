// The conversation machine's compactions (supplement "Assembly, estimate, compaction"): a manual
// compaction opens a running compaction_summary turn (refused conversation_busy while anything
// runs, judged first, and nothing_to_compact after a completed summary); a wall compaction comes
// from the judging job for the head, which is judged again once the summary settles; a completed
// summary narrates context_compacted and is no reply (the last reply model stays).

import type { ReplyPlan } from "@troupe/machines/conversation/context"
import { conversationMachine } from "@troupe/machines/conversation/conversation.machine"
import { describe, expect, it } from "vitest"
import { initialTransition, transition } from "xstate"

type Snapshot = ReturnType<typeof initialTransition<typeof conversationMachine>>[0]
type Event = Parameters<typeof transition<typeof conversationMachine>>[2]
type Action = { readonly type: string; readonly params?: any }

const start = () =>
  initialTransition(conversationMachine, {
    publicId: "01900000-0000-7000-8000-0000000000c2",
    firstPosition: 1,
    side: false,
    subagent: false,
    tail: null
  })[0]

const step = (snapshot: Snapshot, event: Event): [Snapshot, ReadonlyArray<Action>] => {
  const [next, actions] = transition(conversationMachine, snapshot, event)
  return [next, actions as ReadonlyArray<Action>]
}

const described = (actions: ReadonlyArray<Action>) =>
  actions.flatMap((action) => {
    if (action.type === "xstate.emit") {
      const item = action.params.event
      return [`${item.type}${item.status === undefined ? "" : `(${item.status})`}`]
    }
    if (action.type === "conversation.refuse") return [`refuse(${action.params.reason})`]
    return action.type.startsWith("xstate.") ? [] : [action.type]
  })

const paramsOf = (actions: ReadonlyArray<Action>, type: string) =>
  actions.filter((action) => action.type === type).map((action) => action.params)
const itemsOf = (actions: ReadonlyArray<Action>, type: string) =>
  actions
    .filter((action) => action.type === "xstate.emit" && action.params.event.type === type)
    .map((action) => action.params.event)

const echo: ReplyPlan = { model: "local/echo", modelKnown: true, fallbackModel: null, answererId: "agent" }

const directReply = (name: string): Event => ({
  type: "input.accept",
  at: 0,
  input: {
    inputId: `input-${name}`,
    kind: "direct_reply",
    kernel: false,
    role: "user",
    deliveryMode: "queue",
    dueAt: null,
    authorId: "person",
    reply: echo,
    ids: {
      turnId: `turn-${name}`,
      variantId: `variant-${name}`,
      requestId: `request-${name}`,
      fallbackVariantId: `fallback-variant-${name}`,
      fallbackRequestId: `fallback-request-${name}`
    },
    row: { text: name },
    item: { input_public_id: `input-${name}`, kind: "direct_reply" }
  }
})

const replied = (requestId: string, status: "completed" | "failed" = "completed"): Event => ({
  type: "inference.replied",
  requestId,
  status,
  errorCode: null,
  declined: false,
  usage: { input_tokens: 6, output_tokens: 5 }
})

const judging = (snapshot: Snapshot, name: string) => step(snapshot, directReply(name))[0]

/** A direct reply `name` answered by local/echo. */
const answered = (snapshot: Snapshot, name: string) => {
  const heading = judging(snapshot, name)
  const running = step(heading, {
    type: "reply.judged",
    inputId: `input-${name}`,
    revision: heading.context.contextRevision,
    lockVersion: 0,
    verdict: "ready"
  })[0]
  return step(running, replied(`request-${name}`))[0]
}

const compact = (name: string, more: Partial<Extract<Event, { type: "conversation.compact" }>> = {}): Event => ({
  type: "conversation.compact",
  trigger: "manual",
  turnId: `summary-${name}`,
  variantId: `summary-variant-${name}`,
  requestId: `summary-request-${name}`,
  model: "local/echo",
  ...more
})

describe("conversation compaction", () => {
  it("manual, idle: a running compaction_summary turn (role user, no answerer) asks its summarizer in one step", () => {
    const idle = answered(start(), "a")
    const [summarizing, actions] = step(idle, compact("s"))
    expect(described(actions)).toEqual(["conversation.openSummary", "turn_created", "turn_status(running)"])
    expect(paramsOf(actions, "conversation.openSummary")).toEqual([
      {
        turnId: "summary-s",
        variantId: "summary-variant-s",
        requestId: "summary-request-s",
        position: 2,
        model: "local/echo",
        contextRevision: idle.context.contextRevision + 1
      }
    ])
    expect(itemsOf(actions, "turn_created")[0]).toMatchObject({
      kind: "compaction_summary",
      role: "user",
      answering_user_public_id: null,
      input_public_id: null
    })
    expect(summarizing.context).toMatchObject({
      lane: { phase: "running", kind: "summary", trigger: "manual" },
      tail: { turnId: "summary-s", position: 2, kind: "compaction_summary", status: "running" }
    })
  })

  it("a completed summary narrates context_compacted after its turn_status, is no reply, and leaves nothing to compact", () => {
    const summarizing = step(answered(start(), "a"), compact("s", { model: "local/script" }))[0]
    const [done, actions] = step(summarizing, replied("summary-request-s"))
    expect(described(actions)).toEqual([
      "conversation.settleSample",
      "usage",
      "turn_status(completed)",
      "context_compacted"
    ])
    expect(paramsOf(actions, "conversation.settleSample")[0]).toMatchObject({ summary: true, activate: true })
    expect(itemsOf(actions, "context_compacted")).toEqual([
      { type: "context_compacted", trigger: "manual", turn_public_id: "summary-s" }
    ])
    expect(done.context.lastReplyModel).toBe("local/echo")
    expect(done.context.lane).toBeNull()
    expect(described(step(done, compact("t"))[1])).toEqual(["refuse(nothing_to_compact)"])
  })

  it("a failed summary narrates no compaction and may be retried", () => {
    const summarizing = step(answered(start(), "a"), compact("s"))[0]
    const [failed, actions] = step(summarizing, replied("summary-request-s", "failed"))
    expect(itemsOf(actions, "context_compacted")).toEqual([])
    expect(failed.context.tail).toMatchObject({ kind: "compaction_summary", status: "failed" })
    expect(described(step(failed, compact("t"))[1])[0]).toBe("conversation.openSummary")
  })

  it("conversation_busy is judged first (a reply running, judging, or a summary); nothing_to_compact on an empty timeline", () => {
    expect(described(step(start(), compact("s"))[1])).toEqual(["refuse(nothing_to_compact)"])
    expect(described(step(judging(start(), "a"), compact("s"))[1])).toEqual(["refuse(conversation_busy)"])
    const summarizing = step(answered(start(), "a"), compact("s"))[0]
    expect(described(step(summarizing, compact("t"))[1])).toEqual(["refuse(conversation_busy)"])
    expect(described(step(summarizing, { type: "conversation.tombstone" })[1])).toEqual(["refuse(conversation_busy)"])
  })

  it("wall: the judging head is summarized first; once the summary settles the head is judged again", () => {
    const heading = judging(answered(start(), "a"), "b")
    const revision = heading.context.contextRevision
    const wall = compact("w", { trigger: "wall", inputId: "input-b", revision, lockVersion: 0 })
    const [summarizing, actions] = step(heading, wall)
    expect(described(actions)).toEqual(["conversation.openSummary", "turn_created", "turn_status(running)"])
    expect(summarizing.context.queue.map((entry) => entry.inputId)).toEqual(["input-b"])
    const [, settled] = step(summarizing, replied("summary-request-w"))
    expect(itemsOf(settled, "context_compacted")[0]).toMatchObject({ trigger: "wall" })
    expect(paramsOf(settled, "conversation.judgeHead")).toEqual([
      { inputId: "input-b", model: "local/echo", revision: revision + 2, lockVersion: 0 }
    ])
  })

  it("wall: a verdict at an older revision is asked again; one for another head changes nothing", () => {
    const heading = judging(answered(start(), "a"), "b")
    const revision = heading.context.contextRevision
    const [, stale] = step(
      heading,
      compact("w", { trigger: "wall", inputId: "input-b", revision: revision - 1, lockVersion: 0 })
    )
    expect(described(stale)).toEqual(["conversation.judgeHead"])
    const [unchanged, other] = step(
      heading,
      compact("w", { trigger: "wall", inputId: "input-x", revision, lockVersion: 0 })
    )
    expect(described(other)).toEqual([])
    expect(unchanged.context).toEqual(heading.context)
  })

  it("archived: a manual compaction is conversation_archived", () => {
    const archived = step(answered(start(), "a"), { type: "conversation.archive" })[0]
    expect(described(step(archived, compact("s"))[1])).toEqual(["refuse(conversation_archived)"])
  })
})
