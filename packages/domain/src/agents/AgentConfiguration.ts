// An agent's declared configuration (spec "Agent configuration"): decoding a declaration with its
// grammar (ConfigurationGrammar.ts) into the normalized form stored on the user row, and the
// read-back (every field null, the tool list [], until declared; aliases as full function
// blocks). A fault names its field (`configuration.tool_definitions[2].function.name`), or a JSON
// pointer for prompt_template grammar faults (`/configuration/prompt_template/blocks/0/type`).
import { Result, type SchemaIssue, SchemaParser } from "effect"
import { kernelTool, renderKernelDescription } from "../executors/KernelTools.ts"
import { isObject } from "../kernel/Json.ts"
import { dottedPath, firstFault } from "../kernel/SchemaFaults.ts"
import { DeclaredConfiguration, exposedName, type PromptSection, type ToolDeclaration } from "./ConfigurationGrammar.ts"

export interface ConfigurationFault {
  readonly field: string
  readonly message: string
}

type JsonObject = { readonly [key: string]: unknown }

/** A function declaration as stored and read back: description and parameters always present. */
export interface FunctionTool {
  readonly type: "function"
  readonly function: { readonly name: string; readonly description: string; readonly parameters: JsonObject }
  readonly defer_loading?: boolean
  readonly runner_executor_public_id?: string
}

export interface KernelToolEntry {
  readonly type: "kernel"
  readonly name: string
  readonly defer_loading?: boolean
}

export interface AliasTool {
  readonly name: string
  readonly canonical: string
  readonly params?: { readonly [parameter: string]: JsonObject }
  readonly omit?: ReadonlyArray<string>
  readonly description?: string
  readonly defer_loading?: boolean
}

export type PromptBlock =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "section"; readonly section: PromptSection }
  | { readonly type: "prompt_document"; readonly slot: string }

type Declared<K extends keyof DeclaredConfiguration> = NonNullable<DeclaredConfiguration[K]> | null
type DeclaredLimit = NonNullable<DeclaredConfiguration["memory_context_limit"]>

export interface StoredConfiguration {
  readonly tool_definitions: ReadonlyArray<FunctionTool | KernelToolEntry | AliasTool>
  readonly kernel_tools: ReadonlyArray<string> | null
  readonly runner_executor_public_ids: ReadonlyArray<string> | null
  readonly runner_tool_names: ReadonlyArray<string> | null
  readonly approval_mode: Declared<"approval_mode">
  readonly approval_rules: Declared<"approval_rules">
  readonly prompt_mechanism: Declared<"prompt_mechanism">
  readonly prompt_template: {
    readonly blocks: ReadonlyArray<PromptBlock>
    readonly variables: { readonly [name: string]: string }
  } | null
  readonly compaction_policy: Declared<"compaction_policy">
  readonly lifecycle_hooks: Declared<"lifecycle_hooks">
  readonly memory_context_limit: {
    readonly roots: NonNullable<DeclaredLimit["roots"]> | null
    readonly access: NonNullable<DeclaredLimit["access"]> | null
  } | null
  readonly conversation_reach: Declared<"conversation_reach">
  readonly default_model: string | null
  readonly fallback_models: ReadonlyArray<string> | null
}

/** What the profile and the named-agent door show: aliases read back as function blocks. */
export type ConfigurationView = Omit<StoredConfiguration, "tool_definitions"> & {
  readonly tool_definitions: ReadonlyArray<FunctionTool | KernelToolEntry>
}

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

