// The named-agent door (GET /agent_api/v1/profile/agents, GET/PUT/DELETE .../agents/{name}):
// the route-miss rule for names, not_agent, mint 201 vs replace/restore 200, create_only,
// handle suffixes, the listing, reversible DELETE, identifier conflicts, body and configuration
// validation, and GET /agent_api/v1/profile reading a declared configuration.
import { Credentials } from "@troupe/domain/accounts/Credentials"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { bearer, request } from "../../support/http.ts"
import { type ConnectedAgent, connectAgent, signedIn } from "../../support/members.ts"
import { createHuman, createOwner, ownerCredentials } from "../../support/people.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { agentFields, decide, poll, startDevice } from "../oauth/support-device.ts"

let server: TestServer
let owner: Awaited<ReturnType<typeof createOwner>>
let app: ConnectedAgent
let other: ConnectedAgent
let memberHuman: Awaited<ReturnType<typeof createHuman>>
let humanToken: string

const path = (name: string) => `/agent_api/v1/profile/agents/${name}`
const call = (method: string, url: string, token: string | undefined, body?: unknown) =>
  request(server.baseUrl, method, url, { headers: token ? bearer(token) : {}, body })
const put = (token: string, name: string, body: unknown) => call("PUT", path(name), token, body)

const definition = (overrides: Record<string, unknown> = {}) => ({
  scope: "instance",
  description: "Reviews pull requests",
  configuration: {},
  ...overrides
})

const expectError = (response: { status: number; body: any }, status: number, code: string, mentions?: string) => {
  expect({ status: response.status, code: response.body?.error?.code }).toEqual({ status, code })
  if (mentions !== undefined) expect(response.body.error.message).toContain(mentions)
}

beforeAll(async () => {
  server = await startTestServer()
  owner = await createOwner(server)
  memberHuman = await createHuman(server, {
    email: "mo@example.com",
    password: "member password",
    displayName: "Mo",
    role: "member"
  })
  const steward = await signedIn(server, ownerCredentials)
  app = await connectAgent(server, steward, "acme/app")
  other = await connectAgent(server, steward, "acme/other")
  humanToken = await server.run(
    Effect.flatMap(Credentials, (credentials) => credentials.personalToken(owner, "member", "named-agents"))
  )
})
afterAll(() => server?.close())

describe("the name segment", () => {
  it("a name of another shape is a plain route miss, exactly like an unknown route, before authentication", async () => {
    const unknown = await call("GET", "/agent_api/v1/no_such_route", undefined)
    expect(unknown.status).toBe(404)
    for (const name of ["Reviewer", "r", "-reviewer", "a".repeat(33), "re%20viewer", "_x1"]) {
      for (const method of ["GET", "PUT", "DELETE"]) {
        const anonymous = await call(method, path(name), undefined, method === "PUT" ? definition() : undefined)
        const authenticated = await call(method, path(name), app.token, method === "PUT" ? definition() : undefined)
        expect(anonymous.status).toBe(404)
        expect(anonymous.body).toEqual(unknown.body)
        expect(authenticated.body).toEqual(unknown.body)
        expect(authenticated.status).toBe(404)
      }
    }
  })

  it("a name of the grammar reaches the door (401 without a credential)", async () => {
    expectError(await call("GET", path("reviewer"), undefined), 401, "unauthorized")
    expectError(await call("GET", "/agent_api/v1/profile/agents", undefined), 401, "unauthorized")
  })
})

describe("not_agent", () => {
  it("a human member credential is refused on every named-agent route", async () => {
    expectError(await call("GET", "/agent_api/v1/profile/agents", humanToken), 403, "not_agent")
    expectError(await call("GET", path("reviewer"), humanToken), 403, "not_agent")
    expectError(await put(humanToken, "reviewer", definition()), 403, "not_agent")
    expectError(await put(humanToken, "reviewer", { nonsense: true }), 403, "not_agent")
    expectError(await call("DELETE", path("reviewer"), humanToken), 403, "not_agent")
  })
})

