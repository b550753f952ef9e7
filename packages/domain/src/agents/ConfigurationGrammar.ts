// The grammar of an agent's declared configuration (spec "Agent configuration") as a schema:
// every field's vocabulary, the tool declarations against the kernel catalog, the prompt template,
// and the rules across fields as checks naming the field they fault. Every schema carries the
// message its failure reads (after the field's path); unknown members of the configuration and
// of tool entries are ignored, those of the other objects refused.
import { Schema } from "effect"
import { type KernelTool, kernelTool, kernelToolByWire } from "../executors/KernelTools.ts"
import { isPrintableText } from "../kernel/Text.ts"

/** Limits of the configuration's own parts. */
export const configurationLimits = {
  promptTemplateBytes: 64 * 1024,
  tools: 128,
  kernelTools: 64,
  runnerCandidates: 16,
  runnerToolNames: 256,
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
const jsonPointerPattern = /^(\/([^~]|~[01])*)*$/

// ---------------------------------------------------------------------------------------------
// Building blocks: each reads `message` when it fails, whether its type or its check failed.

const said = <S extends Schema.Top>(schema: S, message: string): S["Rebuild"] => schema.annotate({ message })

const stringWhere = (message: string, valid: (text: string) => boolean) =>
  Schema.String.annotate({ message }).check(Schema.makeFilter(valid, { message }))

const matching = (pattern: RegExp, message: string) => stringWhere(message, (text) => pattern.test(text))

const printable = (max: number, message: string) => stringWhere(message, (text) => isPrintableText(text, 1, max))

const oneOf = <const L extends ReadonlyArray<string>>(values: L, message: string) =>
  Schema.Literals(values).annotate({ message })

const jsonObject = (message: string) => said(Schema.Record(Schema.String, Schema.Unknown), message)

/** `null` or the schema; a value of neither type reads `message`. */
const nullable = <S extends Schema.Top>(schema: S, message: string) => Schema.NullOr(schema).annotate({ message })

/** An optional member that may also be null. */
const member = <S extends Schema.Top>(schema: S, message: string) => Schema.optionalKey(nullable(schema, message))

const list = <S extends Schema.Top>(item: S, max: number) =>
  Schema.Array(item)
    .annotate({ message: "must be an array or null" })
    .check(Schema.isMaxLength(max, { message: `may hold at most ${max} items` }))

/** No two items with the same key; the repeat is named by its index. */
const unique = <A>(key: (item: A) => string, repeated: (item: A) => string) =>
  Schema.makeFilter((items: ReadonlyArray<A>) => {
    const seen = new Set<string>()
    for (const [index, item] of items.entries()) {
      if (seen.has(key(item))) return { path: [index], issue: repeated(item) }
      seen.add(key(item))
    }
    return undefined
  })

const uniqueIgnoringCase = unique(
  (item: string) => item.toLowerCase(),
  (item) => `repeats ${JSON.stringify(item)}`
)

/** An object whose members are exactly `fields`: another member is named and refused. */
const closed = <const Fields extends Schema.Struct.Fields>(fields: Fields, message: string, stranger: string) =>
  Schema.StructWithRest(Schema.Struct(fields), [Schema.Record(Schema.String, Schema.Unknown)])
    .annotate({ message })
    .check(
      Schema.makeFilter((value: object) => {
        const extra = Object.keys(value).find((key) => !Object.hasOwn(fields, key))
        return extra === undefined ? undefined : { path: [extra], issue: stranger }
      })
    )

// ---------------------------------------------------------------------------------------------
// tool_definitions and kernel_tools

const functionName = matching(functionNamePattern, "must be 1 to 64 letters, digits, '_' or '-'")
const toolName = matching(functionNamePattern, "must be a tool name")
const deferLoading = Schema.optionalKey(said(Schema.Boolean, "must be a boolean"))
const canonicalKernelTool = stringWhere(
  "must be the canonical name of a kernel tool",
  (name) => kernelTool(name) !== undefined
)

/** `{type: function, function: {name, description?, parameters?}, defer_loading?, runner_executor_public_id?}` */
const FunctionDeclaration = Schema.Struct({
  type: Schema.Literal("function"),
  function: said(
    Schema.Struct({
      name: functionName,
      description: Schema.optionalKey(said(Schema.String, "must be a string")),
      parameters: Schema.optionalKey(
        said(
          Schema.StructWithRest(
            Schema.Struct({ type: said(Schema.Literal("object"), "must be object (a JSON Schema of an object)") }),
            [Schema.Record(Schema.String, Schema.Unknown)]
          ),
          "must be a JSON Schema object with type object"
        )
      )
    }),
    "must be {name, description, parameters}"
  ),
  defer_loading: deferLoading,
  runner_executor_public_id: Schema.optionalKey(matching(uuidPattern, "must be a runner's UUID"))
})

/** `{type: kernel, name: <canonical>}`: the catalog's schema of that tool. */
const KernelDeclaration = Schema.Struct({
  type: Schema.Literal("kernel"),
  name: canonicalKernelTool,
  defer_loading: deferLoading
})

const notAParameter = (tool: KernelTool, key: string) =>
  Object.hasOwn(tool.parameters.properties, key) ? undefined : `is not a parameter of ${tool.canonical}`

/** `{name, canonical, params?, omit?, description?, defer_loading?}`: a kernel tool under another name. */
const AliasDeclaration = Schema.Struct({
  // An entry of another type lands here (it matches neither literal), so this is where it is named.
  type: Schema.optionalKey(
    said(Schema.Never, "must be function or kernel (or an alias declaration {name, canonical})")
  ),
  name: functionName,
  canonical: canonicalKernelTool,
  params: Schema.optionalKey(
    said(
      Schema.Record(Schema.String, jsonObject("must be a JSON Schema object")),
      "must be an object of parameter schemas"
    )
  ),
  omit: Schema.optionalKey(
    said(Schema.Array(said(Schema.String, "must be a parameter name")), "must be an array of parameter names")
  ),
  description: Schema.optionalKey(said(Schema.String, "must be a string")),
  defer_loading: deferLoading
}).check(
  Schema.makeFilter((alias) => {
    const tool = kernelTool(alias.canonical)!
    for (const key of Object.keys(alias.params ?? {})) {
      const fault = notAParameter(tool, key)
      if (fault) return { path: ["params", key], issue: fault }
    }
    for (const [index, key] of (alias.omit ?? []).entries()) {
      const fault =
        notAParameter(tool, key) ??
        (tool.parameters.required.includes(key) ? `names a required parameter of ${tool.canonical}` : undefined)
      if (fault) return { path: ["omit", index], issue: fault }
    }
    return undefined
  })
)

const ToolDeclaration = Schema.Union([FunctionDeclaration, KernelDeclaration, AliasDeclaration]).annotate({
  message: "must be an object"
})

export type ToolDeclaration = typeof ToolDeclaration.Type

/** The name a declaration exposes to the model: a kernel entry's is its catalog wire name. */
export const exposedName = (tool: ToolDeclaration): string =>
  tool.type === "function" ? tool.function.name : tool.type === "kernel" ? kernelTool(tool.name)!.wire : tool.name

const ToolDeclarations = list(ToolDeclaration, configurationLimits.tools).check(
  unique(exposedName, (tool) => `repeats the tool name ${JSON.stringify(exposedName(tool))}`)
)

const ImportedKernelTool = Schema.String.annotate({ message: "must be a kernel tool name" }).check(
  Schema.makeFilter((name: string) => {
    if (name.includes("*")) return "may not be a wildcard"
    const wire = kernelToolByWire(name)
    if (wire) return `is a wire name; use the canonical ${JSON.stringify(wire.canonical)}`
    return kernelTool(name) ? undefined : `is not a kernel tool: ${JSON.stringify(name)}`
  })
)

// ---------------------------------------------------------------------------------------------
// Approval, prompt assembly, compaction, hooks, memory

const ApprovalRule = closed(
  {
    tool: stringWhere("must be a tool name, an alternation such as a|b, or a name with a * suffix", (tool) =>
      tool.split("|").every((part) => toolPatternAlternative.test(part))
    ),
    path: Schema.optionalKey(matching(jsonPointerPattern, "must be a JSON pointer into the tool input")),
    match: Schema.optionalKey(printable(1024, "must be a pattern of 1 to 1024 printable characters")),
    verdict: oneOf(["allow", "deny", "ask"], "must be allow, deny or ask"),
    reason: Schema.optionalKey(printable(1024, "must be 1 to 1024 printable characters")),
    origin: Schema.optionalKey(oneOf(["model", "hook", "any"], "must be model, hook or any"))
  },
  "must be an object",
  "is not a member of this object"
)

const promptSections = ["system_prompt", "prompt_documents", "memory", "skills", "tools", "environment"] as const

export type PromptSection = (typeof promptSections)[number]

const block = <const Fields extends Schema.Struct.Fields>(type: string, fields: Fields) =>
  closed({ type: Schema.Literal(type), ...fields }, "a block must be an object", `is not a member of a ${type} block`)

const PromptBlock = Schema.Union([
  block("text", { text: stringWhere("must be a nonempty string", (text) => text.length > 0) }),
  block("section", { section: oneOf(promptSections, `must be one of ${promptSections.join(", ")}`) }),
  block("prompt_document", { slot: matching(slotPattern, "must be a prompt document slot name") }),
  // A block of another type lands here (it matches no literal), so this is where it is named.
  Schema.Struct({
    type: said(Schema.Never, "must be text, section or prompt_document").annotateKey({
      messageMissingKey: "is required: text, section or prompt_document"
    })
  })
]).annotate({ message: "a block must be an object" })

const variableReference = /\{\{\s*([^}]*?)\s*\}\}/g

