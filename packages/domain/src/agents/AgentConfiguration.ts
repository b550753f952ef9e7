// An agent's declared configuration (spec "Agent configuration"): validation of every field's
// vocabulary and the cross-field rules, the normalized form stored on the user row, and the
// read-back (every field null, the tool list [], until declared; aliases as full function blocks).
// A fault names its field (`configuration.approval_mode`), or a JSON pointer for prompt_template
// grammar faults (`/configuration/prompt_template/blocks/0/type`).
import { kernelTool, kernelToolByWire, renderKernelDescription } from "../executors/KernelTools.ts"
import { isPrintableText } from "../kernel/Text.ts"

export interface ConfigurationFault {
  readonly field: string
  readonly message: string
}

class Fault {
  readonly field: string
  readonly message: string
  constructor(field: string, message: string) {
    this.field = field
    this.message = message
  }
}

type Json = unknown
type JsonObject = Record<string, Json>

export const configurationFields = [
  "tool_definitions",
  "kernel_tools",
  "runner_executor_public_ids",
  "runner_tool_names",
  "approval_mode",
  "approval_rules",
  "prompt_mechanism",
  "prompt_template",
  "compaction_policy",
  "lifecycle_hooks",
  "memory_context_limit",
  "conversation_reach",
  "default_model",
  "fallback_models"
] as const

export interface StoredConfiguration {
  readonly tool_definitions: ReadonlyArray<unknown>
  readonly kernel_tools: ReadonlyArray<string> | null
  readonly runner_executor_public_ids: ReadonlyArray<string> | null
  readonly runner_tool_names: ReadonlyArray<string> | null
  readonly approval_mode: string | null
  readonly approval_rules: ReadonlyArray<unknown> | null
  readonly prompt_mechanism: string | null
  readonly prompt_template: unknown
  readonly compaction_policy: unknown
  readonly lifecycle_hooks: unknown
  readonly memory_context_limit: unknown
  readonly conversation_reach: string | null
  readonly default_model: string | null
  readonly fallback_models: ReadonlyArray<string> | null
}

export const undeclaredConfiguration = (): StoredConfiguration => ({
  tool_definitions: [],
  kernel_tools: null,
  runner_executor_public_ids: null,
  runner_tool_names: null,
  approval_mode: null,
  approval_rules: null,
  prompt_mechanism: null,
  prompt_template: null,
  compaction_policy: null,
  lifecycle_hooks: null,
  memory_context_limit: null,
  conversation_reach: null,
  default_model: null,
  fallback_models: null
})

/** Limits of the configuration's own parts. */
export const configurationLimits = {
  promptTemplateBytes: 64 * 1024,
  tools: 128,
  runnerCandidates: 16,
  approvalRules: 256,
  fallbackModels: 16,
  blocks: 256
} as const

const functionNamePattern = /^[a-zA-Z0-9_-]{1,64}$/
const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const modelPattern = /^[a-z0-9][a-z0-9_.-]{0,63}\/[^\s/][^\s]{0,190}$/
const variablePattern = /^[a-z_][a-z0-9_]{0,63}$/
const slotPattern = /^[a-z0-9][a-z0-9_-]{0,63}$/
const toolPatternAlternative = /^(?:\*|[a-zA-Z0-9_.-]{1,128}\*?)$/

const isObject = (value: Json): value is JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const printable = (value: Json, max: number): value is string => isPrintableText(value, 1, max)

const fail = (field: string, message: string): never => {
  throw new Fault(field, `${field} ${message}`)
}

const arrayOrNull = (field: string, value: Json, max: number): ReadonlyArray<Json> | null => {
  if (value === null || value === undefined) return null
  if (!Array.isArray(value)) return fail(field, "must be an array or null")
  if (value.length > max) return fail(field, `may hold at most ${max} items`)
  return value
}

const oneOf = <const T extends string>(field: string, value: Json, vocabulary: ReadonlyArray<T>): T | null => {
  if (value === null || value === undefined) return null
  if (typeof value !== "string" || !vocabulary.includes(value as T)) {
    return fail(field, `must be one of ${vocabulary.join(", ")} (or null)`)
  }
  return value as T
}

