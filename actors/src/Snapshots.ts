// Snapshots and transitions: restoring a persisted snapshot (its envelope decoded: status, state
// value, context with its parts; migrated from the version that wrote it to the machine's own by
// the registry's per-version migrations; resolved against the machine; a newer version, or a gap
// in the migrations, is refused), splitting a snapshot into its row and its parts' changed rows,
// and a machine's pure transitions, which only collect the actions.
import { migrateSnapshot, PersistedSnapshot, SnapshotVersionError } from "@troupe/machines/registry"
import type * as Steps from "@troupe/storage/repositories/ActorSteps"
import type * as Repo from "@troupe/storage/repositories/Actors"
import { Effect, Result, Schema } from "effect"
import {
  type AnyActorScope,
  type AnyMachineSnapshot,
  type AnyStateMachine,
  createActor,
  type EventObject,
  type ExecutableActionObject
} from "xstate"
import type { Binding } from "./Binding.ts"

/** A machine's inert actor scope (never started), built once per machine, without its executor. */
const scopes = new WeakMap<AnyStateMachine, Omit<AnyActorScope, "actionExecutor">>()

const scopeOf = (machine: AnyStateMachine, actions: Array<ExecutableActionObject>): AnyActorScope => {
  let scope = scopes.get(machine)
  if (!scope) {
    const self = createActor(machine)
    const ignore = () => {}
    scope = {
      self,
      system: self.system,
      id: "",
      sessionId: "",
      logger: ignore,
      defer: ignore,
      emit: ignore,
      stopChild: ignore
    }
    scopes.set(machine, scope)
  }
  return { ...scope, actionExecutor: (action) => void actions.push(action) } as AnyActorScope
}

/**
 * The next snapshot and the actions it asks for, as xstate's `transition` answers them, without
 * the actor (initial snapshot included) that it builds on every call: one inert scope serves
 * every transition of a machine. Nothing registers in its system, since the runtime spawns no
 * children (a spawn is an action no binding handles).
 */
export const transitionOf = (
  machine: AnyStateMachine,
  snapshot: AnyMachineSnapshot,
  event: EventObject
): [AnyMachineSnapshot, Array<ExecutableActionObject>] => {
  const actions: Array<ExecutableActionObject> = []
  return [machine.transition(snapshot, event, scopeOf(machine, actions)), actions]
}

/** The initial snapshot for `input` and its actions, as xstate's `initialTransition` answers them. */
export const initialTransitionOf = (
  machine: AnyStateMachine,
  input: unknown
): [AnyMachineSnapshot, Array<ExecutableActionObject>] => {
  const actions: Array<ExecutableActionObject> = []
  return [machine.getInitialSnapshot(scopeOf(machine, actions), input), actions]
}

const decodePersisted = Schema.decodeUnknownResult(PersistedSnapshot)

/**
 * What a snapshot's row keeps: what `restoreSnapshot` reads (status, state value, context), and a
 * done machine's output. xstate's `getPersistedSnapshot` walks the whole context looking for child
 * actors to persist on every step; the runtime spawns none and restores no history, so nothing it
 * adds (children, historyValue) is ever read.
 */
export const persistedOf = (snapshot: AnyMachineSnapshot): PersistedSnapshot & { readonly output?: unknown } =>
  snapshot.output === undefined
    ? { status: snapshot.status, value: snapshot.value, context: snapshot.context }
    : { status: snapshot.status, value: snapshot.value, context: snapshot.context, output: snapshot.output }

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * A context with every part of the binding present: one the row's parts did not fill (a part with
 * no rows, or a row read without its parts) is empty. An older row keeps its parts inline.
 */
export const withEmptyParts = (binding: Binding, context: unknown): unknown => {
  if (binding.parts === undefined || !isRecord(context)) return context
  const parts = binding.parts
  const missing = Object.keys(parts).filter((part) => parts[part] !== undefined && !(part in context))
  return missing.length === 0 ? context : { ...context, ...Object.fromEntries(missing.map((part) => [part, []])) }
}

/** What a step writes of its snapshot: the row's JSON and the changes to its parts' rows. */
export interface PersistedSplit {
  /** The snapshot as its row keeps it: without the context's parts. */
  readonly stored: unknown
  readonly writes: Steps.StepWrite["parts"]
  /** Each part as its rows will hold it (the next step's `previous`). */
  readonly parts: Repo.Parts
}

const noPartWrites: Steps.StepWrite["parts"] = { upserts: [], removed: [] }

/**
 * Splits a persisted snapshot (`persistedOf`) into its row's JSON and its parts' rows. An element
 * is written when it is not the very element `previous` (the part as its rows hold it) has at its
 * index: the machine keeps an unchanged element's object, so comparing references finds the
 * changed ones without reading them. A key the part no longer holds is removed.
 */
export const splitParts = (
  binding: Binding,
  persisted: ReturnType<typeof persistedOf>,
  previous: Repo.Parts
): PersistedSplit => {
  if (binding.parts === undefined) return { stored: persisted, writes: noPartWrites, parts: {} }
  const context: Record<string, unknown> = { ...(persisted.context as Record<string, unknown>) }
  const upserts: Array<Steps.StepWrite["parts"]["upserts"][number]> = []
  const removed: Array<Steps.StepWrite["parts"]["removed"][number]> = []
  const parts: Record<string, ReadonlyArray<unknown>> = {}
  for (const [part, keyOf] of Object.entries(binding.parts)) {
    if (keyOf === undefined) continue
    const next = context[part]
    if (!Array.isArray(next)) throw new Error(`${binding.kind}: the context part ${part} is not an array`)
    delete context[part]
    parts[part] = next
    const before = previous[part] ?? []
    const gone: Array<unknown> = before.slice(next.length)
    for (let position = 0; position < next.length; position++) {
      const value: unknown = next[position]
      if (before[position] === value) continue
      const key = keyOf(value)
      upserts.push({ part, key, position, value })
      if (position < before.length && keyOf(before[position]) !== key) gone.push(before[position])
    }
    if (gone.length > 0) {
      const kept = new Set(next.map((element) => keyOf(element)))
      for (const element of gone) {
        const key = keyOf(element)
        if (!kept.has(key)) removed.push({ part, key })
      }
    }
  }
  return { stored: { ...persisted, context }, writes: { upserts, removed }, parts }
}

/**
 * The row's snapshot as the machine's own, or why it cannot be. The row is read with its parts
 * (`findSnapshotWithParts`), which go back into the context before the migrations run.
 */
export const restoreSnapshot = (binding: Binding, row: Repo.SnapshotRow): AnyMachineSnapshot | SnapshotVersionError => {
  const persisted = decodePersisted(row.snapshot)
  if (Result.isFailure(persisted)) {
    return new SnapshotVersionError({
      message: `${row.kind} ${row.actor_id}: unreadable snapshot: ${persisted.failure.message}`
    })
  }
  const whole = { ...persisted.success, context: withEmptyParts(binding, persisted.success.context) }
  const migrated = migrateSnapshot(binding.entry, whole, row.version)
  if (migrated instanceof SnapshotVersionError) return migrated
  return binding.entry.machine.resolveState({
    value: migrated.value,
    context: migrated.context,
    status: migrated.status
  })
}

/** The same as an effect: a snapshot this server cannot restore fails. */
export const restore = (binding: Binding, row: Repo.SnapshotRow) =>
  Effect.suspend(() => {
    const restored = restoreSnapshot(binding, row)
    return restored instanceof SnapshotVersionError ? Effect.fail(restored) : Effect.succeed(restored)
  })
