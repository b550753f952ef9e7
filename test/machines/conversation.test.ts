// The conversation machine, one test per row of the spec's table ("Conversation", "Input",
// "Steering input") and the supplement's queue, drain, steering and turn rules: what each step
// asks the runtime to do and which feed items it narrates together (one step, one transaction).
import type { ConversationInput, ReplyPlan, Tail } from "@troupe/machines/conversation/context"
import {
  conversationMachine,
  inputQueueLimit,
  reapAfterMillis
} from "@troupe/machines/conversation/conversation.machine"
import { conversationEffects } from "@troupe/machines/conversation/effects"
import type { AcceptedInput } from "@troupe/machines/conversation/events"
import { machines, migrateSnapshot, type PersistedSnapshot } from "@troupe/machines/registry"
import { describe, expect, it } from "vitest"
import { initialTransition, transition } from "xstate"

type Snapshot = ReturnType<typeof initialTransition<typeof conversationMachine>>[0]
type Event = Parameters<typeof transition<typeof conversationMachine>>[2]
type Action = { readonly type: string; readonly params?: any }

const start = (overrides: Partial<ConversationInput> = {}) =>
  initialTransition(conversationMachine, {
    publicId: "01900000-0000-7000-8000-0000000000c1",
    firstPosition: 1,
    side: false,
    subagent: false,
    tail: null,
    ...overrides
  })[0]

/** The executed actions, emits included (xstate's type leaves them out). */
const loose = (actions: ReadonlyArray<unknown>) => actions as ReadonlyArray<Action>

const step = (snapshot: Snapshot, event: Event): [Snapshot, ReadonlyArray<Action>] => {
  const [next, actions] = transition(conversationMachine, snapshot, event)
  return [next, loose(actions)]
}

const play = (snapshot: Snapshot, ...events: ReadonlyArray<Event>) =>
  events.reduce((each, event) => step(each, event)[0], snapshot)

/** Emitted items as `type(status, reason, blocked reason or state)`; refusals, timers and other actions by name. */
const described = (actions: ReadonlyArray<Action>) =>
  actions.flatMap((action) => {
    if (action.type === "xstate.emit") {
      const item = action.params.event
      const detail = item.status ?? item.reason ?? item.blocked_reason ?? item.state
      return [`${item.type}${detail === undefined ? "" : `(${detail})`}`]
    }
    if (action.type === "xstate.raise") return [`timer:${action.params.id}`]
    if (action.type === "xstate.cancel") return [`cancel:${action.params.sendId}`]
    if (action.type === "conversation.refuse") return [`refuse(${action.params.reason})`]
    return action.type.startsWith("xstate.") ? [] : [action.type]
  })

const paramsOf = (actions: ReadonlyArray<Action>, type: string) =>
  actions.filter((action) => action.type === type).map((action) => action.params)

const itemsOf = (actions: ReadonlyArray<Action>, type: string) =>
  actions
    .filter((action) => action.type === "xstate.emit" && action.params.event.type === type)
    .map((action) => action.params.event)

/** A step the machine refused: nothing changes but the one refusal. */
const expectRefused = (snapshot: Snapshot, event: Event, reason: string) => {
  const [next, actions] = step(snapshot, event)
  expect(described(actions)).toEqual([`refuse(${reason})`])
  expect(next.value).toEqual(snapshot.value)
  expect(next.context).toEqual(snapshot.context)
}

const ids = (name: string) => ({
  turnId: `turn-${name}`,
  variantId: `variant-${name}`,
  requestId: `request-${name}`,
  fallbackVariantId: `fallback-variant-${name}`,
  fallbackRequestId: `fallback-request-${name}`
})

const echo: ReplyPlan = { model: "local/echo", modelKnown: true, fallbackModel: null, answererId: "agent" }

type Fences = { readonly expectedContextRevision?: number; readonly expectedTailTurnId?: string }

const accepted = (name: string, input: Partial<AcceptedInput> = {}, fences: Fences = {}, at = 0): Event => {
  const kind = input.kind ?? "message"
  return {
    type: "input.accept",
    at,
    input: {
      inputId: `input-${name}`,
      kind,
      kernel: false,
      role: "user",
      deliveryMode: "queue",
      dueAt: null,
      authorId: "person",
      reply: kind === "direct_reply" ? echo : null,
      ids: ids(name),
      row: { text: name },
      item: { input_public_id: `input-${name}`, kind, origin: "person", author_public_id: "person" },
      ...input
    },
    ...fences
  }
}

const message = (name: string, input: Partial<AcceptedInput> = {}) => accepted(name, input)
const directReply = (name: string, input: Partial<AcceptedInput> = {}) =>
  accepted(name, { kind: "direct_reply", ...input })

const judged = (
  name: string,
  revision: number,
  verdict: "ready" | "unknown_model" = "ready",
  lockVersion = 0
): Event => ({
  type: "reply.judged",
  inputId: `input-${name}`,
  revision,
  lockVersion,
  verdict
})

const usage = { input_tokens: 6, output_tokens: 5 }

const replied = (
  requestId: string,
  status: "completed" | "failed" | "canceled" | "timed_out" = "completed",
  more: { errorCode?: string; declined?: boolean } = {}
): Event => ({
  type: "inference.replied",
  requestId,
  status,
  errorCode: more.errorCode ?? null,
  declined: more.declined ?? false,
  usage
})

/** A direct reply `name` accepted, judged ready at the current revision: its turn running. */
const replying = (snapshot: Snapshot, name: string, input: Partial<AcceptedInput> = {}) => {
  const judging = step(snapshot, directReply(name, input))[0]
  return step(judging, judged(name, judging.context.contextRevision))[0]
}

/** A direct reply `name` that completed. */
const answered = (snapshot: Snapshot, name: string) => step(replying(snapshot, name), replied(`request-${name}`))[0]

const archive: Event = { type: "conversation.archive" }