const onlyKeys = (field: string, value: JsonObject, allowed: ReadonlyArray<string>) => {
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) fail(`${field}.${key}`, "is not a member of this object")
  }
}

/** One tool_definitions entry, normalized; answers its exposed (model-facing) name. */
const toolDefinition = (field: string, entry: Json): { readonly name: string; readonly stored: JsonObject } => {
  if (!isObject(entry)) return fail(field, "must be an object")
  const deferLoading = entry.defer_loading
  if (deferLoading !== undefined && typeof deferLoading !== "boolean") {
    fail(`${field}.defer_loading`, "must be a boolean")
  }
  const defer = deferLoading === undefined ? {} : { defer_loading: deferLoading }
  if (entry.type === "function") {
    const fn = entry.function
    if (!isObject(fn)) return fail(`${field}.function`, "must be {name, description, parameters}")
    if (typeof fn.name !== "string" || !functionNamePattern.test(fn.name)) {
      fail(`${field}.function.name`, "must be 1 to 64 letters, digits, '_' or '-'")
    }
    if (fn.description !== undefined && typeof fn.description !== "string") {
      fail(`${field}.function.description`, "must be a string")
    }
    if (fn.parameters !== undefined && (!isObject(fn.parameters) || fn.parameters.type !== "object")) {
      fail(`${field}.function.parameters`, "must be a JSON Schema object with type object")
    }
    const runner = entry.runner_executor_public_id
    if (runner !== undefined && (typeof runner !== "string" || !uuidPattern.test(runner))) {
      fail(`${field}.runner_executor_public_id`, "must be a runner's UUID")
    }
    const name = fn.name as string
    return {
      name,
      stored: {
        type: "function",
        function: {
          name,
          description: (fn.description as string | undefined) ?? "",
          parameters: fn.parameters ?? { type: "object", properties: {} }
        },
        ...defer,
        ...(runner === undefined ? {} : { runner_executor_public_id: (runner as string).toLowerCase() })
      }
    }
  }
  if (entry.type === "kernel") {
    if (typeof entry.name !== "string" || !kernelTool(entry.name)) {
      fail(`${field}.name`, "must be the canonical name of a kernel tool")
    }
    const tool = kernelTool(entry.name as string)!
    return { name: tool.wire, stored: { type: "kernel", name: tool.canonical, ...defer } }
  }
  if (entry.type === undefined && entry.canonical !== undefined) {
    if (typeof entry.name !== "string" || !functionNamePattern.test(entry.name)) {
      fail(`${field}.name`, "must be 1 to 64 letters, digits, '_' or '-'")
    }
    if (typeof entry.canonical !== "string" || !kernelTool(entry.canonical)) {
      fail(`${field}.canonical`, "must be the canonical name of a kernel tool")
    }
    const tool = kernelTool(entry.canonical as string)!
    const properties = Object.keys(tool.parameters.properties)
    if (entry.params !== undefined) {
      if (!isObject(entry.params)) fail(`${field}.params`, "must be an object of parameter schemas")
      for (const [key, schema] of Object.entries(entry.params as JsonObject)) {
        if (!properties.includes(key)) fail(`${field}.params.${key}`, `is not a parameter of ${tool.canonical}`)
        if (!isObject(schema)) fail(`${field}.params.${key}`, "must be a JSON Schema object")
      }
    }
    if (entry.omit !== undefined) {
      if (!Array.isArray(entry.omit)) fail(`${field}.omit`, "must be an array of parameter names")
      for (const [index, key] of (entry.omit as Array<Json>).entries()) {
        if (typeof key !== "string" || !properties.includes(key)) {
          fail(`${field}.omit[${index}]`, `is not a parameter of ${tool.canonical}`)
        }
        if (tool.parameters.required.includes(key as string)) {
          fail(`${field}.omit[${index}]`, `names a required parameter of ${tool.canonical}`)
        }
      }
    }
    if (entry.description !== undefined && typeof entry.description !== "string") {
      fail(`${field}.description`, "must be a string")
    }
    return {
      name: entry.name as string,
      stored: {
        name: entry.name,
        canonical: tool.canonical,
        ...(entry.params === undefined ? {} : { params: entry.params }),
        ...(entry.omit === undefined ? {} : { omit: [...new Set(entry.omit as Array<string>)] }),
        ...(entry.description === undefined ? {} : { description: entry.description }),
        ...defer
      }
    }
  }
  return fail(`${field}.type`, "must be function or kernel (or an alias declaration {name, canonical})")
}

