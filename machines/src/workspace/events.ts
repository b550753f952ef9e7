// Events of a workspace's lifecycle.
import { Schema } from "effect"

export const WorkspaceEvent = Schema.Union([
  /** The archival command; the row's lock_version must still be `lockVersion`. */
  Schema.Struct({ type: Schema.Literal("workspace.archive"), lockVersion: Schema.Number }),
  Schema.Struct({ type: Schema.Literal("workspace.restore"), lockVersion: Schema.Number }),
  /** DELETE: the workspace becomes a tombstone. */
  Schema.Struct({ type: Schema.Literal("workspace.tombstone"), lockVersion: Schema.Number }),
  /** The settling job finished (what had to stop for archival, or start again for restoration). */
  Schema.Struct({ type: Schema.Literal("workspace.settled") })
])

export type WorkspaceEvent = typeof WorkspaceEvent.Type
