// Work notices on ExecutorInboxChannel (SUPPLEMENT "Cable"; runs supplement "Executor inbox"),
// through the real server and real WebSocket clients: a tool step dispatched to a runner is
// announced on that runner's inbox channel, bare and under either identifier, and on no other
// executor's; a force stop of a claimed task tells its claimant work_canceled.
import { logger } from "@rails/actioncable"
import { afterAll, afterEach, beforeAll, expect, it } from "vitest"
import { waitForActorState } from "../../support/actors.ts"
import { bearer } from "../../support/http.ts"
import { inboxCalls, memberCalls, type RunWorld, readOnlyTool, runWorld } from "../../support/runs.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { about, isType, openRaw, type RawCable, stockConsumer, stockSubscription } from "./support-cable.ts"

const upstream = JSON.stringify({ channel: "AgentAPI::V1::ExecutorInboxChannel" })
const short = JSON.stringify({ channel: "ExecutorInboxChannel" })

type Runner = { readonly token: string; readonly publicId: string }

let server: TestServer
let world: RunWorld
let runner: Runner
let other: Runner
let calls: ReturnType<typeof memberCalls>

beforeAll(async () => {
  server = await startTestServer()
  world = await runWorld(server)
  runner = await world.runner("inbox-work-runner", [readOnlyTool("grep")])
  other = await world.runner("inbox-other-runner", [readOnlyTool("grep")])
  calls = memberCalls(server, world)
})
afterAll(() => server?.close())

const cleanups: Array<() => void> = []
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup()
})

/** Creates and starts a one-step grep run on `target`; answers its public id. */
const started = async (target: Runner) => {
  const created = await calls.create({
    approval_mode: "bypass",
    default_runner_executor_public_id: target.publicId,
    steps: [{ tool: { name: "grep", input: { pattern: "todo" } } }]
  })
  expect(created.status).toBe(201)
  const id = created.body.run.public_id as string
  expect((await calls.call("POST", `/${id}/start`)).status).toBe(200)
  return id
}

/** A raw socket subscribed to the inbox under `identifier`, confirmed. */
const subscribed = async (token: string, identifier = short): Promise<RawCable> => {
  const cable = openRaw(server, { headers: bearer(token) })
  cleanups.push(() => cable.socket.close())
  await cable.frames.take(isType("welcome"))
  cable.subscribe(identifier)
  expect((await cable.frames.take(about(identifier))).type).toBe("confirm_subscription")
  return cable
}

/** The channel's next message about the run (pings pass by). */
const noticeAbout = async (cable: RawCable, identifier: string, runId: string) =>
  (await cable.frames.take((frame: any) => about(identifier)(frame) && frame.message?.run_public_id === runId)).message

const workAvailable = (runId: string) => ({
  type: "work_available",
  kind: "tool_call",
  run_public_id: runId,
  task_key: "s1-tool-1",
  tool_name: "grep"
})

it("a dispatched tool step is announced bare on its runner's inbox, under either identifier", async () => {
  const { consumer } = stockConsumer(server, bearer(runner.token))
  cleanups.push(() => consumer.disconnect())
  const stock = stockSubscription(consumer, JSON.parse(upstream))
  expect(await stock.events.take()).toEqual({ event: "connected", reconnected: false })
  const raw = await subscribed(runner.token)

  const id = await started(runner)
  const heard = await stock.events.take((event: any) => event.data?.run_public_id === id)
  expect(heard).toEqual({ event: "received", data: workAvailable(id) })
  expect(await noticeAbout(raw, short, id)).toEqual(workAvailable(id))
  // The inbox read agrees: the row the notice announced is listed.
  const rows = (await inboxCalls(server, runner.token).list()).body.tasks
  expect(rows.some((row: any) => row.run_public_id === id && row.task_key === "s1-tool-1")).toBe(true)
})

it("a notice reaches the addressed executor only", async () => {
  const mine = await subscribed(runner.token)
  const theirs = await subscribed(other.token)
  const forMe = await started(runner)
  expect(await noticeAbout(mine, short, forMe)).toEqual(workAvailable(forMe))
  const forThem = await started(other)
  expect(await noticeAbout(theirs, short, forThem)).toEqual(workAvailable(forThem))
  // Published before the other runner's own notice, on a channel it does not hear.
  expect(theirs.frames.buffered((frame: any) => frame.message?.run_public_id === forMe)).toEqual([])
})

it("a force stop of a claimed task tells its claimant work_canceled", async () => {
  const cable = await subscribed(runner.token, upstream)
  const id = await started(runner)
  expect(await noticeAbout(cable, upstream, id)).toEqual(workAvailable(id))
  const claimed = await inboxCalls(server, runner.token).claim(id, "s1-tool-1")
  expect(claimed.status).toBe(200)

  const stopped = await calls.call("POST", `/${id}/stop`, { force: true })
  expect(stopped.status).toBe(200)
  expect(await noticeAbout(cable, upstream, id)).toEqual({
    type: "work_canceled",
    run_public_id: id,
    task_key: "s1-tool-1"
  })
  await waitForActorState(server, "run", id, "canceled")
  const rows = (await inboxCalls(server, runner.token).list()).body.tasks
  expect(rows.some((row: any) => row.run_public_id === id)).toBe(false)
})

it("an unclaimed task's stop tells nobody: only a claimant hears work_canceled", async () => {
  const cable = await subscribed(runner.token)
  const unclaimed = await started(runner)
  expect(await noticeAbout(cable, short, unclaimed)).toEqual(workAvailable(unclaimed))
  expect((await calls.call("POST", `/${unclaimed}/stop`, { force: true })).status).toBe(200)
  // A later run's notice marks the point by which a work_canceled would have arrived.
  const claimed = await started(runner)
  expect(await noticeAbout(cable, short, claimed)).toEqual(workAvailable(claimed))
  expect((await inboxCalls(server, runner.token).claim(claimed, "s1-tool-1")).status).toBe(200)
  expect((await calls.call("POST", `/${claimed}/stop`, { force: true })).status).toBe(200)
  expect((await noticeAbout(cable, short, claimed)).type).toBe("work_canceled")
  expect(cable.frames.buffered((frame: any) => frame.message?.run_public_id === unclaimed)).toEqual([])
})

// Quiet unless asked for: the stock client logs every step when enabled.
logger.enabled = process.env.ACTIONCABLE_DEBUG === "1"