const approvalRule = (field: string, rule: Json): JsonObject => {
  if (!isObject(rule)) return fail(field, "must be an object")
  onlyKeys(field, rule, ["tool", "path", "match", "verdict", "reason", "origin"])
  if (typeof rule.tool !== "string" || !rule.tool.split("|").every((part) => toolPatternAlternative.test(part))) {
    fail(`${field}.tool`, "must be a tool name, an alternation such as a|b, or a name with a * suffix")
  }
  if (rule.path !== undefined && (typeof rule.path !== "string" || !/^(\/([^~]|~[01])*)*$/.test(rule.path))) {
    fail(`${field}.path`, "must be a JSON pointer into the tool input")
  }
  if (rule.match !== undefined && !printable(rule.match, 1024)) {
    fail(`${field}.match`, "must be a pattern of 1 to 1024 printable characters")
  }
  if (!["allow", "deny", "ask"].includes(rule.verdict as string)) fail(`${field}.verdict`, "must be allow, deny or ask")
  if (rule.reason !== undefined && !printable(rule.reason, 1024)) {
    fail(`${field}.reason`, "must be 1 to 1024 printable characters")
  }
  if (rule.origin !== undefined && !["model", "hook", "any"].includes(rule.origin as string)) {
    fail(`${field}.origin`, "must be model, hook or any")
  }
  return rule
}

const sections = ["system_prompt", "prompt_documents", "memory", "skills", "tools", "environment"] as const

/** prompt_template grammar; faults name a JSON pointer. */
const promptTemplate = (value: Json): JsonObject => {
  const root = "/configuration/prompt_template"
  const at = (pointer: string, message: string): never => {
    throw new Fault(pointer, `configuration.prompt_template is invalid at ${pointer}: ${message}`)
  }
  if (!isObject(value)) return at(root, "must be an object {blocks, variables?}")
  if (Buffer.byteLength(JSON.stringify(value), "utf8") > configurationLimits.promptTemplateBytes) {
    fail("configuration.prompt_template", "is larger than 64 KiB")
  }
  for (const key of Object.keys(value)) {
    if (key !== "blocks" && key !== "variables") at(`${root}/${key}`, "is not a member of a prompt template")
  }
  const variables = value.variables ?? {}
  if (!isObject(variables)) at(`${root}/variables`, "must be an object of variable defaults")
  for (const [name, fallback] of Object.entries(variables as JsonObject)) {
    const pointer = `${root}/variables/${name.replace(/~/g, "~0").replace(/\//g, "~1")}`
    if (!variablePattern.test(name)) at(pointer, "a variable name is a lowercase letter or _ then letters, digits or _")
    if (typeof fallback !== "string") at(pointer, "a variable default must be a string")
  }
  const blocks = value.blocks
  if (!Array.isArray(blocks)) return at(`${root}/blocks`, "must be an array of blocks")
  if (blocks.length === 0) at(`${root}/blocks`, "must hold at least one block")
  if (blocks.length > configurationLimits.blocks)
    at(`${root}/blocks`, `may hold at most ${configurationLimits.blocks} blocks`)
  const seen = new Set<string>()
  for (const [index, block] of blocks.entries()) {
    const pointer = `${root}/blocks/${index}`
    if (!isObject(block)) at(pointer, "a block must be an object")
    const b = block as JsonObject
    const members: Record<string, ReadonlyArray<string>> = {
      text: ["type", "text"],
      section: ["type", "section"],
      prompt_document: ["type", "slot"]
    }
    const allowed = members[b.type as string]
    if (typeof b.type !== "string" || !allowed) at(`${pointer}/type`, "must be text, section or prompt_document")
    for (const key of Object.keys(b)) {
      if (!allowed!.includes(key)) at(`${pointer}/${key}`, `is not a member of a ${b.type as string} block`)
    }
    if (b.type === "text") {
      if (typeof b.text !== "string" || b.text.length === 0) at(`${pointer}/text`, "must be a nonempty string")
      for (const match of (b.text as string).matchAll(/\{\{\s*([^}]*?)\s*\}\}/g)) {
        if (!Object.hasOwn(variables as JsonObject, match[1]!)) {
          at(`${pointer}/text`, `refers to an undeclared variable ${JSON.stringify(match[1])}`)
        }
      }
    } else if (b.type === "section") {
      if (!sections.includes(b.section as (typeof sections)[number])) {
        at(`${pointer}/section`, `must be one of ${sections.join(", ")}`)
      }
      if (seen.has(b.section as string)) at(`${pointer}/section`, "repeats a section")
      seen.add(b.section as string)
    } else if (typeof b.slot !== "string" || !slotPattern.test(b.slot)) {
      at(`${pointer}/slot`, "must be a prompt document slot name")
    }
  }
  return { blocks, variables }
}

