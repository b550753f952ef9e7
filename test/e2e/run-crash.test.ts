// End to end (issue 12, "Must hold under load and faults"): `troupe serve` on PostgreSQL killed with
// SIGKILL while a run of 50 tool tasks (a fan of 32, then a chain of 18) is served by the reference
// runner (`troupe runner`, a separate process kept running), then started again on the same
// database. The runner reaches both servers through one relay address, reconnects, and commits
// what it finished meanwhile. The run completes; every task ran once (the tool logs each
// invocation) and was committed once, with its own input echoed as its output; nothing committed
// before the kill is lost or rewritten. The test waits on the steps the servers NOTIFY (and on the
// runner's lines), reading the database on each.
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { type RunnerProcess, startRunner, writeConfig } from "../cli/support-runner.ts"
import { decide } from "../http/oauth/support-device.ts"
import { freshPostgres, postgresReachable, type TestDatabase } from "../support/database.ts"
import { bearer, request } from "../support/http.ts"
import { connectAgent, signedIn } from "../support/members.ts"
import { createOwner, ownerCredentials } from "../support/people.ts"
import { startTestServer, type TestServer } from "../support/server.ts"
import { openStepWatch, type StepWatch } from "../support/step-watch.ts"
import { openTcpRelay, type TcpRelay } from "../support/tcp-relay.ts"
import { killAll, troupeServe } from "../support/troupe-process.ts"

const onPostgres = await postgresReachable()
const fanWidth = 32
const chainLength = 18
const taskCount = fanWidth + chainLength
/** Tasks committed before the kill; the rest of the fan is still running its commands then. */
const committedBeforeKill = 8

const fanKeys = Array.from({ length: fanWidth }, (_, index) => `fan-${String(index).padStart(2, "0")}`)
const chainKeys = Array.from({ length: chainLength }, (_, index) => `chain-${String(index).padStart(2, "0")}`)
/** What each task's tool is given: its key, and how long the tool takes (the fan's members finish one by one). */
const inputOf = (key: string) => {
  const at = fanKeys.indexOf(key)
  return { key, delay_ms: at === -1 ? 50 : 400 + 150 * at, note: `payload of ${key}` }
}

/** The runner's tool: logs one line per invocation, then echoes its input after `delay_ms`. */
const echoTool = `
import { appendFileSync } from "node:fs"
let text = ""
process.stdin.on("data", (chunk) => (text += chunk)).on("end", () => {
  const input = JSON.parse(text)
  appendFileSync(process.argv[2], input.key + "\\n")
  setTimeout(() => process.stdout.write(text), input.delay_ms)
})
`

const databases = new Set<TestDatabase>()
const watches = new Set<StepWatch>()
const runners = new Set<RunnerProcess>()
const relays = new Set<TcpRelay>()
let directory: string | undefined
afterAll(async () => {
  for (const runner of runners) await runner.stop()
  await killAll()
  for (const relay of relays) await relay.close()
  for (const watch of watches) await watch.close()
  for (const database of databases) await database.drop()
  if (directory) await rm(directory, { recursive: true, force: true })
})

/** An agent's member token and a workspace, made by an in-process server that then stops. */
const prepare = async (database: TestDatabase) => {
  databases.add(database)
  const server = await startTestServer({ database: { ...database, drop: async () => {} } })
  await createOwner(server)
  const agent = await connectAgent(server, await signedIn(server, ownerCredentials), "run-crash-agent")
  const made = await request(server.baseUrl, "POST", "/agent_api/v1/workspaces", {
    body: { workspace: { name: "a run across a crash" } },
    headers: { ...bearer(agent.token), "idempotency-key": "run-crash-workspace" }
  })
  expect(made.status).toBe(201)
  await server.close()
  return { token: agent.token, workspaceId: made.body.workspace.public_id as string }
}

interface TaskRow {
  readonly key: string
  readonly status: string
  readonly generation: number
  readonly claimed: boolean
  readonly result: { readonly output?: string } | null
  readonly completed_at: string | null
}

const taskRows = (watch: StepWatch, runId: string) =>
  watch.query<TaskRow>(
    `SELECT t.key, t.status, t.generation, t.claimed, t.result, t.completed_at::text AS completed_at
     FROM run_tasks t JOIN runs r ON r.id = t.run_id WHERE r.public_id = $1::uuid ORDER BY t.position`,
    [runId]
  )

const runStatus = (watch: StepWatch, runId: string) =>
  watch
    .query<{ status: string }>(`SELECT status FROM runs WHERE public_id = $1::uuid`, [runId])
    .then((rows) => rows[0]?.status)

const linesOf = (runner: RunnerProcess, pattern: RegExp) =>
  runner
    .output()
    .split("\n")
    .filter((line) => pattern.test(line))

