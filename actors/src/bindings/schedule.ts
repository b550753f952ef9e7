// The schedule binding, the only writer of a schedule's row after its insertion at creation: its
// projection, an edit's members, and the executions it dispatches. What an execution is made of
// (the child conversation, its first input) and the rule's arithmetic are the domain's
// (`ScheduleWork`, given when the server assembles its bindings): this binding knows rows. The
// timer's event is stamped here with the step's instant, the occurrence it stands for, the next
// one, and the ids its execution takes.
import { machines } from "@troupe/machines/registry"
import { type DispatchParams, scheduleEffects as fx } from "@troupe/machines/schedule/effects"
import { newPublicId } from "@troupe/storage/Ids"
import { SchedulesRepository } from "@troupe/storage/repositories/Schedules"
import { Effect } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import { type ActorEvent, defineActor, TransactionalActors, Veto } from "../Binding.ts"

/** The domain's side of a schedule's work. */
export interface ScheduleWork {
  /**
   * Dates an occurrence that came due at `at`: the latest occurrence at or before it (missed ones
   * coalesce into it) and the first after it (null: none follows).
   */
  readonly occurrences: (
    rule: unknown,
    at: number
  ) => { readonly scheduledFor: number; readonly nextRunAt: number | null }
  /**
   * Opens an execution of the schedule: its child conversation (row and actor), its first input
   * (told to the child) and the execution row. Answers the code of the reason it could not, if so.
   */
  readonly dispatch: (
    schedulePublicId: string,
    params: DispatchParams
  ) => Effect.Effect<string | undefined, SqlError, SqlClient | TransactionalActors>
}

const dateOf = (millis: number | null) => (millis === null ? null : new Date(millis))

/** A timer's event dated now: the occurrence it stands for, the next one, and the execution's ids. */
const stampDue = (work: ScheduleWork, event: ActorEvent, now: Date): ActorEvent => {
  if (event.type !== "schedule.due" || "at" in event) return event
  const at = now.getTime()
  const { scheduledFor, nextRunAt } = work.occurrences(event.rule, at)
  return {
    ...event,
    at,
    scheduledFor: Math.max(scheduledFor, Number(event.due)),
    nextRunAt,
    childId: newPublicId(),
    inputId: newPublicId()
  }
}

export const scheduleActor = (work: ScheduleWork) =>
  defineActor({
    kind: "schedule",
    entry: machines.schedule,
    resourceType: "schedule",
    stream: (actorId) => `schedule:${actorId}`,
    stamp: (event, now) => stampDue(work, event, now),
    rows: {
      [fx.refuse]: (params) => Effect.fail(new Veto({ reason: params.reason })),
      [fx.record]: (params, step) =>
        Effect.gen(function* () {
          const schedules = yield* SchedulesRepository.make
          if (params.changes !== undefined) yield* schedules.applyChanges(step.actorId, params.changes)
          yield* schedules.setProjection(step.actorId, {
            status: params.status,
            nextRunAt: dateOf(params.nextRunAt),
            lockVersion: params.lockVersion,
            lastErrorCode: params.lastErrorCode,
            lastEnqueuedAt: dateOf(params.lastEnqueuedAt),
            lastInputPublicId: params.lastInputId,
            now: step.now
          })
        }),
      [fx.dispatch]: (params, step) =>
        Effect.gen(function* () {
          const refused = yield* work.dispatch(step.actorId, params)
          if (refused === undefined) return
          // Nothing was opened: the execution ends at once, failed, and the schedule names why; a
          // schedule whose conversation is gone (tombstoned or reaped) is canceled.
          const actors = yield* TransactionalActors
          const self = { kind: "schedule", actorId: step.actorId }
          yield* actors.reply(self, {
            type: "execution.settled",
            inputId: params.inputId,
            status: "failed",
            errorCode: refused
          })
          if (refused === "not_found") yield* actors.reply(self, { type: "schedule.cancel", at: step.now.getTime() })
        }),
      [fx.withdraw]: (params, step) =>
        Effect.gen(function* () {
          const schedules = yield* SchedulesRepository.make
          const withdrawn = yield* schedules.withdrawExecution({ inputPublicId: params.inputId, now: step.now })
          if (withdrawn === undefined) return
          // Told after the acceptance it follows: the child deletes the row once it has it.
          const actors = yield* TransactionalActors
          yield* actors.reply(
            { kind: "conversation", actorId: withdrawn.conversation_public_id },
            { type: "input.delete", inputId: params.inputId }
          )
        })
    },
    jobs: {}
  })

export type ScheduleActor = ReturnType<typeof scheduleActor>
