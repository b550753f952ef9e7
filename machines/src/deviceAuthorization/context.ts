// What a device authorization starts from and remembers, with the instant it lapses (epoch
// milliseconds, what the row's expires_at says; null for a snapshot migrated from version 1,
// where the expiry timer alone ends it), and the pacing of its pending polls.
import { Schema } from "effect"
import { AssignmentScope } from "./events.ts"

export const DeviceAuthorizationInput = Schema.Struct({
  branch: Schema.Literals(["agent", "machine", "combined"]),
  clientId: Schema.String,
  expiresAt: Schema.Number
})
export type DeviceAuthorizationInput = typeof DeviceAuthorizationInput.Type

export const DeviceAuthorizationContext = Schema.Struct({
  branch: Schema.Literals(["agent", "machine", "combined"]),
  clientId: Schema.String,
  approverPublicId: Schema.NullOr(Schema.String),
  assignmentScope: Schema.NullOr(AssignmentScope),
  reason: Schema.NullOr(Schema.String),
  expiresAt: Schema.NullOr(Schema.Number),
  /** The last accepted pending poll (epoch milliseconds) and the interval the client must keep. */
  lastPolledAt: Schema.NullOr(Schema.Number),
  intervalSeconds: Schema.Number
})
export type DeviceAuthorizationContext = typeof DeviceAuthorizationContext.Type
