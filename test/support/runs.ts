// The world run tests stand on: an owner stewarding an agent (the run's creator) in a workspace,
// and runners connected through the device flow announcing tools; helpers to drive runs and the
// executor inbox over HTTP.
import { decide, machineFields, poll, startDevice } from "../http/oauth/support-device.ts"
import { twoStewards } from "./account.ts"
import type { WorkspaceCall } from "./hosted-runs.ts"
import { bearer, type JsonResponse, request } from "./http.ts"
import type { ConnectedAgent } from "./members.ts"
import type { TestServer } from "./server.ts"
import { waitForSteps } from "./steps.ts"

export const readOnlyTool = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  effect_profile: {
    kind: "read_only",
    destructive: false,
    effect_scope: "closed",
    idempotency: "intrinsic",
    reconciliation: "none"
  },
  description: `The ${name} tool`,
  input_schema: { type: "object" },
  ...extra
})

export const writeTool = (name: string) => ({
  ...readOnlyTool(name),
  effect_profile: {
    kind: "write",
    destructive: false,
    effect_scope: "closed",
    idempotency: "none",
    reconciliation: "none"
  }
})

export interface RunWorld {
  readonly agent: ConnectedAgent
  readonly workspaceId: string
  /** Connects a runner (account-wide) announcing `tools`; answers its transport token and public id. */
  readonly runner: (
    identifier: string,
    tools: ReadonlyArray<unknown>
  ) => Promise<{ readonly token: string; readonly publicId: string }>
}

/**
 * A named agent's configuration whose replies are run-backed: `local/script` rounds, with `tool`
 * declared as a function served by the runner `runnerPublicId`.
 */
export const runnerToolConfiguration = (
  runnerPublicId: string,
  tool: { readonly name: string; readonly description: string },
  approvalMode: "bypass" | "ask" = "bypass"
) => ({
  approval_mode: approvalMode,
  default_model: "local/script",
  tool_definitions: [
    {
      type: "function",
      function: { name: tool.name, description: tool.description, parameters: { type: "object" } },
      runner_executor_public_id: runnerPublicId
    }
  ]
})

/** The world under `names` (the agent's, and its workspace's name and creation key); the owner's token too. */
export const runWorld = async (
  server: TestServer,
  names = { agent: "run-agent", workspace: "runs", key: "runs-ws" }
): Promise<RunWorld & { readonly ownerToken: string }> => {
  const account = await twoStewards(server, { owner: [names.agent], member: [] })
  const agent = account.ownerAgents[0]!
  const made = await request(server.baseUrl, "POST", "/agent_api/v1/workspaces", {
    headers: { ...bearer(agent.token), "idempotency-key": names.key },
    body: { workspace: { name: names.workspace } }
  })
  return {
    ownerToken: account.ownerToken,
    agent,
    workspaceId: made.body.workspace.public_id,
    runner: async (identifier, tools) => {
      const started = await startDevice(server, machineFields(identifier))
      await decide(account.ownerBrowser, started.user_code, "approve", "account_wide")
      const token = (await poll(server, started.device_code)).body.access_token as string
      await request(server.baseUrl, "PUT", "/agent_api/v1/executor/announcement", {
        headers: bearer(token),
        body: { tools }
      })
      const self = await request(server.baseUrl, "GET", "/agent_api/v1/executor", { headers: bearer(token) })
      return { token, publicId: self.body.executor.public_id }
    }
  }
}

/** Member-plane calls on the world's workspace as its agent. */
export const memberCalls = (server: TestServer, world: RunWorld) => {
  const base = `/agent_api/v1/workspaces/${world.workspaceId}/runs`
  let keys = 0
  return {
    base,
    create: (run: unknown, key = `run-${++keys}-${Date.now()}`) =>
      request(server.baseUrl, "POST", base, {
        headers: { ...bearer(world.agent.token), "idempotency-key": key },
        body: { run }
      }),
    call: (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
      request(server.baseUrl, method, `${base}${path}`, {
        headers: { ...bearer(world.agent.token), ...headers },
        ...(body === undefined ? {} : { body })
      })
  }
}

/** A call on the agent API as the world's agent (its path after /agent_api/v1). */
export type AgentCall = (
  method: string,
  path: string,
  body?: unknown,
  headers?: Record<string, string>
) => Promise<JsonResponse<any>>

export const agentCall =
  (server: TestServer, world: RunWorld): AgentCall =>
  (method, path, body, headers = {}) =>
    request(server.baseUrl, method, `/agent_api/v1${path}`, {
      headers: { ...bearer(world.agent.token), ...headers },
      ...(body === undefined ? {} : { body })
    })

let workspaceKeys = 0

/** Member-plane calls on the world's workspace as its agent (path after the workspace), each under a key never used before. */
export const workspaceCall = (server: TestServer, world: RunWorld): WorkspaceCall => {
  const call = agentCall(server, world)
  return (method, path, body) =>
    call(method, `/workspaces/${world.workspaceId}${path}`, body, { "idempotency-key": `workspace-${++workspaceKeys}` })
}

/** Executor-plane calls as one executor. */
export const inboxCalls = (server: TestServer, token: string) => {
  const inbox = "/agent_api/v1/executor/inbox"
  return {
    list: (query = "") => request(server.baseUrl, "GET", `${inbox}${query}`, { headers: bearer(token) }),
    claim: (runId: string, key: string) =>
      request(server.baseUrl, "POST", `${inbox}/${runId}/${key}/claim`, { headers: bearer(token) }),
    check: (runId: string, key: string, claimToken?: string) =>
      request(server.baseUrl, "GET", `${inbox}/${runId}/${key}/claim`, {
        headers: { ...bearer(token), ...(claimToken === undefined ? {} : { "claim-token": claimToken }) }
      }),
    extend: (runId: string, key: string, body: unknown) =>
      request(server.baseUrl, "POST", `${inbox}/${runId}/${key}/extend`, { headers: bearer(token), body }),
    commit: (runId: string, key: string, body: unknown) =>
      request(server.baseUrl, "POST", `${inbox}/${runId}/${key}/commit`, { headers: bearer(token), body }),
    progress: (body: unknown) =>
      request(server.baseUrl, "POST", "/agent_api/v1/executor/progress", { headers: bearer(token), body })
  }
}

/** Resolves once `done` holds, checked now and after each step the run's actor commits. */
export const waitForRun = (server: TestServer, runId: string, done: () => Promise<boolean>) =>
  waitForSteps(server, done, { kind: "run", actorId: runId })
