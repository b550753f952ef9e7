// The account the hostile-input walk stands on: an owner signed in, two agents and a runner
// connected through the real device flow, every kind of credential, and a workspace, store entries,
// a conversation (with a store entry), a named agent and an upload to name in paths, gathered as
// the context hostile variants are built in.
import { randomUUID } from "node:crypto"
import { agentFields, decide, machineFields, poll, signedInBrowser, startDevice } from "../http/oauth/support-device.ts"
import { sampleFromSchema } from "./hostile-bodies.ts"
import type { Credential, VariantContext } from "./hostile-requests.ts"
import { type JsonSchema, type Route, resolve, sampleBodies } from "./hostile-routes.ts"
import { type Browser, bearer, csrfTokenIn, request } from "./http.ts"
import { apiToken, createOwner, ownerCredentials, personalToken } from "./people.ts"
import type { TestServer } from "./server.ts"
import { fileForm } from "./uploads.ts"

const connect = async (
  server: TestServer,
  browser: Browser,
  fields: Record<string, string>,
  scope?: "user_private"
) => {
  const started = await startDevice(server, fields)
  await decide(browser, started.user_code, "approve", scope)
  const issued = await poll(server, started.device_code)
  if (issued.status !== 200) throw new Error(`connecting failed: ${JSON.stringify(issued.body)}`)
  return issued.body as { access_token: string; refresh_token: string; executor_access_token?: string }
}

