// What a workspace's lifecycle machine starts from and remembers: the row's lock_version as of
// its last step (the workspace's other fields live on its row). null: not known (a snapshot
// migrated from version 1), so the row fence alone judges the presented version.
import { Schema } from "effect"

export const WorkspaceInput = Schema.Struct({ lockVersion: Schema.optional(Schema.Number) })
export type WorkspaceInput = typeof WorkspaceInput.Type

export const WorkspaceContext = Schema.Struct({ lockVersion: Schema.NullOr(Schema.Number) })
export type WorkspaceContext = typeof WorkspaceContext.Type
