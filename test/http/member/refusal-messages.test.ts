// Spec "Errors" (envelope {error: {code, message}}): a refusal an actor's step names only by its code
// (the machines' `refuse`) answers, beside the code and status the spec gives it, the sentence of
// kernel/RefusalMessages.ts saying what was refused and why — never the bare code.
import { sentenceOf } from "@troupe/domain/kernel/RefusalMessages"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { waitForActorState } from "../../support/actors.ts"
import { bearer, type JsonResponse, request } from "../../support/http.ts"
import { type AgentRunWorld, agentRunWorld } from "../../support/run-agents.ts"
import { inboxCalls, memberCalls, readOnlyTool } from "../../support/runs.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
let world: AgentRunWorld
let runner: { token: string; publicId: string }
let calls: ReturnType<typeof memberCalls>
let keys = 0

beforeAll(async () => {
  server = await startTestServer()
  world = await agentRunWorld(server)
  runner = await world.runner("refusal-runner", [readOnlyTool("grep")])
  calls = memberCalls(server, world)
})
afterAll(() => server?.close())

const started = async (steps: ReadonlyArray<unknown>) => {
  const created = await calls.create({
    approval_mode: "bypass",
    default_runner_executor_public_id: runner.publicId,
    steps
  })
  const id = created.body.run.public_id as string
  expect((await calls.call("POST", `/${id}/start`)).status).toBe(200)
  return id
}

const finishedModelRun = async () => {
  const id = await started([{ model: { prompt: "done", model: { model: "local/echo" } } }])
  await waitForActorState(server, "run", id, "completed")
  return id
}

const conversationCall = (method: string, path: string, body: unknown) =>
  request(server.baseUrl, method, `/agent_api/v1/workspaces/${world.workspaceId}/conversations${path}`, {
    headers: { ...bearer(world.agent.token), "idempotency-key": `refusal-${++keys}` },
    body
  })

const cases: ReadonlyArray<{
  readonly row: string
  readonly status: number
  readonly code: string
  readonly refused: () => Promise<JsonResponse>
}> = [
  {
    row: "approve on a completed run",
    status: 409,
    code: "not_adjudicable",
    refused: async () => calls.call("POST", `/${await finishedModelRun()}/tasks/s1-model-1/approve`, {})
  },
  {
    row: "resolution of a task that is not an ask",
    status: 422,
    code: "await_not_resolvable",
    refused: async () =>
      calls.call("POST", `/${await started([{ tool: { name: "grep" } }])}/tasks/s1-tool-1/resolution`, {
        resolution_token: "x"
      })
  },
  {
    row: "an input to a settled run",
    status: 409,
    code: "run_settled",
    refused: async () =>
      calls.call(
        "POST",
        `/${await finishedModelRun()}/inputs`,
        { input: { kind: "message", text: "late" } },
        { "idempotency-key": `refusal-${++keys}` }
      )
  },
  {
    row: "a second claim of an inbox row in the same generation",
    status: 409,
    code: "already_claimed",
    refused: async () => {
      const id = await started([{ tool: { name: "grep" } }])
      const inbox = inboxCalls(server, runner.token)
      expect((await inbox.claim(id, "s1-tool-1")).status).toBe(200)
      return inbox.claim(id, "s1-tool-1")
    }
  },
  {
    row: "a conversation reorder naming not exactly the caller's queued inputs",
    status: 409,
    code: "queue_changed",
    refused: async () => {
      const made = await conversationCall("POST", "", { conversation: {} })
      const id = made.body.conversation.public_id as string
      const queued = await conversationCall("POST", `/${id}/inputs`, {
        input: { kind: "message", text: "later", deliver_in: "1h" }
      })
      await conversationCall("POST", `/${id}/inputs`, {
        input: { kind: "message", text: "later too", deliver_in: "1h" }
      })
      return conversationCall("POST", `/${id}/inputs/reorder`, { inputs: [queued.body.input.public_id] })
    }
  }
]

describe("Errors: an actor's refusal answers a sentence, not its bare code", () => {
  it.each(cases)("$row: $status $code with its sentence", async ({ status, code, refused }) => {
    const answer = await refused()
    expect([answer.status, answer.body.error.code]).toEqual([status, code])
    expect(sentenceOf(code)).toEqual(expect.any(String))
    expect(answer.body.error.message).toBe(sentenceOf(code))
  })
})
