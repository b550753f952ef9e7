// Named agents below HTTP: the configuration validator's vocabulary and cross-field rules, and
// the write's refusals that need a race or a shutdown to show (concurrent_write, shutdown_pending,
// a declarer removed during the declaration), and instance definitions going with their declarer.
import { renderConfiguration, validateConfiguration } from "@troupe/domain/agents/AgentConfiguration"
import {
  commitPut,
  type DefinitionMembers,
  definitionInput,
  NamedAgents,
  preparePut
} from "@troupe/domain/agents/NamedAgents"
import { Stewardship } from "@troupe/domain/connections/Stewardship"
import { kernelTools } from "@troupe/domain/executors/KernelTools"
import { AccountsRepository } from "@troupe/storage/repositories/Accounts"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ConnectedAgent, connectAgent, signedIn } from "../support/members.ts"
import { createOwner, ownerCredentials } from "../support/people.ts"
import { startTestServer, type TestServer } from "../support/server.ts"

const fault = (configuration: Record<string, unknown>) => {
  const result = validateConfiguration(configuration)
  return "fault" in result ? result.fault.field : undefined
}

describe("validateConfiguration", () => {
  it("an empty object declares nothing: every field null, the tool list []", () => {
    const result = validateConfiguration({})
    expect(result).toEqual({
      configuration: {
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
      }
    })
  })

  it("kernel_tools takes exactly the catalog's canonical names; wire names and invented names are refused", () => {
    const canonical = [
      "svc.conversation.cancel",
      "svc.conversation.read",
      "svc.conversation.search",
      "svc.conversation.send",
      "svc.conversation.spawn",
      "svc.conversation.status",
      "svc.graph.delegate_task",
      "svc.graph.wait",
      "svc.human.ask",
      "svc.memory.delete",
      "svc.memory.edit",
      "svc.memory.grep",
      "svc.memory.ls",
      "svc.memory.read",
      "svc.memory.write",
      "svc.skill.load",
      "svc.tools.call",
      "svc.tools.search"
    ]
    expect(kernelTools.map((t) => t.canonical).sort()).toEqual(canonical)
    expect(fault({ kernel_tools: canonical, approval_mode: "bypass" })).toBeUndefined()
    expect(fault({ kernel_tools: [] })).toBeUndefined()
    expect(fault({ kernel_tools: null })).toBeUndefined()
    const wire = ["memory_read", "memory_ls", "session_read", "ask", "delegate_task", "skill", "tool_search", "send"]
    for (const name of wire) {
      expect(fault({ kernel_tools: [name], approval_mode: "ask" })).toBe("configuration.kernel_tools[0]")
    }
    for (const name of ["memory.list", "memory.show", "store.get", "store.put", "run.wait", "human.ask"]) {
      expect(fault({ kernel_tools: [name], approval_mode: "ask" })).toBe("configuration.kernel_tools[0]")
    }
    expect(fault({ kernel_tools: ["svc.memory.*"], approval_mode: "ask" })).toBe("configuration.kernel_tools[0]")
    expect(fault({ kernel_tools: ["SVC.Memory.Read"], approval_mode: "ask" })).toBe("configuration.kernel_tools[0]")
    const wireFault = validateConfiguration({ kernel_tools: ["memory_read"], approval_mode: "ask" })
    expect("fault" in wireFault && wireFault.fault.message).toContain('"svc.memory.read"')
  })

  it("kernel entries and aliases in tool_definitions use the same catalog; a kernel entry is exposed by its wire name", () => {
    const tools = (entries: ReadonlyArray<Record<string, unknown>>) =>
      validateConfiguration({ approval_mode: "ask", tool_definitions: entries })
    const declared = tools([
      { type: "kernel", name: "svc.memory.read" },
      { name: "note", canonical: "svc.memory.write" }
    ])
    expect("configuration" in declared && declared.configuration.tool_definitions).toEqual([
      { type: "kernel", name: "svc.memory.read" },
      { name: "note", canonical: "svc.memory.write" }
    ])
    const taken = tools([
      { type: "kernel", name: "svc.memory.read" },
      { type: "function", function: { name: "memory_read" } }
    ])
    expect("fault" in taken && taken.fault.field).toBe("configuration.tool_definitions[1]")
    expect(fault({ approval_mode: "ask", tool_definitions: [{ type: "kernel", name: "memory_read" }] })).toBe(
      "configuration.tool_definitions[0].name"
    )
    expect(fault({ approval_mode: "ask", tool_definitions: [{ type: "kernel", name: "memory.show" }] })).toBe(
      "configuration.tool_definitions[0].name"
    )
    expect(fault({ approval_mode: "ask", tool_definitions: [{ name: "peek", canonical: "memory_read" }] })).toBe(
      "configuration.tool_definitions[0].canonical"
    )
  })

  it("an alias reads back as a function block whose description names aliased catalog tools by their aliases", () => {
    const shown = renderConfiguration({
      tool_definitions: [
        { name: "note", canonical: "svc.memory.write" },
        { name: "patch", canonical: "svc.memory.edit" }
      ]
    })
    expect(shown.tool_definitions).toEqual([
      {
        type: "function",
        function: {
          name: "note",
          description: "Create or replace a memory document; to change part of one use patch.",
          parameters: { type: "object", properties: expect.any(Object), required: ["path", "content"] }
        }
      },
      {
        type: "function",
        function: {
          name: "patch",
          description:
            "Replace the one occurrence of old_text in a memory document with new_text; read it first with memory_read.",
          parameters: { type: "object", properties: expect.any(Object), required: ["path", "old_text", "new_text"] }
        }
      }
    ])
  })

  it("approval_mode is required by tools, kernel tools, hooks and tool-importing runner candidates", () => {
    const runner = "0190a4b2-0000-7000-8000-000000000001"
    expect(fault({ lifecycle_hooks: { stop: { tool: "wrap_up" } } })).toBe("configuration.approval_mode")
    expect(fault({ lifecycle_hooks: {} })).toBeUndefined()
    expect(fault({ runner_executor_public_ids: [runner] })).toBe("configuration.approval_mode")
    expect(fault({ runner_executor_public_ids: [runner], runner_tool_names: [] })).toBeUndefined()
    expect(fault({ runner_executor_public_ids: [runner], runner_tool_names: ["grep"] })).toBe(
      "configuration.approval_mode"
    )
    expect(fault({ runner_executor_public_ids: [runner, runner.toUpperCase()], runner_tool_names: [] })).toBe(
      "configuration.runner_executor_public_ids[1]"
    )
  })

  it("approval rules: verdict, tool alternations with a wildcard suffix, origin, only with mode rules", () => {
    const rules = (approval_rules: unknown) => fault({ approval_mode: "rules", approval_rules })
    expect(
      rules([
        { tool: "memory_*|delegate_task", verdict: "allow" },
        { tool: "*", verdict: "ask", origin: "hook" }
      ])
    ).toBeUndefined()
    expect(rules([{ tool: "a||b", verdict: "allow" }])).toBe("configuration.approval_rules[0].tool")
    expect(rules([{ tool: "a", verdict: "allow", origin: "robot" }])).toBe("configuration.approval_rules[0].origin")
    expect(rules([{ tool: "a", verdict: "allow", path: "no-slash" }])).toBe("configuration.approval_rules[0].path")
    expect(fault({ approval_mode: "ask", approval_rules: [] })).toBe("configuration.approval_rules")
  })

  it("aliases must name a kernel tool and its parameters; compaction and reasoning cross-field rules", () => {
    const alias = (entry: Record<string, unknown>) => fault({ approval_mode: "ask", tool_definitions: [entry] })
    expect(alias({ name: "peek", canonical: "svc.memory.read", omit: ["offset"] })).toBeUndefined()
    expect(alias({ name: "peek", canonical: "svc.memory.peek" })).toBe("configuration.tool_definitions[0].canonical")
    expect(alias({ name: "peek", canonical: "svc.memory.read", omit: ["path"] })).toBe(
      "configuration.tool_definitions[0].omit[0]"
    )
    expect(alias({ name: "peek", canonical: "svc.memory.read", params: { depth: {} } })).toBe(
      "configuration.tool_definitions[0].params.depth"
    )
    expect(fault({ compaction_policy: { mode: "kernel", tool_name: "x" } })).toBe(
      "configuration.compaction_policy.tool_name"
    )
    expect(fault({ compaction_policy: { mode: "kernel", reasoning_enabled: false, reasoning_effort: "high" } })).toBe(
      "configuration.compaction_policy.reasoning_effort"
    )
    expect(
      fault({ compaction_policy: { mode: "delegate", tool_name: "summarize", model: "local/echo" } })
    ).toBeUndefined()
  })

  it("prompt_template faults are JSON pointers; a template needs mechanism assembly", () => {
    const template = (prompt_template: unknown) => fault({ prompt_mechanism: "assembly", prompt_template })
    expect(template({ blocks: [{ type: "text", text: "x", extra: 1 }] })).toBe(
      "/configuration/prompt_template/blocks/0/extra"
    )
    expect(template({ blocks: [], variables: {} })).toBe("/configuration/prompt_template/blocks")
    expect(template({ blocks: [{ type: "text", text: "x" }], variables: { "Bad/Name": "v" } })).toBe(
      "/configuration/prompt_template/variables/Bad~1Name"
    )
    expect(template({ blocks: [{ type: "text", text: "x" }], layout: "grid" })).toBe(
      "/configuration/prompt_template/layout"
    )
    expect(fault({ prompt_mechanism: "raw", prompt_template: { blocks: [{ type: "text", text: "x" }] } })).toBe(
      "configuration.prompt_template"
    )
  })
})