describe("PUT", () => {
  it("mints with 201: composed identifier, the name as handle, the declarer and the configuration read back", async () => {
    const minted = await put(app.token, "reviewer", {
      ...definition({ display_name: "Reviewer", system_prompt: "You review code." }),
      configuration: {
        tool_definitions: [
          { type: "function", function: { name: "lint", description: "Lint", parameters: { type: "object" } } },
          { name: "peek", canonical: "svc.memory.read", description: "Peek at memory", omit: ["offset", "limit"] }
        ],
        approval_mode: "ask",
        default_model: "local/echo"
      }
    })
    expect(minted.status).toBe(201)
    expect(minted.body.agent).toMatchObject({
      handle: "reviewer",
      kind: "agent",
      display_name: "Reviewer",
      agent_identifier: "acme/app/reviewer",
      steward_public_id: owner.public_id,
      scope: "instance",
      name: "reviewer",
      description: "Reviews pull requests",
      derived_from_public_id: app.publicId,
      system_prompt: "You review code."
    })
    expect(minted.body.agent.public_id).toMatch(/^[0-9a-f-]{36}$/)
    const configuration = minted.body.agent.configuration
    expect(configuration).toMatchObject({
      kernel_tools: null,
      runner_executor_public_ids: null,
      runner_tool_names: null,
      approval_mode: "ask",
      approval_rules: null,
      prompt_mechanism: null,
      prompt_template: null,
      compaction_policy: null,
      lifecycle_hooks: null,
      memory_context_limit: null,
      conversation_reach: null,
      default_model: "local/echo",
      fallback_models: null
    })
    // Canonical by name; the alias reads back as the full function block it exposes.
    expect(configuration.tool_definitions).toEqual([
      { type: "function", function: { name: "lint", description: "Lint", parameters: { type: "object" } } },
      {
        type: "function",
        function: {
          name: "peek",
          description: "Peek at memory",
          parameters: { type: "object", properties: { path: expect.any(Object) }, required: ["path"] }
        }
      }
    ])
    const shown = await call("GET", path("reviewer"), app.token)
    expect(shown.status).toBe(200)
    expect(shown.body.agent).toEqual(minted.body.agent)
  })

  it("replaces whole with 200, keeping public id, handle and identifier; the wrapped form is accepted", async () => {
    const before = (await call("GET", path("reviewer"), app.token)).body.agent
    const replaced = await put(app.token, "reviewer", {
      agent: definition({ scope: "steward", description: "Reviews everything" })
    })
    expect(replaced.status).toBe(200)
    expect(replaced.body.agent).toMatchObject({
      public_id: before.public_id,
      handle: before.handle,
      agent_identifier: before.agent_identifier,
      scope: "steward",
      description: "Reviews everything",
      display_name: "reviewer",
      system_prompt: null
    })
    expect(replaced.body.agent.configuration.tool_definitions).toEqual([])
    expect(replaced.body.agent.configuration.approval_mode).toBeNull()
  })

  it("create_only must be a JSON boolean; true refuses an existing name with name_taken and mints a new one", async () => {
    for (const value of ["true", 1, null, {}]) {
      expectError(
        await put(app.token, "reviewer", definition({ create_only: value })),
        400,
        "parameter_invalid",
        "create_only"
      )
    }
    expectError(await put(app.token, "reviewer", definition({ create_only: true })), 409, "name_taken")
    const fresh = await put(app.token, "triager", definition({ create_only: true }))
    expect(fresh.status).toBe(201)
    expect((await put(app.token, "triager", definition({ create_only: false }))).status).toBe(200)
  })

  it("gives the name when free, else name-2, name-3 (another declarer's identifier is its own)", async () => {
    const second = await put(other.token, "reviewer", definition())
    expect(second.status).toBe(201)
    expect(second.body.agent).toMatchObject({ handle: "reviewer-2", agent_identifier: "acme/other/reviewer" })
    const steward = await signedIn(server, ownerCredentials)
    const third = await connectAgent(server, steward, "acme/third")
    const minted = await put(third.token, "reviewer", definition())
    expect(minted.body.agent.handle).toBe("reviewer-3")
  })

  it("identifier_taken when another agent already holds the composed identifier", async () => {
    const steward = await signedIn(server, ownerCredentials)
    await connectAgent(server, steward, "acme/app/paired")
    expectError(await put(app.token, "paired", definition()), 409, "identifier_taken")
  })

  it("a composed identifier over 128 characters is 422 validation_failed naming agent_identifier", async () => {
    const steward = await signedIn(server, ownerCredentials)
    const identifier = `x/${"l".repeat(118)}`
    const started = await startDevice(server, {
      ...agentFields(identifier),
      agent_display_name: "Long",
      executor_display_name: "Long app"
    })
    await decide(steward, started.user_code, "approve")
    const token = (await poll(server, started.device_code)).body.access_token as string
    expect((await put(token, "abcdefg", definition())).status).toBe(201)
    expectError(await put(token, "abcdefgh", definition()), 422, "validation_failed", "agent_identifier")
  })

  it("the 128 are characters (code points), not UTF-16 units: an astral declarer's 128 pass, 129 fail", async () => {
    const steward = await signedIn(server, ownerCredentials)
    // 96 astral characters (192 UTF-16 units), "/" and a name of 31: 128 characters; a name of 32 makes 129.
    const declarer = "😀".repeat(96)
    const started = await startDevice(server, {
      ...agentFields(declarer),
      agent_display_name: "Astral",
      executor_display_name: "Astral app"
    })
    await decide(steward, started.user_code, "approve")
    const token = (await poll(server, started.device_code)).body.access_token as string
    const minted = await put(token, "a".repeat(31), definition())
    expect(minted.status).toBe(201)
    expect(minted.body.agent.agent_identifier).toBe(`${declarer}/${"a".repeat(31)}`)
    expectError(await put(token, "b".repeat(32), definition()), 422, "validation_failed", "agent_identifier")
  })

  it("a device connection cannot take a named definition's identifier", async () => {
    const steward = await signedIn(server, ownerCredentials)
    await expect(connectAgent(server, steward, "acme/app/reviewer")).rejects.toThrow(/access_denied/)
  })
})

