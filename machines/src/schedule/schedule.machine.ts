// A schedule (spec "States and transitions", rows "Schedule"; supplement "Schedules"):
//   active --pause--> paused (future occurrences only; the timer is canceled)
//   paused --resume, not an expired one-time--> active (the next future occurrence, dated by the domain)
//   active|paused --cancel--> canceled (a still-queued last child input is withdrawn)
//   active --one-time clock dispatched--> completed (a dispatch that opened nothing is still
//     recorded there: last_error_code, no last input) --its last execution settled--> ended (final)
//   active|paused --run, no unfinished execution--> unchanged (one child started now; the clock unchanged)
//   active --an occurrence comes due--> active (one child, or skipped with execution_in_progress
//     while one is unfinished; the clock moves to the next occurrence)
//   active|paused --edit, lock_version matches--> the same state (a new rule re-dates the clock)
// Every accepted change and each dispatch advances lock_version. The instants come in events.
import { and, not, setup } from "xstate"
import type { ScheduleContext, ScheduleInput } from "./context.ts"
import {
  type DispatchParams,
  scheduleEffects as fx,
  type RecordParams,
  type RefuseParams,
  type ScheduleStatus,
  type WithdrawParams
} from "./effects.ts"
import type { ScheduleEvent } from "./events.ts"

type EventOf<T extends ScheduleEvent["type"]> = Extract<ScheduleEvent, { type: T }>

type Request =
  | { readonly type: typeof fx.record; readonly params: RecordParams }
  | { readonly type: typeof fx.dispatch; readonly params: DispatchParams }
  | { readonly type: typeof fx.withdraw; readonly params: WithdrawParams }
  | { readonly type: typeof fx.refuse; readonly params: RefuseParams }

/** The timer of the next occurrence. */
export const nextTimer = "next"

interface Draft {
  context: { -readonly [K in keyof ScheduleContext]: ScheduleContext[K] }
  request(action: Request): void
  /** Sets the timer of `context.nextRunAt` from `at` (or cancels it when there is none). */
  clock(at: number): void
}

/** A timer's event as the binding stamped it (every member present), else undefined. */
const stamped = (event: EventOf<"schedule.due">) => {
  const { at, scheduledFor, nextRunAt, childId, inputId } = event
  return at === undefined ||
    scheduledFor === undefined ||
    nextRunAt === undefined ||
    childId === undefined ||
    inputId === undefined
    ? undefined
    : { at, scheduledFor, nextRunAt, childId, inputId }
}

const scheduleSetup = setup({
  types: { context: {} as ScheduleContext, input: {} as ScheduleInput, events: {} as ScheduleEvent },
  actions: {
    [fx.record]: (_, _params: RecordParams) => {},
    [fx.dispatch]: (_, _params: DispatchParams) => {},
    [fx.withdraw]: (_, _params: WithdrawParams) => {},
    [fx.refuse]: (_, _params: RefuseParams) => {}
  },
  guards: {
    /** The timer was set for the occurrence the schedule waits for (else it is stale). */
    current: ({ context, event }) =>
      event.type === "schedule.due" && event.due === context.nextRunAt && stamped(event) !== undefined,
    /** A one-time schedule's last occurrence: nothing follows it. */
    last: ({ event }) => event.type === "schedule.due" && event.nextRunAt === null,
    busy: ({ context }) => context.unfinished !== null,
    stale: ({ context, event }) => event.type === "schedule.edit" && event.lockVersion !== context.lockVersion,
    /** A resume with no future occurrence: a one-time rule whose run_at has passed. */
    expired: ({ event }) => event.type === "schedule.resume" && event.nextRunAt === null,
    settles: ({ context, event }) => event.type === "execution.settled" && event.inputId === context.unfinished
  }
})

const record = (draft: Draft, status: ScheduleStatus, changes?: Readonly<Record<string, unknown>>) => {
  const { context } = draft
  draft.request({
    type: fx.record,
    params: {
      status,
      nextRunAt: context.nextRunAt,
      lockVersion: context.lockVersion,
      lastErrorCode: context.lastErrorCode,
      lastEnqueuedAt: context.lastEnqueuedAt,
      lastInputId: context.lastInputId,
      ...(changes === undefined ? {} : { changes })
    }
  })
}

/** One execution now: its child and first input (ids minted by the shell). */
const dispatch = (draft: Draft, event: { childId: string; inputId: string; at: number }, scheduledFor: number) => {
  const { context } = draft
  draft.request({
    type: fx.dispatch,
    params: { childId: event.childId, inputId: event.inputId, scheduledFor, at: event.at }
  })
  context.unfinished = event.inputId
  context.lastEnqueuedAt = event.at
  context.lastInputId = event.inputId
  context.lastErrorCode = null
}

/** The transition's actions: `work` on a draft of the context, then what it asked, in order. */
const step = <T extends ScheduleEvent["type"]>(work: (draft: Draft, event: EventOf<T>) => void) =>
  scheduleSetup.enqueueActions(({ context, event, enqueue }) => {
    const draft: Draft = {
      context: { ...context },
      request: (action) => enqueue(action as never),
      clock: (at) => {
        const next = draft.context.nextRunAt
        if (next === null) enqueue.cancel(nextTimer)
        else
          enqueue.raise({ type: "schedule.due", due: next, rule: draft.context.rule } as never, {
            id: nextTimer,
            delay: Math.max(0, next - at)
          })
      }
    }
    work(draft, event as EventOf<T>)
    enqueue.assign(draft.context)
  })

