// End to end (issue 8, item 5): `troupe serve` killed with SIGKILL while an idempotent create is
// pending, then started again on the same database: the retry runs at once (201, then replayed)
// instead of answering 429 until the five-minute rule frees the key.
import { PgConnection } from "@effect/sql-pg"
import * as Database from "@troupe/storage/Database"
import { Effect, Exit, type Redacted, Scope } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, describe, expect, it } from "vitest"
import { freshEmbedded, freshPostgres, postgresReachable, type TestDatabase } from "../support/database.ts"
import { bearer, request } from "../support/http.ts"
import { awaitLockGone, pendingReceipt, requestDigest } from "../support/lifetimes.ts"
import { createOwner, personalToken } from "../support/people.ts"
import { within } from "../support/processes.ts"
import { startTestServer } from "../support/server.ts"
import { killAll, troupeServe } from "../support/troupe-process.ts"

const onPostgres = await postgresReachable()
const path = "/agent_api/v1/workspaces"
const name = "Survives a crash"
const key = "create-across-a-crash"
const body = { workspace: { name } }

const databases = new Set<TestDatabase>()
afterAll(async () => {
  await killAll()
  for (const database of databases) await database.drop()
})

/** The owner and their member token, made by an in-process server that then stops cleanly. */
const prepare = async (database: TestDatabase) => {
  databases.add(database)
  const server = await startTestServer({ database: { ...database, drop: async () => {} } })
  const owner = await createOwner(server)
  const token = await personalToken(server, owner, "member")
  await server.close()
  return { token, caller: `user:${owner.id}` }
}

const create = (baseUrl: string, token: string) =>
  request(baseUrl, "POST", path, { body, headers: { ...bearer(token), "idempotency-key": key } })

const expectRecovered = async (baseUrl: string, token: string) => {
  const retry = await create(baseUrl, token)
  expect(retry.status).toBe(201)
  expect(retry.headers.get("idempotency-replayed")).toBe("false")
  const again = await create(baseUrl, token)
  expect(again.status).toBe(201)
  expect(again.headers.get("idempotency-replayed")).toBe("true")
  expect(again.body).toEqual(retry.body)
  const list = await request(baseUrl, "GET", path, { headers: bearer(token) })
  expect(list.body.workspaces.filter((workspace: { name: string }) => workspace.name === name)).toHaveLength(1)
}

describe("a create pending when the server is killed", { timeout: 240_000 }, () => {
  // The embedded database is the server process's alone, so what the killed process left is
  // written after its death, as it would have written it: its lifetime stays open (no clean
  // stop) and the receipt it claimed names that lifetime.
  it("embedded database: the restarted server takes the receipt over at once", async () => {
    const database = await freshEmbedded()
    const { token, caller } = await prepare(database)
    const first = await troupeServe(database.config)
    await first.kill9()
    await Effect.runPromise(
      Effect.gen(function* () {
        const sql = yield* SqlClient
        const open = yield* sql<{ id: bigint }>`SELECT id FROM node_lifetimes WHERE ended_at IS NULL`
        expect(open).toHaveLength(1)
        const digest = requestDigest("POST", path, JSON.stringify(body))
        yield* pendingReceipt({ caller, route: `POST ${path}`, key, digest }, open[0]!.id)
      }).pipe(Effect.provide(Database.layer(database.config)))
    )
    const second = await troupeServe(database.config)
    await expectRecovered(second.baseUrl, token)
    await second.stop()
  })

  // Several processes may share PostgreSQL. The test holds the workspaces table, so the create
  // stops mid-way with its receipt pending while the server is killed.
  it.skipIf(!onPostgres)("PostgreSQL: the restarted server takes the receipt over at once", async () => {
    const database = await freshPostgres()
    if (database.config._tag !== "postgres") return
    const url = database.config.url
    const { token } = await prepare(database)
    const first = await troupeServe(database.config)
    const holder = await openSession(url)
    await holder.query("BEGIN")
    await holder.query("LOCK TABLE workspaces IN SHARE MODE")
    const inFlight = create(first.baseUrl, token).catch((error: unknown) => error)
    const [receipt] = await until("the create's pending receipt", () =>
      holder.query(`SELECT lifetime_id FROM idempotency_receipts WHERE key = $1 AND state = 'pending'`, [key])
    )
    await until("the create to wait on the workspaces table", () =>
      holder.query(`SELECT 1 FROM pg_locks WHERE relation = 'workspaces'::regclass AND NOT granted`)
    )
    await first.kill9()
    expect(await inFlight).toBeInstanceOf(Error)
    await holder.query("ROLLBACK")
    await holder.close()
    await awaitLockGone(url, receipt!.lifetime_id as bigint)
    const second = await troupeServe(database.config)
    await expectRecovered(second.baseUrl, token)
    await second.stop()
  })
})

/** A PostgreSQL session of the test's own. */
const openSession = async (url: Redacted.Redacted<string>) => {
  const scope = Effect.runSync(Scope.make())
  const session = await Effect.runPromise(Scope.provide(PgConnection.make({ url }), scope))
  return {
    query: (text: string, params: ReadonlyArray<unknown> = []) =>
      Effect.runPromise(session.query(text, params)).then((result) => result.rows),
    close: () => Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

/** Resolves with the first non-empty answer of `rows`, asked again until it comes. */
const until = <A>(what: string, rows: () => Promise<ReadonlyArray<A>>) =>
  within(
    30_000,
    () => what,
    (async () => {
      for (;;) {
        const found = await rows()
        if (found.length > 0) return found
        await new Promise((next) => setImmediate(next))
      }
    })()
  )
