// A conversation's usage_summary and context count the model calls of the runs it hosts (supplement
// conversations.md "Conversation": every billed call of its replies, summaries and runs; context from
// the newest reporting sample): a run-backed reply's model tasks add up with its direct replies, and
// occupancy follows whichever reported last.
import { afterAll, beforeAll, expect, it } from "vitest"
import { waitForConversation } from "../../support/conversations.ts"
import { type HostingWorld, hostedReply, hostingWorld } from "../../support/hosted-runs.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
let world: HostingWorld

beforeAll(async () => {
  server = await startTestServer()
  world = await hostingWorld(server, {
    agents: ["usage-agent"],
    workspace: "run-usage",
    answerer: "counter",
    description: "Answers through a run",
    kernelTools: ["svc.conversation.status"]
  })
})
afterAll(() => server?.close())

interface Usage {
  readonly input_tokens: number
  readonly output_tokens: number
}

/** The context block a sample on a local model (window 32768) reporting `usage` makes. */
const occupancy = (usage: Usage, model: string) => ({
  used_tokens: usage.input_tokens + usage.output_tokens,
  input_tokens: usage.input_tokens,
  output_tokens: usage.output_tokens,
  cache_read_tokens: 0,
  window_tokens: 32768,
  used_percent: Math.round(((usage.input_tokens + usage.output_tokens) / 32768) * 10000) / 100,
  as_of_model: { provider_id: "local", model_ref: model }
})

/** The usage_summary over `calls` (local prices: input 1.00, output 2.00 per million). */
const summed = (calls: ReadonlyArray<Usage>) => {
  const input = calls.reduce((sum, call) => sum + call.input_tokens, 0)
  const output = calls.reduce((sum, call) => sum + call.output_tokens, 0)
  return { request_count: calls.length, input_tokens: input, output_tokens: output, total_tokens: input + output }
}

it("a run-backed reply's model calls count in usage_summary and set context; a later direct reply takes context", async () => {
  const { member } = world
  const id = await world.createConversation({ title: "counted" })
  const turnDone = (turnId: string) =>
    waitForConversation(
      server,
      id,
      async () => (await world.turnsOf(id)).find((turn) => turn.public_id === turnId)?.status === "completed"
    )
  const view = async () => (await member("GET", `/conversations/${id}`)).body.conversation

  const directive = JSON.stringify({ tool_calls: [{ name: "status", input: {} }] })
  const { runId, turnId } = await hostedReply(server, member, id, world.answererId, directive)
  await turnDone(turnId)
  const trace = (await member("GET", `/runs/${runId}`)).body.run
  const modelTasks = (trace.tasks as Array<any>).filter((task) => task.kind === "model_task")
  expect(modelTasks.length).toBe(2)
  const calls: Array<Usage & { readonly completed_at: string }> = []
  for (const task of modelTasks) {
    const read = (await member("GET", `/runs/${runId}/tasks/${task.key}`)).body.task
    expect(read.usage).toMatchObject({ input_tokens: expect.any(Number), output_tokens: expect.any(Number) })
    calls.push({ ...read.usage, completed_at: read.completed_at })
  }
  const newest = calls.toSorted((a, b) => a.completed_at.localeCompare(b.completed_at)).at(-1)!

  const afterRun = await view()
  expect(afterRun.usage_summary).toMatchObject({
    ...summed(calls),
    cache_read_tokens: 0,
    uncached_input_tokens: summed(calls).input_tokens,
    cost_complete: true
  })
  expect(Number(afterRun.usage_summary.cost_amount)).toBeCloseTo(
    (summed(calls).input_tokens + 2 * summed(calls).output_tokens) / 1e6,
    12
  )
  expect(afterRun.context).toEqual(occupancy(newest, "local/script"))

  const accepted = await member("POST", `/conversations/${id}/inputs`, {
    input: { kind: "direct_reply", text: "and now directly", model: { model: "local/echo" } }
  })
  expect(accepted.status).toBe(202)
  let direct: any
  await waitForConversation(server, id, async () => {
    direct = (await world.turnsOf(id)).at(-1)
    return direct?.kind === "direct_reply" && direct.public_id !== turnId && direct.status === "completed"
  })
  const directUsage = direct.active_variant.usage as Usage
  const afterDirect = await view()
  expect(afterDirect.usage_summary).toMatchObject(summed([...calls, directUsage]))
  expect(afterDirect.context).toEqual(occupancy(directUsage, "local/echo"))
})