const refuse = (reason: RefuseParams["reason"]) =>
  step((draft) => draft.request({ type: fx.refuse, params: { reason } }))

/** An occurrence came due: dispatched, or skipped while an execution is unfinished; then the next. */
const occur = (status: ScheduleStatus) =>
  step<"schedule.due">((draft, due) => {
    const event = stamped(due)!
    const { context } = draft
    context.lockVersion += 1
    if (context.unfinished === null) dispatch(draft, event, event.scheduledFor)
    else context.lastErrorCode = "execution_in_progress"
    context.nextRunAt = event.nextRunAt
    if (status === "active") draft.clock(event.at)
    record(draft, status)
  })

const runNow = (status: ScheduleStatus) =>
  step<"schedule.run">((draft, event) => {
    draft.context.lockVersion += 1
    dispatch(draft, event, event.at)
    record(draft, status)
  })

const edit = (status: ScheduleStatus) =>
  step<"schedule.edit">((draft, event) => {
    const { context } = draft
    context.lockVersion += 1
    if (event.rule !== undefined) {
      context.rule = event.rule
      if (status === "active" && event.nextRunAt !== undefined) {
        context.nextRunAt = event.nextRunAt
        draft.clock(event.at)
      }
    }
    record(draft, status, event.changes)
  })

const settle = (status: ScheduleStatus) =>
  step<"execution.settled">((draft, event) => {
    const { context } = draft
    context.unfinished = null
    if (event.errorCode === undefined) return
    // Nothing was opened: the projection names why, and no input it never created.
    context.lockVersion += 1
    context.lastErrorCode = event.errorCode
    if (context.lastInputId === event.inputId) context.lastInputId = null
    record(draft, status)
  })

const cancel = step<"schedule.cancel">((draft) => {
  const { context } = draft
  if (context.unfinished !== null) draft.request({ type: fx.withdraw, params: { inputId: context.unfinished } })
  context.lockVersion += 1
  context.nextRunAt = null
  draft.clock(0)
  record(draft, "canceled")
})

/** What both live states accept alike. */
const live = (status: ScheduleStatus) => ({
  "schedule.run": [{ guard: "busy" as const, actions: refuse("execution_in_progress") }, { actions: runNow(status) }],
  "schedule.edit": [{ guard: "stale" as const, actions: refuse("stale_object") }, { actions: edit(status) }],
  "schedule.cancel": { target: "canceled", actions: cancel },
  "execution.settled": { guard: "settles" as const, actions: settle(status) }
})

export const scheduleMachine = scheduleSetup.createMachine({
  id: "schedule",
  context: ({ input }) => ({
    rule: input.rule,
    nextRunAt: input.nextRunAt,
    lockVersion: 0,
    unfinished: null,
    lastErrorCode: null,
    lastEnqueuedAt: null,
    lastInputId: null
  }),
  // The first occurrence's timer, from the creation instant the input carries.
  entry: scheduleSetup.enqueueActions(({ context, event, enqueue }) => {
    const { at } = (event as unknown as { input: ScheduleInput }).input
    enqueue.raise({ type: "schedule.due", due: context.nextRunAt, rule: context.rule } as never, {
      id: nextTimer,
      delay: Math.max(0, (context.nextRunAt ?? at) - at)
    })
  }),
  initial: "active",
  states: {
    active: {
      meta: { waitsOn: "its clock (the next occurrence's timer)" },
      on: {
        ...live("active"),
        "schedule.due": [
          { guard: and(["current", "last"]), target: "completed", actions: occur("completed") },
          { guard: "current", actions: occur("active") }
        ],
        "schedule.pause": {
          target: "paused",
          actions: step((draft) => {
            draft.context.lockVersion += 1
            draft.context.nextRunAt = null
            draft.clock(0)
            record(draft, "paused")
          })
        }
      }
    },
    paused: {
      meta: { waitsOn: "a member (resume, run, edit or cancel)" },
      on: {
        ...live("paused"),
        "schedule.resume": [
          { guard: "expired", actions: refuse("run_at_passed") },
          {
            target: "active",
            actions: step<"schedule.resume">((draft, event) => {
              draft.context.lockVersion += 1
              draft.context.nextRunAt = event.nextRunAt
              draft.clock(event.at)
              record(draft, "active")
            })
          }
        ]
      }
    },
    canceled: { type: "final" },
    // Until its last execution settles: the dispatch may still report that it opened nothing, which
    // the projection names (last_error_code, no last input); every verb and edit is refused here.
    completed: {
      meta: { waitsOn: "its last execution's settlement (nothing else changes it)" },
      always: { guard: not("busy"), target: "ended" },
      on: { "execution.settled": { guard: "settles", target: "ended", actions: settle("completed") } }
    },
    // Completed, with nothing left to hear.
    ended: { type: "final" }
  }
})

export const scheduleVersion = 1