/** Answers the body of a request that must succeed while the fixtures are made. */
const made = async (server: TestServer, method: string, path: string, token: string, body?: unknown) => {
  const headers = { ...bearer(token), "idempotency-key": randomUUID() }
  const response = await request(server.baseUrl, method, path, { headers, body })
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(response.body)}`)
  return response.body
}

/** An upload of `token`'s, for the upload reads to name. */
const uploadAs = async (server: TestServer, token: string) => {
  const form = fileForm("hostile fixture", "fixture.txt")
  const response = await fetch(`${server.baseUrl}/agent_api/v1/uploads`, {
    method: "POST",
    headers: { ...bearer(token), "content-type": form.contentType },
    body: form.body
  })
  if (response.status !== 201) throw new Error(`uploading the fixture failed: ${response.status}`)
  return ((await response.json()) as { upload: { public_id: string } }).upload.public_id
}

/** The test's own account, credentials and resources, and the variant context over them. */
export const hostileContext = async (server: TestServer, document: JsonSchema): Promise<VariantContext> => {
  const owner = await createOwner(server)
  const browser = await signedInBrowser(server, ownerCredentials.email, ownerCredentials.password)
  const agent = await connect(server, browser, agentFields("hostile-agent"))
  const other = await connect(server, browser, agentFields("hostile-other"))
  const runner = await connect(server, browser, machineFields("hostile-runner"), "user_private")
  const transport = agent.executor_access_token!
  const humanMember = await personalToken(server, owner, "member")
  const agentPublicId = (await made(server, "GET", "/agent_api/v1/profile", agent.access_token)).member.public_id
  const otherAgentPublicId = (await made(server, "GET", "/agent_api/v1/profile", other.access_token)).member.public_id
  const ids = { agentPublicId, otherAgentPublicId }
  const samples = sampleBodies(ids)
  const workspace = (
    await made(server, "POST", "/agent_api/v1/workspaces", agent.access_token, { workspace: { name: "Room" } })
  ).workspace.public_id
  const entry = { store_entry: { namespace: "fixture", key: "k", value: 1 } }
  const profileEntry = (await made(server, "POST", "/agent_api/v1/profile/store_entries", agent.access_token, entry))
    .store_entry.public_id
  const workspaceEntry = (
    await made(server, "POST", `/agent_api/v1/workspaces/${workspace}/store_entries`, agent.access_token, entry)
  ).store_entry.public_id
  const conversation = (
    await made(server, "POST", `/agent_api/v1/workspaces/${workspace}/conversations`, agent.access_token, {
      conversation: { title: "Hostile" }
    })
  ).conversation.public_id
  const conversationEntry = (
    await made(
      server,
      "POST",
      `/agent_api/v1/workspaces/${workspace}/conversations/${conversation}/store_entries`,
      agent.access_token,
      entry
    )
  ).store_entry.public_id
  // A scheduled input stays in the queue: the input doors reach their bodies with it.
  const queued = (
    await made(
      server,
      "POST",
      `/agent_api/v1/workspaces/${workspace}/conversations/${conversation}/inputs`,
      agent.access_token,
      { input: { kind: "message", text: "later", deliver_in: "1d" } }
    )
  ).input.public_id
  // A schedule far ahead: the schedule doors reach their bodies with it (a stale PATCH changes nothing).
  const schedule = (
    await made(
      server,
      "POST",
      `/agent_api/v1/workspaces/${workspace}/conversations/${conversation}/schedules`,
      agent.access_token,
      { schedule: { prompt: "Hostile tick", rule: { kind: "interval", every_seconds: 31_536_000 } } }
    )
  ).schedule.public_id
  const namedAgent = "hostile-helper"
  await made(
    server,
    "PUT",
    `/agent_api/v1/profile/agents/${namedAgent}`,
    agent.access_token,
    samples["PUT /agent_api/v1/profile/agents/{name}"]
  )
  const executor = (await made(server, "GET", "/agent_api/v1/executor", transport)).executor.public_id
  const runnerId = (
    await made(server, "PUT", "/agent_api/v1/executor/announcement", runner.access_token, {
      tools: [
        {
          name: "grep",
          effect_profile: {
            kind: "read_only",
            destructive: false,
            effect_scope: "closed",
            idempotency: "intrinsic",
            reconciliation: "none"
          }
        }
      ]
    })
  ).executor.public_id
  // A pending run with one tool step: the run doors and the inbox doors reach their bodies with it.
  const run = (
    await made(server, "POST", `/agent_api/v1/workspaces/${workspace}/runs`, agent.access_token, {
      run: { approval_mode: "bypass", default_runner_executor_public_id: runnerId, steps: [{ tool: { name: "grep" } }] }
    })
  ).run.public_id
  // A pending run with a model step holds a door input: the run inputs doors reach their bodies.
  const modelRun = (
    await made(server, "POST", `/agent_api/v1/workspaces/${workspace}/runs`, agent.access_token, {
      run: { approval_mode: "bypass", steps: [{ model: { prompt: "hi", model: { model: "local/echo" } } }] }
    })
  ).run.public_id
  const runInput = (
    await made(server, "POST", `/agent_api/v1/workspaces/${workspace}/runs/${modelRun}/inputs`, agent.access_token, {
      input: { kind: "message", text: "later" }
    })
  ).input.public_id
  const apiSession = await apiToken(server)
  const actor = (await made(server, "GET", "/api/v1/admin/actors?limit=1", apiSession)).actors[0]
  const supervisor = (await made(server, "GET", "/api/v1/admin/supervisors", apiSession)).supervisors[0].kind
  const upload = await uploadAs(server, agent.access_token)
  // A budget of the owner's agent: the budget doors reach their bodies with it.
  await made(server, "PUT", "/api/v1/admin/account/cost_unit", apiSession, { account: { cost_unit: "USD" } })
  const budget = (
    await made(server, "POST", `/api/v1/admin/users/${agentPublicId}/budgets`, apiSession, {
      budget: { amount: "5", starts_at: "2080-01-01T00:00:00Z", expires_at: null, reason: "fixture" }
    })
  ).budget.public_id
  const csrf = csrfTokenIn((await browser.get("/agents")).text)
  const cookie = { cookie: browser.cookieHeader }

  const credentials: Array<Credential & { opens: (route: Route) => boolean }> = [
    { name: "API session bearer", headers: bearer(apiSession), opens: (r) => r.plane === "platform" },
    {
      name: "platform personal token",
      headers: bearer(await personalToken(server, owner, "platform")),
      opens: (r) => r.plane === "platform"
    },
    {
      name: "browser session cookie",
      headers: cookie,
      opens: (r) => r.plane === "browser" || (r.plane === "platform" && r.method === "GET")
    },
    { name: "agent member token", headers: bearer(agent.access_token), opens: (r) => r.plane === "member" },
    { name: "human member token", headers: bearer(humanMember), opens: (r) => r.plane === "member" },
    {
      name: "agent application transport token",
      headers: bearer(transport),
      opens: (r) => r.plane === "executor"
    },
    {
      name: "runner transport token",
      headers: bearer(runner.access_token),
      opens: (r) => r.plane === "executor"
    },
    { name: "agent refresh token", headers: bearer(agent.refresh_token), opens: () => false }
  ]
  const own: Record<Route["plane"], Record<string, string>> = {
    platform: bearer(apiSession),
    member: bearer(agent.access_token),
    executor: bearer(transport),
    browser: cookie,
    none: {}
  }
  const param = (route: Route, name: string): string => {
    // Pages name resources that do not exist, so a form that slips through changes nothing.
    if (route.door === "page") return randomUUID()
    if (name === "workspace_id") return workspace
    if (name === "conversation_id") return conversation
    const runInputs = route.path.includes("/runs/{run_id}/inputs")
    if (name === "input_id") return runInputs ? runInput : queued
    if (name === "run_id" && runInputs) return modelRun
    if (name === "run_id" || name === "run_public_id") return run
    if (name === "task_key") return "s1-tool-1"
    if (name === "job_id") return schedule
    if (name === "store_entry_id" && route.path.includes("{conversation_id}")) return conversationEntry
    if (name === "store_entry_id") return route.path.includes("{workspace_id}") ? workspaceEntry : profileEntry
    if (name === "name") return namedAgent
    if (name === "slot") return route.path.includes("{workspace_id}") ? "character" : "summarizer"
    if (name === "public_id" && route.path.startsWith("/agent_api/v1/uploads/")) return upload
    if (name === "upload_public_id") return upload
    if (name === "user_public_id") return agentPublicId
    if (name === "public_id" && route.path.startsWith("/api/v1/admin/users/")) return budget
    if (name === "public_id") return route.path.includes("/executors/") ? executor : otherAgentPublicId
    if (name === "kind") return route.path.includes("/supervisors/") ? supervisor : actor.kind
    if (name === "id") return actor.id
    return randomUUID()
  }
  return {
    // A steward renames its agents: the human's member token at the principals route.
    // The browser upload door takes the cookie from the same origin only.
    own: (route) =>
      route.path.includes("/principals/")
        ? bearer(humanMember)
        : route.path === "/uploads"
          ? { ...cookie, "sec-fetch-site": "same-origin" }
          : own[route.plane],
    // Each credential is sent wherever it opens nothing.
    foreign: (route) => credentials.filter((credential) => !credential.opens(route)),
    param,
    sample: (route) =>
      samples[`${route.method} ${route.path}`] ??
      (route.schema ? sampleFromSchema(route.schema, (schema) => resolve(document, schema)) : undefined),
    csrf
  }
}
