// A hosted run's memory calls (runs supplement "Tool catalog"; conversations supplement "Access,
// default runner, messaging, memory, store"; SUPPLEMENT "Memory documents": the conversation door
// serves its bindings): a local/script model of a conversation-hosted run whose answerer imports
// the memory tools reaches what its conversation's memory door reaches — the default roots
// conversation/, workspace/ and user/, a read binding read-only, an unbound root unavailable, and
// nothing under {bindings: []} — and its writes are the door's (context_revision advances). Its
// skill loads and tool searches find the skills/ rows in that same reach.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { waitForConversation } from "../../support/conversations.ts"
import { type HostingWorld, hostedReply, hostingWorld, type WorkspaceCall } from "../../support/hosted-runs.ts"
import { bearer, request } from "../../support/http.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
let world: HostingWorld
let member: WorkspaceCall
let keeper: string

interface Called {
  readonly status: string
  readonly output: string
  readonly error?: { readonly key: string }
}

/** One hosted reply in `conversation` whose model makes `calls` at once: each call's task (s1-model-1-t0 …). */
const callTools = async (
  conversation: string,
  calls: ReadonlyArray<{ readonly name: string; readonly input: Record<string, unknown> }>
) => {
  const { runId, turnId } = await hostedReply(
    server,
    member,
    conversation,
    keeper,
    JSON.stringify({ tool_calls: calls })
  )
  await waitForConversation(
    server,
    conversation,
    async () => (await world.turnsOf(conversation)).find((each) => each.public_id === turnId)?.status === "completed"
  )
  const tasks: Array<Called> = []
  for (const index of calls.keys()) {
    tasks.push((await member("GET", `/runs/${runId}/tasks/s1-model-1-t${index}`)).body.task)
  }
  return tasks
}

const outcome = (task: Called) => ({ status: task.status, key: task.error?.key ?? null })
const completed = { status: "completed", key: null }
const failedWith = (key: string) => ({ status: "failed", key })

const fresh = { expected_public_id: null, expected_lock_version: null }
const doorOf = (conversation: string) => `/conversations/${conversation}/memory`
const profileMemory = (suffix: string, memory: Record<string, unknown>) =>
  request(server.baseUrl, "POST", `/agent_api/v1/profile/memory${suffix}`, {
    headers: bearer(world.agents[0]!.token),
    body: { memory }
  })
const setContext = (conversation: string, bindings: unknown) =>
  member("POST", `/conversations/${conversation}/memory_context`, { memory_context: { bindings } })
const root = { name: "conversation", scope: "conversation", access: "read_write" }

beforeAll(async () => {
  server = await startTestServer()
  world = await hostingWorld(server, {
    agents: ["memory-agent"],
    workspace: "memory-room",
    answerer: "keeper",
    description: "Keeps notes in its conversation's memory",
    kernelTools: [
      ...["read", "write", "edit", "delete", "ls", "grep"].map((verb) => `svc.memory.${verb}`),
      "svc.skill.load",
      "svc.tools.search"
    ]
  })
  member = world.member
  keeper = world.answererId
  expect((await profileMemory("", { path: "user/private.md", content: "the human's own note", ...fresh })).status).toBe(
    201
  )
})
afterAll(() => server?.close())

describe("the default roots", () => {
  it("conversation/ is the conversation's: written and read by the run, seen at the door, context_revision +1", async () => {
    const conversation = await world.createConversation({ title: "notes" })
    const before = (await member("GET", `/conversations/${conversation}`)).body.conversation.context_revision
    const [written] = await callTools(conversation, [
      { name: "memory_write", input: { path: "conversation/notes", content: "the plan is ready" } }
    ])
    expect(outcome(written!), JSON.stringify(written)).toEqual(completed)
    expect(written!.output).toBe("wrote conversation/notes")
    const listed = await member("GET", doorOf(conversation))
    expect(listed.body.memory.map((row: { path: string }) => row.path)).toContain("conversation/notes")
    const shown = await member("POST", `${doorOf(conversation)}/show`, { memory: { path: "conversation/notes" } })
    expect(shown.body.memory).toMatchObject({ path: "conversation/notes", content: "the plan is ready" })
    expect((await member("GET", `/conversations/${conversation}`)).body.conversation.context_revision).toBeGreaterThan(
      before
    )
    const [read, edited, listing, user] = await callTools(conversation, [
      { name: "memory_read", input: { path: "conversation/notes" } },
      { name: "memory_edit", input: { path: "conversation/notes", old_text: "ready", new_text: "done" } },
      { name: "memory_ls", input: {} },
      { name: "memory_read", input: { path: "user/private.md" } }
    ])
    expect([read, edited, listing, user].map((task) => outcome(task!))).toEqual([
      completed,
      completed,
      completed,
      completed
    ])
    expect(["the plan is ready", "the plan is done"]).toContain(read!.output)
    expect(listing!.output.split("\n")).toEqual(expect.arrayContaining(["conversation/notes", "user/private.md"]))
    expect(user!.output).toBe("the human's own note")
    // Another conversation has its own conversation/.
    const other = await world.createConversation({ title: "elsewhere" })
    const [elsewhere] = await callTools(other, [{ name: "memory_read", input: { path: "conversation/notes" } }])
    expect(outcome(elsewhere!)).toEqual(failedWith("memory_not_found"))
  })
})

