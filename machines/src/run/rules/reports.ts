// What rounds and jobs report back to a run: an inference round's reply, a kernel call's answer
// (or its routing to the provider overriding its namespace), and the addressing of model calls.

import type { ToolSpec } from "../context.ts"
import { runEffects as fx } from "../effects.ts"
import type { RunEvent } from "../events.ts"
import { contextWindowExceeded } from "./compact.ts"
import { expand } from "./expansion.ts"
import { cancelTask, change, complete, type Draft, dispatch, fail, find, get, openRound, put } from "./graph.ts"
import { spawnAnswered } from "./mail.ts"
import { undeclaredResult, undeclaredToolKey } from "./toolCall.ts"

type EventOf<T extends RunEvent["type"]> = Extract<RunEvent, { type: T }>

/** `<key>#<generation>#<round>` of the round the reply answers. */
export const parseRef = (ref: string | undefined) => {
  const parts = (ref ?? "").split("#")
  return parts.length === 3 ? { key: parts[0]!, generation: Number(parts[1]), round: Number(parts[2]) } : undefined
}

export const replied = (draft: Draft, event: EventOf<"inference.replied">) => {
  const task = find(draft.context, parseRef(event.ref)!.key)!
  if (event.status === "completed") {
    draft.request({ type: fx.recordRound, params: { key: task.spec.key, usage: event.usage } })
    if (event.usage !== null) {
      draft.emit({ type: "usage", run_public_id: draft.context.publicId, task_key: task.spec.key, ...event.usage })
    }
    const calls = event.toolCalls ?? []
    return calls.length > 0 ? expand(draft, task, calls) : complete(draft, task.spec.key)
  }
  if (event.status === "canceled") {
    return draft.context.status === "paused"
      ? change(draft, task, "waiting")
      : cancelTask(draft, task.spec.key, { key: "run_canceled" }, null)
  }
  const failures = task.failures + 1
  // The same context would be refused again: a context-size failure waits for the compact verb.
  const repeatable = event.errorCode !== contextWindowExceeded
  if (repeatable && failures <= task.spec.model!.retry) return openRound(draft, { ...task, failures })
  put(draft, { ...task, failures })
  fail(draft, task.spec.key, "failed", { key: event.errorCode ?? event.status })
}

export const kernelAnswered = (draft: Draft, event: EventOf<"task.kernelAnswered">) => {
  if (spawnAnswered(draft, event)) return
  draft.request({ type: fx.recordResult, params: { key: event.key, result: event.result } })
  if (event.outcome === "failed") {
    return fail(draft, event.key, "failed", { key: event.errorKey ?? "kernel_tool_failed" })
  }
  complete(draft, event.key)
}

/**
 * A kernel call of a namespace its workspace overrides (svc.memory): the call becomes the
 * provider's tool call, as a runner's tool is (inbox row, claim, commit, deadline), named by the
 * catalog wire name (`alias`: the name the model called, when that was an alias).
 */
export const kernelRouted = (draft: Draft, event: EventOf<"task.kernelRouted">) => {
  const task = get(draft, event.key)
  const { kernel: _kernel, ...spec } = task.spec
  const called = spec.called?.name ?? ""
  const wire = draft.context.kernelAliases?.[called] ?? called
  const tool: ToolSpec = {
    name: wire,
    alias: wire === called ? null : called,
    target: { kind: "runner", executor: event.executor },
    timeoutMs: event.timeoutMs,
    ...(event.announcedTimeoutMs === undefined ? {} : { announcedTimeoutMs: event.announcedTimeoutMs }),
    replayable: event.replayable,
    toolCallId: event.toolCallId
  }
  draft.request({
    type: fx.routeTask,
    params: { key: event.key, toolName: wire, toolAlias: tool.alias, toolCallId: event.toolCallId, scope: event.scope }
  })
  dispatch(draft, { ...task, spec: { ...spec, tool } })
}

export const addressed = (draft: Draft, event: EventOf<"task.addressed">) => {
  for (const call of event.calls) {
    const task = find(draft.context, call.key)
    if (task === undefined || task.spec.tool === null || task.spec.tool.target.kind !== "unaddressed") continue
    // A call canceled (or its run stopped) before its addressing answered stays as it settled.
    if (task.status !== "waiting") continue
    if (call.target.kind === "not_served") {
      fail(draft, call.key, "failed", { key: "tool_not_served" })
      continue
    }
    if (call.target.kind === "not_declared") {
      draft.request({ type: fx.recordResult, params: { key: call.key, result: undeclaredResult(task.spec.tool.name) } })
      fail(draft, call.key, "failed", { key: undeclaredToolKey })
      continue
    }
    const tool = {
      ...task.spec.tool,
      target: call.target,
      timeoutMs: call.timeoutMs,
      replayable: call.replayable,
      ...(call.announcedTimeoutMs === undefined ? {} : { announcedTimeoutMs: call.announcedTimeoutMs })
    }
    put(draft, { ...task, spec: { ...task.spec, tool } })
  }
}
