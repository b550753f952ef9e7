// Effect requests of a workspace's lifecycle: the row write in the step's transaction, and the
// settling job after commit.
export const workspaceEffects = {
  /**
   * Writes the state to the row, bumping lock_version where the command presented it; `archival`
   * says whether archived_at becomes the step's instant ("accepted") or null ("cleared").
   */
  recordState: "workspace.recordState",
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

export interface SettleParams {
  readonly toward: "archived" | "active"
}
