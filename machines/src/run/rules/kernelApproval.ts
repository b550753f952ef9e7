// The approval stage of a model's kernel tool call (runs supplement "Task kinds and statuses":
// "Approval stage (tool calls only)"; "Tool catalog": rules match wire names): every call of a tool
// the creator imports, whatever task it became (a job's call, an ask, a wait, a delegation), is
// judged as a runner tool's call is, under the name it called and the catalog wire name behind an
// alias. The verdict is judged over the call's input when its round expands (the input lives on the
// row, not in the snapshot) and applied when the call leaves waiting; approve lets it go on as its
// kind does. A refused approval (denied, or its hold expired) leaves a result the model reads. Pure.
import type { Origin, RunContext, Task, TaskSpec } from "../context.ts"
import { runEffects as fx } from "../effects.ts"
import { judgeApproval } from "./approval.ts"
import { type Delegation, delegatedTask, isRefusal, type Refusal } from "./delegation.ts"
import { complete, type Draft, dispatch, fail, find, fresh, start } from "./graph.ts"

/** The error of a call whose approval hold ran out. */
export const approvalExpired = { key: "approval_expired" } as const

/** A name as rules match it: the name called, and the catalog wire name behind an alias. */
const callOf = (context: RunContext, origin: Origin, name: string, input: Readonly<Record<string, unknown>>) => {
  const wireName = context.kernelAliases?.[name]
  return { origin, toolName: name, ...(wireName === undefined ? {} : { wireName }), input }
}

/**
 * A kernel call's spec with its verdict: rules match what the model called (an alias) or the wire
 * name behind it; one made through a tool_call (`through`: the name that was called by) is also
 * failed by a rule denying that tool_call over `{name, input}`, or parked by one asking (such rules
 * grant nothing), as a declared runner tool's is (rules/toolCall.ts). A delegation not granted at
 * once keeps what it asks, to start once approved.
 */
export const judgeKernelCall = (
  context: RunContext,
  spec: TaskSpec,
  input: Readonly<Record<string, unknown>>,
  delegation: Delegation | Refusal | undefined,
  through: string | undefined
): TaskSpec => {
  if (spec.called === undefined) return spec
  const { approvalMode, approvalRules } = context
  const inner = judgeApproval(approvalMode, approvalRules, callOf(context, spec.origin, spec.called.name, input))
  const outer =
    through === undefined ? undefined : callOf(context, spec.origin, through, { name: spec.called.name, input })
  const denied = outer === undefined ? undefined : judgeApproval("bypass", approvalRules, outer)
  const asked = outer === undefined ? undefined : judgeApproval("rules", approvalRules, outer)
  const verdict =
    inner.verdict === "fail" ? inner : denied?.verdict === "fail" ? denied : asked?.verdict === "park" ? asked : inner
  const held = verdict.verdict !== "grant" && delegation !== undefined && !isRefusal(delegation)
  return { ...spec, approvalVerdict: verdict, ...(held ? { delegation } : {}) }
}

/** The verdict a tool task or kernel call still has to pass (none once approved, and for every other task). */
export const pendingVerdict = (task: Task) => (task.approval === null ? task.spec.approvalVerdict : undefined)

/** What an approval row shows of a kernel call beside its arguments: its input and effect profile. */
export const approvalDetails = (context: RunContext, spec: TaskSpec, input: Readonly<Record<string, unknown>>) => {
  if (spec.called === undefined) return {}
  const profile = context.kernelProfiles?.[context.kernelTools[spec.called.name] ?? ""]
  return { tool_input: input, ...(profile === undefined ? {} : { effect_profile: profile }) }
}

/** The longest prefix of `text` whose UTF-8 form fits in `limit` bytes, cut between characters. */
export const firstBytes = (text: string, limit: number) => {
  let bytes = 0
  let end = 0
  for (const char of text) {
    const point = char.codePointAt(0)!
    const size = point < 0x80 ? 1 : point < 0x800 ? 2 : point < 0x10000 ? 3 : 4
    if (bytes + size > limit) break
    bytes += size
    end += char.length
  }
  return text.slice(0, end)
}

/** What the model reads of a call refused approval. */
const refusalResult = (error: { readonly key: string; readonly detail?: string }) => {
  const text =
    error.key === approvalExpired.key
      ? "Approval expired: no one decided within 24 hours"
      : `Approval denied${error.detail === undefined ? "" : `: ${error.detail}`}`
  return { output: text, content: [{ type: "text", text }], is_error: true }
}

/** Settles a call refused approval (denied, or its hold expired), leaving the model a result that says so. */
export const refuseApproval = (
  draft: Draft,
  key: string,
  status: "failed" | "timed_out",
  error: { readonly key: string; readonly detail?: string }
) => {
  draft.request({ type: fx.recordResult, params: { key, result: refusalResult(error) } })
  fail(draft, key, status, error)
}

/** An approved delegation's task, inserted now (it starts when the run schedules). */
const startDelegation = (draft: Draft, call: Task, asked: Delegation) => {
  const round = find(draft.context, call.spec.expansionParent!)!
  const spec = delegatedTask(round, call.spec.key, asked)
  const firstPosition = draft.context.tasks.length
  draft.context.tasks = [...draft.context.tasks, fresh(spec, draft.at)]
  draft.touched.add(spec.key)
  draft.request({
    type: fx.insertTasks,
    params: {
      firstPosition,
      tasks: [spec],
      details: { [spec.key]: { prompt: asked.prompt, delegated_by: call.spec.key } }
    }
  })
  return spec.key
}

/**
 * An approved call goes on: a runner's tool is dispatched; a kernel call starts as its kind does
 * (a job carries it out, an ask parks, a wait waits), a delegation first inserting its task (an
 * unwaited one's call then answers that task's key).
 */
export const proceed = (draft: Draft, task: Task) => {
  if (task.spec.tool !== null) return dispatch(draft, task)
  const asked = task.spec.delegation
  const delegated = asked === undefined ? undefined : startDelegation(draft, task, asked)
  if (delegated !== undefined && !asked!.wait) {
    draft.request({ type: fx.recordResult, params: { key: task.spec.key, result: { output: delegated } } })
    return complete(draft, task.spec.key, { startedAt: draft.at })
  }
  start(draft, find(draft.context, task.spec.key)!)
}