describe.skipIf(!onPostgres)("a run when the server is killed mid-run", { timeout: 150_000 }, () => {
  it("completes after a restart: every task ran and committed once, its input echoed; nothing committed is lost", async () => {
    const database = await freshPostgres()
    const { token, workspaceId } = await prepare(database)
    const watch = await openStepWatch(database)
    watches.add(watch)
    directory = await mkdtemp(join(tmpdir(), "troupe-run-crash-"))
    const toolPath = join(directory, "echo.mjs")
    const invocations = join(directory, "invocations.log")
    await writeFile(toolPath, echoTool)
    await writeFile(invocations, "")

    const relay = await openTcpRelay()
    relays.add(relay)
    const first = await troupeServe(database.config)
    relay.point(first.port)

    // The reference runner, through the relay; the owner approves its device code.
    const configPath = await writeConfig(directory, "crash-runner", [
      {
        name: "echo",
        command: [process.execPath, toolPath, invocations],
        description: "Echoes its input",
        input_schema: { type: "object" }
      }
    ])
    const runner = startRunner(configPath, relay.baseUrl)
    runners.add(runner)
    const [, userCode] = await runner.line(/enter the code (\S+)/)
    const owner = await signedIn({ baseUrl: first.baseUrl } as TestServer, ownerCredentials)
    await decide(owner, userCode!, "approve", "account_wide")
    const [, runnerId] = await runner.line(/^serving .* \(([0-9a-f-]{36})\)$/)
    await runner.line(/^inbox: subscribed$/)

    const runs = `/agent_api/v1/workspaces/${workspaceId}/runs`
    const created = await request(first.baseUrl, "POST", runs, {
      headers: { ...bearer(token), "idempotency-key": "run-crash-run" },
      body: {
        run: {
          approval_mode: "bypass",
          default_runner_executor_public_id: runnerId,
          steps: [
            { parallel: fanKeys.map((key) => ({ tool: { name: "echo", key, input: inputOf(key) } })) },
            ...chainKeys.map((key) => ({ tool: { name: "echo", key, input: inputOf(key) } }))
          ]
        }
      }
    })
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    expect(created.body.receipt.accepted_task_keys).toHaveLength(taskCount)
    const runId = created.body.run.public_id as string
    expect((await request(first.baseUrl, "POST", `${runs}/${runId}/start`, { headers: bearer(token) })).status).toBe(
      200
    )

    // The kill: every fan member claimed (no claim's answer in flight), some committed, the rest
    // of the fan still running its commands.
    const claimedLine = (key: string) => new RegExp(`^claimed ${runId}/${key} echo$`)
    await watch.until("the fan claimed and partly committed", 30_000, async () => {
      const claimed = fanKeys.every((key) => linesOf(runner, claimedLine(key)).length === 1)
      const done = (await taskRows(watch, runId)).filter((task) => task.status === "completed").length
      return claimed && done >= committedBeforeKill ? true : undefined
    })
    await first.kill9()
    relay.point(undefined)

    const beforeRestart = await taskRows(watch, runId)
    const committedBefore = beforeRestart.filter((task) => task.status === "completed")
    expect(committedBefore.length).toBeGreaterThanOrEqual(committedBeforeKill)
    expect(committedBefore.length).toBeLessThan(fanWidth)
    expect(await runStatus(watch, runId)).toBe("running")

    const second = await troupeServe(database.config)
    relay.point(second.port)
    await watch
      .until("the run to complete", 90_000, async () =>
        (await runStatus(watch, runId)) === "completed" ? true : undefined
      )
      .catch(async (error) => {
        const open = (await taskRows(watch, runId)).filter((task) => task.status !== "completed")
        throw new Error(`${(error as Error).message}; open tasks: ${JSON.stringify(open)}\nrunner:\n${runner.output()}`)
      })

    // The trace: completed, 50 tasks completed, each claimed by the runner.
    const trace = await request(second.baseUrl, "GET", `${runs}/${runId}`, { headers: bearer(token) })
    expect(trace.body.run).toMatchObject({
      status: "completed",
      task_progress: { completed: taskCount, total: taskCount }
    })
    const keys = [...fanKeys, ...chainKeys]
    expect(trace.body.run.tasks.map((task: { key: string; status: string }) => [task.key, task.status])).toEqual(
      keys.map((key) => [key, "completed"])
    )
    for (const task of trace.body.run.tasks) {
      expect(task.claimed_by, task.key).toEqual({ executor_public_id: runnerId })
    }

    // Each task's output is its own input, echoed by its one invocation.
    for (const key of keys) {
      const read = await request(second.baseUrl, "GET", `${runs}/${runId}/tasks/${key}`, { headers: bearer(token) })
      expect(read.body.task.status, key).toBe("completed")
      expect(JSON.parse(read.body.task.output), key).toEqual(inputOf(key))
    }
    const invoked = (await readFile(invocations, "utf8")).split("\n").filter((line) => line !== "")
    expect(invoked.toSorted()).toEqual(keys.toSorted())

    // One claim and one commit each: nothing handed out twice, no retry generation; the runner
    // committed each once (a commit whose answer the kill cut is answered unchanged on its retry).
    const after = await taskRows(watch, runId)
    expect(new Set(after.map((task) => task.generation)).size).toBe(1)
    for (const key of keys) {
      expect(linesOf(runner, claimedLine(key)), key).toHaveLength(1)
      expect(linesOf(runner, new RegExp(`^committed ${runId}/${key} echo: completed$`)), key).toHaveLength(1)
    }
    expect(linesOf(runner, new RegExp(`^(not claimed|failed|refused|canceled) ${runId}/`))).toEqual([])
    // It lost the server and subscribed again.
    expect(linesOf(runner, /^inbox: subscribed$/).length).toBeGreaterThanOrEqual(2)

    // What was committed before the kill stands as it was.
    for (const before of committedBefore) {
      const now = after.find((task) => task.key === before.key)!
      expect(now, before.key).toMatchObject({
        status: "completed",
        result: before.result,
        completed_at: before.completed_at
      })
    }
    await second.stop()
  })
})