describe("body validation", () => {
  it("missing members are parameter_missing, mistyped ones parameter_invalid", async () => {
    expectError(
      await put(app.token, "bodycheck", { description: "d", configuration: {} }),
      400,
      "parameter_missing",
      "scope"
    )
    expectError(
      await put(app.token, "bodycheck", { scope: "instance", configuration: {} }),
      400,
      "parameter_missing",
      "description"
    )
    expectError(
      await put(app.token, "bodycheck", { scope: "instance", description: "d" }),
      400,
      "parameter_missing",
      "configuration"
    )
    expectError(
      await put(app.token, "bodycheck", definition({ configuration: "x" })),
      400,
      "parameter_invalid",
      "configuration"
    )
    expectError(
      await put(app.token, "bodycheck", definition({ configuration: null })),
      400,
      "parameter_invalid",
      "configuration"
    )
    expectError(await put(app.token, "bodycheck", definition({ scope: 3 })), 400, "parameter_invalid", "scope")
    expectError(
      await put(app.token, "bodycheck", definition({ system_prompt: 5 })),
      400,
      "parameter_invalid",
      "system_prompt"
    )
    expectError(await put(app.token, "bodycheck", [1, 2]), 400, "parameter_invalid")
  })

  it("values outside their vocabulary or bounds are 422 validation_failed naming the field", async () => {
    expectError(await put(app.token, "bodycheck", definition({ scope: "public" })), 422, "validation_failed", "scope")
    expectError(
      await put(app.token, "bodycheck", definition({ description: "" })),
      422,
      "validation_failed",
      "description"
    )
    expectError(
      await put(app.token, "bodycheck", definition({ description: "two\nlines" })),
      422,
      "validation_failed",
      "description"
    )
    expectError(
      await put(app.token, "bodycheck", definition({ description: "d".repeat(1025) })),
      422,
      "validation_failed",
      "description"
    )
    expect((await put(app.token, "bodycheck", definition({ description: "é".repeat(1024) }))).status).toBe(201)
    expectError(
      await put(app.token, "bodycheck", definition({ system_prompt: "p".repeat(65537) })),
      422,
      "validation_failed",
      "system_prompt"
    )
    expect((await put(app.token, "bodycheck", definition({ system_prompt: "p".repeat(65536) }))).status).toBe(200)
    expectError(
      await put(app.token, "bodycheck", definition({ display_name: "a".repeat(101) })),
      422,
      "validation_failed",
      "display_name"
    )
  })

  it("configuration faults name the field", async () => {
    const fault = async (configuration: Record<string, unknown>, field: string) =>
      expectError(await put(app.token, "configcheck", definition({ configuration })), 422, "validation_failed", field)
    await fault({ approval_mode: "sometimes" }, "configuration.approval_mode")
    await fault({ kernel_tools: ["memory_read"] }, "configuration.kernel_tools[0]")
    await fault({ kernel_tools: ["memory_read"], approval_mode: "ask" }, "configuration.kernel_tools[0]")
    await fault({ kernel_tools: ["memory.list"], approval_mode: "ask" }, "configuration.kernel_tools[0]")
    await fault({ kernel_tools: ["svc.memory.*"], approval_mode: "ask" }, "configuration.kernel_tools[0]")
    await fault(
      { kernel_tools: ["svc.memory.read", "svc.memory.read"], approval_mode: "ask" },
      "configuration.kernel_tools[1]"
    )
    await fault({ kernel_tools: ["shell.exec"], approval_mode: "ask" }, "configuration.kernel_tools[0]")
    await fault({ kernel_tools: ["svc.memory.read"] }, "configuration.approval_mode")
    await fault({ tool_definitions: [{ type: "function", function: { name: "x" } }] }, "configuration.approval_mode")
    await fault(
      {
        approval_mode: "bypass",
        tool_definitions: [
          { type: "function", function: { name: "x" } },
          { type: "function", function: { name: "x" } }
        ]
      },
      "configuration.tool_definitions[1]"
    )
    await fault(
      { approval_mode: "bypass", tool_definitions: [{ type: "shell" }] },
      "configuration.tool_definitions[0].type"
    )
    await fault({ runner_executor_public_ids: ["not-a-uuid"] }, "configuration.runner_executor_public_ids[0]")
    await fault({ runner_executor_public_ids: ["0190a4b2-0000-7000-8000-000000000001"] }, "configuration.approval_mode")
    await fault({ approval_mode: "rules" }, "configuration.approval_rules")
    await fault(
      { approval_mode: "rules", approval_rules: [{ tool: "a|b*", verdict: "maybe" }] },
      "configuration.approval_rules[0].verdict"
    )
    await fault({ prompt_mechanism: "assembly" }, "configuration.prompt_template")
    await fault({ prompt_mechanism: "scripted" }, "configuration.prompt_mechanism")
    await fault({ compaction_policy: { mode: "delegate" } }, "configuration.compaction_policy.tool_name")
    await fault({ compaction_policy: { mode: "sometimes" } }, "configuration.compaction_policy.mode")
    await fault({ lifecycle_hooks: { on_error: { tool: "x" } } }, "configuration.lifecycle_hooks.on_error")
    await fault({ conversation_reach: "account" }, "configuration.conversation_reach")
    await fault({ default_model: "echo" }, "configuration.default_model")
    await fault({ fallback_models: ["local/a", "local/a"] }, "configuration.fallback_models[1]")
    await fault({ memory_context_limit: { roots: ["attic"] } }, "configuration.memory_context_limit.roots[0]")
    expect((await call("GET", path("configcheck"), app.token)).status).toBe(404)
  })

  it("a prompt_template of 64 KiB of canonical JSON is accepted; one byte more is 422 validation_failed", async () => {
    // {"blocks":[{"type":"text","text":"…"}]} is 38 bytes around the text; é is two bytes.
    const template = (text: string) =>
      put(
        app.token,
        "templatebound",
        definition({
          configuration: { prompt_mechanism: "assembly", prompt_template: { blocks: [{ type: "text", text }] } }
        })
      )
    const exact = `${"é".repeat(32_000)}${"x".repeat(65_536 - 38 - 64_000)}`
    expect((await template(exact)).status).toBe(201)
    expectError(await template(`${exact}x`), 422, "validation_failed", "configuration.prompt_template")
  })

  it("a prompt_template grammar fault names a JSON pointer", async () => {
    const template = (blocks: unknown, variables?: unknown) =>
      put(
        app.token,
        "templated",
        definition({ configuration: { prompt_mechanism: "assembly", prompt_template: { blocks, variables } } })
      )
    expectError(
      await template([
        { type: "text", text: "Hi" },
        { type: "image", url: "x" }
      ]),
      422,
      "validation_failed",
      "/configuration/prompt_template/blocks/1/type"
    )
    expectError(
      await template([{ type: "text", text: "Hello {{who}}" }]),
      422,
      "validation_failed",
      "/configuration/prompt_template/blocks/0/text"
    )
    expectError(
      await template([
        { type: "section", section: "memory" },
        { type: "section", section: "memory" }
      ]),
      422,
      "validation_failed",
      "/configuration/prompt_template/blocks/1/section"
    )
    expectError(await template("blocks"), 422, "validation_failed", "/configuration/prompt_template/blocks")
    expectError(
      await template([{ type: "text", text: "x".repeat(70000) }]),
      422,
      "validation_failed",
      "configuration.prompt_template"
    )
    const fine = await template(
      [
        { type: "text", text: "Hello {{who}}" },
        { type: "section", section: "memory" },
        { type: "prompt_document", slot: "system_prompt" }
      ],
      { who: "world" }
    )
    expect(fine.status).toBe(201)
    expect(fine.body.agent.configuration.prompt_template).toEqual({
      blocks: [
        { type: "text", text: "Hello {{who}}" },
        { type: "section", section: "memory" },
        { type: "prompt_document", slot: "system_prompt" }
      ],
      variables: { who: "world" }
    })
  })
})

