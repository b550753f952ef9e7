// The inference requests a conversation's reply and a hosted run's model round open are stamped
// by the server's clock, as every other row is: with that clock moved 40 days ahead, their
// created_at is the moved day, not the wall clock's.
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, expect, it } from "vitest"
import { waitForConversation } from "../../support/conversations.ts"
import { type HostingWorld, hostedReply, hostingWorld } from "../../support/hosted-runs.ts"
import { serverNow } from "../../support/schedules.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { waitForSteps } from "../../support/steps.ts"

let server: TestServer
let world: HostingWorld
let movedAt: number

beforeAll(async () => {
  server = await startTestServer()
  server.clock.advance("40 days")
  movedAt = await serverNow(server)
  world = await hostingWorld(server, {
    agents: ["clock-agent"],
    workspace: "request-clock",
    answerer: "clock-answerer",
    description: "Answers through a run",
    kernelTools: ["svc.conversation.status"]
  })
})
afterAll(() => server?.close())

/** The created_at of the inference requests asked by `conversation` or by runs hosted in it. */
const requestTimes = (conversation: string) =>
  server.run(
    Effect.flatMap(
      SqlClient,
      (sql) => sql<{ created_at: Date; by_run: boolean }>`
        SELECT r.created_at, r.asked_by_run_id IS NOT NULL AS by_run
        FROM inference_requests r
        JOIN conversations c ON c.public_id = ${conversation}
        LEFT JOIN runs u ON u.id = r.asked_by_run_id
        WHERE r.asked_by_conversation_id = c.id OR u.conversation_id = c.id`
    )
  )

it("a direct reply's and a hosted run's inference requests carry the server clock's created_at", async () => {
  const conversation = await world.createConversation()
  const direct = await world.member("POST", `/conversations/${conversation}/inputs`, {
    input: { kind: "direct_reply", text: "hello", model: { model: "local/echo" } }
  })
  expect(direct.status).toBe(202)
  await waitForConversation(server, conversation, async () => {
    const turns = await world.turnsOf(conversation)
    return turns.length === 1 && turns[0].status === "completed"
  })
  await hostedReply(server, world.member, conversation, world.answererId, "hello from the run")
  await waitForSteps(server, async () => (await requestTimes(conversation)).some((row) => row.by_run))
  const rows = await requestTimes(conversation)
  expect(rows.map((row) => row.by_run).sort()).toEqual([false, true])
  for (const row of rows) expect(row.created_at.getTime()).toBeGreaterThanOrEqual(movedAt)
})
