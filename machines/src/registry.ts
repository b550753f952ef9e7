// Every machine by name, with the version its snapshots carry. A snapshot written by a newer
// version is refused on load; older versions are migrated by the machine's own upgrader.
import type { AnyStateMachine } from "xstate"
import { apiSessionMachine, apiSessionVersion } from "./apiSession/apiSession.machine.ts"

export interface MachineEntry {
  readonly machine: AnyStateMachine
  readonly version: number
  /** Upgrades a persisted snapshot of an older version to this one. */
  readonly upgrade?: (snapshot: unknown, fromVersion: number) => unknown
}

export const machines = {
  apiSession: { machine: apiSessionMachine, version: apiSessionVersion }
} satisfies Record<string, MachineEntry>

export type MachineName = keyof typeof machines
