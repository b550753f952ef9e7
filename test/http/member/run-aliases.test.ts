// Kernel tool aliases end to end (spec "Agent configuration": alias declarations {name, canonical,
// params?, omit?, description?, defer_loading?}; runs supplement "Tool catalog"): a round is offered
// an alias as its own function block (descriptions naming other catalog tools by their aliases);
// a model's call of an alias reaches the kernel as the canonical tool (a tool_call of a deferred
// alias, or of a deferred kernel entry tool_search finds, too), while the wire name it does not
// import stays a runner tool; the trace and transcript name what the model called, with the
// catalog wire name behind an alias; the catalog door renders an agent's descriptions with its
// aliases.

import { validateConfiguration } from "@troupe/domain/agents/AgentConfiguration"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { waitForActorState } from "../../support/actors.ts"
import { hostedReply, openConversation } from "../../support/hosted-runs.ts"
import {
  type AgentCall,
  agentCall,
  memberCalls,
  type RunWorld,
  runWorld,
  waitForRun,
  workspaceCall
} from "../../support/runs.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
let world: RunWorld
let calls: ReturnType<typeof memberCalls>
let member: AgentCall

beforeAll(async () => {
  server = await startTestServer()
  world = await runWorld(server)
  calls = memberCalls(server, world)
  member = agentCall(server, world)
})
afterAll(() => server?.close())

const task = async (runId: string, key: string) => (await calls.call("GET", `/${runId}/tasks/${key}`)).body.task

/** Declares the world's paired agent's configuration (no door declares a paired agent's; its stored form). */
const declare = async (declared: Record<string, unknown>) => {
  const validated = validateConfiguration(declared)
  if (!("configuration" in validated)) throw new Error(validated.fault.message)
  await server.run(
    Effect.flatMap(
      SqlClient,
      (sql) =>
        sql`UPDATE users SET configuration = ${JSON.stringify(validated.configuration)}::jsonb
            WHERE public_id = ${world.agent.publicId}`
    )
  )
}

/** A reply answered by `answerer` to a directive in a conversation titled `title`; answers the run it materialized into. */
const hostedRun = async (answerer: string, directive: unknown, title: string) => {
  const workspace = workspaceCall(server, world)
  const chat = await openConversation(workspace, { title })
  return (await hostedReply(server, workspace, chat, answerer, JSON.stringify(directive))).runId
}