/** `{blocks, variables?}`: faults inside it are named by a JSON pointer. */
const PromptTemplate = closed(
  {
    blocks: Schema.Array(PromptBlock)
      .annotate({ message: "must be an array of blocks" })
      .check(
        Schema.isMinLength(1, { message: "must hold at least one block" }),
        Schema.isMaxLength(configurationLimits.blocks, {
          message: `may hold at most ${configurationLimits.blocks} blocks`
        }),
        Schema.makeFilter((blocks: ReadonlyArray<{ readonly type: string; readonly section?: unknown }>) => {
          const seen = new Set<unknown>()
          for (const [index, { type, section }] of blocks.entries()) {
            if (type !== "section") continue
            if (seen.has(section)) return { path: [index, "section"], issue: "repeats a section" }
            seen.add(section)
          }
          return undefined
        })
      ),
    variables: Schema.optionalKey(
      Schema.Record(Schema.String, said(Schema.String, "a variable default must be a string"))
        .annotate({ message: "must be an object of variable defaults" })
        .check(
          Schema.makeFilter((variables: Readonly<Record<string, string>>) => {
            const name = Object.keys(variables).find((key) => !variablePattern.test(key))
            return name === undefined
              ? undefined
              : { path: [name], issue: "a variable name is a lowercase letter or _ then letters, digits or _" }
          })
        )
    )
  },
  "must be an object {blocks, variables?}",
  "is not a member of a prompt template"
).check(
  Schema.makeFilter((template) => {
    const variables = template.variables ?? {}
    for (const [index, block] of template.blocks.entries()) {
      if (block.type !== "text") continue
      for (const [, name] of (block as { readonly text: string }).text.matchAll(variableReference)) {
        if (!Object.hasOwn(variables, name!)) {
          return { path: ["blocks", index, "text"], issue: `refers to an undeclared variable ${JSON.stringify(name)}` }
        }
      }
    }
    return undefined
  })
)

