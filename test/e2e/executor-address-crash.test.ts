// End to end (spec "States and transitions", rows "Executor address"): `troupe serve` on
// PostgreSQL killed with SIGKILL after it answered a runner's re-pair (the winning poll, 200, new
// credentials) and another runner's revocation (303), while what each told by a durable message
// is still undelivered: the re-paired address's own `executor.repaired` (its epoch and name) and
// the revoked runner's `executor.revoked` to the run holding its unclaimed row (the message
// runner's lease waits at a gate the test holds). Then started again on the same database. The
// fencing answered before the kill holds throughout (the re-paired runner's old credential and the
// revoked runner's are refused, the new one works); after the restart each message is delivered
// and applied once: the address is at its new epoch under its new name, the run's row failed
// executor_revoked. The test waits on the steps the servers NOTIFY.
import { describe, expect, it } from "vitest"
import { decide, machineFields, poll, startDevice } from "../http/oauth/support-device.ts"
import { crashWorld } from "../support/crash-world.ts"
import { postgresReachable } from "../support/database.ts"
import { closeGate } from "../support/gate.ts"
import { type Browser, bearer, csrfTokenIn, request } from "../support/http.ts"
import { connectAgent, signedIn } from "../support/members.ts"
import { ownerCredentials, setUpOwner } from "../support/people.ts"
import { readOnlyTool } from "../support/runs.ts"
import type { TestServer } from "../support/server.ts"
import type { StepWatch } from "../support/step-watch.ts"
import { troupeServe } from "../support/troupe-process.ts"

const onPostgres = await postgresReachable()

const world = crashWorld()

/** An account-wide runner connected by `owner` through the device flow, serving `grep`. */
const connectRunner = async (server: TestServer, owner: Browser, identifier: string) => {
  const device = await startDevice(server, machineFields(identifier))
  await decide(owner, device.user_code, "approve", "account_wide")
  const token = (await poll(server, device.device_code)).body.access_token as string
  const announced = await request(server.baseUrl, "PUT", "/agent_api/v1/executor/announcement", {
    headers: bearer(token),
    body: { tools: [readOnlyTool("grep")] }
  })
  return { token, publicId: announced.body.executor.public_id as string }
}

/**
 * On a fresh installation: the owner, an agent, two runners, and a started run whose one tool row
 * waits unclaimed for the second runner.
 */
const prepare = async (server: TestServer, watch: StepWatch) => {
  await setUpOwner(server.baseUrl)
  const owner = await signedIn(server, ownerCredentials)
  const agent = await connectAgent(server, owner, "executor-crash-agent")
  const repaired = await connectRunner(server, owner, "repaired-runner")
  const revoked = await connectRunner(server, owner, "revoked-runner")
  const workspace = await request(server.baseUrl, "POST", "/agent_api/v1/workspaces", {
    headers: { ...bearer(agent.token), "idempotency-key": "executor-crash-workspace" },
    body: { workspace: { name: "runs" } }
  })
  const runs = `/agent_api/v1/workspaces/${workspace.body.workspace.public_id}/runs`
  const created = await request(server.baseUrl, "POST", runs, {
    headers: { ...bearer(agent.token), "idempotency-key": "executor-crash-run" },
    body: {
      run: {
        approval_mode: "bypass",
        default_runner_executor_public_id: revoked.publicId,
        steps: [{ tool: { name: "grep", key: "only" } }]
      }
    }
  })
  const runId = created.body.run.public_id as string
  const started = await request(server.baseUrl, "POST", `${runs}/${runId}/start`, { headers: bearer(agent.token) })
  expect(started.status).toBe(200)
  await watch.until("the run's row dispatched", 10_000, async () => {
    const rows = await watch.query(
      `SELECT 1 FROM run_tasks t JOIN runs r ON r.id = t.run_id WHERE r.public_id = $1::uuid AND t.status = 'dispatched'`,
      [runId]
    )
    return rows.length > 0 ? true : undefined
  })
  return { owner, agent, repaired, revoked, runId, runPath: `${runs}/${runId}` }
}

