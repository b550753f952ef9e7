// Member: runs, route by route through the real server (spec "Member: runs", "Cross-cutting
// conventions" Pagination; runs supplement "Run resource and projections", "Run lifecycle",
// "Tool catalog, default runner, run inputs"): the list's order and cursors, PUT default_runner
// and the one default_runner_changed item a change narrates, the run feed's replay, and who may write.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { waitForActorState } from "../../support/actors.ts"
import { bearer, type JsonResponse, request } from "../../support/http.ts"
import { type ConnectedAgent, connectAgent, signedIn } from "../../support/members.ts"
import { ownerCredentials } from "../../support/people.ts"
import { memberCalls, readOnlyTool, runWorld } from "../../support/runs.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
let world: Awaited<ReturnType<typeof runWorld>>
let calls: ReturnType<typeof memberCalls>
let runner: { token: string; publicId: string }
/** Another agent of the same steward: it sees the world's workspace, dedicated to the world's agent. */
let sibling: ConnectedAgent
const absentId = "01900000-0000-7000-8000-000000000000"

beforeAll(async () => {
  server = await startTestServer()
  world = await runWorld(server, { agent: "routes-agent", workspace: "run routes", key: "run-routes-ws" })
  calls = memberCalls(server, world)
  runner = await world.runner("routes-runner", [readOnlyTool("grep")])
  sibling = await connectAgent(server, await signedIn(server, ownerCredentials), "routes-sibling")
})
afterAll(() => server?.close())

const expectError = (response: JsonResponse, status: number, code: string) =>
  expect([response.status, response.body?.error?.code]).toEqual([status, code])

const toolRun = { approval_mode: "bypass", steps: [{ tool: { name: "grep", input: {} } }] }

const newRun = async () => {
  const created = await calls.create({ ...toolRun, default_runner_executor_public_id: runner.publicId })
  expect(created.status).toBe(201)
  return created.body.run.public_id as string
}

