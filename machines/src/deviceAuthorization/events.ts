// Events of a device authorization. The human's decision and the poll carry the instant they were
// made (`at`, epoch milliseconds): the machine judges expiry by it.
import { Schema } from "effect"

export const AssignmentScope = Schema.Literals(["agent_private", "user_private", "account_wide"])

export const DeviceAuthorizationEvent = Schema.Union([
  /** The steward approved in the browser; the consequence (scope) is frozen. */
  Schema.Struct({
    type: Schema.Literal("device.approve"),
    approverPublicId: Schema.String,
    assignmentScope: AssignmentScope,
    at: Schema.Number
  }),
  Schema.Struct({ type: Schema.Literal("device.deny"), approverPublicId: Schema.String, at: Schema.Number }),
  /** The client abandoned the connection. */
  Schema.Struct({ type: Schema.Literal("device.cancel") }),
  /** A poll: once approved it wins (credentials are issued once); pending, it changes nothing. */
  Schema.Struct({ type: Schema.Literal("device.consume"), at: Schema.Number }),
  /** The registration drifted (kind, scope or agent binding of the live match differ). */
  Schema.Struct({ type: Schema.Literal("device.invalidate"), reason: Schema.String }),
  /** 900 seconds after the start. */
  Schema.Struct({ type: Schema.Literal("device.expire") })
])

export type DeviceAuthorizationEvent = typeof DeviceAuthorizationEvent.Type