describe.skipIf(!onPostgres)("executor addresses when the server is killed", { timeout: 60_000 }, () => {
  it("a re-pair's epoch and a revocation's run notice, told before the kill, land once after it", async () => {
    const { database, first, watch } = await world.open()
    const at = (child: { baseUrl: string }) => ({ baseUrl: child.baseUrl }) as TestServer
    const { owner, agent, repaired, revoked, runId, runPath } = await prepare(at(first), watch)
    const gate = await closeGate(database, {
      table: "actor_messages",
      when: "NEW.to_kind IN ('executorAddress', 'run') AND OLD.lease_until IS NULL AND NEW.lease_until IS NOT NULL"
    })
    const device = await startDevice(
      at(first),
      machineFields("repaired-runner", { runner_display_name: "Runner re-paired" })
    )
    expect((await decide(owner, device.user_code, "approve")).status).toBe(200)
    const issued = await poll(at(first), device.device_code)
    expect(issued.status, JSON.stringify(issued.body)).toBe(200)
    const fresh = issued.body.access_token as string
    const csrf = csrfTokenIn((await owner.get("/runners")).text)
    expect((await owner.post(`/runners/${revoked.publicId}/revoke`, { csrf_token: csrf })).status).toBe(303)

    // The kill: both messages committed, the message runner at the gate leasing them.
    await gate.waiting("the message runner's lease at the gate")
    const executor = (baseUrl: string, token: string) =>
      request(baseUrl, "GET", "/agent_api/v1/executor", { headers: bearer(token) })
    const fencing = async (baseUrl: string) =>
      Promise.all([repaired.token, fresh, revoked.token].map(async (token) => (await executor(baseUrl, token)).status))
    expect(await fencing(first.baseUrl)).toEqual([401, 200, 401])
    await first.kill9()
    await gate.remove()

    const addresses = () =>
      watch.query<{ public_id: string; status: string; credential_epoch: number; display_name: string }>(
        `SELECT public_id, status, credential_epoch, display_name FROM executors WHERE public_id = ANY($1::uuid[])`,
        [[repaired.publicId, revoked.publicId]]
      )
    const addressOf = async (id: string) => (await addresses()).find((row) => row.public_id === id)!
    expect(await addressOf(repaired.publicId)).toMatchObject({
      credential_epoch: 1,
      display_name: "Runner repaired-runner"
    })
    expect((await addressOf(revoked.publicId)).status).toBe("revoked")
    const messages = () =>
      watch.query<{ to_kind: string; to_actor_id: string; type: string; state: string; attempts: number }>(
        `SELECT to_kind, to_actor_id, event ->> 'type' AS type, state, attempts FROM actor_messages
         WHERE to_kind IN ('executorAddress', 'run') ORDER BY id`
      )
    const told = [
      { to_kind: "executorAddress", to_actor_id: repaired.publicId, type: "executor.repaired" },
      { to_kind: "run", to_actor_id: runId, type: "executor.revoked" }
    ]
    expect(await messages()).toEqual(told.map((message) => ({ ...message, state: "pending", attempts: 0 })))

    const second = await troupeServe(database.config)
    const trace = async () => (await request(second.baseUrl, "GET", runPath, { headers: bearer(agent.token) })).body.run
    await watch.until("both messages applied", 20_000, async () =>
      (await addressOf(repaired.publicId)).credential_epoch === 2 && (await trace()).tasks[0].status === "failed"
        ? true
        : undefined
    )
    expect(await messages()).toEqual(told.map((message) => ({ ...message, state: "delivered", attempts: 1 })))
    expect(await fencing(second.baseUrl)).toEqual([401, 200, 401])
    expect((await executor(second.baseUrl, fresh)).body.executor).toMatchObject({
      public_id: repaired.publicId,
      display_name: "Runner re-paired"
    })
    const run = await trace()
    expect(run.tasks[0]).toMatchObject({ key: "only", status: "failed", error: { key: "executor_revoked" } })
    const journal = (kind: string, id: string) =>
      watch.query<{ event_type: string }>(
        `SELECT event_type FROM actor_journal WHERE kind = $1 AND actor_id = $2::uuid ORDER BY seq`,
        [kind, id]
      )
    expect((await journal("executorAddress", repaired.publicId)).map((step) => step.event_type)).toEqual([
      "xstate.init",
      "executor.announce",
      "executor.repaired"
    ])
    const runSteps = await journal("run", runId)
    expect(runSteps.filter((step) => step.event_type === "executor.revoked")).toHaveLength(1)
    await second.stop()
  })
})
