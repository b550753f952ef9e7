// What an executor address starts from and remembers.
import { Schema } from "effect"

export const ExecutorAddressInput = Schema.Struct({
  kind: Schema.Literals(["agent_application", "runner", "tool_provider"]),
  epoch: Schema.Number
})
export type ExecutorAddressInput = typeof ExecutorAddressInput.Type

export const ExecutorAddressContext = Schema.Struct({
  kind: Schema.Literals(["agent_application", "runner", "tool_provider"]),
  epoch: Schema.Number
})
export type ExecutorAddressContext = typeof ExecutorAddressContext.Type
