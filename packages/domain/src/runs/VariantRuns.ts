// What a run-backed variant shows of its run (supplement conversations.md "Turns and variants";
// runs supplement "runner_effects"): the run's mainline rounds, in authoring order, and its
// runner_effects. Pure over the run's task rows.
import type { TaskStatus, Visibility } from "@troupe/machines/run/context"
import type { TaskRow } from "@troupe/storage/repositories/Runs"
import { isObject } from "../kernel/Json.ts"
import { bytesOf, inAuthoringOrder, outputOf, previewOf, resultOf, visibilityOf } from "./Projections.ts"
import { type RunnerEffectsView, runnerEffectsOf } from "./Trace.ts"

/** A mainline round as a variant lists it. */
export interface VariantRoundView {
  readonly task_key: string
  readonly status: TaskStatus
  readonly visibility: Visibility
  readonly text_preview?: string
  readonly text_bytes?: number
  readonly usage?: Readonly<Record<string, unknown>>
  readonly started_at?: Date
  readonly completed_at?: Date
}

export interface VariantRunView {
  readonly rounds: ReadonlyArray<VariantRoundView>
  readonly runner_effects: RunnerEffectsView
}

/** A run-backed variant's blocks, keyed by its run's public id. */
export type VariantRuns = ReadonlyMap<string, VariantRunView>

const roundOf = (round: TaskRow): VariantRoundView => {
  const result = resultOf(round)
  const text = result === undefined ? undefined : outputOf(result)
  return {
    task_key: round.key,
    status: round.status,
    visibility: visibilityOf(round),
    ...(text === undefined ? {} : { text_preview: previewOf(text), text_bytes: bytesOf(text) }),
    ...(isObject(round.usage) ? { usage: round.usage } : {}),
    ...(round.started_at === null ? {} : { started_at: round.started_at }),
    ...(round.completed_at === null ? {} : { completed_at: round.completed_at })
  }
}

/** The blocks of every run named by `tasks` (each row carrying its run's public id). */
export const variantRunsOf = (tasks: ReadonlyArray<TaskRow & { readonly run_public_id: string }>): VariantRuns => {
  const byRun = Map.groupBy(tasks, (task) => task.run_public_id)
  return new Map(
    [...byRun].map(([runPublicId, rows]) => {
      const ordered = inAuthoringOrder(rows)
      return [
        runPublicId,
        {
          rounds: ordered.filter((task) => task.kind === "model_task" && task.mainline).map(roundOf),
          runner_effects: runnerEffectsOf({ public_id: runPublicId }, ordered)
        }
      ] as const
    })
  )
}
