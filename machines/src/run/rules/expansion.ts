// A model round's tool calls becoming tasks (runs supplement "Task kinds and statuses"): one task
// per call (a runner's tool, or the kernel's own ask, wait, delegation or job), and the continuation.

import type { CompiledTaskSpec, RunContext, Task, TaskSpec } from "../context.ts"
import { runEffects as fx } from "../effects.ts"
import { delegatedTask, delegateTool, isRefusal, judgeDelegation, refusalResult } from "./delegation.ts"
import { complete, type Draft, defaultToolTimeoutMillis, fail, fresh, put } from "./graph.ts"
import { approvalDetails, judgeKernelCall } from "./kernelApproval.ts"
import { mailFacts } from "./mail.ts"
import { declaredCall, keptSpec } from "./toolCall.ts"

/**
 * A round's tool calls: one tool task per call (`<round>-t<i>`, origin model, absorb), then a
 * continuation (`<round>-c`) that reads their results and takes over the round's dependents
 * (and the deliverable). The calls are addressed by a job after the step.
 */
export const expand = (draft: Draft, round: Task, requested: ReadonlyArray<Readonly<Record<string, unknown>>>) => {
  const key = round.spec.key
  const toolCalls = requested.map((call) => throughAlias(draft.context, call))
  // delegate_task starts a fresh model task beside the calls (`<call key>-model-1`), unless its
  // arguments are refused (rules/delegation.ts) or its call awaits approval (it starts once approved).
  const asked = toolCalls.map((call) =>
    draft.context.kernelTools[nameOf(call)] === delegateTool ? judgeDelegation(inputOf(call.arguments)) : undefined
  )
  const compiled = toolCalls.map((call, index) =>
    named(draft.context, callTask(draft.context, round, `${key}-t${index}`, call), nameOf(call))
  )
  // Every call carries its approval verdict over its input (rules/toolCall.ts, a runner's tool;
  // rules/kernelApproval.ts, a kernel call); the input stays on its row.
  const { approvalMode, approvalRules } = draft.context
  const calls: Array<TaskSpec> = toolCalls.map((call, index) =>
    judgeKernelCall(
      draft.context,
      keptSpec(approvalMode, approvalRules, compiled[index]!),
      inputOf(call.arguments),
      asked[index],
      typeof call.through === "string" ? call.through : undefined
    )
  )
  const delegations = asked.flatMap((judged, index) =>
    judged === undefined || isRefusal(judged) || calls[index]!.delegation !== undefined
      ? []
      : [{ call: calls[index]!, prompt: judged.prompt, task: delegatedTask(round, calls[index]!.key, judged) }]
  )
  const continuationKey = `${key}-c`
  const continuation: TaskSpec = {
    ...round.spec,
    key: continuationKey,
    origin: "kernel",
    after: calls.map((call) => call.key),
    structural: calls.map((call) => call.key),
    results: [],
    expansionParent: key,
    model: { ...round.spec.model!, continues: key }
  }
  const added = [...calls, ...delegations.map((each) => each.task), continuation]
  for (const task of draft.context.tasks) {
    if (!task.spec.after.includes(key)) continue
    const rewire = (keys: ReadonlyArray<string>) => keys.map((each) => (each === key ? continuationKey : each))
    put(draft, {
      ...task,
      spec: { ...task.spec, after: rewire(task.spec.after), structural: rewire(task.spec.structural) }
    })
  }
  if (draft.context.deliverable === key) draft.context.deliverable = continuationKey
  const firstPosition = draft.context.tasks.length
  draft.context.tasks = [...draft.context.tasks, ...added.map((spec) => fresh(spec, draft.at))]
  for (const spec of added) draft.touched.add(spec.key)
  draft.request({
    type: fx.insertTasks,
    params: {
      firstPosition,
      tasks: added,
      details: Object.fromEntries([
        ...calls.map((call, index) => {
          const tool = compiled[index]!.tool
          return [
            call.key,
            tool !== null
              ? { tool_input: tool.input, tool_call_id: tool.toolCallId }
              : {
                  ...inputOf(toolCalls[index]!.arguments),
                  tool_call_id: callIdOf(toolCalls[index]!, call.key),
                  ...approvalDetails(draft.context, call, inputOf(toolCalls[index]!.arguments))
                }
          ]
        }),
        ...delegations.map(({ task, prompt }) => [task.key, { prompt, delegated_by: task.expansionParent }])
      ])
    }
  })
  const addressed = calls.filter((call) => call.tool !== null)
  if (addressed.length > 0) {
    draft.request({
      type: fx.addressCalls,
      params: {
        calls: addressed.map((call) => ({
          key: call.key,
          name: call.tool!.name,
          ...(call.tool!.via === undefined ? {} : { via: call.tool!.via })
        }))
      }
    })
  }
  complete(draft, key, { expanded: true })
  // An unwaited delegation answers the new task's key at once.
  for (const { call, task } of delegations) {
    if (call.awaitKind === "wait") continue
    draft.request({ type: fx.recordResult, params: { key: call.key, result: { output: task.key } } })
    complete(draft, call.key, { startedAt: draft.at })
  }
  // A delegation whose arguments are refused fails with their key (the model reads why).
  asked.forEach((judged, index) => {
    if (judged === undefined || !isRefusal(judged)) return
    draft.request({ type: fx.recordResult, params: { key: calls[index]!.key, result: refusalResult(judged) } })
    fail(draft, calls[index]!.key, "failed", { key: judged.code })
  })
  // A kernel call of a tool the kernel does not carry out here fails at once (the model reads it).
  calls.forEach((call, index) => {
    const unavailable = call.tool === null && call.kernel === undefined
    if (call.kind === "tool_task" && unavailable && asked[index] === undefined) {
      fail(draft, call.key, "failed", { key: "kernel_tool_unavailable" })
    }
  })
}

