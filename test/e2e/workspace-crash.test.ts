// End to end (spec "States and transitions", rows "Workspace"): `troupe serve` on PostgreSQL killed
// with SIGKILL after it answered an archival (archiving) and a restoration (restoring) while their
// settling jobs wait to run (the job runner's lease waits at a gate the test holds, so neither
// job started), then started again on the same database. Each job runs once after the restart and
// its report is applied once: the archived workspace keeps the instant its archival was accepted,
// the restored one is active again, each lock_version moved once per step. The test waits on the
// steps the servers NOTIFY.
import { describe, expect, it } from "vitest"
import { crashWorld } from "../support/crash-world.ts"
import { postgresReachable } from "../support/database.ts"
import { closeGate } from "../support/gate.ts"
import { bearer, request } from "../support/http.ts"
import { connectAgent, signedIn } from "../support/members.ts"
import { ownerCredentials, setUpOwner } from "../support/people.ts"
import type { TestServer } from "../support/server.ts"
import type { StepWatch } from "../support/step-watch.ts"
import { troupeServe } from "../support/troupe-process.ts"

const onPostgres = await postgresReachable()
const workspaces = "/agent_api/v1/workspaces"

const world = crashWorld()

/**
 * An agent's member token, a workspace to archive and an archived one to restore, made through
 * the server at `baseUrl` on a fresh installation.
 */
const prepare = async (baseUrl: string, watch: StepWatch) => {
  await setUpOwner(baseUrl)
  const server = { baseUrl } as TestServer
  const { token } = await connectAgent(server, await signedIn(server, ownerCredentials), "workspace-crash-agent")
  const create = async (name: string) => {
    const made = await request(baseUrl, "POST", workspaces, {
      body: { workspace: { name } },
      headers: { ...bearer(token), "idempotency-key": name }
    })
    expect(made.status).toBe(201)
    return made.body.workspace.public_id as string
  }
  const leaving = await create("leaving")
  const returning = await create("returning")
  const archived = await request(baseUrl, "POST", `${workspaces}/${returning}/archival`, {
    body: { command: { lock_version: 0 } },
    headers: bearer(token)
  })
  expect(archived.status).toBe(200)
  await watch.until("the archival made before to settle", 10_000, async () => {
    const [row] = await watch.query<{ state: string }>(`SELECT state FROM workspaces WHERE public_id = $1::uuid`, [
      returning
    ])
    return row?.state === "archived" ? true : undefined
  })
  return { token, leaving, returning }
}

describe.skipIf(!onPostgres)("workspaces when the server is killed mid-transition", { timeout: 60_000 }, () => {
  it("an answered archival and restoration settle once after a restart", async () => {
    const { database, first, watch } = await world.open()
    const { token, leaving, returning } = await prepare(first.baseUrl, watch)
    const gate = await closeGate(database, {
      table: "actor_jobs",
      when: "NEW.kind = 'workspace' AND OLD.lease_until IS NULL AND NEW.lease_until IS NOT NULL"
    })
    const command = (id: string, verb: "archival" | "restoration", lockVersion: number) =>
      request(first.baseUrl, "POST", `${workspaces}/${id}/${verb}`, {
        body: { command: { lock_version: lockVersion } },
        headers: bearer(token)
      })
    const archival = await command(leaving, "archival", 0)
    expect([archival.status, archival.body.workspace.state, archival.body.workspace.lock_version]).toEqual([
      200,
      "archiving",
      1
    ])
    const restoration = await command(returning, "restoration", 2)
    expect([restoration.status, restoration.body.workspace.state, restoration.body.workspace.lock_version]).toEqual([
      200,
      "restoring",
      3
    ])

    // The kill: both settling jobs committed, the job runner at the gate leasing them.
    await gate.waiting("the job runner's lease at the gate")
    await first.kill9()
    await gate.remove()
    const rows = () =>
      watch.query<{ public_id: string; state: string; lock_version: number; archived_at: Date | null }>(
        `SELECT public_id, state, lock_version, archived_at FROM workspaces WHERE public_id = ANY($1::uuid[])`,
        [[leaving, returning]]
      )
    const rowOf = async (id: string) => (await rows()).find((row) => row.public_id === id)!
    const jobs = () =>
      watch.query<{ actor_id: string; state: string; attempts: number }>(
        `SELECT actor_id, state, attempts FROM actor_jobs WHERE kind = 'workspace' AND name = 'workspace.settle'
         ORDER BY id`
      )
    const atKill = await rowOf(leaving)
    expect(atKill).toMatchObject({ state: "archiving", lock_version: 1 })
    expect(atKill.archived_at).toBeInstanceOf(Date)
    expect(await rowOf(returning)).toMatchObject({ state: "restoring", lock_version: 3, archived_at: null })
    // The archival made before (settled), then the two the kill left pending, never leased.
    const settled = { actor_id: returning, state: "done", attempts: 1 }
    const pending = [leaving, returning].map((actor_id) => ({ actor_id, state: "pending", attempts: 0 }))
    expect(await jobs()).toEqual([settled, ...pending])

    const second = await troupeServe(database.config)
    await watch.until("both transitions to settle", 20_000, async () =>
      (await rowOf(leaving)).state === "archived" && (await rowOf(returning)).state === "active" ? true : undefined
    )
    const read = async (id: string) =>
      (await request(second.baseUrl, "GET", `${workspaces}/${id}`, { headers: bearer(token) })).body.workspace
    expect(await read(leaving)).toMatchObject({ state: "archived", lock_version: 2 })
    expect(await read(returning)).toMatchObject({ state: "active", lock_version: 4 })
    expect((await rowOf(leaving)).archived_at).toEqual(atKill.archived_at)
    expect((await rowOf(returning)).archived_at).toBeNull()
    expect(await jobs()).toEqual([settled, ...pending.map((job) => ({ ...job, state: "done", attempts: 1 }))])
    const journal = (id: string) =>
      watch.query<{ event_type: string; to_state: string }>(
        `SELECT event_type, to_state FROM actor_journal WHERE kind = 'workspace' AND actor_id = $1::uuid ORDER BY seq`,
        [id]
      )
    const created = { event_type: "xstate.init", to_state: "active" }
    const archive = [
      { event_type: "workspace.archive", to_state: "archiving" },
      { event_type: "workspace.settled", to_state: "archived" }
    ]
    expect(await journal(leaving)).toEqual([created, ...archive])
    expect(await journal(returning)).toEqual([
      created,
      ...archive,
      { event_type: "workspace.restore", to_state: "restoring" },
      { event_type: "workspace.settled", to_state: "active" }
    ])
    const listed = await request(
      second.baseUrl,
      "GET",
      `${workspaces}?state=archived&dedicated_to_current_agent=true`,
      { headers: bearer(token) }
    )
    expect(listed.body.workspaces.map((workspace: { public_id: string }) => workspace.public_id)).toEqual([leaving])
    await second.stop()
  })
})
