// Snapshots and transitions: restoring a persisted snapshot (its envelope decoded: status, state
// value, context; migrated from the version that wrote it to the machine's own by the registry's
// per-version migrations; resolved against the machine; a newer version, or a gap in the
// migrations, is refused), and a machine's pure transitions, which only collect the actions.
import { migrateSnapshot, PersistedSnapshot, SnapshotVersionError } from "@troupe/machines/registry"
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

/** The row's snapshot as the machine's own, or why it cannot be. */
export const restoreSnapshot = (binding: Binding, row: Repo.SnapshotRow): AnyMachineSnapshot | SnapshotVersionError => {
  const persisted = decodePersisted(row.snapshot)
  if (Result.isFailure(persisted)) {
    return new SnapshotVersionError({
      message: `${row.kind} ${row.actor_id}: unreadable snapshot: ${persisted.failure.message}`
    })
  }
  const migrated = migrateSnapshot(binding.entry, persisted.success, row.version)
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
