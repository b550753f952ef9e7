// A model's memory calls over HTTP against the database (runs supplement "Tool catalog";
// SUPPLEMENT "Memory documents"): their arguments meet the rules the memory doors' contract
// applies (the path grammar, content and edit texts, the grep limit), and the model-facing tools
// never author skills/ rows (memory_reserved_prefix), while reading them stays open.
import { validateConfiguration } from "@troupe/domain/agents/AgentConfiguration"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { waitForActorState } from "../../support/actors.ts"
import { bearer, request } from "../../support/http.ts"
import { type AgentRunWorld, agentRunWorld } from "../../support/run-agents.ts"
import { memberCalls } from "../../support/runs.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
let world: AgentRunWorld
let calls: ReturnType<typeof memberCalls>

const verbs = ["memory_write", "memory_read", "memory_edit", "memory_delete", "memory_grep"]

beforeAll(async () => {
  server = await startTestServer()
  world = await agentRunWorld(server, "kernel memory")
  calls = memberCalls(server, world)
  // No door declares a paired agent's configuration: its stored form.
  const validated = validateConfiguration({
    approval_mode: "bypass",
    kernel_tools: verbs.map((verb) => `svc.memory.${verb.slice("memory_".length)}`)
  })
  if (!("configuration" in validated)) throw new Error(validated.fault.message)
  await server.run(
    Effect.flatMap(
      SqlClient,
      (sql) =>
        sql`UPDATE users SET configuration = ${JSON.stringify(validated.configuration)}::jsonb
            WHERE public_id = ${world.agent.publicId}`
    )
  )
})
afterAll(() => server?.close())

const profileMemory = (suffix: string, memory?: Record<string, unknown>) =>
  request(server.baseUrl, memory === undefined ? "GET" : "POST", `/agent_api/v1/profile/memory${suffix}`, {
    headers: bearer(world.agent.token),
    ...(memory === undefined ? {} : { body: { memory } })
  })

/** The calls of one local/script round (tasks s1-model-1-t0 …), once the run completed. */
const calledOnce = async (toolCalls: ReadonlyArray<{ readonly name: string; readonly input: unknown }>) => {
  const created = await calls.create({
    approval_mode: "bypass",
    steps: [
      { model: { prompt: JSON.stringify({ tool_calls: toolCalls }), model: { model: "local/script" }, tools: verbs } }
    ]
  })
  expect(created.status, JSON.stringify(created.body)).toBe(201)
  const id = created.body.run.public_id as string
  await calls.call("POST", `/${id}/start`)
  await waitForActorState(server, "run", id, "completed")
  const tasks = []
  for (const index of toolCalls.keys()) {
    tasks.push((await calls.call("GET", `/${id}/tasks/s1-model-1-t${index}`)).body.task)
  }
  return tasks.map((task) => ({ status: task.status, key: task.error?.key ?? null, output: task.output }))
}

const failedWith = (key: string) => ({ status: "failed", key })

describe("skills/ rows", () => {
  it("write, edit and delete of a skills/ path fail memory_reserved_prefix and change nothing; read serves it", async () => {
    const skill = await profileMemory("", {
      path: "user/skills/tidy-up",
      content: "Put things back.",
      description: "Tidying",
      expected_public_id: null,
      expected_lock_version: null
    })
    expect(skill.status).toBe(201)
    const tasks = await calledOnce([
      { name: "memory_write", input: { path: "user/skills/made-up", content: "x" } },
      { name: "memory_edit", input: { path: "user/skills/tidy-up", old_text: "things", new_text: "nothing" } },
      { name: "memory_delete", input: { path: "user/skills/tidy-up" } },
      { name: "memory_write", input: { path: "user/skills/Not-A-Name", content: "x" } },
      { name: "memory_read", input: { path: "user/skills/tidy-up" } }
    ])
    expect(tasks.map(({ status, key }) => ({ status, key }))).toEqual([
      failedWith("memory_reserved_prefix"),
      failedWith("memory_reserved_prefix"),
      failedWith("memory_reserved_prefix"),
      failedWith("memory_reserved_prefix"),
      { status: "completed", key: null }
    ])
    expect(tasks[4]!.output).toBe("Put things back.")
    expect((await profileMemory("/show", { path: "user/skills/tidy-up" })).body.memory).toMatchObject({
      public_id: skill.body.memory.public_id,
      lock_version: 0,
      content: "Put things back."
    })
    expect((await profileMemory("/show", { path: "user/skills/made-up" })).status).toBe(404)
  })
})

