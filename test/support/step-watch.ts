// What an end-to-end test reads of a PostgreSQL database while `troupe serve` processes come and
// go: the actor steps they commit (NOTIFYed on the event bus, which crosses processes there), and
// any other channel the test names, and rows. `until` waits on those notices, never by sleeping.
import { stepChannel } from "@troupe/actors/ActorHost"
import * as Database from "@troupe/storage/Database"
import { EventBus } from "@troupe/storage/EventBus"
import { Effect, ManagedRuntime, Stream } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { TestDatabase } from "./database.ts"

export interface StepWatch {
  /** Resolves with `check`'s first defined answer, asked now and again after each notice. */
  readonly until: <A>(what: string, ms: number, check: () => Promise<A | undefined>) => Promise<A>
  readonly query: <A extends object>(text: string, params?: ReadonlyArray<unknown>) => Promise<ReadonlyArray<A>>
  readonly close: () => Promise<void>
}

/** Watches `database`: committed steps, and the notices of `channels` too. */
export const openStepWatch = async (
  database: TestDatabase,
  channels: ReadonlyArray<string> = []
): Promise<StepWatch> => {
  const runtime = ManagedRuntime.make(Database.layer(database.config))
  const listeners = new Set<() => void>()
  const notify = () =>
    Effect.sync(() => {
      for (const listener of listeners) listener()
    })
  await Promise.all(
    [stepChannel, ...channels].map(
      (channel) =>
        new Promise<void>((live) => {
          runtime.runFork(
            Effect.scoped(
              Effect.gen(function* () {
                const notices = yield* (yield* EventBus).subscribe(channel)
                live()
                yield* Stream.runForEach(notices, notify)
              })
            )
          )
        })
    )
  )
  const query = <A extends object>(text: string, params: ReadonlyArray<unknown> = []) =>
    runtime.runPromise(Effect.flatMap(SqlClient, (sql) => sql.unsafe<A>(text, params)))
  const until = <A>(what: string, ms: number, check: () => Promise<A | undefined>) =>
    new Promise<A>((done, fail) => {
      // One check at a time; a step committing meanwhile asks for one more after it.
      let checking = false
      let again = false
      const finish = (settle: () => void) => {
        clearTimeout(timer)
        listeners.delete(ask)
        settle()
      }
      const ask = () => {
        if (checking) {
          again = true
          return
        }
        checking = true
        check().then(
          (answer) => {
            checking = false
            if (answer !== undefined) return finish(() => done(answer))
            if (again) {
              again = false
              ask()
            }
          },
          (error) => finish(() => fail(error))
        )
      }
      const timer = setTimeout(() => finish(() => fail(new Error(`${what}: not so after ${ms} ms`))), ms)
      listeners.add(ask)
      ask()
    })
  return { until, query, close: () => runtime.dispose() }
}