const nameOf = (call: Readonly<Record<string, unknown>>) => (typeof call.name === "string" ? call.name : "")

/**
 * A tool_call of an imported kernel tool (an alias or a kernel entry, deferred ones included, which
 * tool_search finds) is a call of that tool, with the tool_call's input; other tool_calls stay for
 * their declared runner tools.
 */
const throughAlias = (context: RunContext, call: Readonly<Record<string, unknown>>) => {
  if (context.kernelTools[nameOf(call)] !== "svc.tools.call") return call
  const input = inputOf(call.arguments)
  const inner = typeof input.name === "string" ? input.name : ""
  // `through`: the name the tool_call was called by, whose own rules the approval stage reads too.
  return context.kernelTools[inner] === undefined
    ? call
    : { ...call, name: inner, arguments: inputOf(input.input), through: nameOf(call) }
}

/**
 * A kernel call (its tool task, or the ask or wait it became) keeps the name the model called, and
 * the catalog wire name behind an alias.
 */
const named = (context: RunContext, spec: CompiledTaskSpec, name: string): CompiledTaskSpec =>
  spec.tool !== null || context.kernelTools[name] === undefined
    ? spec
    : { ...spec, called: { name, alias: context.kernelAliases?.[name] ?? null } }

/** The kernel tools a job of the run carries out (the others are graph work or unavailable). */
const jobTools = new Set([
  "svc.skill.load",
  "svc.tools.search",
  "svc.conversation.read",
  "svc.conversation.search",
  "svc.conversation.status",
  "svc.conversation.cancel",
  "svc.conversation.send",
  "svc.conversation.spawn"
])

const carriedOut = (canonical: string) => canonical.startsWith("svc.memory.") || jobTools.has(canonical)

/** The kernel's tools a run's rounds carry out themselves: a person's ask, a wait on a task, memory. */
const askTimeoutMillis = 24 * 60 * 60 * 1000
const waitDefaultMillis = 60 * 60 * 1000

/**
 * A model's call as a task: a runner's tool task (addressed after the step), or, for a kernel
 * tool the creator imports, the kernel's own: svc.human.ask parks (awaiting_input, answered
 * without a token), svc.graph.wait waits on a task of this run (or of an earlier run of the same
 * conversation), svc.tools.call becomes the named declared tool's own task, svc.memory.… and `jobTools`
 * are carried out by a job of the run; other kernel tools fail kernel_tool_unavailable.
 */
const callTask = (
  context: RunContext,
  round: Task,
  key: string,
  call: Readonly<Record<string, unknown>>
): CompiledTaskSpec => {
  const name = typeof call.name === "string" ? call.name : ""
  const input = inputOf(call.arguments)
  const base = {
    key,
    origin: "model" as const,
    visibility: "collapsed" as const,
    mainline: false,
    after: [round.spec.key],
    structural: [round.spec.key],
    results: [],
    onFailure: "absorb" as const,
    revision: round.spec.revision,
    step: round.spec.step,
    expansionParent: round.spec.key,
    model: null,
    join: null
  }
  const canonical = context.kernelTools[name]
  if (canonical === "svc.human.ask") {
    return {
      ...base,
      kind: "await_task",
      awaitKind: "ask",
      tool: null,
      ask: { authored: false, timeoutMs: askTimeoutMillis, tokenDigest: null },
      wait: null
    }
  }
  const delegation = canonical === delegateTool ? judgeDelegation(input) : undefined
  if (delegation !== undefined && !isRefusal(delegation) && delegation.wait) {
    return {
      ...base,
      kind: "await_task",
      awaitKind: "wait",
      tool: null,
      ask: null,
      wait: { task: `${key}-model-1`, run: null, timeoutMs: null }
    }
  }
  if (canonical === "svc.tools.call") {
    return {
      ...base,
      kind: "tool_task",
      awaitKind: null,
      tool: declaredCall(input, callIdOf(call, key), defaultToolTimeoutMillis),
      ask: null,
      wait: null
    }
  }
  if (canonical === "svc.graph.wait") {
    const asked = typeof input.timeout_ms === "number" && input.timeout_ms > 0 ? input.timeout_ms : waitDefaultMillis
    return {
      ...base,
      kind: "await_task",
      awaitKind: "wait",
      tool: null,
      ask: null,
      wait: {
        task: typeof input.task === "string" ? input.task : "",
        // This run's own id names a task of this run.
        run:
          typeof input.run_public_id === "string" &&
          input.run_public_id.toLowerCase() !== context.publicId.toLowerCase()
            ? input.run_public_id
            : null,
        timeoutMs: Math.min(asked, askTimeoutMillis)
      }
    }
  }
  return {
    ...base,
    kind: "tool_task",
    awaitKind: null,
    ...(canonical !== undefined && carriedOut(canonical) ? { kernel: canonical, ...mailFacts(canonical, input) } : {}),
    tool:
      canonical === undefined
        ? {
            name,
            alias: null,
            target: { kind: "unaddressed" },
            timeoutMs: defaultToolTimeoutMillis,
            replayable: false,
            toolCallId: typeof call.call_id === "string" ? call.call_id : key,
            input
          }
        : null,
    ask: null,
    wait: null
  }
}

const callIdOf = (call: Readonly<Record<string, unknown>>, key: string) =>
  typeof call.call_id === "string" ? call.call_id : key

const inputOf = (text: unknown): Readonly<Record<string, unknown>> => {
  if (typeof text === "object" && text !== null && !Array.isArray(text)) return text as Record<string, unknown>
  if (typeof text !== "string") return {}
  try {
    const value: unknown = JSON.parse(text)
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : {}
  } catch {
    return {}
  }
}
