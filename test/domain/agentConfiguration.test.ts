// The agent configuration grammar (ConfigurationGrammar.ts) as validateConfiguration answers it:
// a fault names the field path it is at (`configuration.tool_definitions[2].name`), a fault inside
// prompt_template's grammar a JSON pointer, a rule across fields the field it asks of; a valid
// declaration comes back in its stored form.
import { validateConfiguration } from "@troupe/domain/agents/AgentConfiguration"
import { describe, expect, it } from "vitest"

const runner = "0190A4B2-0000-7000-8000-000000000001"

const fault = (configuration: unknown) => {
  const result = validateConfiguration(configuration)
  if (!("fault" in result)) throw new Error(`expected a fault, got ${JSON.stringify(result)}`)
  expect(result.fault.message).toContain(result.fault.field)
  return result.fault
}

const stored = (configuration: unknown) => {
  const result = validateConfiguration(configuration)
  if (!("configuration" in result)) throw new Error(`expected a configuration, got ${JSON.stringify(result)}`)
  return result.configuration
}

describe("field paths", () => {
  it("name the entry and the member inside it", () => {
    const tools = [
      { type: "function", function: { name: "lint" } },
      { type: "kernel", name: "svc.memory.read" },
      { name: "bad name", canonical: "svc.memory.write" }
    ]
    expect(fault({ approval_mode: "ask", tool_definitions: tools })).toEqual({
      field: "configuration.tool_definitions[2].name",
      message: "configuration.tool_definitions[2].name must be 1 to 64 letters, digits, '_' or '-'"
    })
    const at = (entry: unknown) => fault({ approval_mode: "ask", tool_definitions: [tools[0], entry] }).field
    expect(at({ type: "function", function: { name: "x", parameters: { type: "array" } } })).toBe(
      "configuration.tool_definitions[1].function.parameters.type"
    )
    expect(at({ type: "function", function: 3 })).toBe("configuration.tool_definitions[1].function")
    expect(at({ type: "function" })).toBe("configuration.tool_definitions[1].function")
    expect(at({ type: "function", function: { name: "x" }, defer_loading: "yes" })).toBe(
      "configuration.tool_definitions[1].defer_loading"
    )
    expect(at({ type: "function", function: { name: "x" }, runner_executor_public_id: "runner-1" })).toBe(
      "configuration.tool_definitions[1].runner_executor_public_id"
    )
    expect(at({ name: "peek", canonical: "svc.memory.read", params: { path: "string" } })).toBe(
      "configuration.tool_definitions[1].params.path"
    )
    expect(at({ name: "peek", canonical: "svc.memory.read", omit: ["limit", "nope"] })).toBe(
      "configuration.tool_definitions[1].omit[1]"
    )
    expect(at("lint")).toBe("configuration.tool_definitions[1]")
  })

  it("name array items and the members of closed objects", () => {
    expect(
      fault({
        approval_mode: "rules",
        approval_rules: [
          { tool: "a", verdict: "allow" },
          { tool: "b", verdict: "ask", why: 1 }
        ]
      }).field
    ).toBe("configuration.approval_rules[1].why")
    expect(fault({ approval_mode: "rules", approval_rules: [{ verdict: "allow" }] })).toEqual({
      field: "configuration.approval_rules[0].tool",
      message: "configuration.approval_rules[0].tool is required"
    })
    expect(fault({ approval_mode: "ask", lifecycle_hooks: { stop: { tool: "wrap_up", input: [] } } }).field).toBe(
      "configuration.lifecycle_hooks.stop.input"
    )
    expect(fault({ approval_mode: "ask", lifecycle_hooks: { stop: { tool: "wrap_up", when: "now" } } }).field).toBe(
      "configuration.lifecycle_hooks.stop.when"
    )
    expect(fault({ memory_context_limit: { roots: ["user", "agent", "user"] } })).toEqual({
      field: "configuration.memory_context_limit.roots[2]",
      message: "configuration.memory_context_limit.roots[2] repeats a root"
    })
    expect(fault({ memory_context_limit: { access: "write" } }).field).toBe("configuration.memory_context_limit.access")
    expect(fault({ compaction_policy: {} })).toEqual({
      field: "configuration.compaction_policy.mode",
      message: "configuration.compaction_policy.mode is required: kernel, delegate or off"
    })
    expect(fault({ compaction_policy: { mode: "off", model: "echo" } }).field).toBe(
      "configuration.compaction_policy.model"
    )
    expect(fault({ fallback_models: ["local/a", "Local/A"] }).field).toBe("configuration.fallback_models[1]")
    expect(fault({ runner_tool_names: ["grep", "a\tb"] }).field).toBe("configuration.runner_tool_names[1]")
    expect(fault({ kernel_tools: "svc.memory.read" }).field).toBe("configuration.kernel_tools")
    expect(fault(["not", "an", "object"])).toEqual({
      field: "configuration",
      message: "configuration must be an object"
    })
  })

  it("a fault inside prompt_template's grammar is a JSON pointer; its size and mechanism name the field", () => {
    const template = (prompt_template: unknown) => fault({ prompt_mechanism: "assembly", prompt_template })
    expect(template({ blocks: [{ type: "text", text: "a" }, { section: "memory" }] })).toEqual({
      field: "/configuration/prompt_template/blocks/1/type",
      message:
        "configuration.prompt_template is invalid at /configuration/prompt_template/blocks/1/type: is required: text, section or prompt_document"
    })
    expect(template({ blocks: [{ type: "prompt_document", slot: "Bad Slot" }] }).field).toBe(
      "/configuration/prompt_template/blocks/0/slot"
    )
    expect(template({ blocks: [{ type: "text", text: "a" }], variables: { "a~b": "x" } }).field).toBe(
      "/configuration/prompt_template/variables/a~0b"
    )
    expect(template({ blocks: [{ type: "text", text: "a" }], variables: { who: 1 } }).field).toBe(
      "/configuration/prompt_template/variables/who"
    )
    expect(template(["blocks"]).field).toBe("/configuration/prompt_template")
    expect(template({ blocks: [{ type: "text", text: "x".repeat(70_000) }] })).toEqual({
      field: "configuration.prompt_template",
      message: "configuration.prompt_template is larger than 64 KiB"
    })
    expect(fault({ prompt_template: { blocks: [{ type: "text", text: "x" }] } }).field).toBe(
      "configuration.prompt_template"
    )
  })

  it("rules across fields name the field they ask of", () => {
    expect(fault({ kernel_tools: ["svc.memory.read"] }).field).toBe("configuration.approval_mode")
    expect(fault({ approval_mode: "rules" }).field).toBe("configuration.approval_rules")
    expect(fault({ approval_mode: "bypass", approval_rules: [{ tool: "*", verdict: "deny" }] })).toEqual({
      field: "configuration.approval_rules",
      message: "configuration.approval_rules is only for approval_mode rules"
    })
    expect(fault({ prompt_mechanism: "assembly" }).field).toBe("configuration.prompt_template")
    expect(fault({ compaction_policy: { mode: "delegate" } }).field).toBe("configuration.compaction_policy.tool_name")
    expect(
      fault({
        approval_mode: "ask",
        tool_definitions: [
          { type: "kernel", name: "svc.memory.read" },
          { type: "function", function: { name: "memory_read" } }
        ]
      })
    ).toEqual({
      field: "configuration.tool_definitions[1]",
      message: 'configuration.tool_definitions[1] repeats the tool name "memory_read"'
    })
  })
})

