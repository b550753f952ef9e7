// A run's phases (runs supplement "Run resource and projections"): one per top-level step of every
// envelope in write order with the rows that step grew, the tasks models delegated, and the spend
// of every usage block on the run's tasks. Pure.
import type { TaskStatus } from "@troupe/machines/run/context"
import { isSettled } from "@troupe/machines/run/rules/graph"
import type { TaskRow } from "@troupe/storage/repositories/Runs"
import { isObject } from "../kernel/Json.ts"
import { type UsageBlock, usageSummary } from "../models/Usage.ts"
import {
  dateOf,
  delegationsOf,
  factsOf,
  inAuthoringOrder,
  isOpenAsk,
  isResolved,
  type TaskFactsByKey
} from "./Projections.ts"

export type PhaseStatus = "waiting" | "running" | "awaiting_human" | "needs_approval" | "completed" | "failed"

export interface PhaseView {
  /** The step's key; a fan's authored member keys joined ` · `. */
  readonly label: string
  readonly keys: ReadonlyArray<string>
  /** Settled tasks of the phase. */
  readonly done: number
  readonly total: number
  readonly status: PhaseStatus
}

export interface BackgroundView {
  readonly key: string
  readonly status: TaskStatus
  readonly result_delivered_at?: Date
}

export type SpendTotals = {
  readonly input_tokens: number
  readonly output_tokens: number
  readonly cache_read_tokens: number
  /** Null unless every priced receipt agrees on the unit. */
  readonly cost_amount: string | null
  readonly cost_unit: string | null
}

export type SpendView = SpendTotals & {
  readonly cache_hit_rate?: number
  readonly by_model: Readonly<Record<string, SpendTotals>>
}

export interface RunPhasesView {
  readonly phases: ReadonlyArray<PhaseView>
  /** The label of the first phase not completed, else null. */
  readonly current: string | null
  readonly background: ReadonlyArray<BackgroundView>
  readonly spend: SpendView
}

/**
 * Judged in this order: a parked approval, an open ask, live work; then a failure nothing
 * resolved (a won race excuses its losers); all settled is completed, none started waiting.
 */
const statusOf = (tasks: ReadonlyArray<TaskRow>): PhaseStatus => {
  if (tasks.some((task) => task.status === "needs_approval")) return "needs_approval"
  if (tasks.some(isOpenAsk)) return "awaiting_human"
  if (tasks.some((task) => task.status === "running" || task.status === "dispatched")) return "running"
  const raceWon = tasks.some((task) => task.kind === "join_task" && task.status === "completed")
  if (!raceWon && tasks.some((task) => isSettled(task.status) && !isResolved(task))) return "failed"
  if (tasks.every((task) => isSettled(task.status))) return "completed"
  return tasks.some((task) => isSettled(task.status)) ? "running" : "waiting"
}

const phasesOfTasks = (tasks: ReadonlyArray<TaskRow>, specs: TaskFactsByKey): ReadonlyArray<PhaseView> => {
  const steps = new Map<string, Array<TaskRow>>()
  for (const task of tasks) {
    const facts = factsOf(task, specs)
    const step = `${facts.revision}:${facts.step}`
    steps.set(step, [...(steps.get(step) ?? []), task])
  }
  return [...steps.values()].map((members) => {
    const authored = members.filter((task) => task.origin === "author")
    return {
      label: (authored.length === 0 ? members : authored).map((task) => task.key).join(" · "),
      keys: members.map((task) => task.key),
      done: members.filter((task) => isSettled(task.status)).length,
      total: members.length,
      status: statusOf(members)
    }
  })
}

