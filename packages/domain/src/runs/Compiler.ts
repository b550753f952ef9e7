// The run step compiler (runs supplement "Create and the step compiler", "Append"): one envelope
// of authored steps into the tasks the run actor starts from, wired by their written order, with
// the receipt's mirror of the request. Pure: the world arrives as lookups; it mints no tokens and
// writes nothing. Pass one (reading each step) is CompilerParse.ts; this is pass two (waits).
import type { CompiledTaskSpec, TaskKind } from "@troupe/machines/run/context"
import { Result } from "effect"
import { Invalid, StateConflict } from "../kernel/Refusals.ts"
import { type FanNode, type Fault, parseSteps, type SeqNode, type StepNode } from "./CompilerParse.ts"
import { InvalidSteps, type StepFault } from "./CompilerRefusals.ts"
import { canonicalBytes, type Leaf, type ParseContext, type Ref, type StepLookups } from "./CompilerVerbs.ts"
import { judgeShell, type RunShell, type ShellLookups, type ShellRefusal } from "./StepShell.ts"

export { isTaskKey } from "./CompilerParse.ts"
export { canonicalBytes, limits, type StepLookups } from "./CompilerVerbs.ts"

/** A task the run already has, as the compiler needs it (a TaskSpec fits). */
export interface ExistingTask {
  readonly key: string
  readonly kind: TaskKind
  readonly mainline: boolean
}

/** One envelope's setting: a create is revision 1 with nothing before it. */
export interface Envelope extends ParseContext {
  /** The run's tasks so far, in authoring order. */
  readonly existing: ReadonlyArray<ExistingTask>
  /** The run's deliverable the envelope's first step waits on (null on create). */
  readonly currentDeliverable: string | null
}

/** The members a task's row keeps for the task read (`prompt`, `tool_input`, `timeout_ms` ...). */
export type TaskRow = Readonly<Record<string, unknown>>

export interface CompiledSteps {
  /** Every task the envelope adds, in authoring order (a race's join after its members). */
  readonly tasks: ReadonlyArray<CompiledTaskSpec>
  /** The envelope's last top-level step (a race: its join task). */
  readonly deliverable: string
  /** The request's steps mirrored with every key filled in (a race carries its join key). */
  readonly receiptSteps: ReadonlyArray<unknown>
  /** Authored asks: each gets a resolution token once compiled. */
  readonly askKeys: ReadonlyArray<string>
  /** Each task's row members by key (join tasks: {}). */
  readonly rows: ReadonlyMap<string, TaskRow>
}

export type StepsRefusal = InvalidSteps | Invalid | StateConflict

/** The whole step tree's canonical bound. */
export const stepsPayloadBytes = 1_000_000

const unique = (keys: ReadonlyArray<string>): Array<string> => [...new Set(keys)]

interface Draft {
  readonly node: Leaf | FanNode
  readonly key: string
  readonly structural: ReadonlyArray<string>
  /** Keys named by `after` and `results` that hold. */
  readonly named: ReadonlyArray<string>
  /** What a model reads (`results`), or a wait's target in this run. */
  readonly results: ReadonlyArray<string>
  readonly continues: string | null
}

/**
 * Compiles one envelope's steps. Refusals, in the supplement's order: 422 steps_payload_too_large
 * (the tree over 1,000,000 canonical bytes), 422 invalid_steps (every fault), 409 duplicate_task_key.
 */
