// What a workspace's lifecycle machine starts from and remembers: nothing but its existence (the
// workspace's fields live on its row).
import { Schema } from "effect"

export const WorkspaceInput = Schema.Struct({})
export type WorkspaceInput = typeof WorkspaceInput.Type

export const WorkspaceContext = Schema.Struct({})
export type WorkspaceContext = typeof WorkspaceContext.Type
