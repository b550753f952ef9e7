// This process's lifetime (its row in node_lifetimes) and whether another lifetime is over.
// PostgreSQL: a lifetime is alive while its process holds an advisory lock on a session of its
// own, so the database itself notices a killed process. Embedded: the database is one process's,
// so every lifetime but the current one is over.
import { PgConnection } from "@effect/sql-pg"
import { Clock, Context, Deferred, Effect, Layer, Queue, type Redacted, Ref, Schedule } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import type { DatabaseConfig } from "./Database.ts"

/** The advisory lock class of lifetimes: a live lifetime holds `pg_advisory_lock(class, id)`. */
export const lifetimeLockClass = 0x74727570

/** SQL: the lifetime `n` is alive, on PostgreSQL. */
const aliveOnPostgres = `n.ended_at IS NULL AND EXISTS (
  SELECT 1 FROM pg_locks l
  WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
    AND l.classid = ${lifetimeLockClass} AND l.objid = n.id)`

const now = Effect.map(Clock.currentTimeMillis, (millis) => new Date(millis))

export class NodeLifetime extends Context.Service<
  NodeLifetime,
  {
    /** This process's current lifetime. */
    readonly current: Effect.Effect<bigint>
    /** Whether `lifetime` is over: its process stopped or died (an unknown lifetime is over). */
    readonly isOver: (lifetime: bigint) => Effect.Effect<boolean>
  }
>()("@troupe/storage/NodeLifetime") {
  static readonly layer = (config: DatabaseConfig) =>
    config._tag === "postgres" ? NodeLifetime.postgres(config.url) : NodeLifetime.embedded

  /** One process opens the embedded database (its directory is locked): earlier lifetimes are over. */
  static readonly embedded = Layer.effect(
    NodeLifetime,
    Effect.gen(function* () {
      const sql = yield* SqlClient
      const at = yield* now
      yield* sql`UPDATE node_lifetimes SET ended_at = ${at} WHERE ended_at IS NULL`.pipe(Effect.orDie)
      yield* reap("n.ended_at IS NULL")
      const [row] = yield* sql<{ id: bigint }>`
        INSERT INTO node_lifetimes (started_at) VALUES (${at}) RETURNING id`.pipe(Effect.orDie)
      const id = row!.id
      yield* Effect.addFinalizer(() => end(sql, id))
      return NodeLifetime.of({ current: Effect.succeed(id), isOver: (lifetime) => Effect.succeed(lifetime !== id) })
    })
  )

  /**
   * Each lifetime holds its lock on a session of its own. A lost session loses the lock (others
   * may then take over what it claimed), so the process begins a new lifetime on a new session.
   */
  static readonly postgres = (url: Redacted.Redacted<string>) =>
    Layer.effect(
      NodeLifetime,
      Effect.gen(function* () {
        const sql = yield* SqlClient
        yield* reap(aliveOnPostgres)
        const current = yield* Ref.make(0n)
        const first = yield* Deferred.make<void, SqlError>()
        const live = Effect.scoped(
          Effect.gen(function* () {
            const session = yield* PgConnection.make({
              url,
              applicationName: "troupe-lifetime",
              keepAlive: "10 seconds"
            })
            // Inserted and locked in one statement: whoever sees the row sees its lock.
            const started = yield* session.query(
              `WITH started AS (INSERT INTO node_lifetimes (started_at) VALUES ($1) RETURNING id)
               SELECT id, pg_advisory_lock(${lifetimeLockClass}, id::int) FROM started`,
              [yield* now]
            )
            yield* Ref.set(current, started.rows[0]!.id as bigint)
            // Nothing is sent on this channel: its queue only fails, when the session is lost.
            const lost = yield* session.listen("troupe_node_lifetime")
            yield* Deferred.succeed(first, undefined)
            return yield* Effect.forever(Queue.take(lost))
          })
        ).pipe(Effect.tapError((error) => Deferred.fail(first, error)))
        yield* live.pipe(
          Effect.tapError((error) =>
            Effect.logWarning(`node lifetime: lost its database session (${error.message}); beginning a new one`)
          ),
          Effect.retry(Schedule.spaced("1 second")),
          Effect.forkScoped
        )
        yield* Deferred.await(first).pipe(Effect.orDie)
        yield* Effect.addFinalizer(() => Effect.flatMap(Ref.get(current), (id) => end(sql, id)))
        return NodeLifetime.of({
          current: Ref.get(current),
          isOver: (lifetime) =>
            sql<{ alive: boolean }>`
              SELECT EXISTS (SELECT 1 FROM node_lifetimes n WHERE n.id = ${lifetime} AND ${sql.literal(aliveOnPostgres)})
                AS alive`.pipe(
              Effect.map((rows) => !rows[0]!.alive),
              Effect.orDie
            )
        })
      })
    )
}

const end = (sql: SqlClient, id: bigint) =>
  Effect.flatMap(now, (at) => sql`UPDATE node_lifetimes SET ended_at = ${at} WHERE id = ${id}`).pipe(Effect.ignore)

/** Forgets lifetimes that are over and hold no pending receipt. */
const reap = (alive: string) =>
  Effect.flatMap(
    SqlClient,
    (sql) => sql`
      DELETE FROM node_lifetimes n
      WHERE NOT (${sql.literal(alive)})
        AND NOT EXISTS (SELECT 1 FROM idempotency_receipts r WHERE r.lifetime_id = n.id AND r.state = 'pending')`
  ).pipe(Effect.orDie)
