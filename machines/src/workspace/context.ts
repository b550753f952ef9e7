// What a workspace's lifecycle machine starts from: nothing but its existence.
import { Schema } from "effect"

export const WorkspaceInput = Schema.Struct({})
export type WorkspaceInput = typeof WorkspaceInput.Type
