// Process frames on the progress feed (SUPPLEMENT "Executor plane"; runs supplement "Executor
// inbox"): a runner's process_output post is relayed on its run's progress feed as {frame}, and the
// cadence (one frame per process per 250 ms) counts each runner's process apart: another runner's
// process of the same process_id never drops it.
import { afterAll, beforeAll, expect, it } from "vitest"
import { bearer } from "../../support/http.ts"
import { inboxCalls, memberCalls, type RunWorld, readOnlyTool, runWorld } from "../../support/runs.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { about, isType, openRaw } from "./support-cable.ts"

let server: TestServer
let world: RunWorld

beforeAll(async () => {
  server = await startTestServer()
  world = await runWorld(server)
})
afterAll(() => server?.close())

/** A started standalone run of one tool step on `runner`, its task claimed: the run and the claim token. */
const claimedRun = async (runner: { token: string; publicId: string }) => {
  const calls = memberCalls(server, world)
  const created = await calls.create({
    approval_mode: "bypass",
    default_runner_executor_public_id: runner.publicId,
    steps: [{ tool: { name: "shell", input: { command: "make" } } }]
  })
  expect(created.status).toBe(201)
  const id = created.body.run.public_id as string
  expect((await calls.call("POST", `/${id}/start`)).status).toBe(200)
  const claimed = await inboxCalls(server, runner.token).claim(id, "s1-tool-1")
  expect(claimed.status).toBe(200)
  return { id, token: claimed.body.claim.claim_token as string }
}

it("relays a process_output frame on the run's progress feed; each runner's process keeps its own cadence", async () => {
  const first = await world.runner("process-runner-1", [readOnlyTool("shell")])
  const second = await world.runner("process-runner-2", [readOnlyTool("shell")])
  const mine = await claimedRun(first)
  const theirs = await claimedRun(second)

  const cable = openRaw(server, { headers: bearer(world.agent.token) })
  await cable.frames.take(isType("welcome"))
  const identifier = JSON.stringify({
    channel: "RunChannel",
    workspace_id: world.workspaceId,
    run_id: mine.id,
    items: "progress"
  })
  cable.subscribe(identifier)
  expect((await cable.frames.take(about(identifier))).type).toBe("confirm_subscription")

  const post = (runner: { token: string }, run: { id: string; token: string }, lines: Array<string>) =>
    inboxCalls(server, runner.token).progress({
      frame: {
        run_public_id: run.id,
        process_id: "1",
        source: { run_public_id: run.id, task_key: "s1-tool-1", claim_token: run.token },
        lines,
        exit: null
      }
    })
  const theirsPosted = await post(second, theirs, ["their build"])
  const minePosted = await post(first, mine, ["my build"])
  expect([theirsPosted.status, theirsPosted.body]).toEqual([202, { accepted: true }])
  expect([minePosted.status, minePosted.body]).toEqual([202, { accepted: true }])
  // The same process again within 250 ms is dropped.
  expect((await post(first, mine, ["too soon"])).body).toEqual({ accepted: false })

  const relayed = await cable.frames.take(
    (frame: any) => about(identifier)(frame) && frame.message?.frame?.type === "process_output"
  )
  expect(relayed.message).toEqual({
    frame: {
      type: "process_output",
      run_public_id: mine.id,
      process_id: "1",
      executor_public_id: first.publicId,
      at: expect.any(String),
      lines: ["my build"],
      exit: null
    }
  })
  cable.socket.close()
})
