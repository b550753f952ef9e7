// End to end (issue 11, "Must hold under load and faults", a gap the crash test steers around):
// `troupe serve` killed with SIGKILL while delivering a finished reply's `inference.replied` to its
// conversation. The dead runner's lease on the message lapses within 15 s (leases are short and
// renewed while a delivery runs), so after the restart the reply turn settles promptly. (It once
// held the message 2 minutes, unrenewed: the turn stayed running that long.) The test makes the moment exact:
// it holds a lock on the conversation's row, so the delivery's step waits on it, and kills the
// server once the lease is seen (a trigger it adds NOTIFYs leases; nothing sleeps).
import * as Database from "@troupe/storage/Database"
import { Deferred, Effect, ManagedRuntime } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, describe, expect, it } from "vitest"
import { freshPostgres, postgresReachable, type TestDatabase } from "../support/database.ts"
import { bearer, request } from "../support/http.ts"
import { connectAgent, signedIn } from "../support/members.ts"
import { createOwner, ownerCredentials } from "../support/people.ts"
import { startTestServer } from "../support/server.ts"
import { openStepWatch, type StepWatch } from "../support/step-watch.ts"
import { killAll, type ServerChild, troupeServe } from "../support/troupe-process.ts"

const onPostgres = await postgresReachable()
const leasedChannel = "troupe_test_message_leased"
/** Longer than a dead runner's job lease (15 s) and anything else a restart waits for. */
const settleWithinMs = 20_000
/** A reply that ends a second after its call begins, while the test holds the conversation's row. */
const directive = JSON.stringify({ reply: "done", delay_ms: 1000 })

const cleanups: Array<() => Promise<void>> = []
afterAll(async () => {
  await killAll()
  for (const cleanup of cleanups.reverse()) await cleanup()
})

/** Holds `FOR NO KEY UPDATE` on the conversation's row in an open transaction until released. */
const holdRow = async (database: TestDatabase, conversationId: string) => {
  const runtime = ManagedRuntime.make(Database.layer(database.config))
  const release = Deferred.makeUnsafe<void>()
  const held = Deferred.makeUnsafe<void>()
  const done = runtime.runPromise(
    Effect.flatMap(SqlClient, (sql) =>
      sql.withTransaction(
        Effect.gen(function* () {
          yield* sql`SELECT 1 FROM conversations WHERE public_id = ${conversationId} FOR NO KEY UPDATE`
          yield* Deferred.succeed(held, undefined)
          yield* Deferred.await(release)
        })
      )
    )
  )
  await runtime.runPromise(Deferred.await(held))
  return async () => {
    await runtime.runPromise(Deferred.succeed(release, undefined))
    await done
    await runtime.dispose()
  }
}

interface Scene {
  readonly watch: StepWatch
  readonly second: ServerChild
  readonly token: string
  readonly path: string
}

let scene: Scene | undefined

describe.skipIf(!onPostgres)("a finished reply told to its conversation when the server is killed", () => {
  it("the killed node held the told reply's lease, its request completed", { timeout: 90_000 }, async () => {
    const database = await freshPostgres()
    cleanups.push(database.drop)
    const server = await startTestServer({ database: { ...database, drop: async () => {} } })
    await createOwner(server)
    const agent = await connectAgent(server, await signedIn(server, ownerCredentials), "lease-talker")
    const post = (path: string, body: unknown, key: string) =>
      request(server.baseUrl, "POST", `/agent_api/v1${path}`, {
        body,
        headers: { ...bearer(agent.token), "idempotency-key": key }
      })
    const workspaceId = (await post("/workspaces", { workspace: { name: "lease" } }, "lease-workspace")).body.workspace
      .public_id as string
    const made = await post(`/workspaces/${workspaceId}/conversations`, { conversation: {} }, "lease-conversation")
    const conversationId = made.body.conversation.public_id as string
    await server.close()

    const watch = await openStepWatch(database, [leasedChannel])
    cleanups.push(watch.close)
    await watch.query(`
      CREATE FUNCTION troupe_test_message_leased() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.lease_until IS NOT NULL AND NEW.lease_until IS DISTINCT FROM OLD.lease_until THEN
          PERFORM pg_notify('${leasedChannel}', NEW.id::text);
        END IF;
        RETURN NEW;
      END $$`)
    await watch.query(`
      CREATE TRIGGER troupe_test_message_leased AFTER UPDATE ON actor_messages
      FOR EACH ROW EXECUTE FUNCTION troupe_test_message_leased()`)
    const path = `/agent_api/v1/workspaces/${workspaceId}/conversations/${conversationId}`

    const first = await troupeServe(database.config)
    const accepted = await request(first.baseUrl, "POST", `${path}/inputs`, {
      body: { input: { kind: "direct_reply", text: directive, model: { model: "local/script" } } },
      headers: { ...bearer(agent.token), "idempotency-key": "lease-input" }
    })
    expect(accepted.status).toBe(202)
    // Once the reply turn runs (its opening step wrote the row), the row is held: the step that
    // settles the reply will wait on it.
    await watch.until("the reply turn running", 20_000, async () => {
      const rows = await watch.query(
        `SELECT 1 FROM conversation_turns t JOIN conversations c ON c.id = t.conversation_id
         WHERE c.public_id = $1::uuid AND t.status = 'running'`,
        [conversationId]
      )
      return rows.length > 0 ? true : undefined
    })
    const release = await holdRow(database, conversationId)
    cleanups.push(release)
    const leased = await watch.until("the told reply leased", 20_000, async () => {
      const rows = await watch.query<{ event: string; attempts: number }>(
        `SELECT event ->> 'type' AS event, attempts FROM actor_messages
         WHERE to_kind = 'conversation' AND to_actor_id = $1::uuid AND state = 'pending' AND lease_until > now()`,
        [conversationId]
      )
      return rows.length > 0 ? rows : undefined
    })
    await first.kill9()
    cleanups.pop()
    await release()
    expect(leased).toEqual([{ event: "inference.replied", attempts: 1 }])
    const [asked] = await watch.query<{ status: string }>(
      `SELECT r.status FROM inference_requests r JOIN conversations c ON c.id = r.asked_by_conversation_id
       WHERE c.public_id = $1::uuid`,
      [conversationId]
    )
    expect(asked).toEqual({ status: "completed" })

    scene = { watch, second: await troupeServe(database.config), token: agent.token, path }
  })

  // Fails today: the message waits out its 2-minute lease, so the turn stays running that long.
  // Fix (actors/src/MessageRunner.ts, storage ActorMessages.leaseMessages): tie a message's lease
  // to the node lifetime that took it (as idempotency receipts do) and lease again at once a
  // message whose lifetime is over, or lease for ~15 s renewed while the delivery runs (as jobs).
  it("after the restart the conversation settles promptly", { timeout: 40_000 }, async () => {
    const { watch, second, token, path } = scene!
    await watch.until("the reply turn to complete", settleWithinMs, async () => {
      const turns = await request(second.baseUrl, "GET", `${path}/turns`, { headers: bearer(token) })
      return turns.body.turns?.[0]?.status === "completed" ? true : undefined
    })
    await second.stop()
  })
})
