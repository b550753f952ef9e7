// What a device authorization starts from and remembers.
import { Schema } from "effect"
import { AssignmentScope } from "./events.ts"

export const DeviceAuthorizationInput = Schema.Struct({
  branch: Schema.Literals(["agent", "machine", "combined"]),
  clientId: Schema.String
})
export type DeviceAuthorizationInput = typeof DeviceAuthorizationInput.Type

export const DeviceAuthorizationContext = Schema.Struct({
  branch: Schema.Literals(["agent", "machine", "combined"]),
  clientId: Schema.String,
  approverPublicId: Schema.NullOr(Schema.String),
  assignmentScope: Schema.NullOr(AssignmentScope),
  reason: Schema.NullOr(Schema.String)
})
export type DeviceAuthorizationContext = typeof DeviceAuthorizationContext.Type