export const compileSteps = (steps: unknown, envelope: Envelope): Result.Result<CompiledSteps, StepsRefusal> => {
  if (canonicalBytes(steps) > stepsPayloadBytes) {
    return Result.fail(
      new Invalid({ code: "steps_payload_too_large", message: "steps are over 1,000,000 bytes of canonical JSON" })
    )
  }
  if (!Array.isArray(steps) || steps.length === 0)
    return Result.fail(invalidSteps([{ code: "steps_required", path: "steps" }]))
  const parsed = parseSteps(steps, envelope)
  const faults: Array<Fault> = [...parsed.faults]
  const existing = new Set(envelope.existing.map((task) => task.key))
  const placed = new Set<string>()
  const drafts: Array<Draft> = []
  const pendingWaits: Array<{ readonly wait: Leaf; readonly target: Ref }> = []
  let mainline = envelope.existing.findLast((task) => task.kind === "model_task" && task.mainline)?.key ?? null

  /** Keys a task names: each must be placed before it (here or in an earlier envelope), once. */
  const judged = (leaf: Leaf, refs: ReadonlyArray<Ref>): Array<string> => {
    const seen = new Set<string>()
    return refs.flatMap((ref) => {
      const holds = !seen.has(ref.key) && ref.key !== leaf.key && (existing.has(ref.key) || placed.has(ref.key))
      seen.add(ref.key)
      if (holds) return [ref.key]
      faults.push({ code: "invalid_reference", path: ref.path, order: leaf.order })
      return []
    })
  }

  const placeLeaf = (leaf: Leaf, prev: ReadonlyArray<string>): ReadonlyArray<string> => {
    const after = judged(leaf, leaf.after)
    let results: ReadonlyArray<string> = []
    if (leaf.verb === "model") {
      results = judged(leaf, leaf.results)
    } else if (leaf.verb === "wait" && leaf.target !== null) {
      const target = leaf.target
      if (target.key !== leaf.key && (existing.has(target.key) || placed.has(target.key))) results = [target.key]
      else pendingWaits.push({ wait: leaf, target })
    }
    let continues: string | null = null
    if (leaf.verb === "model" && leaf.topLevel) {
      continues = mainline
      mainline = leaf.key
    }
    const named = unique([...after, ...(leaf.verb === "model" ? results : [])])
    drafts.push({ node: leaf, key: leaf.key, structural: prev, named, results, continues })
    placed.add(leaf.key)
    return [leaf.key]
  }

  const placeFan = (fan: FanNode, prev: ReadonlyArray<string>): ReadonlyArray<string> => {
    const tips = unique(fan.members.flatMap((member) => place(member, prev)))
    if (fan.race === null) return tips
    drafts.push({ node: fan, key: fan.race.key, structural: tips, named: [], results: [], continues: null })
    placed.add(fan.race.key)
    return [fan.race.key]
  }

  /** Places a step after `prev` and answers its tips: what a follower waits on. */
  const place = (node: StepNode | SeqNode, prev: ReadonlyArray<string>): ReadonlyArray<string> => {
    if (node === null) return prev
    switch (node.type) {
      case "leaf":
        return placeLeaf(node, prev)
      case "fan":
        return placeFan(node, prev)
      case "seq":
        return node.items.reduce<ReadonlyArray<string>>((tips, item) => place(item, tips), prev)
    }
  }

  parsed.top.reduce<ReadonlyArray<string>>(
    (tips, node) => place(node, tips),
    envelope.currentDeliverable === null ? [] : [envelope.currentDeliverable]
  )

  for (const { wait, target } of pendingWaits) {
    const code =
      target.key === wait.key || dependsOn(drafts, target.key, wait.key) ? "wait_cycle" : "wait_target_not_found"
    faults.push({ code, path: target.path, order: wait.order })
  }

  const last = parsed.top.at(-1)
  let deliverable = ""
  if (last?.type === "leaf") deliverable = last.key
  else if (last?.type === "fan" && last.race !== null) deliverable = last.race.key
  else if (last?.type === "fan")
    faults.push({ code: "fan_needs_follower", path: `${last.path}.parallel`, order: last.order })

  if (faults.length > 0) {
    return Result.fail(
      invalidSteps(faults.toSorted((a, b) => a.order - b.order).map(({ code, path }) => ({ code, path })))
    )
  }

  const keys = new Set<string>()
  for (const { key } of drafts) {
    if (keys.has(key) || existing.has(key)) {
      return Result.fail(
        new StateConflict({ code: "duplicate_task_key", message: `The run already has a task ${key}` })
      )
    }
    keys.add(key)
  }

  return Result.succeed({
    tasks: drafts.map((draft) => taskOf(draft, envelope.revision)),
    deliverable,
    receiptSteps: parsed.mirrors,
    askKeys: drafts.flatMap(({ node, key }) => (node.type === "leaf" && node.verb === "ask" ? [key] : [])),
    rows: new Map(drafts.map(({ node, key }) => [key, node.type === "leaf" ? node.row : {}]))
  })
}