const backgroundOf = (tasks: ReadonlyArray<TaskRow>, specs: TaskFactsByKey): ReadonlyArray<BackgroundView> => {
  const delegated = new Set([...delegationsOf(tasks).values()].flat())
  const startedAt = (task: TaskRow) => task.started_at?.getTime() ?? Number.POSITIVE_INFINITY
  return tasks
    .filter((task) => delegated.has(task.key))
    .toSorted((a, b) => startedAt(a) - startedAt(b) || a.position - b.position)
    .map((task) => {
      const delivered = dateOf(factsOf(task, specs).resultDeliveredAt)
      return {
        key: task.key,
        status: task.status,
        ...(delivered === undefined ? {} : { result_delivered_at: delivered })
      }
    })
}

const count = (value: unknown) => (typeof value === "number" && Number.isFinite(value) ? value : 0)

/** A stored usage block read back with the members spend sums (absent ones count zero). */
const blockOf = (usage: Readonly<Record<string, unknown>>): UsageBlock => {
  const input = count(usage.input_tokens)
  const cacheRead = count(usage.cache_read_tokens)
  const output = count(usage.output_tokens)
  return {
    usage_record_public_id: typeof usage.usage_record_public_id === "string" ? usage.usage_record_public_id : "",
    input_tokens: input,
    cache_read_tokens: cacheRead,
    uncached_input_tokens: input - cacheRead,
    cache_creation_tokens: count(usage.cache_creation_tokens),
    output_tokens: output,
    reasoning_tokens: count(usage.reasoning_tokens),
    total_tokens: input + output,
    cost_amount: typeof usage.cost_amount === "string" ? usage.cost_amount : "0",
    cost_unit: typeof usage.cost_unit === "string" ? usage.cost_unit : null,
    cost_complete: usage.cost_complete === true
  }
}

const totalsOf = (blocks: ReadonlyArray<UsageBlock>) => {
  const tokens = usageSummary(blocks.length, blocks, null)
  const priced = blocks.filter((block) => block.cost_complete)
  const units = new Set(priced.map((block) => block.cost_unit))
  const agreed = units.size <= 1
  const totals: SpendTotals = {
    input_tokens: tokens.input_tokens,
    output_tokens: tokens.output_tokens,
    cache_read_tokens: tokens.cache_read_tokens,
    cost_amount: agreed ? usageSummary(priced.length, priced, null).cost_amount : null,
    cost_unit: agreed ? (priced[0]?.cost_unit ?? null) : null
  }
  return { totals, cacheHitRate: tokens.cache_hit_rate }
}

/** The model a usage block billed: the block's own, else the task's frozen ref. */
const modelRefOf = (task: TaskRow, usage: Readonly<Record<string, unknown>>, specs: TaskFactsByKey) => {
  if (typeof usage.model === "string") return usage.model
  const spec = isObject(task.spec) ? task.spec : {}
  const written = isObject(spec.model) ? spec.model.model : spec.model
  return factsOf(task, specs).model?.model ?? (typeof written === "string" ? written : "unknown")
}

const spendOf = (tasks: ReadonlyArray<TaskRow>, specs: TaskFactsByKey): SpendView => {
  const billed = tasks.flatMap((task) =>
    isObject(task.usage) ? [{ ref: modelRefOf(task, task.usage, specs), block: blockOf(task.usage) }] : []
  )
  const { totals, cacheHitRate } = totalsOf(billed.map(({ block }) => block))
  const refs = [...new Set(billed.map(({ ref }) => ref))].toSorted()
  return {
    ...totals,
    ...(cacheHitRate === undefined ? {} : { cache_hit_rate: cacheHitRate }),
    by_model: Object.fromEntries(
      refs.map((ref) => [ref, totalsOf(billed.filter((each) => each.ref === ref).map(({ block }) => block)).totals])
    )
  }
}

/** `GET …/runs/{id}/phases`. */
export const phasesOf = (tasks: ReadonlyArray<TaskRow>, specs: TaskFactsByKey): RunPhasesView => {
  const ordered = inAuthoringOrder(tasks)
  const phases = phasesOfTasks(ordered, specs)
  return {
    phases,
    current: phases.find((phase) => phase.status !== "completed")?.label ?? null,
    background: backgroundOf(ordered, specs),
    spend: spendOf(ordered, specs)
  }
}
