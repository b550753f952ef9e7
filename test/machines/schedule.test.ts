// The schedule machine, one test per row of the spec's table ("Schedule"), then the clock's own
// moves (an occurrence dispatched or skipped, a stale timer, an edit's fence).
import { scheduleMachine } from "@troupe/machines/schedule/schedule.machine"
import { describe, expect, it } from "vitest"
import { initialTransition, transition } from "xstate"

type Snapshot = ReturnType<typeof initialTransition<typeof scheduleMachine>>[0]
type Event = Parameters<typeof transition<typeof scheduleMachine>>[2]

const t0 = Date.parse("2027-01-01T00:00:00Z")
const minute = 60_000
const interval = { kind: "interval", every_seconds: 60, starts_at: new Date(t0).toISOString() }
const once = { kind: "once", run_at: new Date(t0 + minute).toISOString() }

const step = (snapshot: Snapshot, event: Event) => transition(scheduleMachine, snapshot, event)
const start = (rule: unknown = interval) => initialTransition(scheduleMachine, { rule, nextRunAt: t0 + minute, at: t0 })
const typesOf = (actions: ReadonlyArray<{ type: string }>) => actions.map((action) => action.type)
const due = (snapshot: Snapshot, at: number, nextRunAt: number | null, n = 1): Event => ({
  type: "schedule.due",
  due: snapshot.context.nextRunAt!,
  rule: snapshot.context.rule,
  at,
  scheduledFor: at,
  nextRunAt,
  childId: `child-${n}`,
  inputId: `input-${n}`
})
const recorded = (actions: ReadonlyArray<{ type: string; params?: unknown }>) =>
  actions.find((action) => action.type === "schedule.record")?.params as Record<string, unknown>