export const undeclaredConfiguration = (): ConfigurationView => ({
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

/** One declaration as stored: canonical names, defaults filled in, runner ids in lower case. */
const storedTool = (tool: ToolDeclaration): FunctionTool | KernelToolEntry | AliasTool => {
  const defer = tool.defer_loading === undefined ? {} : { defer_loading: tool.defer_loading }
  if (tool.type === "function") {
    const runner = tool.runner_executor_public_id
    return {
      type: "function",
      function: {
        name: tool.function.name,
        description: tool.function.description ?? "",
        parameters: tool.function.parameters ?? { type: "object", properties: {} }
      },
      ...defer,
      ...(runner === undefined ? {} : { runner_executor_public_id: runner.toLowerCase() })
    }
  }
  if (tool.type === "kernel") return { type: "kernel", name: kernelTool(tool.name)!.canonical, ...defer }
  return {
    name: tool.name,
    canonical: tool.canonical,
    ...(tool.params === undefined ? {} : { params: tool.params }),
    ...(tool.omit === undefined ? {} : { omit: [...new Set(tool.omit)] }),
    ...(tool.description === undefined ? {} : { description: tool.description }),
    ...defer
  }
}

/** The stored form of a decoded declaration: tools sorted by exposed name, absent fields null. */
const normalize = (declared: DeclaredConfiguration): StoredConfiguration => {
  const tools = (declared.tool_definitions ?? [])
    .map((tool) => ({ name: exposedName(tool), stored: storedTool(tool) }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  const template = declared.prompt_template ?? null
  const limit = declared.memory_context_limit ?? null
  return {
    tool_definitions: tools.map((tool) => tool.stored),
    kernel_tools: declared.kernel_tools ?? null,
    runner_executor_public_ids: declared.runner_executor_public_ids?.map((id) => id.toLowerCase()) ?? null,
    runner_tool_names: declared.runner_tool_names ?? null,
    approval_mode: declared.approval_mode ?? null,
    approval_rules: declared.approval_rules ?? null,
    prompt_mechanism: declared.prompt_mechanism ?? null,
    prompt_template:
      template === null
        ? null
        : { blocks: template.blocks as ReadonlyArray<PromptBlock>, variables: template.variables ?? {} },
    compaction_policy: declared.compaction_policy ?? null,
    lifecycle_hooks: declared.lifecycle_hooks ?? null,
    memory_context_limit: limit === null ? null : { roots: limit.roots ?? null, access: limit.access ?? null },
    conversation_reach: declared.conversation_reach ?? null,
    default_model: declared.default_model ?? null,
    fallback_models: declared.fallback_models ?? null
  }
}

const pointerSegment = (key: PropertyKey) => String(key).replace(/~/g, "~0").replace(/\//g, "~1")

/**
 * The fault a decoding failure answers. A fault inside prompt_template's grammar is named by a
 * JSON pointer (spec); the rules of the configuration as a whole (its size, the mechanism it
 * needs) and every other fault name the field.
 */
const faultOf = (issue: SchemaIssue.Issue): ConfigurationFault => {
  const { path, message, checks } = firstFault(issue)
  const byConfigurationRule = checks.some((check) => check.at.length === 0)
  if (path[0] === "prompt_template" && !byConfigurationRule) {
    const pointer = `/configuration/${path.map(pointerSegment).join("/")}`
    return { field: pointer, message: `configuration.prompt_template is invalid at ${pointer}: ${message}` }
  }
  const field = path.length === 0 ? "configuration" : `configuration.${dottedPath(path)}`
  return { field, message: `${field} ${message}` }
}

const decodeDeclared = SchemaParser.decodeUnknownResult(DeclaredConfiguration)

/** Decodes a declared configuration; answers its stored (normalized) form or the first fault. */
export const validateConfiguration = (
  raw: unknown
): { readonly configuration: StoredConfiguration } | { readonly fault: ConfigurationFault } => {
  const decoded = decodeDeclared(raw)
  return Result.isSuccess(decoded) ? { configuration: normalize(decoded.success) } : { fault: faultOf(decoded.failure) }
}

/**
 * An alias declaration read back as the full function block it exposes; its description names
 * other catalog tools by the aliases `names` maps their wire names to. Stored aliases were
 * decoded against this catalog, which only grows.
 */
const renderTool = (
  stored: FunctionTool | KernelToolEntry | AliasTool,
  names: ReadonlyMap<string, string>
): FunctionTool | KernelToolEntry => {
  if (!("canonical" in stored)) return stored
  const tool = kernelTool(stored.canonical)!
  const omit = new Set(stored.omit ?? [])
  const params = stored.params ?? {}
  const properties = Object.fromEntries(
    Object.entries(tool.parameters.properties)
      .filter(([key]) => !omit.has(key))
      .map(([key, schema]) => [key, params[key] ?? schema])
  )
  return {
    type: "function",
    function: {
      name: stored.name,
      description: stored.description ?? renderKernelDescription(tool, names),
      parameters: { type: "object", properties, required: tool.parameters.required.filter((key) => !omit.has(key)) }
    },
    ...(stored.defer_loading === undefined ? {} : { defer_loading: stored.defer_loading })
  }
}

/** The read-back of a stored configuration (null: nothing declared yet). */
export const renderConfiguration = (stored: unknown): ConfigurationView => {
  const base = undeclaredConfiguration()
  if (!isObject(stored)) return base
  const out: Record<string, unknown> = { ...base }
  for (const key of configurationFields) {
    if (stored[key] !== undefined && stored[key] !== null) out[key] = stored[key]
  }
  const tools = Array.isArray(stored.tool_definitions)
    ? (stored.tool_definitions as ReadonlyArray<FunctionTool | KernelToolEntry | AliasTool>)
    : []
  const aliases = new Map<string, string>()
  for (const entry of tools) {
    const aliased = "canonical" in entry ? kernelTool(entry.canonical) : undefined
    if (aliased && "canonical" in entry) aliases.set(aliased.wire, entry.name)
  }
  out.tool_definitions = tools.map((entry) => renderTool(entry, aliases))
  return out as unknown as ConfigurationView
}