describe("bindings", () => {
  it("a read binding reads and refuses writes memory_read_only; an unbound root is unavailable", async () => {
    const conversation = await world.createConversation({ title: "team" })
    const seeded = await member("POST", "/memory", {
      memory: { path: "workspace/plan.md", content: "ship it", ...fresh }
    })
    expect(seeded.status, JSON.stringify(seeded.body)).toBe(201)
    expect((await setContext(conversation, [root, { name: "team", scope: "workspace", access: "read" }])).status).toBe(
      200
    )
    const tasks = await callTools(conversation, [
      { name: "memory_read", input: { path: "workspace/plan.md" } },
      { name: "memory_write", input: { path: "workspace/plan.md", content: "scrap it" } },
      { name: "memory_edit", input: { path: "workspace/plan.md", old_text: "ship", new_text: "sink" } },
      { name: "memory_delete", input: { path: "workspace/plan.md" } },
      { name: "memory_read", input: { path: "user/private.md" } },
      { name: "memory_write", input: { path: "user/private.md", content: "x" } },
      { name: "memory_grep", input: { pattern: "own", path: "user/" } },
      // Paths keep the spec grammar: the first segment is the scope, not a binding's name.
      { name: "memory_read", input: { path: "team/plan.md" } },
      { name: "memory_write", input: { path: "conversation/team.md", content: "ours" } }
    ])
    expect(tasks.map(outcome)).toEqual([
      completed,
      failedWith("memory_read_only"),
      failedWith("memory_read_only"),
      failedWith("memory_read_only"),
      failedWith("memory_scope_unavailable"),
      failedWith("memory_scope_unavailable"),
      failedWith("memory_scope_unavailable"),
      failedWith("memory_path_invalid"),
      completed
    ])
    expect(tasks[0]!.output).toBe("ship it")
    const kept = await member("POST", "/memory/show", { memory: { path: "workspace/plan.md" } })
    expect(kept.body.memory).toMatchObject({ content: "ship it", lock_version: 0 })
  })

  it("{bindings: []}: nothing is listed or found, and every path fails memory_scope_unavailable", async () => {
    const conversation = await world.createConversation({ title: "off" })
    expect((await setContext(conversation, [])).status).toBe(200)
    const tasks = await callTools(conversation, [
      { name: "memory_write", input: { path: "conversation/x.md", content: "x" } },
      { name: "memory_read", input: { path: "conversation/x.md" } },
      { name: "memory_edit", input: { path: "workspace/plan.md", old_text: "ship", new_text: "sink" } },
      { name: "memory_delete", input: { path: "user/private.md" } },
      { name: "memory_read", input: { path: "user/private.md" } },
      { name: "memory_grep", input: { pattern: "it", path: "workspace/" } },
      { name: "memory_ls", input: {} },
      { name: "memory_grep", input: { pattern: "." } }
    ])
    expect(tasks.map(outcome)).toEqual([
      ...Array.from({ length: 6 }, () => failedWith("memory_scope_unavailable")),
      completed,
      completed
    ])
    expect(tasks[6]!.output).toBe("")
    expect(JSON.parse(tasks[7]!.output)).toEqual({ matches: [], truncated: false })
    expect((await member("GET", doorOf(conversation))).body).toEqual({ memory: [] })
  })
})

describe("skills", () => {
  it("skill and tool_search reach the skills/ rows the bindings reach, and none under {bindings: []}", async () => {
    const recall = { path: "user/skills/recall", content: "Read the notes first", description: "Recall notes" }
    expect((await profileMemory("", { ...recall, ...fresh })).status).toBe(201)
    const calls = [
      { name: "skill", input: { name: "recall" } },
      { name: "tool_search", input: { query: "recall" } }
    ]
    const bound = await world.createConversation({ title: "skilled" })
    const [loaded, found] = await callTools(bound, calls)
    expect([loaded, found].map((task) => outcome(task!))).toEqual([completed, completed])
    expect(loaded!.output).toBe("Read the notes first")
    expect(JSON.parse(found!.output).skills).toEqual([{ name: "recall", description: "Recall notes" }])
    for (const bindings of [[], [root, { name: "team", scope: "workspace", access: "read" }]]) {
      const unbound = await world.createConversation({ title: `unbound ${bindings.length}` })
      expect((await setContext(unbound, bindings)).status).toBe(200)
      const [unknown, searched] = await callTools(unbound, calls)
      expect(outcome(unknown!), JSON.stringify(bindings)).toEqual(failedWith("skill_unknown"))
      expect(outcome(searched!)).toEqual(completed)
      expect(JSON.parse(searched!.output).skills).toEqual([])
    }
  })
})