describe("kernel tool aliases", () => {
  it("a round is offered its answerer's aliases; a call of one reaches the kernel as its canonical tool, a tool_call of a deferred one too", async () => {
    const seeded = await member("POST", "/profile/memory", {
      memory: { path: "user/seeded.md", content: "seeded note", expected_public_id: null, expected_lock_version: null }
    })
    expect(seeded.status).toBeLessThan(300)
    const made = await member("PUT", "/profile/agents/aliaser", {
      scope: "instance",
      description: "Keeps notes under other names",
      configuration: {
        approval_mode: "bypass",
        default_model: "local/script",
        kernel_tools: ["svc.tools.call", "svc.tools.search"],
        tool_definitions: [
          { name: "remember", canonical: "svc.memory.write" },
          { name: "patch", canonical: "svc.memory.edit" },
          { name: "recall", canonical: "svc.memory.read", omit: ["offset", "limit"] },
          { name: "peek", canonical: "svc.memory.read", defer_loading: true, description: "Peek at a note." }
        ]
      }
    })
    expect([200, 201]).toContain(made.status)
    const runId = await hostedRun(
      made.body.agent.public_id,
      {
        tool_calls: [
          { name: "remember", input: { path: "user/aliased.md", content: "kept by alias" } },
          { name: "tool_call", input: { name: "peek", input: { path: "user/seeded.md" } } }
        ]
      },
      "aliased-reply"
    )
    await waitForActorState(server, "run", runId, "completed")

    // Offered: the aliases but the deferred one, as function blocks rendered with the aliases.
    const sealed = (await calls.call("GET", `/${runId}/tasks/s1-model-1/request`)).body.request
    const offered = new Map<string, any>(sealed.request_options.tools.map((each: any) => [each.function.name, each]))
    expect([...offered.keys()].sort()).toEqual(["patch", "recall", "remember", "tool_call", "tool_search"])
    expect(offered.get("remember").function.description).toBe(
      "Create or replace a memory document; to change part of one use patch."
    )
    expect(offered.get("patch").function.description).toBe(
      "Replace the one occurrence of old_text in a memory document with new_text; read it first with recall."
    )
    expect(offered.get("recall").function.parameters).toEqual({
      type: "object",
      properties: { path: { type: "string", description: "Memory path; its first segment is the scope" } },
      required: ["path"]
    })
    // The task read shows the same offer: aliases as full function blocks.
    expect((await task(runId, "s1-model-1")).tool_definitions).toEqual(sealed.request_options.tools)

    // The alias reached the kernel: the note is written.
    expect(await task(runId, "s1-model-1-t0")).toMatchObject({
      status: "completed",
      output: "wrote user/aliased.md",
      tool_name: "remember"
    })
    const shown = await member("POST", "/profile/memory/show", { memory: { path: "user/aliased.md" } })
    expect(shown.body.memory.content).toBe("kept by alias")
    expect(await task(runId, "s1-model-1-t1")).toMatchObject({
      status: "completed",
      output: "seeded note",
      tool_name: "peek"
    })

    // The transcript names what the model called, and the catalog wire name behind an alias.
    const transcript = (await calls.call("GET", `/${runId}/transcript`)).body
    const round = transcript.rounds.find((each: any) => each.task_key === "s1-model-1")
    expect(
      round.calls.items.map((call: any) => ({ task_key: call.task_key, name: call.name, tool: call.tool }))
    ).toEqual([
      { task_key: "s1-model-1-t0", name: "remember", tool: "memory_write" },
      { task_key: "s1-model-1-t1", name: "peek", tool: "memory_read" }
    ])
  })

  it("a deferred kernel entry is not offered; tool_search finds it and a tool_call of it reaches the kernel", async () => {
    await member("POST", "/profile/memory", {
      memory: {
        path: "user/deferred.md",
        content: "deferred note",
        expected_public_id: null,
        expected_lock_version: null
      }
    })
    const made = await member("PUT", "/profile/agents/deferrer", {
      scope: "instance",
      description: "Reads notes on demand",
      configuration: {
        approval_mode: "bypass",
        default_model: "local/script",
        kernel_tools: ["svc.tools.call", "svc.tools.search"],
        tool_definitions: [{ type: "kernel", name: "svc.memory.read", defer_loading: true }]
      }
    })
    expect([200, 201]).toContain(made.status)
    const runId = await hostedRun(
      made.body.agent.public_id,
      {
        tool_calls: [
          { name: "tool_search", input: { query: "memory_read" } },
          { name: "tool_call", input: { name: "memory_read", input: { path: "user/deferred.md" } } }
        ]
      },
      "deferred-kernel-reply"
    )
    await waitForActorState(server, "run", runId, "completed")
    const sealed = (await calls.call("GET", `/${runId}/tasks/s1-model-1/request`)).body.request
    expect(sealed.request_options.tools.map((each: any) => each.function.name).sort()).toEqual([
      "tool_call",
      "tool_search"
    ])
    const found = JSON.parse((await task(runId, "s1-model-1-t0")).output)
    expect(found.tools).toEqual([
      expect.objectContaining({ name: "memory_read", input_schema: expect.objectContaining({ type: "object" }) })
    ])
    expect(await task(runId, "s1-model-1-t1")).toMatchObject({
      status: "completed",
      output: "deferred note",
      tool_name: "memory_read"
    })
  })

  it("a standalone run's creator's alias of ask parks as a model's ask, the wire name it does not import is a runner tool; the catalog door renders the agent's aliases", async () => {
    await declare({
      approval_mode: "bypass",
      kernel_tools: ["svc.tools.search"],
      tool_definitions: [
        { name: "query_human", canonical: "svc.human.ask" },
        { name: "invoke", canonical: "svc.tools.call" }
      ]
    })
    const catalog = (await member("GET", "/tools")).body.tools
    const search = catalog.find((tool: any) => tool.name === "tool_search")
    expect(search.definition.function.description).toBe(
      "Find your declared tools (deferred ones included) and skills by exact name or words; call one with invoke."
    )
    expect(search.template).toContain("{{tool_call}}")
    expect(catalog.find((tool: any) => tool.name === "memory_edit").definition.function.description).toContain(
      "read it first with memory_read"
    )

    const directive = JSON.stringify({
      tool_calls: [
        { name: "ask", input: { prompt: "Not imported" } },
        { name: "query_human", input: { prompt: "Which colour?" } }
      ]
    })
    const created = await calls.create({
      approval_mode: "bypass",
      steps: [
        { model: { prompt: directive, model: { model: "local/script" }, tools: ["query_human", "tool_search", "ask"] } }
      ]
    })
    expect(created.status).toBe(201)
    const runId = created.body.run.public_id as string
    await calls.call("POST", `/${runId}/start`)
    // The ask parks in the expansion's step; the runner tool waits for its addressing job.
    await waitForRun(
      server,
      runId,
      async () =>
        (await task(runId, "s1-model-1-t1"))?.status === "awaiting_input" &&
        (await task(runId, "s1-model-1-t0"))?.status !== "waiting"
    )
    const sealed = (await calls.call("GET", `/${runId}/tasks/s1-model-1/request`)).body.request
    const offered = sealed.request_options.tools.map((each: any) => each.function)
    expect(offered.map((each: any) => each.name)).toEqual(["query_human", "tool_search", "ask"])
    expect(offered[1].description).toContain("call one with invoke.")
    expect(offered[0].parameters.required).toEqual(["prompt"])

    expect(await task(runId, "s1-model-1-t0")).toMatchObject({
      status: "failed",
      error: { key: "tool_not_served" },
      tool_name: "ask"
    })
    const resolved = await calls.call("POST", `/${runId}/tasks/s1-model-1-t1/resolution`, { content: "blue" })
    expect(resolved.status).toBe(200)
    await waitForActorState(server, "run", runId, "completed")
    expect((await task(runId, "s1-model-1-c")).output).toBe("echo: blue")
    const round = (await calls.call("GET", `/${runId}/transcript`)).body.rounds[0]
    expect(round.calls.items.map((call: any) => [call.name, call.tool])).toEqual([["ask", undefined]])
  })
})
