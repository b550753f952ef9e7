// Events of a workspace: its lifecycle, and every edit of its fields (each carries the
// lock_version the caller presented).
import { Schema } from "effect"

/** Field edits of a workspace (PATCH, access mode, ownership, messaging, provider overrides). */
export const WorkspaceChanges = Schema.Struct({
  name: Schema.optional(Schema.String),
  metadata: Schema.optional(Schema.Unknown),
  access_mode: Schema.optional(Schema.Literals(["private", "account_wide"])),
  /** The new owner's user id (decimal text of the row id). */
  owner_id: Schema.optional(Schema.String),
  messaging: Schema.optional(
    Schema.Array(
      Schema.Struct({
        agent_public_id: Schema.String,
        mode: Schema.Literals(["public", "private"]),
        allowed_sender_public_ids: Schema.Array(Schema.String)
      })
    )
  ),
  tool_provider_overrides: Schema.optional(Schema.Record(Schema.String, Schema.String))
})
export type WorkspaceChanges = typeof WorkspaceChanges.Type

export const WorkspaceEvent = Schema.Union([
  /** The archival command; the row's lock_version must still be `lockVersion`. */
  Schema.Struct({ type: Schema.Literal("workspace.archive"), lockVersion: Schema.Number }),
  Schema.Struct({ type: Schema.Literal("workspace.restore"), lockVersion: Schema.Number }),
  /** DELETE: the workspace becomes a tombstone. */
  Schema.Struct({ type: Schema.Literal("workspace.tombstone"), lockVersion: Schema.Number }),
  /** An edit of the workspace's fields, accepted while active. */
  Schema.Struct({ type: Schema.Literal("workspace.edit"), lockVersion: Schema.Number, changes: WorkspaceChanges }),
  /** The settling job finished (what had to stop for archival, or start again for restoration). */
  Schema.Struct({ type: Schema.Literal("workspace.settled") })
])

export type WorkspaceEvent = typeof WorkspaceEvent.Type