const compactionPolicy = (value: Json): JsonObject | null => {
  const field = "configuration.compaction_policy"
  if (value === null || value === undefined) return null
  if (!isObject(value)) return fail(field, "must be an object or null")
  onlyKeys(field, value, ["mode", "tool_name", "model", "reasoning_enabled", "reasoning_effort"])
  const mode = oneOf(`${field}.mode`, value.mode, ["kernel", "delegate", "off"])
  if (mode === null) fail(`${field}.mode`, "is required: kernel, delegate or off")
  if (mode === "delegate" && value.tool_name === undefined)
    fail(`${field}.tool_name`, "is required when mode is delegate")
  if (value.tool_name !== undefined) {
    if (mode !== "delegate") fail(`${field}.tool_name`, "is only for mode delegate")
    if (typeof value.tool_name !== "string" || !functionNamePattern.test(value.tool_name)) {
      fail(`${field}.tool_name`, "must be a tool name")
    }
  }
  if (
    value.model !== undefined &&
    value.model !== null &&
    (typeof value.model !== "string" || !modelPattern.test(value.model))
  ) {
    fail(`${field}.model`, "must be a provider/model reference")
  }
  if (
    value.reasoning_enabled !== undefined &&
    value.reasoning_enabled !== null &&
    typeof value.reasoning_enabled !== "boolean"
  ) {
    fail(`${field}.reasoning_enabled`, "must be a boolean")
  }
  const effort = oneOf(`${field}.reasoning_effort`, value.reasoning_effort, ["minimal", "low", "medium", "high"])
  if (effort !== null && value.reasoning_enabled === false) {
    fail(`${field}.reasoning_effort`, "needs reasoning_enabled not false")
  }
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined))
}

const hookEvents = ["turn_start", "pre_compact", "post_compact", "stop"] as const

const lifecycleHooks = (value: Json): JsonObject | null => {
  const field = "configuration.lifecycle_hooks"
  if (value === null || value === undefined) return null
  if (!isObject(value)) return fail(field, "must be an object or null")
  for (const [event, hook] of Object.entries(value)) {
    if (!hookEvents.includes(event as (typeof hookEvents)[number])) {
      fail(`${field}.${event}`, `is not a lifecycle event (${hookEvents.join(", ")})`)
    }
    if (!isObject(hook)) fail(`${field}.${event}`, "must be {tool, input?}")
    const h = hook as JsonObject
    onlyKeys(`${field}.${event}`, h, ["tool", "input"])
    if (typeof h.tool !== "string" || !functionNamePattern.test(h.tool))
      fail(`${field}.${event}.tool`, "must be a tool name")
    if (h.input !== undefined && !isObject(h.input)) fail(`${field}.${event}.input`, "must be an object")
  }
  return value
}

const memoryRoots = ["conversation", "workspace", "user", "agent", "speaker"] as const

const memoryContextLimit = (value: Json): JsonObject | null => {
  const field = "configuration.memory_context_limit"
  if (value === null || value === undefined) return null
  if (!isObject(value)) return fail(field, "must be an object or null")
  onlyKeys(field, value, ["roots", "access"])
  const roots = arrayOrNull(`${field}.roots`, value.roots, memoryRoots.length)
  for (const [index, root] of (roots ?? []).entries()) {
    if (!memoryRoots.includes(root as (typeof memoryRoots)[number])) {
      fail(`${field}.roots[${index}]`, `must be one of ${memoryRoots.join(", ")}`)
    }
    if (roots!.indexOf(root) !== index) fail(`${field}.roots[${index}]`, "repeats a root")
  }
  const access = oneOf(`${field}.access`, value.access, ["read", "read_write"])
  return { roots, access }
}

