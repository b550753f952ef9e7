// Every machine by name, with the version its snapshots carry, the schemas of its input and
// events, the names of its effect requests, and its snapshot migrations. A snapshot written by a
// newer version is refused on load; an older one is migrated one version at a time.
import { Schema } from "effect"
import type { AnyStateMachine, StateValue } from "xstate"
import { apiSessionMachine, apiSessionVersion } from "./apiSession/apiSession.machine.ts"
import { ApiSessionInput } from "./apiSession/context.ts"
import { apiSessionEffects } from "./apiSession/effects.ts"
import { ApiSessionEvent } from "./apiSession/events.ts"
import { ConversationInput } from "./conversation/context.ts"
import {
  conversationMachine,
  conversationMigrations,
  conversationVersion
} from "./conversation/conversation.machine.ts"
import { conversationEffects } from "./conversation/effects.ts"
import { ConversationEvent } from "./conversation/events.ts"
import { DeviceAuthorizationInput } from "./deviceAuthorization/context.ts"
import {
  deviceAuthorizationMachine,
  deviceAuthorizationMigrations,
  deviceAuthorizationVersion
} from "./deviceAuthorization/deviceAuthorization.machine.ts"
import { deviceAuthorizationEffects } from "./deviceAuthorization/effects.ts"
import { DeviceAuthorizationEvent } from "./deviceAuthorization/events.ts"
import { ExecutorAddressInput } from "./executorAddress/context.ts"
import { executorAddressEffects } from "./executorAddress/effects.ts"
import { ExecutorAddressEvent } from "./executorAddress/events.ts"
import { executorAddressMachine, executorAddressVersion } from "./executorAddress/executorAddress.machine.ts"
import { InferenceRequestInput } from "./inferenceRequest/context.ts"
import { inferenceRequestEffects } from "./inferenceRequest/effects.ts"
import { InferenceRequestEvent } from "./inferenceRequest/events.ts"
import {
  inferenceRequestMachine,
  inferenceRequestMigrations,
  inferenceRequestVersion
} from "./inferenceRequest/inferenceRequest.machine.ts"
import { RunInput } from "./run/context.ts"
import { runEffects } from "./run/effects.ts"
import { RunEvent } from "./run/events.ts"
import { runMachine, runMigrations, runVersion } from "./run/run.machine.ts"
import { ScheduleInput } from "./schedule/context.ts"
import { scheduleEffects } from "./schedule/effects.ts"
import { ScheduleEvent } from "./schedule/events.ts"
import { scheduleMachine, scheduleVersion } from "./schedule/schedule.machine.ts"
import { WorkspaceInput } from "./workspace/context.ts"
import { workspaceEffects } from "./workspace/effects.ts"
import { WorkspaceEvent } from "./workspace/events.ts"
import { workspaceMachine, workspaceMigrations, workspaceVersion } from "./workspace/workspace.machine.ts"

const StateValueSchema: Schema.Codec<StateValue> = Schema.Union([
  Schema.String,
  Schema.Record(
    Schema.String,
    Schema.suspend(() => StateValueSchema)
  )
])

/**
 * A snapshot as persisted, what migrations read and write: XState's persisted snapshot, of which a
 * restore reads the status, state value and context (persisted machines keep no history or
 * children, and no output: their final states are terminal).
 */
export const PersistedSnapshot = Schema.Struct({
  status: Schema.Literals(["active", "done", "error", "stopped"]),
  value: StateValueSchema,
  context: Schema.Unknown
})
export type PersistedSnapshot = typeof PersistedSnapshot.Type

/** Turns a snapshot persisted by version n - 1 of a machine into one of version n. */
export type SnapshotMigration = (snapshot: PersistedSnapshot) => PersistedSnapshot

export interface MachineEntry<
  M extends AnyStateMachine = AnyStateMachine,
  In extends Schema.Decoder<unknown> = Schema.Decoder<unknown>,
  Ev extends Schema.Decoder<unknown> = Schema.Decoder<unknown>,
  Fx extends Readonly<Record<string, string>> = Readonly<Record<string, string>>
> {
  readonly machine: M
  readonly version: number
  /** What `create` must be given. */
  readonly input: In
  /** Every event the machine may be sent (timers, job reports and told messages included). */
  readonly events: Ev
  /** The machine's effect requests by name (its effects.ts); none is also the name of an event. */
  readonly effects: Fx
  /** `migrations[n]` migrates a snapshot of version n - 1 to version n (n up to `version`). */
  readonly migrations: Readonly<Record<number, SnapshotMigration>>
}

export class SnapshotVersionError extends Schema.TaggedError<SnapshotVersionError>()("SnapshotVersionError", {
  message: Schema.String
}) {}

/**
 * Brings a persisted snapshot of version `from` up to the entry's version, one migration at a
 * time; a newer version, or a missing step, is an error (the snapshot is left as it is).
 */
export const migrateSnapshot = (
  entry: MachineEntry,
  snapshot: PersistedSnapshot,
  from: number
): PersistedSnapshot | SnapshotVersionError => {
  const machine = entry.machine.id
  if (from > entry.version) {
    return new SnapshotVersionError({
      message: `${machine}: snapshot version ${from} is newer than this server's ${entry.version}`
    })
  }
  let migrated = snapshot
  for (let version = from + 1; version <= entry.version; version++) {
    const migration = entry.migrations[version]
    if (!migration) {
      return new SnapshotVersionError({ message: `${machine}: no migration from version ${version - 1} to ${version}` })
    }
    migrated = migration(migrated)
  }
  return migrated
}

export const machines = {
  apiSession: {
    machine: apiSessionMachine,
    version: apiSessionVersion,
    input: ApiSessionInput,
    events: ApiSessionEvent,
    effects: apiSessionEffects,
    migrations: {}
  },
  deviceAuthorization: {
    machine: deviceAuthorizationMachine,
    version: deviceAuthorizationVersion,
    input: DeviceAuthorizationInput,
    events: DeviceAuthorizationEvent,
    effects: deviceAuthorizationEffects,
    migrations: deviceAuthorizationMigrations
  },
  workspace: {
    machine: workspaceMachine,
    version: workspaceVersion,
    input: WorkspaceInput,
    events: WorkspaceEvent,
    effects: workspaceEffects,
    migrations: workspaceMigrations
  },
  executorAddress: {
    machine: executorAddressMachine,
    version: executorAddressVersion,
    input: ExecutorAddressInput,
    events: ExecutorAddressEvent,
    effects: executorAddressEffects,
    migrations: {}
  },
  inferenceRequest: {
    machine: inferenceRequestMachine,
    version: inferenceRequestVersion,
    input: InferenceRequestInput,
    events: InferenceRequestEvent,
    effects: inferenceRequestEffects,
    migrations: inferenceRequestMigrations
  },
  conversation: {
    machine: conversationMachine,
    version: conversationVersion,
    input: ConversationInput,
    events: ConversationEvent,
    effects: conversationEffects,
    migrations: conversationMigrations
  },
  run: {
    machine: runMachine,
    version: runVersion,
    input: RunInput,
    events: RunEvent,
    effects: runEffects,
    migrations: runMigrations
  },
  schedule: {
    machine: scheduleMachine,
    version: scheduleVersion,
    input: ScheduleInput,
    events: ScheduleEvent,
    effects: scheduleEffects,
    migrations: {}
  }
} satisfies Record<string, MachineEntry>

export type MachineName = keyof typeof machines
