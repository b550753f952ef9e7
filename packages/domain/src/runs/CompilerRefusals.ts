// The step compiler's refusals that carry more than a code and a message: a raw graph name with
// the path it was written at, and the list of invalid_steps entries. The plain ones (a 404 runner,
// a 409 duplicate key, the 422 shell codes) are kernel/Refusals.ts classes.
import { Schema } from "effect"

/** Raw graph authoring (runs supplement "Create and the step compiler"); `path` as written (`run.tasks`). */
export class AuthoringRefused extends Schema.TaggedError<AuthoringRefused>()("AuthoringRefused", {
  code: Schema.Literals(["edge_authoring_refused", "graph_authoring_not_available"]),
  message: Schema.String,
  path: Schema.String
}) {}

/** The codes of an invalid_steps entry. */
export const StepFaultCode = Schema.Literals([
  "steps_required",
  "step_verb_invalid",
  "unknown_step_option",
  "edge_authoring_refused",
  "key_invalid",
  "invalid_reference",
  "empty_parallel",
  "fan_needs_follower",
  "invalid_until",
  "unsatisfiable_until",
  "invalid_losers",
  "key_needs_a_race",
  "too_wide_a_fan",
  "too_many_steps",
  "prompt_required",
  "model_required",
  "unknown_model",
  "invalid_tools",
  "tool_name_required",
  "reserved_tool_name",
  "invalid_tool_input",
  "tool_input_too_large",
  "invalid_tool_route",
  "runner_target_required",
  "runner_not_eligible",
  "tool_not_served",
  "invalid_timeout_ms",
  "invalid_ask_options",
  "invalid_ask_multi",
  "wait_target_not_found",
  "wait_cycle",
  "invalid_on_failure",
  "seed_not_a_model_step",
  "instructions_raw_only"
])
export type StepFaultCode = typeof StepFaultCode.Type

export const StepFault = Schema.Struct({ code: StepFaultCode, path: Schema.String })
export type StepFault = typeof StepFault.Type

/** 422 invalid_steps: every fault found, each at its path in the request's own tree. */
export class InvalidSteps extends Schema.TaggedError<InvalidSteps>()("InvalidSteps", {
  code: Schema.Literal("invalid_steps"),
  message: Schema.String,
  steps: Schema.Array(StepFault)
}) {}