const uniqueStrings = (
  field: string,
  value: Json,
  max: number,
  valid: (item: string) => boolean,
  what: string
): ReadonlyArray<string> | null => {
  const items = arrayOrNull(field, value, max)
  if (items === null) return null
  const seen = new Set<string>()
  for (const [index, item] of items.entries()) {
    if (typeof item !== "string" || !valid(item)) fail(`${field}[${index}]`, `must be ${what}`)
    const key = (item as string).toLowerCase()
    if (seen.has(key)) fail(`${field}[${index}]`, `repeats ${JSON.stringify(item)}`)
    seen.add(key)
  }
  return items as ReadonlyArray<string>
}

/** Validates a declared configuration object; answers the stored (normalized) form or the fault. */
export const validateConfiguration = (
  raw: JsonObject
): { readonly configuration: StoredConfiguration } | { readonly fault: ConfigurationFault } => {
  try {
    const c = (name: string) => raw[name]
    const f = (name: string) => `configuration.${name}`

    const declared = arrayOrNull(f("tool_definitions"), c("tool_definitions"), configurationLimits.tools) ?? []
    const names = new Set<string>()
    const toolDefinitions = declared.map((entry, index) => {
      const { name, stored } = toolDefinition(`${f("tool_definitions")}[${index}]`, entry)
      if (names.has(name)) fail(`${f("tool_definitions")}[${index}]`, `repeats the tool name ${JSON.stringify(name)}`)
      names.add(name)
      return { name, stored }
    })
    toolDefinitions.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))

    const kernelList = arrayOrNull(f("kernel_tools"), c("kernel_tools"), 64)
    const kernel = new Set<string>()
    for (const [index, name] of (kernelList ?? []).entries()) {
      const field = `${f("kernel_tools")}[${index}]`
      if (typeof name !== "string") fail(field, "must be a kernel tool name")
      const text = name as string
      if (text.includes("*")) fail(field, "may not be a wildcard")
      const wire = kernelToolByWire(text)
      if (wire) fail(field, `is a wire name; use the canonical ${JSON.stringify(wire.canonical)}`)
      if (!kernelTool(text)) fail(field, `is not a kernel tool: ${JSON.stringify(text)}`)
      if (kernel.has(text)) fail(field, `repeats ${JSON.stringify(text)}`)
      kernel.add(text)
    }

    const runners = uniqueStrings(
      f("runner_executor_public_ids"),
      c("runner_executor_public_ids"),
      configurationLimits.runnerCandidates,
      (item) => uuidPattern.test(item),
      "a runner UUID"
    )
    const runnerToolNames = uniqueStrings(
      f("runner_tool_names"),
      c("runner_tool_names"),
      256,
      (item) => printable(item, 128),
      "a served tool name of 1 to 128 printable characters"
    )

    const approvalMode = oneOf(f("approval_mode"), c("approval_mode"), ["bypass", "ask", "rules"])
    const rules = arrayOrNull(f("approval_rules"), c("approval_rules"), configurationLimits.approvalRules)
    const approvalRules = rules?.map((rule, index) => approvalRule(`${f("approval_rules")}[${index}]`, rule)) ?? null

    const promptMechanism = oneOf(f("prompt_mechanism"), c("prompt_mechanism"), ["raw", "assembly", "default"])
    const templateRaw = c("prompt_template")
    const template = templateRaw === null || templateRaw === undefined ? null : promptTemplate(templateRaw)

    const compaction = compactionPolicy(c("compaction_policy"))
    const hooks = lifecycleHooks(c("lifecycle_hooks"))
    const memoryLimit = memoryContextLimit(c("memory_context_limit"))
    const reach = oneOf(f("conversation_reach"), c("conversation_reach"), ["workspace", "subtree"])
    const defaultModel = c("default_model")
    if (
      defaultModel !== null &&
      defaultModel !== undefined &&
      (typeof defaultModel !== "string" || !modelPattern.test(defaultModel))
    ) {
      fail(f("default_model"), "must be a provider/model reference")
    }
    const fallbacks = uniqueStrings(
      f("fallback_models"),
      c("fallback_models"),
      configurationLimits.fallbackModels,
      (item) => modelPattern.test(item),
      "a complete provider/model reference"
    )

    // Cross-field rules.
    const needsApproval =
      toolDefinitions.length > 0 ||
      (kernelList?.length ?? 0) > 0 ||
      (hooks !== null && Object.keys(hooks).length > 0) ||
      ((runners?.length ?? 0) > 0 && !(runnerToolNames !== null && runnerToolNames.length === 0))
    if (needsApproval && approvalMode === null) {
      fail(
        f("approval_mode"),
        "is required when tools, kernel tools, lifecycle hooks or runner candidates importing tools are declared"
      )
    }
    if (approvalMode === "rules" && approvalRules === null)
      fail(f("approval_rules"), "is required when approval_mode is rules")
    if (approvalMode !== "rules" && approvalRules !== null) fail(f("approval_rules"), "is only for approval_mode rules")
    if (promptMechanism === "assembly" && template === null) {
      fail(f("prompt_template"), "is required when prompt_mechanism is assembly")
    }
    if (promptMechanism !== "assembly" && template !== null) {
      fail(f("prompt_template"), "is only for prompt_mechanism assembly")
    }

    return {
      configuration: {
        tool_definitions: toolDefinitions.map((t) => t.stored),
        kernel_tools: kernelList as ReadonlyArray<string> | null,
        runner_executor_public_ids: runners?.map((id) => id.toLowerCase()) ?? null,
        runner_tool_names: runnerToolNames,
        approval_mode: approvalMode,
        approval_rules: approvalRules,
        prompt_mechanism: promptMechanism,
        prompt_template: template,
        compaction_policy: compaction,
        lifecycle_hooks: hooks,
        memory_context_limit: memoryLimit,
        conversation_reach: reach,
        default_model: (defaultModel as string | null | undefined) ?? null,
        fallback_models: fallbacks
      }
    }
  } catch (error) {
    if (error instanceof Fault) return { fault: { field: error.field, message: error.message } }
    throw error
  }
}