const invalidSteps = (steps: ReadonlyArray<StepFault>) =>
  new InvalidSteps({ code: "invalid_steps", message: "The steps do not compile", steps })

/** Whether `key` waits (through any chain of waits) on `on`. */
const dependsOn = (drafts: ReadonlyArray<Draft>, key: string, on: string): boolean => {
  const waits = new Map(drafts.map((draft) => [draft.key, [...draft.structural, ...draft.named]]))
  const seen = new Set<string>()
  const open = [key]
  for (let next = open.pop(); next !== undefined; next = open.pop()) {
    if (next === on) return true
    if (seen.has(next)) continue
    seen.add(next)
    open.push(...(waits.get(next) ?? []))
  }
  return false
}

const taskOf = (draft: Draft, revision: number): CompiledTaskSpec => {
  const { node, key, structural, named, results, continues } = draft
  const shared = {
    key,
    structural,
    after: unique([...structural, ...named]),
    results,
    revision,
    expansionParent: null,
    tool: null,
    model: null,
    ask: null,
    wait: null,
    join: null
  }
  if (node.type === "fan") {
    const race = node.race!
    return {
      ...shared,
      kind: "join_task",
      awaitKind: null,
      origin: "kernel",
      visibility: "hidden",
      mainline: false,
      onFailure: "propagate",
      step: node.top,
      join: { members: structural, until: race.until, losers: race.losers }
    }
  }
  const leaf = {
    ...shared,
    origin: "author",
    visibility: "visible",
    mainline: node.verb === "model" && node.topLevel,
    onFailure: node.onFailure,
    step: node.top
  } as const
  switch (node.verb) {
    case "tool":
      return { ...leaf, kind: "tool_task", awaitKind: null, tool: node.tool }
    case "model":
      return {
        ...leaf,
        kind: "model_task",
        awaitKind: null,
        model: { model: node.model, retry: node.retry, tools: node.tools, continues }
      }
    case "ask":
      return {
        ...leaf,
        kind: "await_task",
        awaitKind: "ask",
        ask: { authored: true, timeoutMs: node.timeoutMs, tokenDigest: null }
      }
    case "wait":
      return {
        ...leaf,
        kind: "await_task",
        awaitKind: "wait",
        wait: { task: node.task, run: node.run, timeoutMs: node.timeoutMs }
      }
  }
}

/** What a create asks of the world: the shell's and the steps' lookups, and the creator's template. */
export interface CreateLookups extends ShellLookups, StepLookups {
  /** The creator has a stored prompt_template (prompt_mechanism assembly needs one). */
  readonly hasPromptTemplate: boolean
}

export interface CompiledCreate {
  readonly shell: RunShell
  readonly compiled: CompiledSteps
}

/**
 * A create body's `run` member, judged in the supplement's check order: the shell (StepShell.ts),
 * the steps (revision 1, the first step the seed), then 422 prompt_template_missing.
 */
export const compileCreate = (
  body: Readonly<Record<string, unknown>>,
  lookups: CreateLookups
): Result.Result<CompiledCreate, ShellRefusal | StepsRefusal> =>
  Result.gen(function* () {
    const shell = yield* judgeShell(body, lookups)
    const compiled = yield* compileSteps(body.steps, {
      revision: 1,
      existing: [],
      currentDeliverable: null,
      promptMechanism: shell.promptMechanism,
      firstIsSeed: true,
      defaultRunner: shell.defaultRunner,
      lookups
    })
    if (shell.promptMechanism === "assembly" && !lookups.hasPromptTemplate) {
      return yield* Result.fail(
        new Invalid({ code: "prompt_template_missing", message: "assembly needs your stored prompt_template" })
      )
    }
    return { shell, compiled }
  })