describe("schedule machine", () => {
  it("starts active with the first occurrence's timer", () => {
    const [active, actions] = start()
    expect(active.value).toBe("active")
    expect(actions).toMatchObject([
      { type: "xstate.raise", params: { id: "next", delay: minute, event: { type: "schedule.due", due: t0 + minute } } }
    ])
  })

  it("Schedule: active --pause--> paused: future occurrences only", () => {
    const [active] = start()
    const [paused, actions] = step(active, { type: "schedule.pause", at: t0 + 1 })
    expect(paused.value).toBe("paused")
    expect(typesOf(actions)).toEqual(["xstate.cancel", "schedule.record"])
    expect(recorded(actions)).toMatchObject({ status: "paused", nextRunAt: null, lockVersion: 1 })
    // A timer of the canceled occurrence that arrives anyway is not accepted.
    expect(step(paused, due(active, t0 + minute, t0 + 2 * minute))[1]).toEqual([])
  })

  it("Schedule: paused --resume, not expired one-time--> active: the next future occurrence", () => {
    const [paused] = step(start()[0], { type: "schedule.pause", at: t0 + 1 })
    const [active, actions] = step(paused, { type: "schedule.resume", at: t0 + 90_000, nextRunAt: t0 + 2 * minute })
    expect(active.value).toBe("active")
    expect(actions).toMatchObject([
      { type: "xstate.raise", params: { id: "next", delay: 30_000 } },
      { type: "schedule.record", params: { status: "active", nextRunAt: t0 + 2 * minute, lockVersion: 2 } }
    ])
  })

  it("Schedule: paused stays paused on resume of an expired one-time (refused run_at_passed)", () => {
    const [paused] = step(start(once)[0], { type: "schedule.pause", at: t0 + 1 })
    const [after, actions] = step(paused, { type: "schedule.resume", at: t0 + 2 * minute, nextRunAt: null })
    expect(after.value).toBe("paused")
    expect(after.context.lockVersion).toBe(1)
    expect(actions).toMatchObject([{ type: "schedule.refuse", params: { reason: "run_at_passed" } }])
    // Active already: a resume with no future occurrence is simply not accepted.
    expect(step(start(once)[0], { type: "schedule.resume", at: t0, nextRunAt: null })[1]).toEqual([])
  })

  it("Schedule: active or paused --cancel--> canceled: removes a still-queued last child input", () => {
    const [active] = start()
    const [ran] = step(active, { type: "schedule.run", at: t0 + 1, childId: "c", inputId: "i" })
    const [canceled, actions] = step(ran, { type: "schedule.cancel", at: t0 + 2 })
    expect([canceled.value, canceled.status]).toEqual(["canceled", "done"])
    expect(typesOf(actions)).toEqual(["schedule.withdraw", "xstate.cancel", "schedule.record"])
    expect(actions[0]).toMatchObject({ params: { inputId: "i" } })
    const [paused] = step(start()[0], { type: "schedule.pause", at: t0 + 1 })
    const [alsoCanceled, quiet] = step(paused, { type: "schedule.cancel", at: t0 + 2 })
    expect(alsoCanceled.value).toBe("canceled")
    expect(typesOf(quiet)).toEqual(["xstate.cancel", "schedule.record"])
    // Finished: nothing more is accepted (the doors answer schedule_finished, or 200 for cancel).
    expect(step(canceled, { type: "schedule.cancel", at: t0 + 3 })[1]).toEqual([])
  })

  it("Schedule: active --one-time clock dispatched--> completed", () => {
    const [active] = start(once)
    const [completed, actions] = step(active, due(active, t0 + minute, null))
    expect(completed.value).toBe("completed")
    expect(typesOf(actions)).toEqual(["schedule.dispatch", "schedule.record"])
    expect(actions[0]).toMatchObject({ params: { childId: "child-1", inputId: "input-1", scheduledFor: t0 + minute } })
    expect(recorded(actions)).toMatchObject({ status: "completed", nextRunAt: null, lastInputId: "input-1" })
    // Every verb and edit is refused once completed.
    for (const event of [
      { type: "schedule.pause", at: t0 + minute },
      { type: "schedule.resume", at: t0 + minute, nextRunAt: null },
      { type: "schedule.cancel", at: t0 + minute },
      { type: "schedule.run", at: t0 + minute, childId: "c", inputId: "i" },
      { type: "schedule.edit", at: t0 + minute, lockVersion: completed.context.lockVersion, changes: {} }
    ] as const) {
      const [after, refused] = step(completed, event as Event)
      expect([after.value, typesOf(refused)], event.type).toEqual(["completed", []])
    }
  })

  it("a completed one-time schedule whose last dispatch opened nothing names why and no input", () => {
    const [active] = start(once)
    const [completed] = step(active, due(active, t0 + minute, null))
    const [after, actions] = step(completed, {
      type: "execution.settled",
      inputId: "input-1",
      status: "failed",
      errorCode: "conversation_archived"
    })
    expect([after.value, after.status]).toEqual(["ended", "done"])
    expect(recorded(actions)).toMatchObject({
      status: "completed",
      lastErrorCode: "conversation_archived",
      lastInputId: null,
      nextRunAt: null,
      lockVersion: completed.context.lockVersion + 1
    })
  })

  it("a completed one-time schedule ends when its last execution settles, recording nothing more", () => {
    const [active] = start(once)
    const [completed] = step(active, due(active, t0 + minute, null))
    expect(completed.status).toBe("active")
    const [stranger, ignored] = step(completed, { type: "execution.settled", inputId: "other", status: "completed" })
    expect([stranger.value, ignored]).toEqual(["completed", []])
    const [after, actions] = step(completed, { type: "execution.settled", inputId: "input-1", status: "completed" })
    expect([after.value, after.status, actions]).toEqual(["ended", "done", []])
  })

  it("Schedule: active or paused --run, no unfinished execution--> unchanged: one child started now", () => {
    for (const [snapshot, status] of [
      [start()[0], "active"],
      [step(start()[0], { type: "schedule.pause", at: t0 })[0], "paused"]
    ] as const) {
      const [after, actions] = step(snapshot, { type: "schedule.run", at: t0 + 5, childId: "c", inputId: "i" })
      expect(after.value).toBe(status)
      expect(typesOf(actions)).toEqual(["schedule.dispatch", "schedule.record"])
      expect(recorded(actions)).toMatchObject({ status, nextRunAt: snapshot.context.nextRunAt, lastEnqueuedAt: t0 + 5 })
      // An unfinished execution refuses the next run.
      const [, refused] = step(after, { type: "schedule.run", at: t0 + 6, childId: "c2", inputId: "i2" })
      expect(refused).toMatchObject([{ type: "schedule.refuse", params: { reason: "execution_in_progress" } }])
    }
  })

  it("an occurrence dispatches and moves the clock; while one is unfinished it is skipped with execution_in_progress", () => {
    const [active] = start()
    const [first, actions] = step(active, due(active, t0 + minute, t0 + 2 * minute))
    expect(typesOf(actions)).toEqual(["schedule.dispatch", "xstate.raise", "schedule.record"])
    expect(actions[1]).toMatchObject({ params: { delay: minute, event: { due: t0 + 2 * minute } } })
    const [skipped, skip] = step(first, due(first, t0 + 2 * minute, t0 + 3 * minute, 2))
    expect(typesOf(skip)).toEqual(["xstate.raise", "schedule.record"])
    expect(recorded(skip)).toMatchObject({ lastErrorCode: "execution_in_progress", nextRunAt: t0 + 3 * minute })
    const [settled] = step(skipped, { type: "execution.settled", inputId: "input-1", status: "completed" })
    const [next, dispatched] = step(settled, due(settled, t0 + 3 * minute, t0 + 4 * minute, 3))
    expect(typesOf(dispatched)).toEqual(["schedule.dispatch", "xstate.raise", "schedule.record"])
    expect(recorded(dispatched)).toMatchObject({ lastErrorCode: null, lockVersion: 3 })
    expect(next.context.unfinished).toBe("input-3")
  })

  it("a dispatch that could not open its child ends the execution, names why and no input it never created", () => {
    const [ran] = step(start()[0], { type: "schedule.run", at: t0, childId: "c", inputId: "i" })
    const [after, actions] = step(ran, {
      type: "execution.settled",
      inputId: "i",
      status: "failed",
      errorCode: "conversation_archived"
    })
    expect(after.context.unfinished).toBeNull()
    expect(recorded(actions)).toMatchObject({
      lastErrorCode: "conversation_archived",
      lastInputId: null,
      lockVersion: ran.context.lockVersion + 1
    })
  })

  it("an edit is fenced by lock_version; a new rule re-dates the clock of an active schedule", () => {
    const [active] = start()
    const [, stale] = step(active, { type: "schedule.edit", at: t0, lockVersion: 4, changes: { name: "x" } })
    expect(stale).toMatchObject([{ type: "schedule.refuse", params: { reason: "stale_object" } }])
    const rule = { kind: "interval", every_seconds: 120, starts_at: new Date(t0).toISOString() }
    const [edited, actions] = step(active, {
      type: "schedule.edit",
      at: t0 + 1,
      lockVersion: 0,
      changes: { rule },
      rule,
      nextRunAt: t0 + 2 * minute
    })
    expect(edited.context).toMatchObject({ rule, nextRunAt: t0 + 2 * minute, lockVersion: 1 })
    expect(typesOf(actions)).toEqual(["xstate.raise", "schedule.record"])
    expect(recorded(actions)).toMatchObject({ changes: { rule } })
  })
})
