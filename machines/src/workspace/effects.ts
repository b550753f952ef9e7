// Effect requests of a workspace: the row writes in the step's transaction, the refusal of a
// stale lock_version, and the settling job after commit.
import type { WorkspaceChanges } from "./events.ts"

export const workspaceEffects = {
  /**
   * Writes the state to the row, bumping lock_version where the command presented it; `archival`
   * says whether archived_at becomes the step's instant ("accepted") or null ("cleared").
   */
  recordState: "workspace.recordState",
  /** Writes an edit's fields to the row, bumping lock_version (fenced by the presented one). */
  recordChanges: "workspace.recordChanges",
  /** The machine refuses the command (the presented lock_version is not the current one). */
  refuse: "workspace.refuse",
  /** After commit: settles an archival or restoration, then reports workspace.settled. */
  settle: "workspace.settle"
} as const

/** The lifecycle states the row records. */
export type WorkspaceState = "active" | "archiving" | "archived" | "restoring" | "tombstoned"

export interface RecordStateParams {
  readonly state: WorkspaceState
  readonly lockVersion: number | undefined
  readonly archival?: "accepted" | "cleared"
}

export interface RecordChangesParams {
  readonly lockVersion: number
  readonly changes: WorkspaceChanges
}

export interface RefuseParams {
  readonly reason: "stale_lock_version"
}

export interface SettleParams {
  readonly toward: "archived" | "active"
}