/**
 * An alias declaration read back as the full function block it exposes; its description names
 * other catalog tools by the aliases `names` maps their wire names to.
 */
const renderTool = (stored: JsonObject, names: ReadonlyMap<string, string>): JsonObject => {
  if (stored.canonical === undefined) return stored
  const tool = kernelTool(stored.canonical as string)
  if (!tool) return stored
  const omit = new Set((stored.omit as ReadonlyArray<string> | undefined) ?? [])
  const params = (stored.params as JsonObject | undefined) ?? {}
  const properties = Object.fromEntries(
    Object.entries(tool.parameters.properties)
      .filter(([key]) => !omit.has(key))
      .map(([key, schema]) => [key, params[key] ?? schema])
  )
  return {
    type: "function",
    function: {
      name: stored.name,
      description: (stored.description as string | undefined) ?? renderKernelDescription(tool, names),
      parameters: { type: "object", properties, required: tool.parameters.required.filter((key) => !omit.has(key)) }
    },
    ...(stored.defer_loading === undefined ? {} : { defer_loading: stored.defer_loading })
  }
}

/** The read-back of a stored configuration (null: nothing declared yet). */
export const renderConfiguration = (stored: unknown): StoredConfiguration => {
  const base = undeclaredConfiguration()
  if (!isObject(stored)) return base
  const out: Record<string, unknown> = { ...base }
  for (const key of configurationFields) {
    if (stored[key] !== undefined && stored[key] !== null) out[key] = stored[key]
  }
  const tools = Array.isArray(stored.tool_definitions) ? (stored.tool_definitions as Array<JsonObject>) : []
  const aliases = new Map<string, string>()
  for (const entry of tools) {
    const aliased = typeof entry.canonical === "string" ? kernelTool(entry.canonical) : undefined
    if (aliased) aliases.set(aliased.wire, entry.name as string)
  }
  out.tool_definitions = tools.map((entry) => renderTool(entry, aliases))
  return out as unknown as StoredConfiguration
}