describe("the stored form", () => {
  it("sorts tools by exposed name, fills function defaults, lower-cases runner ids and drops unknown members", () => {
    const configuration = stored({
      approval_mode: "ask",
      tool_definitions: [
        { type: "function", function: { name: "zeta" }, runner_executor_public_id: runner, note: "ignored" },
        { type: "kernel", name: "svc.memory.read", defer_loading: true },
        { name: "note", canonical: "svc.memory.read", omit: ["offset", "offset"] }
      ],
      runner_executor_public_ids: [runner],
      runner_tool_names: [],
      memory_context_limit: { roots: ["user"] },
      compaction_policy: { mode: "delegate", tool_name: "summarize", model: null },
      unknown_member: true
    })
    expect(configuration).toEqual({
      tool_definitions: [
        { type: "kernel", name: "svc.memory.read", defer_loading: true },
        { name: "note", canonical: "svc.memory.read", omit: ["offset"] },
        {
          type: "function",
          function: { name: "zeta", description: "", parameters: { type: "object", properties: {} } },
          runner_executor_public_id: runner.toLowerCase()
        }
      ],
      kernel_tools: null,
      runner_executor_public_ids: [runner.toLowerCase()],
      runner_tool_names: [],
      approval_mode: "ask",
      approval_rules: null,
      prompt_mechanism: null,
      prompt_template: null,
      compaction_policy: { mode: "delegate", tool_name: "summarize", model: null },
      lifecycle_hooks: null,
      memory_context_limit: { roots: ["user"], access: null },
      conversation_reach: null,
      default_model: null,
      fallback_models: null
    })
  })

  it("keeps a template's blocks and gives it its variables ({} when none)", () => {
    const blocks = [
      { type: "text", text: "Hello" },
      { type: "section", section: "memory" }
    ]
    expect(stored({ prompt_mechanism: "assembly", prompt_template: { blocks } }).prompt_template).toEqual({
      blocks,
      variables: {}
    })
  })
})