describe("arguments", () => {
  it("a path outside the grammar fails with the doors' codes and stores nothing", async () => {
    const tasks = await calledOnce([
      { name: "memory_write", input: { path: "notes", content: "x" } },
      { name: "memory_write", input: { path: "user/../escape", content: "x" } },
      { name: "memory_write", input: { path: "user/", content: "x" } },
      { name: "memory_write", input: { path: `user/${"n".repeat(129)}`, content: "x" } },
      { name: "memory_write", input: { path: "user/a\u202eb", content: "x" } },
      { name: "memory_write", input: { path: 7, content: "x" } },
      { name: "memory_write", input: { content: "x" } },
      { name: "memory_read", input: { path: "conversation/skills/x" } },
      { name: "memory_read", input: { path: "user/skills/Bad" } },
      { name: "memory_write", input: { path: `user/${"n".repeat(128)}`, content: "kept" } }
    ])
    expect(tasks.map(({ status, key }) => ({ status, key }))).toEqual([
      failedWith("memory_path_invalid"),
      failedWith("memory_path_invalid"),
      failedWith("memory_path_invalid"),
      failedWith("memory_path_invalid"),
      failedWith("memory_path_invalid"),
      failedWith("memory_path_invalid"),
      failedWith("parameter_missing"),
      failedWith("skill_scope_unavailable"),
      failedWith("skill_name_invalid"),
      { status: "completed", key: null }
    ])
    const listed = (await profileMemory("")).body.map((row: { path: string }) => row.path)
    expect(listed.filter((path: string) => !path.startsWith("user/skills/"))).toEqual([`user/${"n".repeat(128)}`])
  })

  it("content and new_text are text, old_text non-empty text; nothing changes on a refusal", async () => {
    const made = await calledOnce([{ name: "memory_write", input: { path: "user/edited.md", content: "alpha" } }])
    expect(made[0]!.status).toBe("completed")
    const tasks = await calledOnce([
      { name: "memory_write", input: { path: "user/typed.md", content: 7 } },
      { name: "memory_write", input: { path: "user/typed.md" } },
      { name: "memory_edit", input: { path: "user/edited.md", old_text: "", new_text: "x" } },
      { name: "memory_edit", input: { path: "user/edited.md", old_text: 3, new_text: "x" } },
      { name: "memory_edit", input: { path: "user/edited.md", new_text: "x" } },
      { name: "memory_edit", input: { path: "user/edited.md", old_text: "alpha", new_text: ["x"] } }
    ])
    expect(tasks.map(({ status, key }) => ({ status, key }))).toEqual([
      failedWith("memory_content_invalid"),
      failedWith("parameter_missing"),
      failedWith("memory_edit_invalid"),
      failedWith("memory_edit_invalid"),
      failedWith("parameter_missing"),
      failedWith("memory_content_invalid")
    ])
    expect((await profileMemory("/show", { path: "user/edited.md" })).body.memory).toMatchObject({
      lock_version: 0,
      content: "alpha"
    })
    expect((await profileMemory("/show", { path: "user/typed.md" })).status).toBe(404)
  })

  it("edit and delete of an absent document fail memory_not_found", async () => {
    const tasks = await calledOnce([
      { name: "memory_edit", input: { path: "user/absent.md", old_text: "a", new_text: "b" } },
      { name: "memory_delete", input: { path: "user/absent.md" } }
    ])
    expect(tasks.map(({ status, key }) => ({ status, key }))).toEqual([
      failedWith("memory_not_found"),
      failedWith("memory_not_found")
    ])
  })

  it("grep takes a limit of 1 to 500 and a filter path of the grammar", async () => {
    const tasks = await calledOnce([
      { name: "memory_grep", input: { pattern: "a", limit: 501 } },
      { name: "memory_grep", input: { pattern: "a", limit: 0 } },
      { name: "memory_grep", input: { pattern: "a", path: "notes" } },
      { name: "memory_grep", input: { pattern: "a", ignore_case: "yes" } },
      { name: "memory_grep", input: { path: "user" } },
      { name: "memory_grep", input: { pattern: "ALPHA", path: "user/", ignore_case: true, limit: 500 } }
    ])
    expect(tasks.map(({ status, key }) => ({ status, key }))).toEqual([
      failedWith("parameter_invalid"),
      failedWith("parameter_invalid"),
      failedWith("memory_path_invalid"),
      failedWith("parameter_invalid"),
      failedWith("parameter_missing"),
      { status: "completed", key: null }
    ])
    expect(JSON.parse(tasks[5]!.output)).toEqual({
      matches: [{ path: "user/edited.md", line_number: 1, text: "alpha" }],
      truncated: false
    })
  })
})
