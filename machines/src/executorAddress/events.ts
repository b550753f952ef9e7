// Events of an executor address.
import { Schema } from "effect"

export const ExecutorAddressEvent = Schema.Union([
  /** A connection by the same identifier re-paired the address; its epoch is now `epoch`. */
  Schema.Struct({ type: Schema.Literal("executor.repaired"), epoch: Schema.Number }),
  /** The agent of an agent application was removed; its epoch is now `epoch`. */
  Schema.Struct({ type: Schema.Literal("executor.agentRemoved"), epoch: Schema.Number }),
  /** Explicit revocation: the transport is fenced synchronously. */
  Schema.Struct({ type: Schema.Literal("executor.revoke") })
])

export type ExecutorAddressEvent = typeof ExecutorAddressEvent.Type
