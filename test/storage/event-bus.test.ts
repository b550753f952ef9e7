// The PostgreSQL event bus under load and faults: every subscription shares one LISTEN session
// outside the pool (forty channels on a pool of three), and a killed session is reopened.
import { assert, layer } from "@effect/vitest"
import { layer as databaseLayer } from "@troupe/storage/Database"
import { EventBus } from "@troupe/storage/EventBus"
import { newPublicId } from "@troupe/storage/Ids"
import { ListenSessionLost, listenApplicationName } from "@troupe/storage/ListenSession"
import { Cause, Effect, Exit, Fiber, Layer, Stream } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { describe } from "vitest"
import { freshPostgres, postgresReachable } from "../support/database.ts"

const smallPool = Layer.unwrap(
  Effect.acquireRelease(Effect.promise(freshPostgres), (database) => Effect.promise(database.drop)).pipe(
    Effect.map(({ config }) => databaseLayer(config._tag === "postgres" ? { ...config, maxConnections: 3 } : config))
  )
)

/** The backend pids of this database's listen sessions. */
const listenerPids = Effect.flatMap(SqlClient, (sql) =>
  sql<{ pid: number }>`SELECT pid FROM pg_stat_activity
    WHERE application_name = ${listenApplicationName} AND datname = current_database()`.pipe(
    Effect.map((rows) => rows.map((row) => row.pid)),
    Effect.orDie
  )
)

const firstOf = (stream: Stream.Stream<string>) => stream.pipe(Stream.take(1), Stream.runCollect, Effect.forkChild)

describe.skipIf(!(await postgresReachable()))("event bus (PostgreSQL)", () => {
  layer(smallPool, { excludeTestServices: true, timeout: "60 seconds" })("one listen session", (it) => {
    it.effect("forty channels subscribed at once on a pool of three each receive their publish", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const bus = yield* EventBus
          const sql = yield* SqlClient
          const channels = Array.from({ length: 40 }, (_, i) =>
            i % 2 === 0 ? `executor_inbox:${newPublicId()}` : `Run "Progress":${i}`
          )
          const streams = yield* Effect.forEach(channels, bus.subscribe, { concurrency: "unbounded" })
          const readers = yield* Effect.forEach(streams, firstOf)
          yield* Effect.forEach(channels, (channel) => bus.publish(channel, `to ${channel}`), {
            concurrency: "unbounded"
          })
          const received = yield* Effect.forEach(readers, Fiber.join)
          assert.deepStrictEqual(
            received.map((chunk) => [...chunk]),
            channels.map((channel) => [`to ${channel}`])
          )
          assert.strictEqual((yield* listenerPids).length, 1)
          const answered = yield* sql<{ one: number }>`SELECT 1 AS one`
          assert.strictEqual(answered[0]!.one, 1)
        })
      ).pipe(Effect.timeout("20 seconds"))
    )

    it.effect("a channel is left with its last subscriber and listened again by the next", () =>
      Effect.gen(function* () {
        const bus = yield* EventBus
        const channel = `left:${newPublicId()}`
        yield* Effect.scoped(Effect.asVoid(bus.subscribe(channel)))
        yield* Effect.scoped(
          Effect.gen(function* () {
            const reader = yield* firstOf(yield* bus.subscribe(channel))
            yield* bus.publish(channel, "again")
            assert.deepStrictEqual([...(yield* Fiber.join(reader))], ["again"])
          })
        )
      }).pipe(Effect.timeout("10 seconds"))
    )

    it.effect("a killed listen session fails the live streams and is reopened for later publishes", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const bus = yield* EventBus
          const sql = yield* SqlClient
          const channel = `executor_inbox:${newPublicId()}`
          const before = yield* bus.subscribe(channel)
          const [pid] = yield* listenerPids
          assert.isDefined(pid)
          const ended = yield* before.pipe(Stream.runDrain, Effect.exit, Effect.forkChild)
          yield* sql`SELECT pg_terminate_backend(${pid})`
          const exit = yield* Fiber.join(ended)
          assert.isTrue(Exit.isFailure(exit))
          if (Exit.isFailure(exit)) {
            assert.instanceOf(exit.cause.reasons.find(Cause.isDieReason)?.defect, ListenSessionLost)
          }
          const after = yield* bus.subscribe(channel)
          const other = yield* bus.subscribe(`${channel}:other`)
          const readers = [yield* firstOf(after), yield* firstOf(other)]
          yield* bus.publish(channel, "after the drop")
          yield* bus.publish(`${channel}:other`, "elsewhere")
          const received = yield* Effect.forEach(readers, Fiber.join)
          assert.deepStrictEqual(
            received.map((chunk) => [...chunk]),
            [["after the drop"], ["elsewhere"]]
          )
          const pids = yield* listenerPids
          assert.strictEqual(pids.length, 1)
          assert.notStrictEqual(pids[0], pid)
        })
      ).pipe(Effect.timeout("20 seconds"))
    )
  })
})
