// A model's `tool_call` (svc.tools.call, runs supplement "Tool catalog"): the call becomes the named
// declared tool's own tool task, as if the model had called that tool directly (addressed by the
// same job, judged by the approval rules under the inner name, the inner input as its tool_input,
// the outer call's id as its tool_call_id). Rules may also name `tool_call` itself, to deny or ask.
// Pure; the declaration is checked by the addressing job (a name not declared: `tool_unknown`).
// Every tool task's verdict is judged here as it enters the run, over the input the run then drops.
import type { ApprovalMode, ApprovalRule, CompiledTaskSpec, CompiledToolSpec, TaskSpec } from "../context.ts"
import { judgeApproval } from "./approval.ts"

/** The error key of a `tool_call` naming no tool of the creator's declaration. */
export const undeclaredToolKey = "tool_unknown"

const objectOf = (value: unknown): Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {}

/** The inner tool of a `tool_call {name, input}`, unaddressed until the job finds its declaration. */
export const declaredCall = (
  input: Readonly<Record<string, unknown>>,
  toolCallId: string,
  timeoutMs: number
): CompiledToolSpec => ({
  name: typeof input.name === "string" ? input.name : "",
  alias: null,
  target: { kind: "unaddressed" },
  timeoutMs,
  replayable: false,
  toolCallId,
  input: objectOf(input.input),
  via: "tool_call"
})

/** What the model reads for a `tool_call` whose name is not declared. */
export const undeclaredResult = (name: string) => {
  const message = `tool_call: no declared tool is named ${JSON.stringify(name)}; find one with tool_search`
  return { output: message, content: [{ type: "text", text: message }], is_error: true }
}

/**
 * The approval verdict of a tool task: its own name and input as the rules and mode judge them;
 * for a `tool_call`, a rule matching `tool_call` (over `{name, input}`) that denies fails it and
 * one that asks parks it too (such rules grant nothing: the inner tool's verdict does).
 */
export const judgeToolTask = (mode: ApprovalMode, rules: ReadonlyArray<ApprovalRule>, spec: CompiledTaskSpec) => {
  const tool = spec.tool!
  const inner = judgeApproval(mode, rules, { origin: spec.origin, toolName: tool.name, input: tool.input })
  if (tool.via !== "tool_call" || inner.verdict === "fail") return inner
  const outer = { origin: spec.origin, toolName: "tool_call", input: { name: tool.name, input: tool.input } }
  const denied = judgeApproval("bypass", rules, outer)
  if (denied.verdict === "fail") return denied
  const asked = judgeApproval("rules", rules, outer)
  return asked.verdict === "park" ? asked : inner
}

/**
 * A compiled task as the run keeps it: a tool task with its approval verdict, judged now under the
 * run's approval mode and rules (frozen at acceptance, as is everything else the verdict reads), and
 * without its input (its row keeps it: every step writes the snapshot, which stays small).
 */
export const keptSpec = (mode: ApprovalMode, rules: ReadonlyArray<ApprovalRule>, spec: CompiledTaskSpec): TaskSpec => {
  if (spec.tool === null) return { ...spec, tool: null }
  const { input: _input, ...tool } = spec.tool
  return { ...spec, tool, approvalVerdict: judgeToolTask(mode, rules, spec) }
}