const modelReference = (message: string) => matching(modelPattern, message)

const CompactionPolicy = closed(
  {
    mode: oneOf(["kernel", "delegate", "off"], "must be kernel, delegate or off").annotateKey({
      messageMissingKey: "is required: kernel, delegate or off"
    }),
    tool_name: Schema.optionalKey(toolName),
    model: member(modelReference("must be a provider/model reference"), "must be a provider/model reference"),
    reasoning_enabled: member(said(Schema.Boolean, "must be a boolean"), "must be a boolean"),
    reasoning_effort: member(
      oneOf(["minimal", "low", "medium", "high"], "must be one of minimal, low, medium, high (or null)"),
      "must be one of minimal, low, medium, high (or null)"
    )
  },
  "must be an object or null",
  "is not a member of this object"
).check(
  Schema.makeFilter((policy) => {
    if (policy.mode === "delegate" && policy.tool_name === undefined) {
      return { path: ["tool_name"], issue: "is required when mode is delegate" }
    }
    if (policy.mode !== "delegate" && policy.tool_name !== undefined) {
      return { path: ["tool_name"], issue: "is only for mode delegate" }
    }
    if (policy.reasoning_effort != null && policy.reasoning_enabled === false) {
      return { path: ["reasoning_effort"], issue: "needs reasoning_enabled not false" }
    }
    return undefined
  })
)

const hookEvents = ["turn_start", "pre_compact", "post_compact", "stop"] as const

const LifecycleHook = Schema.optionalKey(
  closed(
    { tool: toolName, input: Schema.optionalKey(jsonObject("must be an object")) },
    "must be {tool, input?}",
    "is not a member of this object"
  )
)

const LifecycleHooks = closed(
  { turn_start: LifecycleHook, pre_compact: LifecycleHook, post_compact: LifecycleHook, stop: LifecycleHook },
  "must be an object or null",
  `is not a lifecycle event (${hookEvents.join(", ")})`
)

