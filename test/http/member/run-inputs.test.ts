// The run inputs door of a standalone run: a queued message lands at quiescence as a mainline
// round continuing the last mainline model; the door's refusals (members it does not take, a run
// without a mainline model, a settled run, the queue bound, a stale lock_version); edit, delete
// and reorder of held rows.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { waitForActorState } from "../../support/actors.ts"
import { memberCalls, type RunWorld, readOnlyTool, runWorld } from "../../support/runs.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
let world: RunWorld
let calls: ReturnType<typeof memberCalls>
let keys = 0

beforeAll(async () => {
  server = await startTestServer()
  world = await runWorld(server)
  calls = memberCalls(server, world)
})
afterAll(() => server?.close())

const modelRun = async () => {
  const created = await calls.create({
    approval_mode: "bypass",
    steps: [{ model: { prompt: "first", model: { model: "local/echo" } } }]
  })
  return created.body.run.public_id as string
}

const post = (id: string, input: unknown) =>
  calls.call("POST", `/${id}/inputs`, { input }, { "idempotency-key": `input-${++keys}` })

describe("run inputs door", () => {
  it("a queued message lands at quiescence as a mainline round continuing the last mainline model", async () => {
    const id = await modelRun()
    const accepted = await post(id, { kind: "message", text: "second" })
    expect(accepted.status).toBe(202)
    expect(accepted.body.input).toMatchObject({
      kind: "message",
      text: "second",
      state: "pending",
      delivery_mode: "queue"
    })
    expect((await calls.call("GET", `/${id}`)).body.run.input_queue).toEqual({ limit: 16, held: 1 })
    await calls.call("POST", `/${id}/start`)
    await waitForActorState(server, "run", id, "completed")
    const trace = (await calls.call("GET", `/${id}`)).body.run
    expect(trace.deliverable_task_key).toBe("i1-model")
    expect(trace.input_queue.held).toBe(0)
    const landed = (await calls.call("GET", `/${id}/tasks/i1-model`)).body.task
    expect(landed).toMatchObject({ mainline: true, output: "echo: second" })
    const sealed = (await calls.call("GET", `/${id}/tasks/i1-model/request`)).body.request
    expect(sealed.entries.map((entry: any) => entry.role)).toEqual(["user", "assistant", "user"])
  })

  it("refuses members the run door does not take, and kind other than message", async () => {
    const id = await modelRun()
    const model = await post(id, { kind: "message", text: "x", model: { model: "local/echo" } })
    expect([model.status, model.body.error.code]).toEqual([422, "validation_failed"])
    expect(model.body.error.message).toContain("model")
    const reply = await post(id, { kind: "direct_reply", text: "x" })
    expect([reply.status, reply.body.error.code]).toEqual([422, "validation_failed"])
  })

  it("a run without a mainline model answers run_not_appendable; a settled run run_settled", async () => {
    const runner = await world.runner("inputs-runner", [readOnlyTool("grep")])
    const toolOnly = await calls.create({
      approval_mode: "bypass",
      default_runner_executor_public_id: runner.publicId,
      steps: [{ tool: { name: "grep" } }]
    })
    const none = await post(toolOnly.body.run.public_id, { kind: "message", text: "x" })
    expect([none.status, none.body.error.code]).toEqual([409, "run_not_appendable"])
    const id = await modelRun()
    await calls.call("POST", `/${id}/stop`)
    const settled = await post(id, { kind: "message", text: "x" })
    expect([settled.status, settled.body.error.code]).toEqual([409, "run_settled"])
  })

  it("the queue holds 16; edit with lock_version, delete and reorder held rows", async () => {
    const id = await modelRun()
    const ids: Array<string> = []
    for (let i = 0; i < 16; i++) ids.push((await post(id, { kind: "message", text: `m${i}` })).body.input.public_id)
    const full = await post(id, { kind: "message", text: "one more" })
    expect([full.status, full.body.error.code]).toEqual([409, "input_queue_full"])
    const edited = await calls.call("PATCH", `/${id}/inputs/${ids[0]}`, {
      input: { text: "m0!", expected_lock_version: 0 }
    })
    expect(edited.body.input).toMatchObject({ text: "m0!", lock_version: 1 })
    const stale = await calls.call("PATCH", `/${id}/inputs/${ids[0]}`, {
      input: { text: "again", expected_lock_version: 0 }
    })
    expect([stale.status, stale.body.error.code]).toEqual([409, "stale_object"])
    expect((await calls.call("DELETE", `/${id}/inputs/${ids[15]}`)).status).toBe(204)
    const order = [...ids.slice(0, 15)].reverse()
    const reordered = await calls.call("POST", `/${id}/inputs/reorder`, { inputs: order })
    expect(reordered.body.inputs.map((input: any) => input.public_id)).toEqual(order)
    const partial = await calls.call("POST", `/${id}/inputs/reorder`, { inputs: order.slice(1) })
    expect([partial.status, partial.body.error.code]).toEqual([409, "queue_changed"])
  })
})
