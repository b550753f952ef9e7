// GET /agent_api/v1/tools through the real server on a fresh database: the kernel catalog ordered
// by canonical name, one row exactly as the supplement describes it (wire name, profile, template
// and its rendering with wire names), and who may read it.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { bearer, request } from "../../support/http.ts"
import { apiToken } from "../../support/people.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
let agentToken: string
let humanMemberToken: string
let platformToken: string

beforeAll(async () => {
  server = await startTestServer()
  const account = await twoStewards(server, { owner: ["tools-agent"], member: [] })
  agentToken = account.ownerAgents[0]!.token
  humanMemberToken = account.memberToken
  platformToken = await apiToken(server)
})
afterAll(() => server?.close())

/** `token` null sends no credential. */
const list = (token: string | null = agentToken) =>
  request(server.baseUrl, "GET", "/agent_api/v1/tools", { headers: token === null ? {} : bearer(token) })

const G = {
  kind: "write",
  destructive: false,
  effect_scope: "closed",
  idempotency: "intrinsic",
  reconciliation: "lookup"
}
const R = {
  kind: "read_only",
  destructive: false,
  effect_scope: "closed",
  idempotency: "intrinsic",
  reconciliation: "none"
}

describe("GET /agent_api/v1/tools", () => {
  it("lists the catalog ordered by canonical name, each with its wire name", async () => {
    const response = await list()
    expect(response.status).toBe(200)
    expect(response.body.tools.map((tool: any) => `${tool.canonical_name} ${tool.name}`)).toEqual([
      "svc.conversation.cancel cancel",
      "svc.conversation.read session_read",
      "svc.conversation.search session_search",
      "svc.conversation.send send",
      "svc.conversation.spawn spawn",
      "svc.conversation.status status",
      "svc.graph.delegate_task delegate_task",
      "svc.graph.wait wait",
      "svc.human.ask ask",
      "svc.memory.delete memory_delete",
      "svc.memory.edit memory_edit",
      "svc.memory.grep memory_grep",
      "svc.memory.ls memory_ls",
      "svc.memory.read memory_read",
      "svc.memory.write memory_write",
      "svc.skill.load skill",
      "svc.tools.call tool_call",
      "svc.tools.search tool_search"
    ])
  })

  it("shows a row's profile, template and definition, rendered with wire names", async () => {
    const tools: Array<any> = (await list()).body.tools
    expect(tools.find((tool) => tool.name === "session_search")).toEqual({
      canonical_name: "svc.conversation.search",
      name: "session_search",
      effect_profile: R,
      definition: {
        type: "function",
        function: {
          name: "session_search",
          description:
            "Search the titles and visible messages of this workspace's conversations for all the given words; read a hit with session_read.",
          parameters: {
            type: "object",
            properties: {
              query: { type: "string", maxLength: 1024 },
              archived: { type: "string", enum: ["exclude", "include", "only"] },
              include_auxiliary: { type: "boolean" },
              limit: { type: "integer", minimum: 1, maximum: 50 },
              after: { type: "string" }
            },
            required: ["query"]
          }
        }
      },
      template:
        "Search the titles and visible messages of this workspace's conversations for all the given words; read a hit with {{session_read}}."
    })
    for (const tool of tools) {
      expect(tool.definition.function.name).toBe(tool.name)
      expect(tool.definition.function.description).not.toContain("{{")
    }
    const profile = (name: string) => tools.find((tool) => tool.name === name).effect_profile
    expect(profile("spawn")).toEqual(G)
    expect(profile("memory_write")).toEqual({ ...G, destructive: true })
    expect(profile("memory_edit")).toEqual({ ...G, destructive: true, idempotency: "none" })
  })

  it("answers any member credential (a human's member token too) and refuses others with 401", async () => {
    const human = await list(humanMemberToken)
    expect(human.status).toBe(200)
    expect(human.body.tools).toHaveLength(18)
    for (const token of [null, platformToken]) {
      const refused = await list(token)
      expect({ status: refused.status, body: refused.body }).toEqual({
        status: 401,
        body: { error: { code: "unauthorized", message: expect.any(String) } }
      })
    }
  })
})
