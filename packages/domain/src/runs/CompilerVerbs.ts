// The four leaf verbs of a step (tool, model, ask, wait) as the compiler reads them: each member
// judged against the supplement's rules, faults reported at the member's path, the task's spec and
// its row members built. The tree (fans, sequences, keys) is CompilerParse.ts's.
import type { CompiledToolSpec, OnFailure } from "@troupe/machines/run/context"
import { replayable } from "../executors/EffectProfiles.ts"
import { isObject } from "../kernel/Json.ts"
import { isPrintableText } from "../kernel/Text.ts"
import type { StepFaultCode } from "./CompilerRefusals.ts"
import type { PromptMechanism, RunnerInfo } from "./StepShell.ts"

/** What the steps ask of the world, loaded by the caller before compiling. */
export interface StepLookups {
  /** A known text-generation model ref. */
  readonly model: (ref: string) => boolean
  /** A runner by public id; undefined when unknown or concealed from the creator. */
  readonly runner: (publicId: string) => RunnerInfo | undefined
  /** A task key of an earlier run of the same conversation (a wait naming `run_public_id`). */
  readonly otherRunTask: (runPublicId: string, key: string) => boolean
}

export interface ParseContext {
  readonly revision: number
  readonly promptMechanism: PromptMechanism
  /** The envelope is a create's: its first step is the seed. */
  readonly firstIsSeed: boolean
  readonly defaultRunner: RunnerInfo | null
  readonly lookups: StepLookups
}

/** A key as a step names it (`after`, `results`, `wait.task`), with the path it was written at. */
export interface Ref {
  readonly key: string
  readonly path: string
}

/** What every leaf has, read before its verb's own members. */
export interface LeafBase {
  readonly type: "leaf"
  /** The step's pre-order number in the envelope (faults are listed in that order). */
  readonly order: number
  /** `steps[i].tool`, `steps[i].parallel[j][k].model`: the verb object's path. */
  readonly verbPath: string
  /** The top-level step index. */
  readonly top: number
  readonly topLevel: boolean
  readonly key: string
  readonly after: ReadonlyArray<Ref>
  readonly onFailure: OnFailure
  /** The step as the receipt mirrors it (its key filled in). */
  readonly mirror: unknown
}

interface Read {
  /** The members the task read shows (prompt, options, tool_input, timeout_ms ...). */
  readonly row: Readonly<Record<string, unknown>>
}

export interface ToolLeaf extends LeafBase, Read {
  readonly verb: "tool"
  readonly tool: CompiledToolSpec
}

export interface ModelLeaf extends LeafBase, Read {
  readonly verb: "model"
  readonly results: ReadonlyArray<Ref>
  readonly model: string
  readonly retry: number
  readonly tools: ReadonlyArray<string>
}

export interface AskLeaf extends LeafBase, Read {
  readonly verb: "ask"
  readonly timeoutMs: number
}

export interface WaitLeaf extends LeafBase, Read {
  readonly verb: "wait"
  /** The target in this run (null: missing, or in another run). */
  readonly target: Ref | null
  readonly run: string | null
  readonly task: string
  readonly timeoutMs: number | null
}

export type Leaf = ToolLeaf | ModelLeaf | AskLeaf | WaitLeaf
export type LeafVerb = Leaf["verb"]

/** How a verb reports what it finds wrong, and reads the members several verbs share. */
export interface StepReader {
  readonly fault: (code: StepFaultCode, path: string) => void
  /** A list of keys (`after`, `results`): each entry that is not a string is a fault. */
  readonly refs: (value: unknown, path: string) => ReadonlyArray<Ref>
  /** A timeout member: a JSON integer from 1 to `max`, else a fault; undefined when absent. */
  readonly timeout: (value: unknown, path: string, max: number) => number | undefined
}

export const limits = {
  fanWidth: 32,
  leaves: 64,
  toolInputBytes: 64 * 1024,
  /** Tool and wait timeouts: 1 ms to 7 days. */
  timeoutMs: 7 * 24 * 3600 * 1000,
  /** Ask timeouts are clamped to 24 h (the default). */
  askTimeoutMs: 24 * 3600 * 1000,
  /** A tool's timeout when neither the step nor the announcement gives one. */
  toolTimeoutMs: 600_000,
  retry: 5
} as const

/** Each verb's members (anything else is unknown_step_option, or edge_authoring_refused by name). */
export const membersOf: Record<LeafVerb, ReadonlySet<string>> = {
  tool: new Set(["name", "input", "route", "timeout_ms", "key", "after", "on_failure"]),
  model: new Set([
    "prompt",
    "model",
    "tools",
    "instructions",
    "configuration",
    "attachments",
    "results",
    "retry",
    "key",
    "after",
    "on_failure"
  ]),
  ask: new Set(["prompt", "options", "multi", "timeout_ms", "key", "after", "on_failure"]),
  wait: new Set(["task", "run_public_id", "timeout_ms", "key", "after", "on_failure"])
}