const memoryRoots = ["conversation", "workspace", "user", "agent", "speaker"] as const

const MemoryContextLimit = closed(
  {
    roots: member(
      list(oneOf(memoryRoots, `must be one of ${memoryRoots.join(", ")}`), memoryRoots.length).check(
        unique(
          (root: string) => root,
          () => "repeats a root"
        )
      ),
      "must be an array or null"
    ),
    access: member(oneOf(["read", "read_write"], "must be read or read_write (or null)"), "must be read or read_write")
  },
  "must be an object or null",
  "is not a member of this object"
)

// ---------------------------------------------------------------------------------------------
// The configuration

const vocabulary = <const L extends ReadonlyArray<string>>(values: L) => {
  const message = `must be one of ${values.join(", ")} (or null)`
  return member(oneOf(values, message), message)
}

/** The declared configuration as a PUT carries it, fields in the order their faults are judged. */
export const DeclaredConfiguration = Schema.Struct({
  tool_definitions: member(ToolDeclarations, "must be an array or null"),
  kernel_tools: member(
    list(ImportedKernelTool, configurationLimits.kernelTools).check(
      unique(
        (name: string) => name,
        (name) => `repeats ${JSON.stringify(name)}`
      )
    ),
    "must be an array or null"
  ),
  runner_executor_public_ids: member(
    list(matching(uuidPattern, "must be a runner UUID"), configurationLimits.runnerCandidates).check(
      uniqueIgnoringCase
    ),
    "must be an array or null"
  ),
  runner_tool_names: member(
    list(
      printable(128, "must be a served tool name of 1 to 128 printable characters"),
      configurationLimits.runnerToolNames
    ).check(uniqueIgnoringCase),
    "must be an array or null"
  ),
  approval_mode: vocabulary(["bypass", "ask", "rules"]),
  approval_rules: member(list(ApprovalRule, configurationLimits.approvalRules), "must be an array or null"),
  prompt_mechanism: vocabulary(["raw", "assembly", "default"]),
  prompt_template: member(PromptTemplate, "must be an object {blocks, variables?} or null"),
  compaction_policy: member(CompactionPolicy, "must be an object or null"),
  lifecycle_hooks: member(LifecycleHooks, "must be an object or null"),
  memory_context_limit: member(MemoryContextLimit, "must be an object or null"),
  conversation_reach: vocabulary(["workspace", "subtree"]),
  default_model: member(modelReference("must be a provider/model reference"), "must be a provider/model reference"),
  fallback_models: member(
    list(modelReference("must be a complete provider/model reference"), configurationLimits.fallbackModels).check(
      uniqueIgnoringCase
    ),
    "must be an array or null"
  )
})
  .annotate({ message: "must be an object" })
  .check(
    Schema.makeFilter((declared) =>
      declared.prompt_template != null &&
      Buffer.byteLength(JSON.stringify(declared.prompt_template), "utf8") > configurationLimits.promptTemplateBytes
        ? { path: ["prompt_template"], issue: "is larger than 64 KiB" }
        : undefined
    ),
    Schema.makeFilter((declared) => {
      const runnersImportTools =
        (declared.runner_executor_public_ids?.length ?? 0) > 0 && declared.runner_tool_names?.length !== 0
      const needsApproval =
        (declared.tool_definitions?.length ?? 0) > 0 ||
        (declared.kernel_tools?.length ?? 0) > 0 ||
        Object.keys(declared.lifecycle_hooks ?? {}).length > 0 ||
        runnersImportTools
      const mode = declared.approval_mode ?? null
      if (needsApproval && mode === null) {
        return {
          path: ["approval_mode"],
          issue:
            "is required when tools, kernel tools, lifecycle hooks or runner candidates importing tools are declared"
        }
      }
      if (mode === "rules" && declared.approval_rules == null) {
        return { path: ["approval_rules"], issue: "is required when approval_mode is rules" }
      }
      if (mode !== "rules" && declared.approval_rules != null) {
        return { path: ["approval_rules"], issue: "is only for approval_mode rules" }
      }
      const assembly = declared.prompt_mechanism === "assembly"
      if (assembly && declared.prompt_template == null) {
        return { path: ["prompt_template"], issue: "is required when prompt_mechanism is assembly" }
      }
      if (!assembly && declared.prompt_template != null) {
        return { path: ["prompt_template"], issue: "is only for prompt_mechanism assembly" }
      }
      return undefined
    })
  )

export type DeclaredConfiguration = typeof DeclaredConfiguration.Type
