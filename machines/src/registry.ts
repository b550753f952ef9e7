// Every machine by name, with the version its snapshots carry and the schemas of its input and
// events. A snapshot written by a newer version is refused on load; older versions are migrated
// by the machine's own upgrader.
import type { Schema } from "effect"
import type { AnyStateMachine } from "xstate"
import { apiSessionMachine, apiSessionVersion } from "./apiSession/apiSession.machine.ts"
import { ApiSessionInput } from "./apiSession/context.ts"
import { ApiSessionEvent } from "./apiSession/events.ts"
import { DeviceAuthorizationInput } from "./deviceAuthorization/context.ts"
import {
  deviceAuthorizationMachine,
  deviceAuthorizationVersion
} from "./deviceAuthorization/deviceAuthorization.machine.ts"
import { DeviceAuthorizationEvent } from "./deviceAuthorization/events.ts"
import { ExecutorAddressInput } from "./executorAddress/context.ts"
import { ExecutorAddressEvent } from "./executorAddress/events.ts"
import { executorAddressMachine, executorAddressVersion } from "./executorAddress/executorAddress.machine.ts"
import { WorkspaceInput } from "./workspace/context.ts"
import { WorkspaceEvent } from "./workspace/events.ts"
import { workspaceMachine, workspaceVersion } from "./workspace/workspace.machine.ts"

export interface MachineEntry {
  readonly machine: AnyStateMachine
  readonly version: number
  /** What `create` must be given. */
  readonly input: Schema.Top
  /** Every event the machine may be sent (timers and job reports included). */
  readonly events: Schema.Top
  /** Upgrades a persisted snapshot of an older version to this one. */
  readonly upgrade?: (snapshot: unknown, fromVersion: number) => unknown
}

export const machines = {
  apiSession: {
    machine: apiSessionMachine,
    version: apiSessionVersion,
    input: ApiSessionInput,
    events: ApiSessionEvent
  },
  deviceAuthorization: {
    machine: deviceAuthorizationMachine,
    version: deviceAuthorizationVersion,
    input: DeviceAuthorizationInput,
    events: DeviceAuthorizationEvent
  },
  workspace: {
    machine: workspaceMachine,
    version: workspaceVersion,
    input: WorkspaceInput,
    events: WorkspaceEvent
  },
  executorAddress: {
    machine: executorAddressMachine,
    version: executorAddressVersion,
    input: ExecutorAddressInput,
    events: ExecutorAddressEvent
  }
} satisfies Record<string, MachineEntry>

export type MachineName = keyof typeof machines
