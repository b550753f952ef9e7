// End to end (issue 13, "a restart between a due time and its dispatch dispatches once"): `troupe
// serve` on PostgreSQL holds 200 one-time schedules due at the same instant; it is killed with
// SIGKILL as soon as their dispatch has begun (some dispatched, the rest due and not), then started
// again on the same database. Every schedule ends completed with exactly one execution (one child
// conversation, one first input) for its run_at: nothing dispatched before the kill is dispatched
// again, nothing due is lost. The test waits on the steps the servers NOTIFY, reading the database.
import { afterAll, describe, expect, it } from "vitest"
import { freshPostgres, postgresReachable, type TestDatabase } from "../support/database.ts"
import { bearer, request } from "../support/http.ts"
import { connectAgent, signedIn } from "../support/members.ts"
import { createOwner, ownerCredentials } from "../support/people.ts"
import { startTestServer } from "../support/server.ts"
import { openStepWatch, type StepWatch } from "../support/step-watch.ts"
import { killAll, troupeServe } from "../support/troupe-process.ts"

const onPostgres = await postgresReachable()
const scheduleCount = 200

const databases = new Set<TestDatabase>()
const watches = new Set<StepWatch>()
afterAll(async () => {
  await killAll()
  for (const watch of watches) await watch.close()
  for (const database of databases) await database.drop()
})

/** An agent's member token, a workspace and a conversation, made by an in-process server that then stops. */
const prepare = async (database: TestDatabase) => {
  databases.add(database)
  const server = await startTestServer({ database: { ...database, drop: async () => {} } })
  await createOwner(server)
  const agent = await connectAgent(server, await signedIn(server, ownerCredentials), "schedule-crash-agent")
  const headers = (key: string) => ({ ...bearer(agent.token), "idempotency-key": key })
  const workspace = await request(server.baseUrl, "POST", "/agent_api/v1/workspaces", {
    body: { workspace: { name: "schedules across a crash" } },
    headers: headers("schedule-crash-workspace")
  })
  const workspaceId = workspace.body.workspace.public_id as string
  const conversation = await request(server.baseUrl, "POST", `/agent_api/v1/workspaces/${workspaceId}/conversations`, {
    body: { conversation: {} },
    headers: headers("schedule-crash-conversation")
  })
  await server.close()
  return { token: agent.token, workspaceId, conversationId: conversation.body.conversation.public_id as string }
}

interface Counts {
  readonly executions: number
  readonly schedules_with_one: number
  readonly completed: number
  readonly children: number
  /** First inputs landed in their children (told after the dispatch commits). */
  readonly inputs: number
}

const counts = (watch: StepWatch) =>
  watch
    .query<Counts>(
      `SELECT (SELECT count(*)::int FROM schedule_executions) AS executions,
         (SELECT count(*)::int FROM (SELECT schedule_id FROM schedule_executions GROUP BY schedule_id
                                     HAVING count(*) = 1) one) AS schedules_with_one,
         (SELECT count(*)::int FROM schedules WHERE status = 'completed') AS completed,
         (SELECT count(*)::int FROM conversations WHERE parent_id IS NOT NULL) AS children,
         (SELECT count(*)::int FROM conversation_inputs WHERE origin = 'child') AS inputs`
    )
    .then((rows) => rows[0]!)

describe.skipIf(!onPostgres)("schedules when the server is killed mid-dispatch", { timeout: 150_000 }, () => {
  it("dispatches every due occurrence once after a restart", async () => {
    const database = await freshPostgres()
    const { token, workspaceId, conversationId } = await prepare(database)
    const watch = await openStepWatch(database)
    watches.add(watch)
    const first = await troupeServe(database.config)
    const schedules = `/agent_api/v1/workspaces/${workspaceId}/conversations/${conversationId}/schedules`
    const runAt = new Date(Date.now() + 20_000)
    runAt.setUTCMilliseconds(0)
    for (let index = 0; index < scheduleCount; index++) {
      const made = await request(first.baseUrl, "POST", schedules, {
        headers: { ...bearer(token), "idempotency-key": `crash-${index}` },
        body: {
          schedule: { name: `crash ${index}`, prompt: "Tick", rule: { kind: "once", run_at: runAt.toISOString() } }
        }
      })
      expect(made.status, JSON.stringify(made.body)).toBe(201)
    }
    expect(Date.now()).toBeLessThan(runAt.getTime())

    // The kill: as soon as the first occurrence is dispatched.
    await watch.until("the dispatch to begin", 60_000, async () =>
      (await counts(watch)).executions > 0 ? true : undefined
    )
    await first.kill9()
    const before = await counts(watch)
    expect(before.executions).toBeLessThan(scheduleCount)
    expect(before.children).toBe(before.executions)

    const second = await troupeServe(database.config)
    await watch.until("every schedule to complete", 90_000, async () =>
      Object.values(await counts(watch)).every((count) => count === scheduleCount) ? true : undefined
    )
    // One occurrence each, for its run_at: no second execution appears once all stand.
    const occurrences = await watch.query<{ scheduled_for: Date }>(
      "SELECT DISTINCT scheduled_for FROM schedule_executions"
    )
    expect(occurrences).toEqual([{ scheduled_for: runAt }])
    const listed = await request(second.baseUrl, "GET", `/agent_api/v1/workspaces/${workspaceId}/schedules?limit=100`, {
      headers: bearer(token)
    })
    expect(listed.body.schedules.every((schedule: { status: string }) => schedule.status === "completed")).toBe(true)
    await second.stop()
  })
})
