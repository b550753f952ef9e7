// Grouped commit (`HostOptions.groupCommit`): steps of different actors whose writes are ready
// while every committer is busy commit together in one transaction (one BEGIN/COMMIT and one
// WAL flush for the group). Each step keeps its own seq fence; if any write of a group fails,
// the group rolls back and each of its steps commits alone, so one failing step sinks no other.
import { Deferred, Effect, type Exit, Queue, type Scope } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"

export interface GroupCommitOptions {
  /** Transactions committing at once; a step waits for a free one and joins others waiting. */
  readonly committers: number
  /** Steps in one transaction at most. */
  readonly maxGroup: number
}

interface Pending {
  /** The step's writes, keeping their result for `succeed` (no transaction of their own). */
  readonly writes: Effect.Effect<void, unknown>
  /** Answers the step with the kept result, once its group has committed. */
  readonly succeed: Effect.Effect<void>
  /** Commits the step in a transaction of its own and answers it with the outcome. */
  readonly alone: Effect.Effect<void>
}

/** A `withTransaction` for steps that groups the writes of steps waiting at the same time. */
export const makeGroupCommit = (
  sql: SqlClient,
  options: GroupCommitOptions
): Effect.Effect<<A, E, R>(writes: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError, R>, never, Scope.Scope> =>
  Effect.gen(function* () {
    const queue = yield* Queue.unbounded<Pending>()
    const commit = (group: ReadonlyArray<Pending>) =>
      group.length === 1
        ? group[0]!.alone
        : Effect.exit(sql.withTransaction(Effect.forEach(group, (pending) => pending.writes, { discard: true }))).pipe(
            Effect.flatMap((exit) =>
              Effect.forEach(group, (pending) => (exit._tag === "Success" ? pending.succeed : pending.alone), {
                discard: true
              })
            )
          )
    for (let index = 0; index < options.committers; index++) {
      yield* Effect.forkScoped(Effect.forever(Effect.flatMap(Queue.takeBetween(queue, 1, options.maxGroup), commit)))
    }
    return <A, E, R>(writes: Effect.Effect<A, E, R>) =>
      Effect.gen(function* () {
        // A step inside a caller's transaction stays in it.
        if ((yield* Effect.serviceOption(sql.transactionService))._tag === "Some") {
          return yield* sql.withTransaction(writes)
        }
        const context = yield* Effect.context<R>()
        const provided = Effect.provideContext(writes, context)
        const done = yield* Deferred.make<A, E | SqlError>()
        let result: Exit.Exit<A, E> | undefined
        yield* Queue.offer(queue, {
          writes: Effect.flatMap(Effect.exit(provided), (exit) => {
            result = exit
            return exit._tag === "Success" ? Effect.void : Effect.fail(exit.cause)
          }),
          succeed: Effect.suspend(() => (result ? Deferred.done(done, result) : Effect.void)),
          alone: Effect.flatMap(Effect.exit(sql.withTransaction(provided)), (exit) => Deferred.done(done, exit))
        })
        return yield* Deferred.await(done)
      })
  })