export const defaultOnFailure: Record<LeafVerb, OnFailure> = {
  model: "halt",
  tool: "propagate",
  ask: "propagate",
  wait: "absorb"
}

const modelMembers: ReadonlySet<string> = new Set(["model", "reasoning_enabled", "reasoning_effort"])
const routeMembers: ReadonlySet<string> = new Set(["kind", "runner_executor_public_id"])

export const given = (value: unknown): boolean => value !== undefined && value !== null
const isText = (value: unknown): value is string => typeof value === "string" && value.trim().length > 0
export const isInteger = (value: unknown): value is number => typeof value === "number" && Number.isSafeInteger(value)

/** UTF-8 bytes of a value's whitespace-free JSON: what the spec's "canonical" bounds measure. */
export const canonicalBytes = (value: unknown): number => Buffer.byteLength(JSON.stringify(value) ?? "", "utf8")

const pick = (body: Readonly<Record<string, unknown>>, names: ReadonlyArray<string>): Record<string, unknown> =>
  Object.fromEntries(names.filter((name) => given(body[name])).map((name) => [name, body[name]]))

/** Reads a leaf's own members; `seed` when it is the create's first step under default/assembly. */
export const readLeaf = (
  verb: LeafVerb,
  body: Readonly<Record<string, unknown>>,
  base: LeafBase,
  reader: StepReader,
  context: ParseContext,
  seed: boolean
): Leaf => {
  const at = (member: string) => `${base.verbPath}.${member}`
  const { fault } = reader
  switch (verb) {
    case "tool": {
      const name = isText(body.name) ? body.name : undefined
      if (name === undefined) fault("tool_name_required", at("name"))
      else if (name.startsWith("svc.")) fault("reserved_tool_name", at("name"))
      let input: Readonly<Record<string, unknown>> = {}
      if (given(body.input)) {
        if (!isObject(body.input)) fault("invalid_tool_input", at("input"))
        else if (canonicalBytes(body.input) > limits.toolInputBytes) fault("tool_input_too_large", at("input"))
        else input = body.input
      }
      const runner = routeTarget(body.route, at("route"), context, fault)
      const timeoutMs = reader.timeout(body.timeout_ms, at("timeout_ms"), limits.timeoutMs)
      const announced = name === undefined ? undefined : runner?.tools.find((tool) => tool.name === name)
      if (runner !== undefined && name !== undefined && !name.startsWith("svc.") && announced === undefined) {
        fault("tool_not_served", at("name"))
      }
      const effective = timeoutMs ?? announced?.timeout_ms ?? limits.toolTimeoutMs
      return {
        ...base,
        verb,
        row: { tool_input: input, timeout_ms: effective },
        tool: {
          name: name ?? "",
          alias: null,
          target: {
            kind: "runner",
            executor: { executorId: runner?.publicId ?? "", displayName: runner?.displayName ?? "" }
          },
          timeoutMs: effective,
          ...(announced?.timeout_ms === undefined ? {} : { announcedTimeoutMs: announced.timeout_ms }),
          replayable: announced === undefined ? false : replayable(announced.effect_profile),
          toolCallId: base.key,
          input
        }
      }
    }
    case "model": {
      if (!isText(body.prompt)) fault("prompt_required", at("prompt"))
      const model = modelOf(body.model, at("model"), context, fault)
      const tools = toolsOf(body.tools, at("tools"), fault)
      if (given(body.instructions)) {
        if (typeof body.instructions !== "string") fault("unknown_step_option", at("instructions"))
        else if (seed) fault("instructions_raw_only", at("instructions"))
      }
      if (given(body.configuration) && !isObject(body.configuration)) fault("unknown_step_option", at("configuration"))
      if (given(body.attachments) && !Array.isArray(body.attachments)) fault("unknown_step_option", at("attachments"))
      let retry = 0
      if (given(body.retry)) {
        if (isInteger(body.retry) && body.retry >= 0 && body.retry <= limits.retry) retry = body.retry
        else fault("unknown_step_option", at("retry"))
      }
      const results = reader.refs(body.results, at("results"))
      const row = pick(body, ["prompt", "model", "instructions", "configuration", "attachments"])
      return { ...base, verb, row, results, model: model ?? "", retry, tools }
    }
    case "ask": {
      if (!isText(body.prompt)) fault("prompt_required", at("prompt"))
      const options = body.options
      const hasOptions = given(options)
      if (
        hasOptions &&
        (!Array.isArray(options) ||
          options.length === 0 ||
          !options.every(isText) ||
          new Set(options).size !== options.length)
      ) {
        fault("invalid_ask_options", at("options"))
      }
      if (given(body.multi) && (typeof body.multi !== "boolean" || (body.multi && !hasOptions))) {
        fault("invalid_ask_multi", at("multi"))
      }
      let timeoutMs: number = limits.askTimeoutMs
      if (given(body.timeout_ms)) {
        if (isInteger(body.timeout_ms) && body.timeout_ms >= 1) {
          timeoutMs = Math.min(body.timeout_ms, limits.askTimeoutMs)
        } else fault("invalid_timeout_ms", at("timeout_ms"))
      }
      const row = { ...pick(body, ["prompt", "options", "multi"]), timeout_ms: timeoutMs }
      return { ...base, verb, row, timeoutMs }
    }
    case "wait": {
      const task = isText(body.task) ? body.task : undefined
      if (task === undefined) fault("wait_target_not_found", at("task"))
      let run: string | null = null
      if (given(body.run_public_id)) {
        if (typeof body.run_public_id === "string") run = body.run_public_id
        else fault("unknown_step_option", at("run_public_id"))
      }
      if (run !== null && task !== undefined && !context.lookups.otherRunTask(run, task)) {
        fault("wait_target_not_found", at("task"))
      }
      const timeoutMs = reader.timeout(body.timeout_ms, at("timeout_ms"), limits.timeoutMs) ?? null
      const target = task !== undefined && run === null ? { key: task, path: at("task") } : null
      const row = timeoutMs === null ? {} : { timeout_ms: timeoutMs }
      return { ...base, verb, row, target, run, task: task ?? "", timeoutMs }
    }
  }
}

