// A hosted run's memory calls in a workspace whose svc.memory a tool provider overrides (spec "Tool
// provider overrides": while overridden, the six verbs route to the provider; "Inbox task": tool_call
// adds tool_name, tool_input, tool_call_id, tool_alias?, scope {bindings}): the call is the
// provider's inbox row, with its conversation's bindings resolved as scope; the provider claims and
// commits it and the run's continuation reads that result. A provider no longer announcing the verb
// leaves the call failed tool_not_served.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { waitForConversation } from "../../support/conversations.ts"
import { type HostingWorld, hostedReply, hostingWorld, type WorkspaceCall } from "../../support/hosted-runs.ts"
import { bearer, request } from "../../support/http.ts"
import { inboxCalls, waitForRun, writeTool } from "../../support/runs.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { decide, machineFields, poll, startDevice } from "../oauth/support-device.ts"

let server: TestServer
let world: HostingWorld
let member: WorkspaceCall
let keeper: string
let providerToken: string
let providerId: string

const verbs = ["memory_read", "memory_write", "memory_edit", "memory_ls", "memory_grep", "memory_delete"]
const announce = (names: ReadonlyArray<string>) =>
  request(server.baseUrl, "PUT", "/agent_api/v1/executor/announcement", {
    headers: bearer(providerToken),
    body: { tools: names.map(writeTool) }
  })

/** A hosted reply whose model calls memory_read once, and the call's inbox row once listed (or its task once settled). */
const readThroughProvider = async (conversation: string, path: string) => {
  const directive = JSON.stringify({ tool_calls: [{ name: "memory_read", input: { path } }] })
  const { runId, turnId } = await hostedReply(server, member, conversation, keeper, directive)
  const inbox = inboxCalls(server, providerToken)
  const key = "s1-model-1-t0"
  let row: any
  let task: any
  await waitForRun(server, runId, async () => {
    row = (await inbox.list()).body.tasks?.find((each: any) => each.run_public_id === runId && each.task_key === key)
    task = (await member("GET", `/runs/${runId}/tasks/${key}`)).body.task
    return row !== undefined || ["completed", "failed"].includes(task?.status)
  })
  return { runId, turnId, key, row, task, inbox }
}

beforeAll(async () => {
  server = await startTestServer()
  world = await hostingWorld(server, {
    agents: ["override-agent"],
    workspace: "override-room",
    answerer: "archivist",
    description: "Reads notes its workspace's memory provider keeps",
    kernelTools: ["read", "write", "edit", "delete", "ls", "grep"].map((verb) => `svc.memory.${verb}`)
  })
  member = world.member
  keeper = world.answererId
  const started = await startDevice(server, machineFields("memory-provider", { executor_kind: "tool_provider" }))
  await decide(world.ownerBrowser, started.user_code, "approve", "account_wide")
  providerToken = (await poll(server, started.device_code)).body.access_token as string
  await announce(verbs)
  providerId = (await request(server.baseUrl, "GET", "/agent_api/v1/executor", { headers: bearer(providerToken) })).body
    .executor.public_id
})
afterAll(() => server?.close())

const override = async () => {
  const workspace = (await world.call(world.ownerToken, "GET", "")).body.workspace
  const put = await world.call(world.ownerToken, "PUT", "/tool_provider_overrides", {
    tool_provider_overrides: { overrides: { "svc.memory": providerId }, lock_version: workspace.lock_version }
  })
  expect(put.status, JSON.stringify(put.body)).toBe(200)
}

describe("svc.memory overridden by a tool provider", () => {
  it("a hosted run's memory_read is the provider's inbox row with its scope; its committed result is what the continuation reads", async () => {
    const plain = await world.createConversation({ title: "default roots" })
    const bound = await world.createConversation({ title: "bound" })
    const bindings = [
      { name: "conversation", scope: "conversation", access: "read_write" },
      { name: "mine", scope: "agent", access: "read" }
    ]
    const context = await member("POST", `/conversations/${bound}/memory_context`, { memory_context: { bindings } })
    expect(context.status, JSON.stringify(context.body)).toBe(200)
    await override()

    const { runId, turnId, key, row, task, inbox } = await readThroughProvider(plain, "conversation/plan.md")
    expect(row, JSON.stringify(task)).toBeDefined()
    expect(row).toMatchObject({
      kind: "tool_call",
      run_public_id: runId,
      workspace_public_id: world.workspaceId,
      conversation_public_id: plain,
      task_key: key,
      claimed: false,
      addressed_to: { role: "tool_provider", executor_public_id: providerId },
      tool_name: "memory_read",
      tool_input: { path: "conversation/plan.md" },
      tool_call_id: expect.any(String)
    })
    expect(row).not.toHaveProperty("tool_alias")
    // memory_context null: the default roots, each with its anchor.
    expect(row.scope).toEqual({
      bindings: [
        { name: "conversation", scope: "conversation", access: "read_write", conversation_public_id: plain },
        { name: "workspace", scope: "workspace", access: "read_write", workspace_public_id: world.workspaceId },
        { name: "user", scope: "user", access: "read_write", user_public_id: expect.any(String) }
      ]
    })
    const claimed = await inbox.claim(runId, key)
    expect(claimed.status, JSON.stringify(claimed.body)).toBe(200)
    const committed = await inbox.commit(runId, key, {
      claim_token: claimed.body.claim.claim_token,
      content: "ship on friday",
      outcome: "completed"
    })
    expect(committed.status, JSON.stringify(committed.body)).toBe(200)
    await waitForConversation(
      server,
      plain,
      async () => (await world.turnsOf(plain)).find((each) => each.public_id === turnId)?.status === "completed"
    )
    expect((await member("GET", `/runs/${runId}/tasks/${key}`)).body.task).toMatchObject({
      status: "completed",
      output: "ship on friday"
    })
    expect((await member("GET", `/runs/${runId}/tasks/s1-model-1-c`)).body.task).toMatchObject({
      status: "completed",
      output: "echo: ship on friday"
    })
    expect((await member("GET", `/runs/${runId}`)).body.run.status).toBe("completed")

    // Bindings set on the conversation: resolved with their anchors (agent/: the conversation's
    // answering agent, as its memory door reads them).
    const answerer = (await member("GET", `/conversations/${bound}`)).body.conversation.answering_user_public_id
    const again = await readThroughProvider(bound, "agent/notes.md")
    expect(again.row?.scope).toEqual({
      bindings: [
        { ...bindings[0], conversation_public_id: bound },
        { ...bindings[1], agent_public_id: answerer }
      ]
    })
  })

  it("a provider that no longer announces the verb leaves the call failed tool_not_served", async () => {
    const conversation = await world.createConversation({ title: "unserved" })
    await announce(verbs.filter((verb) => verb !== "memory_read"))
    try {
      const { row, task } = await readThroughProvider(conversation, "conversation/plan.md")
      expect(row).toBeUndefined()
      expect({ status: task.status, key: task.error?.key }).toEqual({ status: "failed", key: "tool_not_served" })
    } finally {
      await announce(verbs)
    }
  })
})
