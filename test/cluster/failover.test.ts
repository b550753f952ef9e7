// Several `troupe serve` processes on one PostgreSQL (issue 9, item 6): the nodes share the
// actors through effect/cluster, each actor stepping on the one node holding its shard. Writes go
// through both nodes; one is killed with SIGKILL under the load. Its actors resume on the other
// within 10 s, no acknowledged step is lost or applied twice, and a cable subscriber on the
// surviving node keeps receiving steps.

import * as Database from "@troupe/storage/Database"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, describe, expect, it } from "vitest"
import { isType, openRaw } from "../http/cable/support-cable.ts"
import { freshPostgres, postgresReachable, type TestDatabase } from "../support/database.ts"
import { bearer, request } from "../support/http.ts"
import { createOwner, ownerCredentials, personalToken } from "../support/people.ts"
import { eventually, within } from "../support/processes.ts"
import type { TestServer } from "../support/server.ts"
import { startTestServer } from "../support/server.ts"
import { killAll, type ServerChild, troupeServe } from "../support/troupe-process.ts"

const onPostgres = await postgresReachable()
const databases = new Set<TestDatabase>()
afterAll(async () => {
  await killAll()
  for (const database of databases) await database.drop()
})

const query = <A>(database: TestDatabase, run: (sql: SqlClient) => Effect.Effect<A, unknown>) =>
  Effect.runPromise(
    Effect.gen(function* () {
      return yield* run(yield* SqlClient)
    }).pipe(Effect.provide(Database.layer(database.config)), Effect.orDie)
  )

/** Shard locks held per node session (advisory locks on PostgreSQL). */
const shardHolders = (database: TestDatabase) =>
  query(
    database,
    (sql) =>
      sql<{
        holders: string
      }>`SELECT count(DISTINCT pid)::text AS holders FROM pg_locks WHERE locktype = 'advisory' AND granted`
  ).then((rows) => Number(rows[0]?.holders ?? 0))

interface Tracked {
  readonly id: string
  lockVersion: number
  readonly acknowledged: Array<string>
}

describe.skipIf(!onPostgres)("two nodes on one PostgreSQL", { timeout: 180_000 }, () => {
  it("a node killed under a write load: its actors resume on the other within 10 s, nothing acknowledged is lost or doubled", async () => {
    const database = await freshPostgres()
    databases.add(database)
    const setup = await startTestServer({ database: { ...database, drop: async () => {} } })
    const owner = await createOwner(setup)
    const token = await personalToken(setup, owner, "member")
    await setup.close()

    const survivor = await troupeServe(database.config)
    const doomed = await troupeServe(database.config)
    // Both nodes hold shards before the load starts.
    await eventually("both nodes to hold shards", 30_000, async () => (await shardHolders(database)) >= 2)
    const nodes: Array<ServerChild> = [survivor, doomed]
    const workspaces: Array<Tracked> = []
    for (let i = 0; i < 16; i++) {
      const created = await request(nodes[i % 2]!.baseUrl, "POST", "/agent_api/v1/workspaces", {
        body: { workspace: { name: `w${i}` } },
        headers: { ...bearer(token), "idempotency-key": `create-w${i}` }
      })
      expect(created.status, JSON.stringify(created.body)).toBe(201)
      workspaces.push({
        id: created.body.workspace.public_id,
        lockVersion: created.body.workspace.lock_version,
        acknowledged: []
      })
    }
    // The survivor's cable follows one workspace actor's steps.
    const session = await request(survivor.baseUrl, "POST", "/api/v1/session", { body: ownerCredentials })
    expect(session.status).toBe(201)
    const cable = openRaw({ baseUrl: survivor.baseUrl } as TestServer, { headers: bearer(session.body.token) })
    await cable.opened
    const watched = workspaces[1]!
    const identifier = JSON.stringify({ channel: "ActorChannel", kind: "workspace", id: watched.id })
    cable.subscribe(identifier)
    await within(10_000, "the subscription's confirmation", cable.frames.take(isType("confirm_subscription")))

    /** One PATCH; answers whether it was acknowledged (a dead node's requests are not). */
    const write = async (node: ServerChild, workspace: Tracked, name: string) => {
      try {
        const patched = await request(node.baseUrl, "PATCH", `/agent_api/v1/workspaces/${workspace.id}`, {
          body: { workspace: { name, lock_version: workspace.lockVersion } },
          headers: bearer(token)
        })
        if (patched.status === 200) {
          workspace.acknowledged.push(name)
          workspace.lockVersion = patched.body.workspace.lock_version
          return true
        }
      } catch {}
      // Unknown outcome: read where it stands and go on from there.
      const read = await request(survivor.baseUrl, "GET", `/agent_api/v1/workspaces/${workspace.id}`, {
        headers: bearer(token)
      })
      workspace.lockVersion = read.body.workspace.lock_version
      return false
    }
    for (let round = 0; round < 3; round++) {
      await Promise.all(workspaces.map((workspace, i) => write(nodes[(i + round) % 2]!, workspace, `r${round}-${i}`)))
    }
    expect(workspaces.every((workspace) => workspace.acknowledged.length === 3)).toBe(true)
    // Kill the node in the middle of a round of writes through both nodes.
    const inFlight = workspaces.map((workspace, i) => write(nodes[i % 2]!, workspace, `k-${i}`))
    const killedAt = Date.now()
    await doomed.kill9()
    await Promise.all(inFlight)

    // Every actor takes writes through the survivor again, within 10 s of the kill.
    const resumedAt = new Map<string, number>()
    await within(
      60_000,
      "every actor to resume",
      (async () => {
        for (let round = 0; resumedAt.size < workspaces.length; round++) {
          await Promise.all(
            workspaces.map(async (workspace, i) => {
              if (await write(survivor, workspace, `after${round}-${i}`)) {
                if (!resumedAt.has(workspace.id)) resumedAt.set(workspace.id, Date.now())
              }
            })
          )
        }
      })()
    )
    const slowest = Math.max(...resumedAt.values()) - killedAt
    expect(slowest, `the slowest actor resumed ${slowest} ms after the kill`).toBeLessThan(10_000)

    // The cable on the surviving node heard the watched actor's steps after the kill.
    const heardAfterKill = async () => {
      for (;;) {
        const frame = await cable.frames.take(about(identifier))
        if (String(frame.message.event?.changes?.name ?? "").startsWith("after")) return frame.message
      }
    }
    const heard = await within(10_000, "a step after the kill on the survivor's cable", heardAfterKill())
    expect(heard).toEqual(
      expect.objectContaining({ to: "active", event: expect.objectContaining({ type: "workspace.edit" }) })
    )

    // The journal holds every acknowledged write exactly once, in contiguous seqs.
    for (const workspace of workspaces) {
      const steps = await query(
        database,
        (sql) =>
          sql<{ seq: string; name: string | null }>`
          SELECT seq::text AS seq, event->'changes'->>'name' AS name FROM actor_journal
          WHERE kind = 'workspace' AND actor_id = ${workspace.id} ORDER BY seq`
      )
      expect(steps.map((step) => Number(step.seq))).toEqual(steps.map((_, i) => i + 1))
      const names = steps.map((step) => step.name).filter((name) => name !== null)
      for (const name of workspace.acknowledged) expect(names.filter((other) => other === name)).toHaveLength(1)
    }
    cable.socket.close()
    await survivor.stop()
  })
})

const about = (identifier: string) => (frame: any) => frame?.identifier === identifier && frame?.message !== undefined