describe("conversation machine", () => {
  it("starts active, narrating nothing; a fork starts after its own copy of the fork turn", () => {
    const [snapshot, actions] = initialTransition(conversationMachine, {
      publicId: "c",
      firstPosition: 1,
      side: false,
      subagent: false,
      tail: null
    })
    expect(snapshot.value).toBe("active")
    expect(described(loose(actions))).toEqual([])
    expect(snapshot.context).toMatchObject({ lockVersion: 0, contextRevision: 0, nextPosition: 1, queue: [] })
    const tail: Tail = { turnId: "own-copy", position: 4, kind: "direct_reply", status: "completed" }
    const fork = start({ firstPosition: 4, tail })
    expect(fork.context).toMatchObject({ nextPosition: 5, tail, frozenThrough: 3, freezes: {} })
  })

  describe("Conversation", () => {
    it("Conversation: active --archive, not a subagent or side--> archived: conversation_ended with reason archived", () => {
      const [archived, actions] = step(start(), archive)
      expect(archived.value).toBe("archived")
      expect(described(actions)).toEqual([
        "conversation.tellFollowers",
        "conversation.recordState",
        "conversation_ended(archived)"
      ])
      expect(paramsOf(actions, "conversation.tellFollowers")).toEqual([{ command: "archive" }])
      expect(paramsOf(actions, "conversation.recordState")).toEqual([{ state: "archived", lockVersion: 1 }])
      expect(archived.context.lockVersion).toBe(1)
      expect(step(archived, archive)).toEqual([archived, []])
      expectRefused(start({ subagent: true }), archive, "subagent_follows_parent")
      expectRefused(start({ side: true }), archive, "side_conversation")
    })

    it("archiving cancels the running reply; its settling drains nothing until unarchived", () => {
      const running = step(replying(start(), "a"), message("b"))[0]
      const [archived, actions] = step(running, archive)
      expect(described(actions)).toEqual([
        "conversation.tellFollowers",
        "conversation.recordState",
        "conversation.cancelRequest",
        "conversation_ended(archived)"
      ])
      const [settled, settling] = step(archived, replied("request-a", "canceled"))
      expect(settled.value).toBe("archived")
      expect(described(settling)).toEqual(["conversation.settleSample", "usage", "turn_status(canceled)"])
      expect(settled.context.queue.map((entry) => entry.inputId)).toEqual(["input-b"])
      const [active, unarchiving] = step(settled, { type: "conversation.unarchive" })
      expect(described(unarchiving)).toEqual([
        "conversation.recordState",
        "conversation.tellFollowers",
        "conversation.materializeMessage",
        "turn_created",
        "input_materialized",
        "turn_status(completed)"
      ])
      expect(active.context.queue).toEqual([])
    })

    it("Conversation: archived --unarchive, not a subagent or side--> active", () => {
      const archived = play(start(), archive)
      const [active, actions] = step(archived, { type: "conversation.unarchive" })
      expect(active.value).toBe("active")
      expect(described(actions)).toEqual(["conversation.recordState", "conversation.tellFollowers"])
      expect(paramsOf(actions, "conversation.recordState")).toEqual([{ state: "active", lockVersion: 2 }])
      expect(paramsOf(actions, "conversation.tellFollowers")).toEqual([{ command: "unarchive" }])
      expect(step(active, { type: "conversation.unarchive" })).toEqual([active, []])
      for (const [input, reason] of [
        [{ subagent: true }, "subagent_follows_parent"],
        [{ side: true }, "side_conversation"]
      ] as const) {
        const archivedChild = conversationMachine.resolveState({ value: "archived", context: start(input).context })
        expectRefused(archivedChild, { type: "conversation.unarchive" }, reason)
      }
    })

    it("Conversation: any --delete, no live work in tree--> tombstoned: reaped after 30 days (timer)", () => {
      for (const from of [start(), play(start(), archive)]) {
        const [tombstoned, actions] = step(from, { type: "conversation.tombstone" })
        expect(tombstoned.value).toBe("tombstoned")
        expect(described(actions)).toEqual([
          "conversation.ensureTreeIdle",
          "conversation.recordState",
          "conversation.tellFollowers",
          "conversation.releaseSources",
          "conversation.stopHostedRuns",
          "conversation_ended(tombstoned)",
          "timer:reap"
        ])
        expect(paramsOf(actions, "conversation.tellFollowers")).toEqual([{ command: "end" }])
        expect(paramsOf(actions, "conversation.recordState")[0].state).toBe("tombstoned")
        expect(actions.find((action) => action.type === "xstate.raise")?.params.delay).toBe(reapAfterMillis)
        expect(reapAfterMillis).toBe(30 * 24 * 60 * 60 * 1000)
        const [reaped, reaping] = step(tombstoned, { type: "conversation.reap" })
        expect(reaped.status).toBe("done")
        expect(described(reaping)).toEqual([conversationEffects.reap])
      }
    })

    it("delete is refused while a reply runs (conversation_busy); a tombstone cancels scheduled inputs' timers", () => {
      const running = replying(start(), "a")
      expectRefused(running, { type: "conversation.tombstone" }, "conversation_busy")
      expectRefused(play(running, archive), { type: "conversation.tombstone" }, "conversation_busy")
      const scheduled = step(start(), message("later", { dueAt: 60_000 }))[0]
      const [tombstoned, actions] = step(scheduled, { type: "conversation.tombstone" })
      expect(described(actions)).toEqual([
        "conversation.ensureTreeIdle",
        "conversation.recordState",
        "cancel:due:input-later",
        "conversation.tellFollowers",
        "conversation.releaseSources",
        "conversation.stopHostedRuns",
        "conversation_ended(tombstoned)",
        "timer:reap"
      ])
      const ignored = step(tombstoned, { type: "input.due", inputId: "input-later" })
      expect(described(ignored[1])).toEqual([])
    })

    it("Conversation: any --delete, no live work in tree--> tombstoned: the fence is asked first, then whatever hosted run is left is told to stop by force", () => {
      const judging = step(start(), directReply("r", { reply: { ...echo, engine: "run" } }))[0]
      const running = step(judging, { ...judged("r", 0), plan: {} } as Event)[0]
      const settledEarly = step(running, {
        type: "run.replied",
        requestId: "request-r",
        status: "completed",
        errorCode: null,
        declined: false,
        usage: null
      })[0]
      expect(settledEarly.context.lane).toBeNull()
      for (const from of [settledEarly, play(settledEarly, archive)]) {
        const [tombstoned, actions] = step(from, { type: "conversation.tombstone" })
        expect(tombstoned.value).toBe("tombstoned")
        const asked = described(actions)
        expect(asked.indexOf("conversation.ensureTreeIdle")).toBeLessThan(asked.indexOf("conversation.stopHostedRuns"))
        expect(paramsOf(actions, "conversation.stopHostedRuns")).toEqual([{ except: null }])
      }
      // Ended by its parent while its run-backed reply runs: that run is told to cancel once, not twice.
      const [ended, ending] = step(replying(start({ subagent: true }), "s", { reply: { ...echo, engine: "run" } }), {
        type: "conversation.end"
      })
      expect(ended.value).toBe("tombstoned")
      expect(paramsOf(ending, "conversation.cancelRequest")).toEqual([{ requestId: "request-s", engine: "run" }])
      expect(paramsOf(ending, "conversation.stopHostedRuns")).toEqual([{ except: "request-s" }])
    })

    it("Conversation: archived --a returned result (kernel task_result)--> archived: recorded as a message turn, no reply; unarchive starts nothing", () => {
      const result = (name: string) =>
        accepted(name, { kind: "direct_reply", kernel: true, row: { text: name, origin: "task_result" } })
      const [recorded, actions] = step(play(start(), archive), result("r"))
      expect(recorded.value).toBe("archived")
      expect(described(actions)).toEqual([
        "conversation.insertInput",
        "input_accepted(pending)",
        "conversation.materializeMessage",
        "turn_created",
        "input_materialized",
        "turn_status(completed)"
      ])
      expect(itemsOf(actions, "turn_created")[0]).toMatchObject({ kind: "message", input_public_id: "input-r" })
      expect(recorded.context.queue).toEqual([])
      expect(recorded.context.lane).toBeNull()
      const [active, unarchiving] = step(recorded, { type: "conversation.unarchive" })
      expect(active.value).toBe("active")
      expect(described(unarchiving)).toEqual(["conversation.recordState", "conversation.tellFollowers"])
      // A reply still settling (archive canceled it) holds the result until its lane frees.
      const canceling = play(replying(start(), "a"), archive)
      const [held, holding] = step(canceling, result("late"))
      expect(described(holding)).toEqual(["conversation.insertInput", "input_accepted(pending)"])
      expect(held.context.queue).toMatchObject([{ inputId: "input-late", kind: "message", kernel: true }])
      const [settled, settling] = step(held, replied("request-a", "canceled"))
      expect(described(settling)).toEqual([
        "conversation.settleSample",
        "usage",
        "turn_status(canceled)",
        "conversation.materializeMessage",
        "turn_created",
        "input_materialized",
        "turn_status(completed)"
      ])
      expect(settled.context.queue).toEqual([])
      // A result queued before the archive (its wake asked a reply) is recorded too, ahead of a later one.
      const queued = play(replying(start(), "b"), result("early"), archive, result("later"))
      expect(queued.context.queue.map((entry) => entry.inputId)).toEqual(["input-early", "input-later"])
      const [drained, draining] = step(queued, replied("request-b", "canceled"))
      expect(paramsOf(draining, "conversation.materializeMessage").map((params) => params.inputId)).toEqual([
        "input-early",
        "input-later"
      ])
      expect(drained.context.queue).toEqual([])
      // Anything else stays refused while archived.
      expectRefused(play(start(), archive), message("person"), "conversation_archived")
      expectRefused(
        play(start(), archive),
        accepted("child", { kernel: true, row: { text: "child", origin: "child" } }),
        "conversation_archived"
      )
    })

    it("a tombstoned conversation accepts no input (a returned result's delivery is settled rejected)", () => {
      const tombstoned = play(start(), { type: "conversation.tombstone" })
      const result = accepted("r", { kernel: true, row: { text: "r", origin: "task_result" } })
      expect(step(tombstoned, result)).toEqual([tombstoned, []])
    })

    it("an archived conversation refuses writes with conversation_archived but takes an access replacement", () => {
      const archived = play(answered(start(), "a"), archive)
      const writes: ReadonlyArray<Event> = [
        { type: "conversation.edit", lockVersion: archived.context.lockVersion, changes: { title: "t" } },
        { type: "conversation.memoryWritten" },
        message("b"),
        { type: "input.edit", at: 0, inputId: "input-b", changes: { text: "x" } },
        { type: "input.promote", inputId: "input-b" },
        { type: "input.delete", inputId: "input-b" },
        { type: "input.reorder", authorId: "person", inputIds: [] },
        { type: "turn.edit", turnId: "turn-a", variantId: "edit", text: "x" },
        {
          type: "turn.regenerate",
          turnId: "turn-a",
          displayedVariantId: "variant-a",
          variantId: "again",
          requestId: "again",
          model: "local/echo",
          overrides: {}
        },
        { type: "turn.activate", turnId: "turn-a", variantId: "variant-a" },
        { type: "turn.visibility", turnId: "turn-a", visibility: "hidden" },
        { type: "turn.delete", turnId: "turn-a", previousTail: null },
        { type: "variant.conceal", turnId: "turn-a", variantId: "variant-a", concealed: true },
        { type: "conversation.configure", changes: { default_runner_executor_id: "runner" }, item: null },
        { type: "conversation.configure", changes: { memory_context: null }, item: null }
      ]
      for (const write of writes) expectRefused(archived, write, "conversation_archived")
      const access = { default: "read", entries: [] }
      const [configured, actions] = step(archived, {
        type: "conversation.configure",
        changes: { access },
        item: { type: "access_changed", access }
      })
      expect(configured.value).toBe("archived")
      expect(described(actions)).toEqual(["conversation.recordChanges", "access_changed"])
      expect(paramsOf(actions, "conversation.recordChanges")).toEqual([
        {
          changes: { access },
          lockVersion: archived.context.lockVersion + 1,
          contextRevision: archived.context.contextRevision
        }
      ])
    })

    it("PATCH is fenced by lock_version (stale_object); access and runner bump lock_version, memory_context the revision too", () => {
      const active = start()
      expectRefused(active, { type: "conversation.edit", lockVersion: 1, changes: { title: "t" } }, "stale_object")
      const [edited, actions] = step(active, { type: "conversation.edit", lockVersion: 0, changes: { title: "t" } })
      expect(paramsOf(actions, "conversation.recordChanges")).toEqual([
        { changes: { title: "t" }, lockVersion: 1, contextRevision: 0 }
      ])
      const [runner] = step(edited, {
        type: "conversation.configure",
        changes: { default_runner_executor_id: "r" },
        item: null
      })
      expect([runner.context.lockVersion, runner.context.contextRevision]).toEqual([2, 0])
      const [memory] = step(runner, { type: "conversation.configure", changes: { memory_context: null }, item: null })
      expect([memory.context.lockVersion, memory.context.contextRevision]).toEqual([3, 1])
      const [written] = step(memory, { type: "conversation.memoryWritten" })
      expect([written.context.lockVersion, written.context.contextRevision]).toEqual([3, 2])
    })
  })

  describe("Input", () => {
    it("Input: pending --drain, lane idle, no block--> consumed into a turn", () => {
      const [drained, actions] = step(start(), message("a"))
      expect(described(actions)).toEqual([
        "conversation.insertInput",
        "input_accepted(pending)",
        "conversation.materializeMessage",
        "turn_created",
        "input_materialized",
        "turn_status(completed)"
      ])
      expect(paramsOf(actions, "conversation.insertInput")[0]).toMatchObject({ queuePosition: 0, state: "pending" })
      expect(itemsOf(actions, "input_accepted")[0]).toMatchObject({
        input_public_id: "input-a",
        kind: "message",
        state: "pending",
        queue_position: 0
      })
      expect(paramsOf(actions, "conversation.materializeMessage")).toEqual([
        { inputId: "input-a", turnId: "turn-a", variantId: "variant-a", position: 1, contextRevision: 1 }
      ])
      expect(itemsOf(actions, "turn_created")).toEqual([
        {
          type: "turn_created",
          turn_public_id: "turn-a",
          position: 1,
          kind: "message",
          role: "user",
          answering_user_public_id: null,
          input_public_id: "input-a"
        }
      ])
      expect(itemsOf(actions, "input_materialized")).toEqual([
        {
          type: "input_materialized",
          input_public_id: "input-a",
          turn_public_id: "turn-a",
          variant_public_id: "variant-a",
          run_public_id: null
        }
      ])
      expect(itemsOf(actions, "turn_status")).toEqual([
        {
          type: "turn_status",
          turn_public_id: "turn-a",
          turn_kind: "message",
          status: "completed",
          variant_public_id: "variant-a",
          variant_status: "completed"
        }
      ])
      expect(drained.context).toMatchObject({
        queue: [],
        lane: null,
        nextPosition: 2,
        contextRevision: 1,
        tail: { turnId: "turn-a", position: 1, kind: "message", status: "completed" }
      })
    })

    it("a message head becomes a completed turn and the drain goes on to the next", () => {
      const held = play(replying(start(), "a"), message("b"), message("c"))
      expect(held.context.queue.map((entry) => entry.state)).toEqual(["pending", "pending"])
      const [drained, actions] = step(held, replied("request-a"))
      expect(
        paramsOf(actions, "conversation.materializeMessage").map((params) => [params.inputId, params.position])
      ).toEqual([
        ["input-b", 2],
        ["input-c", 3]
      ])
      expect(drained.context.queue).toEqual([])
      expect(drained.context.tail?.turnId).toBe("turn-c")
    })

    it("Input: pending --drain, cannot be served--> blocked: FIFO held behind it", () => {
      const unknown = { ...echo, model: "nobody/none", modelKnown: false }
      const [blocked, actions] = step(start(), directReply("a", { reply: unknown }))
      expect(described(actions)).toEqual([
        "conversation.insertInput",
        "input_accepted(pending)",
        "conversation.updateInput",
        "input_blocked(unknown_model)"
      ])
      expect(paramsOf(actions, "conversation.updateInput")).toEqual([
        { inputId: "input-a", changes: {}, state: "blocked", blockedReason: "unknown_model", lockVersion: 0 }
      ])
      expect(blocked.context.queue[0]).toMatchObject({ state: "blocked", blockedReason: "unknown_model" })
      const [behind, queued] = step(blocked, message("b"))
      expect(described(queued)).toEqual(["conversation.insertInput", "input_accepted(pending)"])
      expect(behind.context.queue.map((entry) => entry.inputId)).toEqual(["input-a", "input-b"])
      expect(behind.context.tail).toBeNull()
    })

    it("a judging verdict that the head cannot be served blocks it; the lane is free and the rows behind wait", () => {
      const judging = play(start(), directReply("a"), message("b"))
      const [blocked, actions] = step(judging, {
        type: "reply.judged",
        inputId: "input-a",
        revision: 0,
        lockVersion: 0,
        verdict: "estimated_input_exceeds_model_limit"
      })
      expect(described(actions)).toEqual([
        "conversation.updateInput",
        "input_blocked(estimated_input_exceeds_model_limit)"
      ])
      expect(blocked.context.lane).toBeNull()
      expect(blocked.context.queue.map((entry) => [entry.inputId, entry.state])).toEqual([
        ["input-a", "blocked"],
        ["input-b", "pending"]
      ])
    })

    it("a kernel row that cannot be served (a returned result asking a reply) lands as a message; the rows behind drain", () => {
      const judging = play(start(), directReply("a", { kernel: true }), message("b"))
      const [landed, actions] = step(judging, {
        type: "reply.judged",
        inputId: "input-a",
        revision: 0,
        lockVersion: 0,
        verdict: "budget_exhausted"
      })
      expect(described(actions)).toEqual([
        "conversation.materializeMessage",
        "turn_created",
        "input_materialized",
        "turn_status(completed)",
        "conversation.materializeMessage",
        "turn_created",
        "input_materialized",
        "turn_status(completed)"
      ])
      expect(paramsOf(actions, "conversation.materializeMessage").map((params) => params.inputId)).toEqual([
        "input-a",
        "input-b"
      ])
      expect(itemsOf(actions, "turn_created")[0]).toMatchObject({ kind: "message", input_public_id: "input-a" })
      expect(landed.context.queue).toEqual([])
      expect(landed.context.lane).toBeNull()
    })

    it("Input: blocked --edit--> pending: re-judged", () => {
      const unknown = { ...echo, model: "nobody/none", modelKnown: false }
      const blocked = play(start(), directReply("a", { reply: unknown }), message("b"))
      const lockVersion = blocked.context.queue[0]!.lockVersion
      const [rejudged, actions] = step(blocked, {
        type: "input.edit",
        at: 0,
        inputId: "input-a",
        expectedLockVersion: lockVersion,
        changes: { model: { model: "local/echo" } },
        reply: echo
      })
      expect(described(actions)).toEqual(["conversation.updateInput", "input_edited(edit)", "conversation.judgeHead"])
      expect(paramsOf(actions, "conversation.updateInput")).toEqual([
        {
          inputId: "input-a",
          changes: { model: { model: "local/echo" } },
          state: "pending",
          blockedReason: null,
          lockVersion: lockVersion + 1
        }
      ])
      expect(itemsOf(actions, "input_edited")[0]).toMatchObject({
        input_public_id: "input-a",
        state: "pending",
        lock_version: lockVersion + 1,
        reason: "edit"
      })
      expect(paramsOf(actions, "conversation.judgeHead")).toEqual([
        { inputId: "input-a", model: "local/echo", revision: 0, lockVersion: lockVersion + 1 }
      ])
      expect(rejudged.context.queue[0]).toMatchObject({ state: "pending", blockedReason: null })
      expect(rejudged.context.lane).toMatchObject({ phase: "judging", inputId: "input-a" })
    })

    it("a block leaves the row's lock_version: only edits bump it", () => {
      const unknown = { ...echo, model: "nobody/none", modelKnown: false }
      const blocked = play(start(), directReply("a", { reply: unknown }))
      expect(blocked.context.queue[0]!.lockVersion).toBe(0)
      expectRefused(
        blocked,
        { type: "input.edit", at: 0, inputId: "input-a", expectedLockVersion: 1, changes: {} },
        "stale_object"
      )
      const [edited] = step(blocked, {
        type: "input.edit",
        at: 0,
        inputId: "input-a",
        expectedLockVersion: 0,
        changes: { text: "again" }
      })
      expect(edited.context.queue[0]).toMatchObject({ state: "blocked", lockVersion: 1 })
    })

    it("Input: pending or blocked --delete--> gone", () => {
      const unknown = { ...echo, model: "nobody/none", modelKnown: false }
      const blocked = play(start(), directReply("a", { reply: unknown }), message("b"))
      const [drained, actions] = step(blocked, { type: "input.delete", inputId: "input-a" })
      expect(described(actions)).toEqual([
        "conversation.deleteInput",
        "input_deleted",
        "conversation.materializeMessage",
        "turn_created",
        "input_materialized",
        "turn_status(completed)"
      ])
      expect(paramsOf(actions, "conversation.deleteInput")).toEqual([{ inputId: "input-a" }])
      expect(drained.context.queue).toEqual([])
      const pending = play(replying(start(), "c"), message("d"))
      const [gone, deleting] = step(pending, { type: "input.delete", inputId: "input-d" })
      expect(described(deleting)).toEqual(["conversation.deleteInput", "input_deleted"])
      expect(gone.context.queue).toEqual([])
      expectRefused(gone, { type: "input.delete", inputId: "input-d" }, "not_found")
    })

    it("kernel rows (task_result, child) cannot be edited or deleted by people", () => {
      const held = play(replying(start(), "a"), message("k", { kernel: true, role: "task_result" }))
      expectRefused(held, { type: "input.delete", inputId: "input-k" }, "kernel_input_immutable")
      expectRefused(held, { type: "input.edit", at: 0, inputId: "input-k", changes: {} }, "kernel_input_immutable")
    })

    it("deleting or editing the head being judged drops its verdict and judges anew", () => {
      const judging = play(start(), directReply("a"), directReply("b"))
      const [next, actions] = step(judging, { type: "input.delete", inputId: "input-a" })
      expect(described(actions)).toEqual(["conversation.deleteInput", "input_deleted", "conversation.judgeHead"])
      expect(next.context.lane).toMatchObject({ phase: "judging", inputId: "input-b" })
      expect(step(next, judged("a", 0))[0].context).toEqual(next.context)
    })

    it(`the queue bound: the ${inputQueueLimit + 1}th caller row is refused input_queue_full; kernel rows pass and are read first`, () => {
      expect(inputQueueLimit).toBe(16)
      let held = replying(start(), "reply")
      for (let index = 0; index < inputQueueLimit; index++) {
        held = step(held, message(`m${index}`, { dueAt: index === 0 ? 60_000 : null }))[0]
      }
      expectRefused(held, message("over"), "input_queue_full")
      const [withKernel, actions] = step(held, message("k", { kernel: true, role: "task_result" }))
      expect(described(actions)).toEqual(["conversation.insertInput", "input_accepted(pending)"])
      expect(withKernel.context.queue).toHaveLength(inputQueueLimit + 1)
      const [drained, draining] = step(withKernel, replied("request-reply"))
      expect(paramsOf(draining, "conversation.materializeMessage").map((params) => params.inputId)).toEqual([
        "input-k",
        ...Array.from({ length: inputQueueLimit - 1 }, (_, index) => `input-m${index + 1}`)
      ])
      expect(drained.context.queue.map((entry) => entry.inputId)).toEqual(["input-m0"])
      expect(step(drained, message("room"))[1].map((action) => action.type)).toContain("conversation.insertInput")
    })

    it("acceptance fences: expected_context_revision (stale_context) and expected_tail_turn_public_id (stale_timeline)", () => {
      const spoken = play(start(), message("a"))
      expect(spoken.context.contextRevision).toBe(1)
      expectRefused(spoken, accepted("b", {}, { expectedContextRevision: 0 }), "stale_context")
      expectRefused(spoken, accepted("b", {}, { expectedTailTurnId: "turn-other" }), "stale_timeline")
      expectRefused(start(), accepted("b", {}, { expectedTailTurnId: "turn-a" }), "stale_timeline")
      const [fenced, actions] = step(
        spoken,
        accepted("b", {}, { expectedContextRevision: 1, expectedTailTurnId: "turn-a" })
      )
      expect(described(actions)).toContain("conversation.materializeMessage")
      expect(fenced.context.tail?.turnId).toBe("turn-b")
    })

    it("deliver_at: a timer per scheduled input; not yet due never heads, input.due makes it head", () => {
      const [scheduled, actions] = step(start(), accepted("later", { dueAt: 61_000 }, {}, 1_000))
      expect(described(actions)).toEqual([
        "conversation.insertInput",
        "input_accepted(pending)",
        "timer:due:input-later"
      ])
      const timer = actions.find((action) => action.type === "xstate.raise")
      expect(timer?.params).toMatchObject({ delay: 60_000, event: { type: "input.due", inputId: "input-later" } })
      const [passed, passing] = step(scheduled, message("now"))
      expect(paramsOf(passing, "conversation.materializeMessage").map((params) => params.inputId)).toEqual([
        "input-now"
      ])
      expect(passed.context.queue.map((entry) => entry.inputId)).toEqual(["input-later"])
      const [due, dueActions] = step(passed, { type: "input.due", inputId: "input-later" })
      expect(paramsOf(dueActions, "conversation.materializeMessage").map((params) => params.inputId)).toEqual([
        "input-later"
      ])
      expect(due.context.queue).toEqual([])
      const waiting = play(replying(start(), "a"), message("first", { dueAt: 5_000 }), message("second"))
      const [ready] = step(waiting, { type: "input.due", inputId: "input-first" })
      const [, draining] = step(ready, replied("request-a"))
      expect(paramsOf(draining, "conversation.materializeMessage").map((params) => params.inputId)).toEqual([
        "input-first",
        "input-second"
      ])
    })

    it("a scheduled input's timer is canceled with its deletion and replaced by an edit of deliver_at", () => {
      const scheduled = play(start(), message("later", { dueAt: 60_000 }))
      expect(described(step(scheduled, { type: "input.delete", inputId: "input-later" })[1])).toEqual([
        "conversation.deleteInput",
        "input_deleted",
        "cancel:due:input-later"
      ])
      const [moved, actions] = step(scheduled, {
        type: "input.edit",
        at: 10_000,
        inputId: "input-later",
        changes: {},
        dueAt: 30_000
      })
      expect(described(actions)).toEqual([
        "conversation.updateInput",
        "input_edited(edit)",
        "cancel:due:input-later",
        "timer:due:input-later"
      ])
      expect(actions.find((action) => action.type === "xstate.raise")?.params.delay).toBe(20_000)
      const [now, nowActions] = step(moved, {
        type: "input.edit",
        at: 11_000,
        inputId: "input-later",
        changes: {},
        dueAt: null
      })
      expect(described(nowActions)).toContain("conversation.materializeMessage")
      expect(now.context.queue).toEqual([])
    })

    it("a scheduled input coming due while archived heads once unarchived", () => {
      const archived = play(start(), message("later", { dueAt: 60_000 }), archive)
      const [due, actions] = step(archived, { type: "input.due", inputId: "input-later" })
      expect(described(actions)).toEqual([])
      expect(due.context.queue[0]?.dueAt).toBeNull()
      const [, unarchiving] = step(due, { type: "conversation.unarchive" })
      expect(paramsOf(unarchiving, "conversation.materializeMessage").map((params) => params.inputId)).toEqual([
        "input-later"
      ])
    })

    it("reorder: exactly the caller's unconsumed non-kernel rows take the old positions in the new order, else queue_changed", () => {
      const held = play(
        replying(start(), "a"),
        message("b"),
        message("other", { authorId: "someone" }),
        message("c"),
        message("k", { kernel: true }),
        message("d")
      )
      const positions = (snapshot: Snapshot) =>
        Object.fromEntries(snapshot.context.queue.map((entry) => [entry.inputId, entry.queuePosition]))
      expect(positions(held)).toEqual({ "input-b": 1, "input-other": 2, "input-c": 3, "input-k": 4, "input-d": 5 })
      const reorder = (inputIds: ReadonlyArray<string>): Event => ({
        type: "input.reorder",
        authorId: "person",
        inputIds
      })
      for (const wrong of [
        ["input-d", "input-b"],
        ["input-d", "input-b", "input-c", "input-c"],
        ["input-d", "input-b", "input-c", "input-other"],
        ["input-d", "input-b", "input-c", "input-k"],
        ["input-d", "input-b", "input-gone"]
      ]) {
        expectRefused(held, reorder(wrong), "queue_changed")
      }
      const [reordered, actions] = step(held, reorder(["input-d", "input-b", "input-c"]))
      expect(described(actions)).toEqual(["conversation.reorderInputs"])
      expect(paramsOf(actions, "conversation.reorderInputs")).toEqual([
        {
          positions: [
            { inputId: "input-d", queuePosition: 1 },
            { inputId: "input-b", queuePosition: 3 },
            { inputId: "input-c", queuePosition: 5 }
          ]
        }
      ])
      expect(positions(reordered)).toEqual({ "input-b": 3, "input-other": 2, "input-c": 5, "input-k": 4, "input-d": 1 })
      const [, draining] = step(reordered, replied("request-a"))
      expect(paramsOf(draining, "conversation.materializeMessage").map((params) => params.inputId)).toEqual([
        "input-k",
        "input-d",
        "input-other",
        "input-b",
        "input-c"
      ])
    })
  })

  describe("Steering input", () => {
    it("a steer while a reply runs is held; with an idle lane it queues", () => {
      const [held, actions] = step(replying(start(), "a"), message("s", { deliveryMode: "steer" }))
      expect(described(actions)).toEqual(["conversation.insertInput", "input_accepted(steering)"])
      expect(paramsOf(actions, "conversation.insertInput")[0].state).toBe("steering")
      expect(held.context.queue[0]?.state).toBe("steering")
      const [queued, queuing] = step(play(start(), directReply("j")), message("t", { deliveryMode: "steer_now" }))
      expect(described(queuing)).toEqual(["conversation.insertInput", "input_accepted(pending)"])
      expect(queued.context.queue.map((entry) => entry.state)).toEqual(["pending", "pending"])
    })

    it("Steering input: held --edit delivery_mode steer_now--> promoted", () => {
      const held = play(replying(start(), "a"), message("s", { deliveryMode: "steer" }))
      expectRefused(held, { type: "input.promote", inputId: "input-s", expectedLockVersion: 3 }, "stale_object")
      const [promoted, actions] = step(held, { type: "input.promote", inputId: "input-s", expectedLockVersion: 0 })
      expect(described(actions)).toEqual(["conversation.updateInput", "input_edited(promoted)"])
      expect(paramsOf(actions, "conversation.updateInput")).toEqual([
        {
          inputId: "input-s",
          changes: {},
          state: "steering",
          blockedReason: null,
          deliveryMode: "steer_now",
          lockVersion: 1
        }
      ])
      expect(itemsOf(actions, "input_edited")[0]).toMatchObject({
        state: "steering",
        lock_version: 1,
        reason: "promoted"
      })
      expect(promoted.context.queue[0]).toMatchObject({ state: "steering", deliveryMode: "steer_now", lockVersion: 1 })
      expectRefused(held, { type: "input.edit", at: 0, inputId: "input-s", changes: { text: "x" } }, "steering_held")
      const pending = play(replying(start(), "b"), message("q"))
      expectRefused(pending, { type: "input.promote", inputId: "input-q" }, "validation_failed")
      const [canceled, deleting] = step(held, { type: "input.delete", inputId: "input-s" })
      expect(described(deleting)).toEqual(["conversation.deleteInput", "input_deleted"])
      expect(canceled.context.queue).toEqual([])
    })

    it("held steers return to pending (input_edited steer_released) when the turn settles, and drain in order", () => {
      const held = play(
        replying(start(), "a"),
        message("s1", { deliveryMode: "steer" }),
        message("q"),
        message("s2", { deliveryMode: "steer_now" })
      )
      expect(step(held, { type: "input.due", inputId: "input-q" })[0].context).toEqual(held.context)
      const [drained, actions] = step(held, replied("request-a"))
      expect(described(actions)).toEqual([
        "conversation.settleSample",
        "usage",
        "turn_status(completed)",
        "conversation.updateInput",
        "input_edited(steer_released)",
        "conversation.updateInput",
        "input_edited(steer_released)",
        ...Array.from({ length: 3 }, () => [
          "conversation.materializeMessage",
          "turn_created",
          "input_materialized",
          "turn_status(completed)"
        ]).flat()
      ])
      expect(itemsOf(actions, "input_edited")).toEqual([
        {
          type: "input_edited",
          input_public_id: "input-s1",
          state: "pending",
          lock_version: 1,
          reason: "steer_released"
        },
        {
          type: "input_edited",
          input_public_id: "input-s2",
          state: "pending",
          lock_version: 1,
          reason: "steer_released"
        }
      ])
      expect(paramsOf(actions, "conversation.materializeMessage").map((params) => params.inputId)).toEqual([
        "input-s1",
        "input-q",
        "input-s2"
      ])
      expect(drained.context.queue).toEqual([])
    })
  })

  describe("direct reply", () => {
    it("acceptance asks the judging job; a ready verdict opens the running turn in one step", () => {
      const [judging, accepting] = step(start(), directReply("a"))
      expect(described(accepting)).toEqual([
        "conversation.insertInput",
        "input_accepted(pending)",
        "conversation.judgeHead"
      ])
      expect(paramsOf(accepting, "conversation.judgeHead")).toEqual([
        { inputId: "input-a", model: "local/echo", revision: 0, lockVersion: 0 }
      ])
      expect(judging.context.lane).toMatchObject({ phase: "judging", turnId: "turn-a", requestId: "request-a" })
      expect(judging.context.queue).toHaveLength(1)
      const [running, actions] = step(judging, judged("a", 0))
      expect(described(actions)).toEqual([
        "conversation.openReply",
        "turn_created",
        "input_materialized",
        "turn_status(running)"
      ])
      expect(paramsOf(actions, "conversation.openReply")).toEqual([
        {
          inputId: "input-a",
          turnId: "turn-a",
          variantId: "variant-a",
          requestId: "request-a",
          position: 1,
          model: "local/echo",
          answererId: "agent",
          contextRevision: 1,
          engine: "direct"
        }
      ])
      expect(itemsOf(actions, "turn_created")[0]).toMatchObject({
        turn_public_id: "turn-a",
        position: 1,
        kind: "direct_reply",
        role: "assistant",
        answering_user_public_id: "agent",
        input_public_id: "input-a"
      })
      expect(itemsOf(actions, "turn_status")[0]).toMatchObject({
        turn_kind: "direct_reply",
        status: "running",
        variant_public_id: "variant-a",
        variant_status: "running"
      })
      expect(running.context).toMatchObject({
        queue: [],
        lane: { phase: "running", kind: "reply" },
        tail: { turnId: "turn-a", position: 1, kind: "direct_reply", status: "running" }
      })
    })

    it("a completed reply: usage then turn_status completed in one step; the lane frees and the next head drains", () => {
      const running = play(replying(start(), "a"), directReply("b"))
      expect(running.context.queue.map((entry) => entry.inputId)).toEqual(["input-b"])
      const [next, actions] = step(running, replied("request-a"))
      expect(described(actions)).toEqual([
        "conversation.settleSample",
        "usage",
        "turn_status(completed)",
        "conversation.judgeHead"
      ])
      expect(paramsOf(actions, "conversation.settleSample")).toEqual([
        {
          turnId: "turn-a",
          variantId: "variant-a",
          requestId: "request-a",
          variantStatus: "completed",
          turnStatus: "completed",
          activate: true,
          failureReasonKey: null,
          turnFailureReasonKey: null,
          usage,
          contextRevision: 2
        }
      ])
      expect(itemsOf(actions, "usage")).toEqual([
        { type: "usage", turn_public_id: "turn-a", variant_public_id: "variant-a", ...usage }
      ])
      expect(itemsOf(actions, "turn_status")[0]).toEqual({
        type: "turn_status",
        turn_public_id: "turn-a",
        turn_kind: "direct_reply",
        status: "completed",
        variant_public_id: "variant-a",
        variant_status: "completed"
      })
      expect(paramsOf(actions, "conversation.judgeHead")).toEqual([
        { inputId: "input-b", model: "local/echo", revision: 2, lockVersion: 0 }
      ])
      expect(next.context).toMatchObject({
        lastReplyModel: "local/echo",
        tail: { turnId: "turn-a", status: "completed" },
        lane: { phase: "judging", inputId: "input-b" }
      })
    })

    it("a declined first sample with a fallback is re-asked once as a fallback candidate, then completes", () => {
      const plan = { ...echo, fallbackModel: "local/script" }
      const running = replying(start(), "a", { reply: plan })
      const [rescued, actions] = step(
        running,
        replied("request-a", "failed", { errorCode: "model_refused", declined: true })
      )
      expect(described(actions)).toEqual([
        "conversation.settleSample",
        "usage",
        "turn_variant(failed)",
        "conversation.openSample",
        "turn_variant(running)"
      ])
      expect(paramsOf(actions, "conversation.settleSample")[0]).toMatchObject({
        variantId: "variant-a",
        variantStatus: "failed",
        turnStatus: "running",
        activate: false,
        failureReasonKey: "model_refused"
      })
      expect(paramsOf(actions, "conversation.openSample")).toEqual([
        {
          turnId: "turn-a",
          variantId: "fallback-variant-a",
          requestId: "fallback-request-a",
          model: "local/script",
          source: "fallback",
          originVariantId: "variant-a",
          overrides: {}
        }
      ])
      expect(itemsOf(actions, "turn_variant")).toEqual([
        {
          type: "turn_variant",
          turn_public_id: "turn-a",
          variant_public_id: "variant-a",
          source: "inference",
          status: "failed",
          active: false
        },
        {
          type: "turn_variant",
          turn_public_id: "turn-a",
          variant_public_id: "fallback-variant-a",
          source: "fallback",
          status: "running",
          active: false
        }
      ])
      expect(rescued.context.tail?.status).toBe("running")
      expect(rescued.context.contextRevision).toBe(running.context.contextRevision)
      expect(step(rescued, replied("request-a"))[0].context).toEqual(rescued.context)
      const [completed, completing] = step(rescued, replied("fallback-request-a"))
      expect(described(completing)).toEqual([
        "conversation.settleSample",
        "usage",
        "turn_variant(completed)",
        "turn_status(completed)"
      ])
      expect(itemsOf(completing, "turn_variant")[0]).toMatchObject({
        variant_public_id: "fallback-variant-a",
        source: "fallback",
        active: true
      })
      expect(itemsOf(completing, "turn_status")[0]).toMatchObject({
        status: "completed",
        variant_public_id: "fallback-variant-a"
      })
      expect(completed.context).toMatchObject({ lane: null, lastReplyModel: "local/script" })
    })

    it("a failure without a fallback fails the turn (a declined fallback is not re-asked)", () => {
      const [failed, actions] = step(
        replying(start(), "a"),
        replied("request-a", "failed", { errorCode: "model_refused", declined: true })
      )
      expect(described(actions)).toEqual(["conversation.settleSample", "usage", "turn_status(failed)"])
      expect(paramsOf(actions, "conversation.settleSample")[0]).toMatchObject({
        variantStatus: "failed",
        turnStatus: "failed",
        activate: true,
        failureReasonKey: "model_refused"
      })
      expect(itemsOf(actions, "turn_status")[0]).toMatchObject({
        status: "failed",
        variant_status: "failed",
        failure_reason_key: "model_refused"
      })
      expect(failed.context).toMatchObject({ lane: null, tail: { status: "failed" }, lastReplyModel: null })
      const plan = { ...echo, fallbackModel: "local/script" }
      const declinedTwice = play(
        replying(start(), "b", { reply: plan }),
        replied("request-b", "failed", { declined: true, errorCode: "model_refused" })
      )
      const [fallbackFailed, failing] = step(
        declinedTwice,
        replied("fallback-request-b", "failed", { declined: true, errorCode: "model_refused" })
      )
      expect(described(failing)).toEqual([
        "conversation.settleSample",
        "usage",
        "turn_variant(failed)",
        "turn_status(failed)"
      ])
      expect(fallbackFailed.context.lane).toBeNull()
    })

    it("Engine selection: a run-backed head opens its hosted run with the verdict's plan; run.replied settles the turn", () => {
      const judging = step(start(), directReply("r", { reply: { ...echo, engine: "run" } }))[0]
      expect(judging.context.lane).toMatchObject({ engine: "run", fallback: null })
      const plan = { tasks: [] }
      const [running, actions] = step(judging, { ...judged("r", 0), plan } as Event)
      expect(paramsOf(actions, "conversation.openReply")[0]).toMatchObject({
        engine: "run",
        plan,
        requestId: "request-r"
      })
      expect(itemsOf(actions, "input_materialized")[0]).toMatchObject({ run_public_id: "request-r" })
      const [canceling, canceled] = step(running, { type: "conversation.cancel" })
      expect(paramsOf(canceled, "conversation.cancelRequest")).toEqual([{ requestId: "request-r", engine: "run" }])
      const [settled] = step(canceling, {
        type: "run.replied",
        requestId: "request-r",
        status: "canceled",
        errorCode: "canceled",
        declined: false,
        usage: null
      })
      expect(settled.context.lane).toBeNull()
      expect(settled.context.tail).toMatchObject({ status: "canceled" })
    })

    it("cancellation naming a turn cuts only that turn's running sample (a message told after its sender looked)", () => {
      const running = replying(start(), "a")
      expect(running.context.lane).toMatchObject({ turnId: "turn-a", phase: "running" })
      expect(step(running, { type: "conversation.cancel", turnId: "turn-elsewhere" })).toEqual([running, []])
      const [canceling, actions] = step(running, { type: "conversation.cancel", turnId: "turn-a" })
      expect(described(actions)).toContain("conversation.cancelRequest")
      expect(canceling.context.lane).toMatchObject({ turnId: "turn-a", canceled: true })
    })

    it("Engine selection: a hosted run held for attention fails its turn; running again runs the turn again", () => {
      const judging = step(start(), directReply("h", { reply: { ...echo, engine: "run" } }))[0]
      const [running] = step(judging, { ...judged("h", 0), plan: {} } as Event)
      const told = (status: "completed" | "failed" | "running"): Event => ({
        type: "run.replied",
        requestId: "request-h",
        status,
        errorCode: status === "failed" ? "approval_required" : null,
        declined: false,
        usage: null
      })
      const [held] = step(running, told("failed"))
      expect(held.context.lane).toBeNull()
      expect(held.context.tail).toMatchObject({ status: "failed" })
      const [again, actions] = step(held, told("running"))
      expect(again.context.lane).toMatchObject({ phase: "running", engine: "run", requestId: "request-h" })
      expect(paramsOf(actions, "conversation.settleSample")[0]).toMatchObject({
        variantStatus: "running",
        turnStatus: "running"
      })
      expect(itemsOf(actions, "turn_status")[0]).toMatchObject({ status: "running", run_public_id: "request-h" })
      const [done] = step(again, told("completed"))
      expect(done.context.lane).toBeNull()
      expect(done.context.tail).toMatchObject({ status: "completed" })
    })

    it("regeneration of a run-backed reply opens a new hosted run; canceled it leaves the deck, held it fails the turn", () => {
      const judging = step(start(), directReply("h", { reply: { ...echo, engine: "run" } }))[0]
      const [running] = step(judging, { ...judged("h", 0), plan: {} } as Event)
      const told = (requestId: string, status: "completed" | "failed" | "canceled" | "running"): Event => ({
        type: "run.replied",
        requestId,
        status,
        errorCode: status === "failed" ? "halt_failure" : status === "canceled" ? "canceled" : null,
        declined: false,
        usage: null
      })
      const [answered] = step(running, told("request-h", "completed"))
      const plan = { tasks: ["again"] }
      const [regenerating, opened] = step(answered, {
        type: "turn.regenerate",
        turnId: "turn-h",
        displayedVariantId: "variant-h",
        variantId: "variant-again",
        requestId: "run-again",
        model: "local/script",
        overrides: {},
        displayedStatus: "completed",
        failureReasonKey: null,
        engine: "run",
        plan
      })
      expect(regenerating.context.lane).toMatchObject({ kind: "regeneration", engine: "run", requestId: "run-again" })
      expect(paramsOf(opened, "conversation.openSample")[0]).toMatchObject({
        source: "run",
        engine: "run",
        plan,
        originVariantId: "variant-h"
      })
      expect(itemsOf(opened, "turn_variant")[0]).toMatchObject({ source: "run", status: "running", active: false })
      expect(itemsOf(opened, "turn_status")[0]).toMatchObject({ status: "running", run_public_id: "run-again" })

      const [canceled, cutting] = step(regenerating, told("run-again", "canceled"))
      expect(canceled.context.tail).toMatchObject({ status: "completed" })
      expect(paramsOf(cutting, "conversation.settleSample")[0]).toMatchObject({
        activate: false,
        turnStatus: "completed"
      })
      expect(itemsOf(cutting, "turn_status")[0]).toMatchObject({ variant_public_id: "variant-h" })

      const [held, holding] = step(regenerating, told("run-again", "failed"))
      expect(held.context.tail).toMatchObject({ status: "failed" })
      expect(paramsOf(holding, "conversation.settleSample")[0]).toMatchObject({
        variantStatus: "failed",
        activate: true,
        turnStatus: "failed",
        turnFailureReasonKey: "halt_failure"
      })
      expect(held.context.hostedRun).toMatchObject({ runId: "run-again", variantId: "variant-again" })
      const [again] = step(held, told("run-again", "running"))
      expect(again.context.lane).toMatchObject({ kind: "reply", requestId: "run-again", variantId: "variant-again" })
      expect(step(held, told("request-h", "running"))[0].context.lane).toBeNull()
    })

    it("a steer held against a run-backed reply is told to its run and, once landed, consumed into the turn", () => {
      const judging = step(start(), directReply("h", { reply: { ...echo, engine: "run" } }))[0]
      const [running] = step(judging, { ...judged("h", 0), plan: {} } as Event)
      const [held, actions] = step(running, message("s", { deliveryMode: "steer" }))
      expect(paramsOf(actions, "conversation.steerRun")).toEqual([{ runId: "request-h", inputId: "input-s" }])
      expect(held.context.queue.find((entry) => entry.inputId === "input-s")?.state).toBe("steering")
      const [landed, landing] = step(held, { type: "input.landed", inputId: "input-s" })
      expect(landed.context.queue.some((entry) => entry.inputId === "input-s")).toBe(false)
      expect(paramsOf(landing, "conversation.landSteer")).toEqual([
        { inputId: "input-s", turnId: "turn-h", variantId: "variant-h" }
      ])
      expect(itemsOf(landing, "input_materialized")[0]).toMatchObject({ run_public_id: "request-h" })
    })

    it("a reorder that changes the order of steers held against a run-backed reply tells its run the new order", () => {
      const judging = step(start(), directReply("h", { reply: { ...echo, engine: "run" } }))[0]
      const [running] = step(judging, { ...judged("h", 0), plan: {} } as Event)
      const held = play(
        running,
        message("s", { deliveryMode: "steer" }),
        message("other", { deliveryMode: "steer", authorId: "someone" }),
        message("t", { deliveryMode: "steer_now" }),
        message("q", { deliveryMode: "queue" })
      )
      const reorder = (inputIds: ReadonlyArray<string>): Event => ({
        type: "input.reorder",
        authorId: "person",
        inputIds
      })
      const [, actions] = step(held, reorder(["input-t", "input-s", "input-q"]))
      expect(described(actions)).toEqual(["conversation.reorderInputs", "conversation.reorderSteers"])
      expect(paramsOf(actions, "conversation.reorderSteers")).toEqual([
        { runId: "request-h", inputIds: ["input-t", "input-other", "input-s"] }
      ])
      // The steers keep their order (only the queued row moved): the run is told nothing.
      const [, unchanged] = step(held, reorder(["input-s", "input-q", "input-t"]))
      expect(described(unchanged)).toEqual(["conversation.reorderInputs"])
      // Steers held against a direct reply have no run to tell.
      const direct = play(
        replying(start(), "a"),
        message("s", { deliveryMode: "steer" }),
        message("t", { deliveryMode: "steer" })
      )
      expect(described(step(direct, reorder(["input-t", "input-s"]))[1])).toEqual(["conversation.reorderInputs"])
    })

    it("cancellation: cancelRequest, then the canceled reply cancels the turn; nothing running changes nothing", () => {
      const plan = { ...echo, fallbackModel: "local/script" }
      const running = replying(start(), "a", { reply: plan })
      const [canceling, actions] = step(running, { type: "conversation.cancel" })
      expect(described(actions)).toEqual(["conversation.cancelRequest"])
      expect(paramsOf(actions, "conversation.cancelRequest")).toEqual([{ requestId: "request-a", engine: "direct" }])
      expect(described(step(canceling, { type: "conversation.cancel" })[1])).toEqual([])
      const [canceled, settling] = step(canceling, replied("request-a", "canceled", { declined: true }))
      expect(described(settling)).toEqual(["conversation.settleSample", "usage", "turn_status(canceled)"])
      expect(paramsOf(settling, "conversation.settleSample")[0]).toMatchObject({
        variantStatus: "canceled",
        turnStatus: "canceled",
        failureReasonKey: "canceled"
      })
      expect(canceled.context).toMatchObject({ lane: null, tail: { status: "canceled" } })
      expect(described(step(start(), { type: "conversation.cancel" })[1])).toEqual([])
      expect(described(step(play(start(), directReply("j")), { type: "conversation.cancel" })[1])).toEqual([])
    })

    it("a stale inference.replied (another requestId) changes nothing", () => {
      const running = replying(start(), "a")
      const [next, actions] = step(running, replied("request-other"))
      expect(described(actions)).toEqual([])
      expect(next.context).toEqual(running.context)
      expect(next.value).toEqual(running.value)
    })

    it("reply.judged at an older revision re-requests judgeHead at the current one", () => {
      const judging = play(start(), directReply("a"), { type: "conversation.memoryWritten" })
      expect(judging.context.contextRevision).toBe(1)
      const [rejudging, actions] = step(judging, judged("a", 0))
      expect(described(actions)).toEqual(["conversation.judgeHead"])
      expect(paramsOf(actions, "conversation.judgeHead")).toEqual([
        { inputId: "input-a", model: "local/echo", revision: 1, lockVersion: 0 }
      ])
      expect(rejudging.context.lane).toMatchObject({ phase: "judging" })
      expect(described(step(rejudging, judged("a", 1))[1])).toContain("conversation.openReply")
      expect(described(step(rejudging, judged("other", 1))[1])).toEqual([])
    })
  })

  describe("turns and variants", () => {
    const regenerate = (turnId: string, name = "again"): Event => ({
      type: "turn.regenerate",
      turnId,
      displayedVariantId: `variant-${turnId}`,
      variantId: `variant-${name}`,
      requestId: `request-${name}`,
      model: "local/script",
      overrides: { model: "local/script" }
    })

    it("regeneration of the tail: a new inactive running candidate; completed, it becomes active", () => {
      const done = answered(start(), "a")
      const [regenerating, actions] = step(done, regenerate("turn-a"))
      expect(described(actions)).toEqual(["conversation.openSample", "turn_variant(running)", "turn_status(running)"])
      expect(paramsOf(actions, "conversation.openSample")[0]).toMatchObject({
        turnId: "turn-a",
        variantId: "variant-again",
        requestId: "request-again",
        model: "local/script",
        source: "inference",
        overrides: { model: "local/script" }
      })
      expect(itemsOf(actions, "turn_variant")[0]).toMatchObject({ status: "running", active: false })
      expect(regenerating.context).toMatchObject({
        tail: { turnId: "turn-a", status: "running" },
        lane: { phase: "running", kind: "regeneration", requestId: "request-again" }
      })
      const [completed, completing] = step(regenerating, replied("request-again"))
      expect(described(completing)).toEqual([
        "conversation.settleSample",
        "usage",
        "turn_variant(completed)",
        "turn_status(completed)"
      ])
      expect(paramsOf(completing, "conversation.settleSample")[0]).toMatchObject({
        variantId: "variant-again",
        turnStatus: "completed",
        activate: true
      })
      expect(itemsOf(completing, "turn_variant")[0]).toMatchObject({ source: "inference", active: true })
      expect(completed.context).toMatchObject({
        lane: null,
        tail: { status: "completed" },
        lastReplyModel: "local/script"
      })
    })

    it("a failed or canceled regeneration leaves the turn completed and the candidate inactive", () => {
      const regenerating = play(answered(start(), "a"), regenerate("turn-a"))
      const [failed, actions] = step(regenerating, replied("request-again", "failed", { errorCode: "provider_error" }))
      expect(paramsOf(actions, "conversation.settleSample")[0]).toMatchObject({
        variantStatus: "failed",
        turnStatus: "completed",
        activate: false,
        failureReasonKey: "provider_error"
      })
      expect(itemsOf(actions, "turn_variant")[0]).toMatchObject({
        variant_public_id: "variant-again",
        status: "failed",
        active: false
      })
      expect(itemsOf(actions, "turn_status")[0]).toMatchObject({ status: "completed" })
      expect(itemsOf(actions, "turn_status")[0]).not.toHaveProperty("failure_reason_key")
      expect(failed.context).toMatchObject({ lane: null, tail: { status: "completed" }, lastReplyModel: "local/echo" })
      const canceling = step(regenerating, { type: "conversation.cancel" })
      expect(described(canceling[1])).toEqual(["conversation.cancelRequest"])
      const [canceled, settling] = step(canceling[0], replied("request-again", "canceled"))
      expect(paramsOf(settling, "conversation.settleSample")[0]).toMatchObject({
        variantStatus: "canceled",
        turnStatus: "completed",
        activate: false
      })
      expect(canceled.context.tail?.status).toBe("completed")
    })

    it("regeneration: only the tail (branch_required), a direct reply (validation_failed), nothing else running (busy)", () => {
      const done = answered(start(), "a")
      const spoken = play(done, message("b"))
      expectRefused(spoken, regenerate("turn-a"), "branch_required")
      expectRefused(spoken, regenerate("turn-b"), "validation_failed")
      expectRefused(replying(start(), "r"), regenerate("turn-r"), "not_terminal")
      const judging = play(done, directReply("j"))
      expectRefused(judging, regenerate("turn-a"), "conversation_busy")
    })

    it("edit, activation and delete aim at the tail: elsewhere branch_required, a running tail not_terminal", () => {
      const two = answered(answered(start(), "a"), "b")
      const verbs = (turnId: string): ReadonlyArray<Event> => [
        { type: "turn.edit", turnId, variantId: "edited", text: "x" },
        { type: "turn.activate", turnId, variantId: "variant-a" },
        { type: "turn.delete", turnId, previousTail: null }
      ]
      for (const verb of verbs("turn-a")) expectRefused(two, verb, "branch_required")
      const running = replying(two, "c")
      for (const verb of verbs("turn-c")) expectRefused(running, verb, "not_terminal")
      const frozen = play(two, { type: "conversation.freeze", through: 2 })
      for (const verb of verbs("turn-b")) expectRefused(frozen, verb, "branch_required")
      const summary = start({
        tail: { turnId: "summary", position: 3, kind: "compaction_summary", status: "completed" }
      })
      for (const verb of verbs("summary")) expectRefused(summary, verb, "kernel_authored")
    })

    it("an edit of the tail is a new active candidate (source edit); activation and delete move the revision", () => {
      const done = answered(start(), "a")
      const revision = done.context.contextRevision
      const [edited, editing] = step(done, { type: "turn.edit", turnId: "turn-a", variantId: "edited", text: "x" })
      expect(described(editing)).toEqual(["conversation.editTurn", "turn_variant(completed)"])
      expect(paramsOf(editing, "conversation.editTurn")).toEqual([
        { turnId: "turn-a", variantId: "edited", text: "x", contextRevision: revision + 1 }
      ])
      expect(itemsOf(editing, "turn_variant")[0]).toMatchObject({ source: "edit", active: true })
      const [activated, activating] = step(edited, { type: "turn.activate", turnId: "turn-a", variantId: "variant-a" })
      expect(described(activating)).toEqual(["conversation.activateVariant", "turn_variant(completed)"])
      expect(activated.context.contextRevision).toBe(revision + 2)
      const previousTail: Tail = { turnId: "turn-m", position: 1, kind: "message", status: "completed" }
      const [deleted, deleting] = step(activated, { type: "turn.delete", turnId: "turn-a", previousTail })
      expect(described(deleting)).toEqual(["conversation.deleteTurn", "turn_deleted"])
      expect(itemsOf(deleting, "turn_deleted")).toEqual([
        { type: "turn_deleted", turn_public_id: "turn-a", position: 1 }
      ])
      expect(deleted.context).toMatchObject({ tail: previousTail, nextPosition: 2, contextRevision: revision + 3 })
    })

    it("visibility and concealment wait for a settled turn or candidate (not_terminal)", () => {
      const running = replying(start(), "a")
      expectRefused(running, { type: "turn.visibility", turnId: "turn-a", visibility: "hidden" }, "not_terminal")
      expectRefused(
        running,
        { type: "variant.conceal", turnId: "turn-a", variantId: "variant-a", concealed: true },
        "not_terminal"
      )
      const done = step(running, replied("request-a"))[0]
      const [hidden, actions] = step(done, { type: "turn.visibility", turnId: "turn-a", visibility: "hidden" })
      expect(described(actions)).toEqual(["conversation.setVisibility", "visibility"])
      expect(hidden.context.contextRevision).toBe(done.context.contextRevision + 1)
    })
  })

  describe("the tree, freezes, verdicts and narration", () => {
    it("Archive first tombstones the sides (work canceled): a side told conversation.end cancels its reply and is tombstoned", () => {
      const running = replying(start({ side: true }), "a")
      const [ended, actions] = step(running, { type: "conversation.end" })
      expect(ended.value).toBe("tombstoned")
      expect(described(actions)).toEqual([
        "conversation.cancelRequest",
        "conversation.settleSample",
        "conversation.recordState",
        "conversation.tellFollowers",
        "conversation.releaseSources",
        "conversation.stopHostedRuns",
        "conversation_ended(tombstoned)",
        "timer:reap"
      ])
      expect(paramsOf(actions, "conversation.cancelRequest")).toEqual([{ requestId: "request-a", engine: "direct" }])
      expect(paramsOf(actions, "conversation.settleSample")[0]).toMatchObject({
        variantId: "variant-a",
        variantStatus: "canceled",
        turnStatus: "canceled",
        activate: true
      })
      expect(described(step(ended, replied("request-a", "canceled"))[1])).toEqual([])
      const [endedWhileArchived] = step(play(start(), archive), { type: "conversation.end" })
      expect(endedWhileArchived.value).toBe("tombstoned")
    })

    it("a subagent child follows its parent: archived with it (its work canceled), unarchived with it", () => {
      const running = replying(start({ subagent: true }), "a")
      const [archived, actions] = step(running, { type: "conversation.follow", state: "archived" })
      expect(archived.value).toBe("archived")
      expect(described(actions)).toEqual([
        "conversation.tellFollowers",
        "conversation.recordState",
        "conversation.cancelRequest",
        "conversation_ended(archived)"
      ])
      expect(step(archived, { type: "conversation.follow", state: "archived" })[1]).toEqual([])
      expectRefused(archived, { type: "conversation.unarchive" }, "subagent_follows_parent")
      const [active, unarchiving] = step(archived, { type: "conversation.follow", state: "active" })
      expect(active.value).toBe("active")
      expect(described(unarchiving)).toEqual(["conversation.recordState", "conversation.tellFollowers"])
      expectRefused(active, archive, "subagent_follows_parent")
    })

    it("Source turns a child reads by reference stay frozen while it lives: each child's freeze is lifted when it is tombstoned", () => {
      const two = answered(answered(start(), "a"), "b")
      const edit: Event = { type: "turn.edit", turnId: "turn-b", variantId: "edited", text: "x" }
      const forked = play(
        two,
        { type: "conversation.forked", through: 2, child: "fork-1", item: { conversation_public_id: "fork-1" } },
        { type: "conversation.freeze", through: 1, child: "fork-2" }
      )
      expect(forked.context.freezes).toEqual({ "fork-1": 2, "fork-2": 1 })
      expectRefused(forked, edit, "branch_required")
      const [released, actions] = step(forked, { type: "conversation.release", child: "fork-1" })
      expect(actions).toEqual([])
      expect(released.context.freezes).toEqual({ "fork-2": 1 })
      expect(described(step(released, edit)[1])).toEqual(["conversation.editTurn", "turn_variant(completed)"])
      const forever = play(two, { type: "conversation.freeze", through: 2 })
      expectRefused(play(forever, { type: "conversation.release", child: "fork-1" }), edit, "branch_required")
    })

    it("a verdict about a head edited while it was judged is not taken: the edit asked again at its lock_version", () => {
      const judging = play(start(), directReply("a"))
      const [edited, editing] = step(judging, {
        type: "input.edit",
        at: 0,
        inputId: "input-a",
        changes: { text: "changed" }
      })
      expect(paramsOf(editing, "conversation.judgeHead")).toEqual([
        { inputId: "input-a", model: "local/echo", revision: 0, lockVersion: 1 }
      ])
      const [unchanged, stale] = step(edited, judged("a", 0, "ready", 0))
      expect(stale).toEqual([])
      expect(unchanged.context).toEqual(edited.context)
      expect(described(step(edited, judged("a", 0, "ready", 1))[1])).toContain("conversation.openReply")
      const [, unnamed] = step(edited, { type: "reply.judged", inputId: "input-a", revision: 0, verdict: "ready" })
      expect(described(unnamed)).toEqual(["conversation.judgeHead"])
    })

    it("a failed or canceled regeneration returns the turn to what it showed before (a failed turn stays failed)", () => {
      const failedTurn = step(
        replying(start(), "a"),
        replied("request-a", "failed", { errorCode: "provider_error" })
      )[0]
      expect(failedTurn.context.tail?.status).toBe("failed")
      const regenerating = play(failedTurn, {
        type: "turn.regenerate",
        turnId: "turn-a",
        displayedVariantId: "variant-a",
        variantId: "variant-again",
        requestId: "request-again",
        model: "local/echo",
        overrides: {},
        displayedStatus: "failed",
        failureReasonKey: "provider_error"
      })
      const [back, actions] = step(regenerating, replied("request-again", "canceled"))
      expect(back.context.tail?.status).toBe("failed")
      expect(paramsOf(actions, "conversation.settleSample")[0]).toMatchObject({
        variantStatus: "canceled",
        turnStatus: "failed",
        activate: false,
        failureReasonKey: "canceled",
        turnFailureReasonKey: "provider_error"
      })
      expect(itemsOf(actions, "turn_status")[0]).toMatchObject({
        status: "failed",
        variant_public_id: "variant-a",
        variant_status: "failed",
        failure_reason_key: "provider_error"
      })
      const [completed, completing] = step(regenerating, replied("request-again"))
      expect(completed.context.tail?.status).toBe("completed")
      expect(paramsOf(completing, "conversation.settleSample")[0]).toMatchObject({
        turnStatus: "completed",
        activate: true,
        turnFailureReasonKey: null
      })
    })

    it("regeneration of a message tail is 422 validation_failed before 409 conversation_busy", () => {
      const busy = play(start(), message("m"), directReply("j"))
      expect(busy.context.lane).toMatchObject({ phase: "judging" })
      expectRefused(
        busy,
        {
          type: "turn.regenerate",
          turnId: "turn-m",
          displayedVariantId: "variant-m",
          variantId: "variant-again",
          requestId: "request-again",
          model: "local/echo",
          overrides: {}
        },
        "validation_failed"
      )
    })

    it("activation: the turn takes its candidate's status and failure (turn_status narrated when it changes)", () => {
      const failedTurn = step(
        replying(start(), "a"),
        replied("request-a", "failed", { errorCode: "provider_error" })
      )[0]
      const [shown, actions] = step(failedTurn, {
        type: "turn.activate",
        turnId: "turn-a",
        variantId: "variant-ok",
        variant: { source: "inference", status: "completed", failureReasonKey: null }
      })
      expect(described(actions)).toEqual([
        "conversation.activateVariant",
        "turn_variant(completed)",
        "turn_status(completed)"
      ])
      expect(paramsOf(actions, "conversation.activateVariant")[0]).toMatchObject({
        variantId: "variant-ok",
        status: "completed",
        failureReasonKey: null
      })
      expect(itemsOf(actions, "turn_variant")[0]).toMatchObject({ source: "inference", active: true })
      expect(shown.context.tail?.status).toBe("completed")
    })

    it("an edit of a failed tail completes the turn (turn_status narrated)", () => {
      const failedTurn = step(
        replying(start(), "a"),
        replied("request-a", "failed", { errorCode: "provider_error" })
      )[0]
      const [edited, actions] = step(failedTurn, {
        type: "turn.edit",
        turnId: "turn-a",
        variantId: "edited",
        text: "x"
      })
      expect(described(actions)).toEqual(["conversation.editTurn", "turn_variant(completed)", "turn_status(completed)"])
      expect(itemsOf(actions, "turn_status")[0]).toMatchObject({
        variant_public_id: "edited",
        variant_status: "completed"
      })
      expect(edited.context.tail?.status).toBe("completed")
    })

    it("handle_changed is narrated on the feed of a conversation its principal speaks in, archived too", () => {
      const item = { user_public_id: "agent", old: "old-name", new: "new-name" }
      for (const from of [start(), play(start(), archive)]) {
        const [, actions] = step(from, { type: "principal.renamed", item })
        expect(itemsOf(actions, "handle_changed")).toEqual([{ type: "handle_changed", ...item }])
      }
      const tombstoned = play(start(), { type: "conversation.tombstone" })
      expect(step(tombstoned, { type: "principal.renamed", item })[1]).toEqual([])
    })

    it("a version-1 snapshot migrates (freezes kept as the floor, a regeneration returns to completed) and steps", () => {
      const running = play(answered(start(), "a"), {
        type: "turn.regenerate",
        turnId: "turn-a",
        displayedVariantId: "variant-a",
        variantId: "variant-again",
        requestId: "request-again",
        model: "local/echo",
        overrides: {}
      })
      const { freezes: _freezes, lane, ...rest } = running.context
      const { prior: _prior, ...v1Lane } = lane!
      const v1: PersistedSnapshot = {
        status: "active",
        value: "active",
        context: { ...rest, frozenThrough: 1, lane: v1Lane }
      }
      const migrated = migrateSnapshot(machines.conversation, v1, 1) as PersistedSnapshot
      expect(migrated.context).toMatchObject({
        frozenThrough: 1,
        freezes: {},
        lane: { kind: "regeneration", prior: { status: "completed", variantStatus: "completed" } }
      })
      const restored = conversationMachine.resolveState({
        value: migrated.value,
        context: migrated.context as Snapshot["context"]
      })
      const [settled, actions] = step(restored, replied("request-again", "failed"))
      expect(settled.context.tail?.status).toBe("completed")
      expect(itemsOf(actions, "turn_status")[0]).toMatchObject({ status: "completed", variant_public_id: "variant-a" })
      expectRefused(settled, { type: "turn.edit", turnId: "turn-a", variantId: "e", text: "x" }, "branch_required")
    })
  })
})