describe("listing and DELETE", () => {
  it("lists the caller's own active rows of both scopes plus the steward's other published rows, by display name", async () => {
    await put(other.token, "published", definition({ scope: "steward", display_name: "Aardvark" }))
    await put(other.token, "private", definition({ scope: "instance", display_name: "Zebra" }))
    const listed = await call("GET", "/agent_api/v1/profile/agents", app.token)
    expect(listed.status).toBe(200)
    const names = listed.body.agents.map((a: { agent_identifier: string }) => a.agent_identifier)
    expect(names).toContain("acme/app/reviewer")
    expect(names).toContain("acme/app/triager")
    expect(names).toContain("acme/other/published")
    expect(names).not.toContain("acme/other/private")
    expect(names).not.toContain("acme/other/reviewer")
    const displayNames = listed.body.agents.map((a: { display_name: string }) => a.display_name)
    expect(displayNames).toEqual([...displayNames].sort())
    expect(listed.body.agents[0].display_name).toBe("Aardvark")
  })

  it("DELETE is a reversible status flip: 204, then hidden, then PUT restores it with 200 keeping its identity", async () => {
    const before = (await call("GET", path("triager"), app.token)).body.agent
    const removed = await call("DELETE", path("triager"), app.token)
    expect(removed.status).toBe(204)
    expect(removed.body).toBeUndefined()
    expectError(await call("GET", path("triager"), app.token), 404, "not_found")
    expectError(await call("DELETE", path("triager"), app.token), 404, "not_found")
    expectError(await call("DELETE", path("never-declared"), app.token), 404, "not_found")
    const listed = await call("GET", "/agent_api/v1/profile/agents", app.token)
    expect(listed.body.agents.map((a: { name: string }) => a.name)).not.toContain("triager")
    expectError(await put(app.token, "triager", definition({ create_only: true })), 409, "name_taken")
    const restored = await put(app.token, "triager", definition({ description: "Back again" }))
    expect(restored.status).toBe(200)
    expect(restored.body.agent).toMatchObject({
      public_id: before.public_id,
      handle: before.handle,
      agent_identifier: before.agent_identifier,
      description: "Back again"
    })
  })
})

describe("GET /agent_api/v1/profile", () => {
  it("shows an agent's declared configuration, every field null and the tool list [] until declared", async () => {
    const fresh = await call("GET", "/agent_api/v1/profile", other.token)
    expect(fresh.body.configuration.tool_definitions).toEqual([])
    expect(
      Object.entries(fresh.body.configuration)
        .filter(([k]) => k !== "tool_definitions")
        .every(([, v]) => v === null)
    ).toBe(true)
    await server.run(
      Effect.flatMap(
        SqlClient,
        (sql) =>
          sql`UPDATE users SET configuration = ${JSON.stringify({ approval_mode: "ask", kernel_tools: ["svc.memory.read"] })}::jsonb
              WHERE public_id = ${other.publicId}`
      )
    )
    const declared = await call("GET", "/agent_api/v1/profile", other.token)
    expect(declared.body.configuration).toMatchObject({
      approval_mode: "ask",
      kernel_tools: ["svc.memory.read"],
      tool_definitions: []
    })
    expect(declared.body.configuration.default_model).toBeNull()
    const human = await call("GET", "/agent_api/v1/profile", humanToken)
    expect(human.body.configuration).toBeUndefined()
    expect(memberHuman.kind).toBe("human")
  })
})