describe("definitionInput", () => {
  it("judges the configuration and reads an empty system prompt as none", async () => {
    const input = (members: Partial<DefinitionMembers>) =>
      Effect.runPromise(
        definitionInput({ scope: "instance", description: "d", configuration: {}, ...members }).pipe(
          Effect.match({ onFailure: (e) => e.message, onSuccess: (input) => input })
        )
      )
    expect(await input({ configuration: { approval_mode: "sometimes" } })).toContain("configuration.approval_mode")
    expect(await input({ system_prompt: "" })).toMatchObject({
      systemPrompt: null,
      displayName: null,
      createOnly: false
    })
  })
})

describe("write refusals", () => {
  let server: TestServer
  let declarer: ConnectedAgent
  const body: DefinitionMembers = { scope: "instance", description: "d", configuration: {} }
  const idOf = (publicId: string) =>
    server.run(
      Effect.flatMap(AccountsRepository, (accounts) => accounts.findUserByPublicId(publicId)).pipe(
        Effect.map((u) => u!.id)
      )
    )
  const code = <A, E extends { readonly code: string }>(effect: Effect.Effect<A, E, any>) =>
    server.run(effect.pipe(Effect.match({ onFailure: (e) => e.code, onSuccess: () => "succeeded" })))
  const exec = (statement: (sql: SqlClient) => Effect.Effect<unknown, unknown>) =>
    server.run(Effect.flatMap(SqlClient, statement))

  beforeAll(async () => {
    server = await startTestServer()
    await createOwner(server)
    declarer = await connectAgent(server, await signedIn(server, ownerCredentials), "acme/domain")
  })
  afterAll(() => server?.close())

  it("a write prepared before another write landed is concurrent_write", async () => {
    const id = await idOf(declarer.publicId)
    const input = await server.run(definitionInput(body))
    const first = await server.run(preparePut(id, "racer"))
    const second = await server.run(preparePut(id, "racer"))
    expect(await code(commitPut(first, input))).toBe("succeeded")
    expect(await code(commitPut(second, input))).toBe("concurrent_write")
    const third = await server.run(preparePut(id, "racer"))
    const fourth = await server.run(preparePut(id, "racer"))
    expect(await code(commitPut(third, input))).toBe("succeeded")
    expect(await code(commitPut(fourth, input))).toBe("concurrent_write")
  })

  it("a steward shutdown that began after the read is shutdown_pending", async () => {
    const id = await idOf(declarer.publicId)
    const input = await server.run(definitionInput(body))
    const prepared = await server.run(preparePut(id, "late"))
    await exec((sql) => sql`UPDATE users SET shutdown_generation = shutdown_generation + 1 WHERE kind = 'human'`)
    expect(await code(commitPut(prepared, input))).toBe("shutdown_pending")
    await exec((sql) => sql`UPDATE users SET shutdown_generation = shutdown_generation - 1 WHERE kind = 'human'`)
    expect(await code(commitPut(prepared, input))).toBe("succeeded")
  })

  it("a declarer removed during the declaration is refused, and its instance definitions go with it", async () => {
    const id = await idOf(declarer.publicId)
    const named = (name: string, scope: DefinitionMembers["scope"]) =>
      server.run(Effect.flatMap(NamedAgents, (service) => service.put(id, name, { ...body, scope })))
    await named("keeper", "steward")
    await named("transient", "instance")
    const input = await server.run(definitionInput(body))
    const prepared = await server.run(preparePut(id, "orphan"))
    const owner = await server.run(
      Effect.flatMap(AccountsRepository, (accounts) =>
        Effect.flatMap(accounts.currentAccount, (a) => accounts.findOwner(a!.id))
      )
    )
    await server.run(Effect.flatMap(Stewardship, (stewardship) => stewardship.removeAgent(owner!, declarer.publicId)))
    expect(await code(commitPut(prepared, input))).toBe("not_authorized")
    const statuses = await exec(
      (sql) => sql<{ name: string; status: string }>`
        SELECT n.name, u.status FROM named_agents n JOIN users u ON u.id = n.user_id
        WHERE n.derived_from_id = ${id} ORDER BY n.name`
    )
    expect(statuses).toEqual([
      { name: "keeper", status: "active" },
      { name: "late", status: "removed" },
      { name: "racer", status: "removed" },
      { name: "transient", status: "removed" }
    ])
  })
})