const as = (token: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  request(server.baseUrl, method, `${calls.base}${path}`, {
    headers: { ...bearer(token), ...headers },
    ...(body === undefined ? {} : { body })
  })

describe("GET …/runs", () => {
  it("lists oldest first by default, newest first with order=desc; a cursor continues only its own direction", async () => {
    const made = [await newRun(), await newRun(), await newRun()]
    const ids = async (query: string) =>
      ((await calls.call("GET", query)).body.runs as Array<any>).map((run) => run.public_id as string)
    const all = await ids("?limit=100")
    expect(all.filter((id) => made.includes(id))).toEqual(made)
    expect(all).toEqual([...all].sort())
    const newest = await ids("?order=desc&limit=100")
    expect(newest).toEqual([...all].reverse())
    const first = (await calls.call("GET", "?limit=2")).body
    expect(first.runs.map((run: any) => run.public_id)).toEqual(all.slice(0, 2))
    const second = (await calls.call("GET", `?limit=2&after=${first.pagination.next_after}`)).body
    expect(second.runs.map((run: any) => run.public_id)).toEqual(all.slice(2, 4))
    expectError(
      await calls.call("GET", `?order=desc&limit=2&after=${first.pagination.next_after}`),
      400,
      "parameter_invalid"
    )
  })
})

describe("PUT …/runs/{id}/default_runner", () => {
  it("answers the run; a change narrates default_runner_changed once, setting it again narrates nothing; null clears", async () => {
    const created = await calls.create({ approval_mode: "bypass", steps: [{ ask: { prompt: "Go?" } }] })
    const id = created.body.run.public_id as string
    expect(created.body.run.default_runner).toBeNull()
    const put = (executor: string | null) =>
      calls.call("PUT", `/${id}/default_runner`, { default_runner: { executor_public_id: executor } })
    const set = await put(runner.publicId)
    expect(set.status).toBe(200)
    expect(set.body.run).toMatchObject({
      public_id: id,
      default_runner: { executor_public_id: runner.publicId, display_name: expect.any(String) }
    })
    expect((await put(runner.publicId)).body.run.default_runner.executor_public_id).toBe(runner.publicId)
    const cleared = await put(null)
    expect([cleared.status, cleared.body.run.default_runner]).toEqual([200, null])
    expect((await put(null)).body.run.default_runner).toBeNull()
    const feed = (await calls.call("GET", `/${id}/events`)).body.events as Array<any>
    expect(feed.filter((item) => item.type === "default_runner_changed").map((item) => item.payload)).toEqual([
      { run_public_id: id, default_runner: { executor_public_id: runner.publicId } },
      { run_public_id: id, default_runner: null }
    ])
    expectError(await put(absentId), 404, "runner_not_found")
    expectError(await calls.call("PUT", `/${id}/default_runner`, {}), 400, "parameter_missing")
  })
})

describe("GET …/runs/{id}/events", () => {
  it("replays the run's feed by cursor with the watermark; another run's cursor and a limit outside 1–200 are 400", async () => {
    const id = await newRun()
    await calls.call("POST", `/${id}/start`)
    await waitForActorState(server, "run", id, "running")
    const events = (query: string) => calls.call("GET", `/${id}/events${query}`)
    const whole = (await events("")).body
    expect(whole.events.length).toBeGreaterThan(1)
    const total = whole.events.length
    expect(whole.events.map((item: any) => item.sequence)).toEqual(Array.from({ length: total }, (_, i) => i + 1))
    expect(whole.events[0]).toMatchObject({ resource: { type: "run", public_id: id } })
    expect(whole.pagination).toEqual({ next_after: whole.events.at(-1).cursor, watermark: total })
    const first = (await events("?limit=1")).body
    const rest = (await events(`?after=${first.pagination.next_after}`)).body
    expect(rest.events.map((item: any) => item.sequence)).toEqual(
      whole.events.slice(1).map((item: any) => item.sequence)
    )
    expect((await events(`?after=${rest.pagination.next_after}`)).body).toEqual({
      events: [],
      pagination: { next_after: null, watermark: total }
    })
    const other = await newRun()
    await calls.call("POST", `/${other}/start`)
    await waitForActorState(server, "run", other, "running")
    const foreign = (await calls.call("GET", `/${other}/events?limit=1`)).body.pagination.next_after
    expectError(await events(`?after=${foreign}`), 400, "parameter_invalid")
    for (const limit of ["0", "201", "x"]) expectError(await events(`?limit=${limit}`), 400, "parameter_invalid")
    expectError(await calls.call("GET", `/${absentId}/events`), 404, "not_found")
  })
})

describe("GET …/runs/{id}/transcript", () => {
  it("pages mainline rounds newest page first, each page in reading order; a bad cursor or limit is 400", async () => {
    const round = (prompt: string) => ({ model: { prompt, model: { model: "local/echo" } } })
    const created = await calls.create({ approval_mode: "bypass", steps: [round("one"), round("two"), round("three")] })
    const id = created.body.run.public_id as string
    await calls.call("POST", `/${id}/start`)
    await waitForActorState(server, "run", id, "completed")
    const transcript = (query: string) => calls.call("GET", `/${id}/transcript${query}`)
    const newest = (await transcript("?limit=2")).body
    expect(newest.rounds.map((each: any) => [each.task_key, each.text_preview])).toEqual([
      ["s1-model-2", "echo: two"],
      ["s1-model-3", "echo: three"]
    ])
    expect(newest.pagination).toEqual({ next_before: expect.any(String), has_older: true })
    const older = (await transcript(`?limit=2&before=${newest.pagination.next_before}`)).body
    expect(older.rounds.map((each: any) => each.task_key)).toEqual(["s1-model-1"])
    expect(older.pagination).toEqual({ next_before: null, has_older: false })
    expect((await transcript("")).body.rounds).toHaveLength(3)
    for (const query of ["?limit=0", "?limit=101", "?before=nope"]) {
      expectError(await transcript(query), 400, "parameter_invalid")
    }
  })
})

describe("who may write", () => {
  it("create, verbs, append, default_runner and DELETE need write standing; the fenced agent still reads", async () => {
    const id = await newRun()
    const fenced = "workspace_agent_identifier_mismatch"
    expectError(await as(sibling.token, "POST", "", { run: toolRun }, { "idempotency-key": "fenced" }), 403, fenced)
    expectError(await as(sibling.token, "POST", `/${id}/start`), 403, fenced)
    const append = { steps: [{ ask: { prompt: "More?" } }] }
    expectError(
      await as(sibling.token, "POST", `/${id}/tasks`, append, { "idempotency-key": "fenced-append" }),
      403,
      fenced
    )
    expectError(
      await as(sibling.token, "PUT", `/${id}/default_runner`, { default_runner: { executor_public_id: null } }),
      403,
      fenced
    )
    expectError(await as(sibling.token, "DELETE", `/${id}`), 403, fenced)
    expect((await as(sibling.token, "GET", `/${id}`)).body.run.status).toBe("pending")
    expect((await as(sibling.token, "GET", "")).status).toBe(200)
    expect((await as(sibling.token, "GET", `/${id}/events`)).status).toBe(200)
  })

  it("an archived workspace answers 409 workspace_not_active to writes; reads still serve", async () => {
    const id = await newRun()
    const workspace = (
      await request(server.baseUrl, "GET", `/agent_api/v1/workspaces/${world.workspaceId}`, {
        headers: bearer(world.agent.token)
      })
    ).body.workspace
    const archival = await request(server.baseUrl, "POST", `/agent_api/v1/workspaces/${world.workspaceId}/archival`, {
      headers: bearer(world.agent.token),
      body: { command: { lock_version: workspace.lock_version } }
    })
    expect(archival.status).toBe(200)
    await waitForActorState(server, "workspace", world.workspaceId, "archived")
    expectError(await calls.create(toolRun), 409, "workspace_not_active")
    expectError(await calls.call("POST", `/${id}/start`), 409, "workspace_not_active")
    expectError(await calls.call("DELETE", `/${id}`), 409, "workspace_not_active")
    expect((await calls.call("GET", `/${id}`)).body.run.public_id).toBe(id)
  })
})
