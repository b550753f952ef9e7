// Events of an executor address, and the announcement it serves (the shape its row keeps; the
// wire's rules, such as printable names and the 64 KiB environment, are the contract's).
import { Schema } from "effect"

/** A JSON object whose members the address does not read (an input schema, an environment). */
const JsonObject = Schema.Record(Schema.String, Schema.Unknown)

export const EffectProfile = Schema.Struct({
  kind: Schema.Literals(["read_only", "pure", "write"]),
  destructive: Schema.Boolean,
  effect_scope: Schema.Literals(["closed", "open"]),
  idempotency: Schema.Literals(["intrinsic", "none"]),
  reconciliation: Schema.Literals(["none", "lookup"])
})

export const ServedTool = Schema.Struct({
  name: Schema.String,
  effect_profile: EffectProfile,
  timeout_ms: Schema.optionalKey(Schema.Number),
  description: Schema.optionalKey(Schema.String),
  input_schema: Schema.optionalKey(JsonObject)
})

export const ServedDocument = Schema.Struct({ name: Schema.String, description: Schema.String })

/** What an address serves: a whole replacement each time it announces. */
export const Announcement = Schema.Struct({
  tools: Schema.Array(ServedTool),
  environment: Schema.NullOr(JsonObject),
  documents: Schema.Array(ServedDocument)
})
export type Announcement = typeof Announcement.Type

export const ExecutorAddressEvent = Schema.Union([
  /**
   * A connection by the same identifier re-paired the address: its epoch becomes `epoch` (the
   * epoch the connection minted its credentials at) and its display name `displayName`.
   */
  Schema.Struct({ type: Schema.Literal("executor.repaired"), epoch: Schema.Number, displayName: Schema.String }),
  /** The agent of an agent application was removed; its epoch becomes `epoch`. */
  Schema.Struct({ type: Schema.Literal("executor.agentRemoved"), epoch: Schema.Number }),
  /** Explicit revocation: the transport is fenced synchronously. */
  Schema.Struct({ type: Schema.Literal("executor.revoke") }),
  /** The executor announced what it serves now. */
  Schema.Struct({ type: Schema.Literal("executor.announce"), announcement: Announcement })
])

export type ExecutorAddressEvent = typeof ExecutorAddressEvent.Type
