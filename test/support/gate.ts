// A gate a test closes on a PostgreSQL database to stop `troupe serve` at an exact point: a
// trigger makes each update of `table` matching `when` wait on an advisory lock the test's own
// session holds. Once the server is killed, `remove` ends the server sessions waiting at the gate
// (their transactions roll back: what they were writing never lands), then opens and drops it.
// Who waits is read from pg_locks.
import { PgConnection } from "@effect/sql-pg"
import { Effect, Exit, Scope } from "effect"
import type { TestDatabase } from "./database.ts"
import { within } from "./processes.ts"

/** The advisory lock class of every gate (the key is the gate's number in this process). */
const lockClass = 7_316_801

export interface Gate {
  /** Resolves once `count` sessions wait at the gate. */
  readonly waiting: (what: string, count?: number) => Promise<void>
  /** Ends the sessions waiting at the gate (the server must be dead), then opens and drops it. */
  readonly remove: () => Promise<void>
}

let gates = 0

export const closeGate = async (
  database: TestDatabase,
  on: { readonly table: string; readonly when: string }
): Promise<Gate> => {
  if (database.config._tag !== "postgres") throw new Error("a gate needs PostgreSQL")
  const key = ++gates
  const name = `troupe_test_gate_${key}`
  const scope = Effect.runSync(Scope.make())
  const session = await Effect.runPromise(Scope.provide(PgConnection.make({ url: database.config.url }), scope))
  const query = <A = Record<string, unknown>>(text: string) =>
    Effect.runPromise(session.query(text)).then((result) => result.rows as Array<A>)
  await query(`CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN PERFORM pg_advisory_xact_lock(${lockClass}, ${key}); RETURN NEW; END $$`)
  await query(`CREATE TRIGGER ${name} BEFORE UPDATE ON ${on.table} FOR EACH ROW WHEN (${on.when})
    EXECUTE FUNCTION ${name}()`)
  await query(`SELECT pg_advisory_lock(${lockClass}, ${key})`)
  const waiters = () =>
    query<{ pid: number }>(`SELECT pid FROM pg_locks
      WHERE locktype = 'advisory' AND classid = ${lockClass} AND objid = ${key} AND objsubid = 2 AND NOT granted
        AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`)
  const until = (what: string, done: () => Promise<boolean>) =>
    within(
      30_000,
      what,
      (async () => {
        while (!(await done())) await new Promise((next) => setImmediate(next))
      })()
    )
  return {
    waiting: (what, count = 1) => until(what, async () => (await waiters()).length >= count),
    remove: async () => {
      for (const { pid } of await waiters()) await query(`SELECT pg_terminate_backend(${pid}, 10000)`)
      await query(`SELECT pg_advisory_unlock(${lockClass}, ${key})`)
      await query(`DROP TRIGGER ${name} ON ${on.table}`)
      await query(`DROP FUNCTION ${name}()`)
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  }
}