type Report = StepReader["fault"]

/**
 * The runner a tool step goes to: its route's named runner, else the run's default runner;
 * undefined (with the fault listed) when neither serves.
 */
const routeTarget = (route: unknown, at: string, context: ParseContext, fault: Report): RunnerInfo | undefined => {
  const fallback = () => {
    if (context.defaultRunner === null) fault("runner_target_required", at)
    else if (!context.defaultRunner.eligible) fault("runner_not_eligible", at)
    else return context.defaultRunner
    return undefined
  }
  if (!given(route)) return fallback()
  if (!isObject(route)) {
    fault("invalid_tool_route", at)
    return undefined
  }
  let sound = true
  for (const name of Object.keys(route)) {
    if (!routeMembers.has(name)) {
      fault("invalid_tool_route", `${at}.${name}`)
      sound = false
    }
  }
  if (route.kind !== "runner") {
    fault("invalid_tool_route", `${at}.kind`)
    sound = false
  }
  const named = route.runner_executor_public_id
  if (given(named) && typeof named !== "string") {
    fault("invalid_tool_route", `${at}.runner_executor_public_id`)
    return undefined
  }
  if (!sound) return undefined
  if (typeof named !== "string") return fallback()
  const runner = context.lookups.runner(named)
  if (runner === undefined || !runner.eligible) {
    fault("runner_not_eligible", `${at}.runner_executor_public_id`)
    return undefined
  }
  return runner
}

/** A model step's `model` object: its ref when well formed and known. */
const modelOf = (model: unknown, at: string, context: ParseContext, fault: Report): string | undefined => {
  if (!isObject(model) || !isText(model.model)) {
    fault("model_required", at)
    return undefined
  }
  for (const name of Object.keys(model)) {
    if (!modelMembers.has(name)) fault("unknown_step_option", `${at}.${name}`)
  }
  if (given(model.reasoning_enabled) && typeof model.reasoning_enabled !== "boolean") {
    fault("unknown_step_option", `${at}.reasoning_enabled`)
  }
  if (given(model.reasoning_effort) && typeof model.reasoning_effort !== "string") {
    fault("unknown_step_option", `${at}.reasoning_effort`)
  }
  if (!context.lookups.model(model.model)) {
    fault("unknown_model", at)
    return undefined
  }
  return model.model
}

/** A model step's `tools`: distinct printable names of 1 to 128 characters. */
const toolsOf = (tools: unknown, at: string, fault: Report): ReadonlyArray<string> => {
  if (!given(tools)) return []
  if (!Array.isArray(tools)) {
    fault("invalid_tools", at)
    return []
  }
  const names = new Set<string>()
  tools.forEach((name, j) => {
    if (!isPrintableText(name, 1, 128) || names.has(name)) fault("invalid_tools", `${at}[${j}]`)
    else names.add(name)
  })
  return [...names]
}
