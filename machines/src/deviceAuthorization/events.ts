// Events of a device authorization.
import { Schema } from "effect"

export const AssignmentScope = Schema.Literals(["agent_private", "user_private", "account_wide"])

export const DeviceAuthorizationEvent = Schema.Union([
  /** The steward approved in the browser; the consequence (scope) is frozen. */
  Schema.Struct({
    type: Schema.Literal("device.approve"),
    approverPublicId: Schema.String,
    assignmentScope: AssignmentScope
  }),
  Schema.Struct({ type: Schema.Literal("device.deny"), approverPublicId: Schema.String }),
  /** The client abandoned the connection. */
  Schema.Struct({ type: Schema.Literal("device.cancel") }),
  /** The winning poll: credentials are issued once. */
  Schema.Struct({ type: Schema.Literal("device.consume") }),
  /** The registration drifted (kind, scope or agent binding of the live match differ). */
  Schema.Struct({ type: Schema.Literal("device.invalidate"), reason: Schema.String }),
  /** 900 seconds after the start. */
  Schema.Struct({ type: Schema.Literal("device.expire") })
])

export type DeviceAuthorizationEvent = typeof DeviceAuthorizationEvent.Type
