// The conversation channel's transcript of a run-backed reply (conversations supplement "Feed and
// conversation channel"), through the real server: each mainline round's deltas (tool_call_started
// and tool_call_arguments_delta as the model calls a tool, text_delta as it answers), naming the
// run and the round; a `round` item as each round settles and a `call` item as each of its calls
// does, the rows the run's transcript door shows; then the settled turn. A subscriber joining
// mid-round gets that round's text whole.
import { afterAll, afterEach, beforeAll, expect, it } from "vitest"
import { type HostingWorld, hostedReply, hostingWorld } from "../../support/hosted-runs.ts"
import { bearer } from "../../support/http.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { about, openRaw, type RawCable } from "./support-cable.ts"

let server: TestServer
let world: HostingWorld

beforeAll(async () => {
  server = await startTestServer()
  world = await hostingWorld(server, {
    agents: ["transcript-agent"],
    workspace: "run-transcript",
    answerer: "narrator",
    description: "Answers through a run",
    kernelTools: ["svc.conversation.status"]
  })
})
afterAll(() => server?.close())

const sockets: Array<RawCable> = []
afterEach(() => {
  for (const socket of sockets.splice(0)) socket.socket.close()
})

/** A socket of the answerer's owner following the conversation's transcript. */
const transcriptOf = async (conversation: string) => {
  const cable = openRaw(server, { headers: bearer(world.agents[0]!.token) })
  sockets.push(cable)
  await cable.frames.take()
  const identifier = JSON.stringify({
    channel: "ConversationChannel",
    workspace_id: world.workspaceId,
    conversation_id: conversation,
    items: "transcript"
  })
  cable.subscribe(identifier)
  expect((await cable.frames.take(about(identifier))).type).toBe("confirm_subscription")
  const next = async () => (await cable.frames.take(about(identifier))).message.event
  const untilTurn = async () => {
    const items: Array<any> = []
    for (let item = await next(); ; item = await next()) {
      items.push(item)
      if (item.type === "turn") return items
    }
  }
  return { next, untilTurn }
}

const words = (count: number) => Array.from({ length: count }, (_, index) => `w${index + 1}`).join(" ")
const textOf = (items: ReadonlyArray<any>) =>
  items
    .filter((item) => item.type === "text_delta")
    .map((item) => item.text)
    .join("")

it("tells a run-backed reply's rounds: their deltas, each round and call as it settles, then the turn", async () => {
  const id = await world.createConversation({ title: "narrated" })
  const transcript = await transcriptOf(id)
  const input = { to: id }
  const directive = JSON.stringify({ tool_calls: [{ name: "status", input }], reply: "done it is" })
  const { runId, turnId } = await hostedReply(server, world.member, id, world.answererId, directive)
  const items = await transcript.untilTurn()
  expect(items.map((item) => [item.type, item.task_key])).toEqual([
    ["tool_call_started", "s1-model-1"],
    ["tool_call_arguments_delta", "s1-model-1"],
    ["round", "s1-model-1"],
    ["call", "s1-model-1-t0"],
    ["text_delta", "s1-model-1-c"],
    ["text_delta", "s1-model-1-c"],
    ["text_delta", "s1-model-1-c"],
    ["round", "s1-model-1-c"],
    ["turn", undefined]
  ])
  const turn = items.at(-1)
  const variantId = turn.turn.active_variant.public_id
  for (const item of items.slice(0, -1)) {
    expect(item).toMatchObject({ turn_public_id: turnId, variant_public_id: variantId, run_public_id: runId })
  }
  expect(items[0]).toMatchObject({ index: 0, call_id: "call_1", name: "status" })
  expect(items[1]).toMatchObject({ index: 0, delta: JSON.stringify(input) })
  expect(textOf(items)).toBe("done it is")
  expect(turn.turn).toMatchObject({ status: "completed", content: "done it is" })

  // The rows are the transcript door's (the first round's, as it stood when it settled).
  const door = (await world.member("GET", `/runs/${runId}/transcript`)).body.rounds as Array<any>
  const [first, second] = door
  expect(items[2].round).toEqual({ ...first, calls: items[2].round.calls })
  expect(items[2].round.calls.items.map((call: any) => call.task_key)).toEqual(["s1-model-1-t0"])
  expect(items[3].call).toEqual(first.calls.items[0])
  expect(items[7].round).toEqual(second)
})

it("a subscriber joining a run-backed reply mid-round gets the round's text whole, then the round and the turn", async () => {
  const id = await world.createConversation({ title: "joined" })
  const first = await transcriptOf(id)
  const reply = words(16)
  const directive = JSON.stringify({ tool_calls: [{ name: "status", input: { to: id } }], reply, pace_ms: 40 })
  await hostedReply(server, world.member, id, world.answererId, directive)
  for (let seen = 0; seen < 3; ) if ((await first.next()).type === "text_delta") seen++
  const late = await transcriptOf(id)
  const items = await late.untilTurn()
  expect(textOf(items)).toBe(reply)
  expect(items.slice(-2).map((item) => [item.type, item.task_key])).toEqual([
    ["round", "s1-model-1-c"],
    ["turn", undefined]
  ])
})
