// Conversation-hosted runs over HTTP: an owner's own workspace (undedicated) with a named agent
// importing kernel tools that answers
// replies, and a reply posted for it resolved to the run and turn it materialized into.
import { expect } from "vitest"
import { twoStewards } from "./account.ts"
import { bearer, type JsonResponse, request } from "./http.ts"
import type { TestServer } from "./server.ts"
import { waitForSteps } from "./steps.ts"

export interface HostingOptions {
  /** The owner's paired agents; the first names the answerer. */
  readonly agents: ReadonlyArray<string>
  readonly workspace: string
  readonly answerer: string
  readonly description: string
  readonly kernelTools: ReadonlyArray<string>
}

export const hostingWorld = async (server: TestServer, options: HostingOptions) => {
  const account = await twoStewards(server, { owner: [...options.agents], member: [] })
  const made = await request(server.baseUrl, "POST", "/agent_api/v1/workspaces", {
    headers: { ...bearer(account.ownerToken), "idempotency-key": `${options.workspace}-ws` },
    body: { workspace: { name: options.workspace } }
  })
  const named = await request(server.baseUrl, "PUT", `/agent_api/v1/profile/agents/${options.answerer}`, {
    headers: bearer(account.ownerAgents[0]!.token),
    body: {
      scope: "instance",
      description: options.description,
      configuration: {
        approval_mode: "bypass",
        default_model: "local/script",
        kernel_tools: options.kernelTools
      }
    }
  })
  expect([200, 201]).toContain(named.status)
  const workspaceId = made.body.workspace.public_id as string
  let keys = 0
  /** A member-plane call on the workspace as `token`, under a fresh idempotency key. */
  const call = (token: string, method: string, path: string, body?: unknown) =>
    request(server.baseUrl, method, `/agent_api/v1/workspaces/${workspaceId}${path}`, {
      headers: { ...bearer(token), "idempotency-key": `${options.workspace}-${++keys}` },
      ...(body === undefined ? {} : { body })
    })
  /** The same as the first agent (the answerer's owner). */
  const member: WorkspaceCall = (method, path, body) => call(account.ownerAgents[0]!.token, method, path, body)
  return {
    agents: account.ownerAgents,
    /** The owner (the workspace's creator): its signed-in browser and personal token. */
    ownerBrowser: account.ownerBrowser,
    ownerToken: account.ownerToken,
    workspaceId,
    answererId: named.body.agent.public_id as string,
    call,
    member,
    /** A conversation the first agent opens with `fields`: its public id. */
    createConversation: (fields: Record<string, unknown> = {}) => openConversation(member, fields),
    /** Every turn of a conversation, hidden ones too. */
    turnsOf: async (id: string) =>
      (await member("GET", `/conversations/${id}/turns?limit=100&include_hidden=true`)).body.turns as Array<any>
  }
}

export type HostingWorld = Awaited<ReturnType<typeof hostingWorld>>

/** A member-plane call on the workspace (its path after the workspace). */
export type WorkspaceCall = (method: string, path: string, body?: unknown) => Promise<JsonResponse<any>>

/** A conversation opened with `fields`: its public id. */
export const openConversation = async (member: WorkspaceCall, fields: Record<string, unknown> = {}) => {
  const opened = await member("POST", "/conversations", { conversation: fields })
  expect(opened.status).toBe(201)
  return opened.body.conversation.public_id as string
}

/** Posts `text` as a direct reply `answerer` answers in `conversation`: the run and turn it materialized into. */
export const hostedReply = (
  server: TestServer,
  member: WorkspaceCall,
  conversation: string,
  answerer: string,
  text: string
) => hostedInput(server, member, conversation, { kind: "direct_reply", text, answering_user_public_id: answerer })

/** Posts `input` (one a run answers) in `conversation`: the run and turn it materialized into. */
export const hostedInput = async (
  server: TestServer,
  member: WorkspaceCall,
  conversation: string,
  input: Record<string, unknown>
) => {
  const accepted = await member("POST", `/conversations/${conversation}/inputs`, { input })
  expect(accepted.status).toBe(202)
  const inputId = accepted.body.input.public_id
  let made: any
  await waitForSteps(
    server,
    async () => {
      made = (await member("GET", `/conversations/${conversation}/inputs/${inputId}/materialization`)).body
        .materialization
      return made?.run_public_id != null
    },
    { timeout: "30 seconds" }
  )
  return { runId: made.run_public_id as string, turnId: made.turn_public_id as string }
}
