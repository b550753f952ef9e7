// Grouped commit (`HostOptions.groupCommit`): steps of different actors that are ready while
// every committer is busy commit together, with one commit (and WAL flush) for the group:
// - a step that is one statement (no row handler, no delivery to settle) joins the others waiting
//   in ONE statement (ActorSteps.writeSteps), each behind its own seq fence, so a fence that fails
//   leaves the other steps written; if the statement fails as a whole (two steps on one stream,
//   say), each of its steps is written alone;
// - a step that needs a transaction joins the others waiting in one transaction; if any write of
//   the group fails, the group rolls back and each of its steps commits alone, so one failing step
//   sinks no other (its row handlers may run twice, the first run rolled back).
// A step inside a caller's transaction stays in it; one waiting alone commits at once.
import * as Steps from "@troupe/storage/repositories/ActorSteps"
import { Deferred, Effect, type Exit, Queue, type Scope } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"

export interface GroupCommitOptions {
  /** Commits under way at once (of each kind); a step waits for a free one and joins others waiting. */
  readonly committers: number
  /** Steps in one commit at most. */
  readonly maxGroup: number
}

interface Pending {
  /** The step's writes, keeping their result for `succeed` (no transaction of their own). */
  readonly writes: Effect.Effect<void, unknown>
  /** Answers the step with the kept result, once its group has committed. */
  readonly succeed: Effect.Effect<void>
  /** Commits the step alone and answers it with the outcome. */
  readonly alone: Effect.Effect<void>
}

interface PendingStatement {
  readonly write: Steps.StepWrite
  readonly done: Deferred.Deferred<boolean, SqlError>
}

export interface GroupCommit {
  /** Commits a step's writes; `transactional` ones (row handlers, a delivery) in a transaction. */
  readonly commit: <A, E, R>(
    writes: Effect.Effect<A, E, R>,
    transactional: boolean
  ) => Effect.Effect<A, E | SqlError, R>
  /** Writes a step's statement, with the statements of other steps waiting when outside a transaction. */
  readonly writeStep: (write: Steps.StepWrite) => Effect.Effect<boolean, SqlError>
}

/** Runs `commit` on 1 to `maxGroup` waiting items in each of `committers` fibers. */
const committers = <A>(
  queue: Queue.Queue<A>,
  options: GroupCommitOptions,
  commit: (group: Array<A>) => Effect.Effect<void>
) =>
  Effect.forEach(
    Array.from({ length: options.committers }),
    () => Effect.forkScoped(Effect.forever(Effect.flatMap(Queue.takeBetween(queue, 1, options.maxGroup), commit))),
    { discard: true }
  )

export const makeGroupCommit = (
  sql: SqlClient,
  options: GroupCommitOptions
): Effect.Effect<GroupCommit, never, Scope.Scope> =>
  Effect.gen(function* () {
    const inTransaction = Effect.map(Effect.serviceOption(sql.transactionService), (option) => option._tag === "Some")

    const transactions = yield* Queue.unbounded<Pending>()
    yield* committers(transactions, options, (group) =>
      group.length === 1
        ? group[0]!.alone
        : Effect.exit(sql.withTransaction(Effect.forEach(group, (pending) => pending.writes, { discard: true }))).pipe(
            Effect.flatMap((exit) =>
              Effect.forEach(group, (pending) => (exit._tag === "Success" ? pending.succeed : pending.alone), {
                discard: true
              })
            )
          )
    )

    const statements = yield* Queue.unbounded<PendingStatement>()
    const writeAlone = (pending: PendingStatement) =>
      Effect.flatMap(Effect.exit(Steps.writeStep(pending.write)), (exit) => Deferred.done(pending.done, exit))
    yield* committers(statements, options, (group) =>
      (group.length === 1
        ? writeAlone(group[0]!)
        : Effect.exit(Steps.writeSteps(group.map((pending) => pending.write))).pipe(
            Effect.flatMap((exit) =>
              exit._tag === "Success"
                ? Effect.forEach(group, (pending, index) => Deferred.succeed(pending.done, exit.value[index]!), {
                    discard: true
                  })
                : Effect.forEach(group, writeAlone, { discard: true })
            )
          )
      ).pipe(Effect.provideService(SqlClient, sql))
    )

    const commit = <A, E, R>(writes: Effect.Effect<A, E, R>, transactional: boolean) =>
      Effect.gen(function* () {
        if (!transactional) return yield* writes
        if (yield* inTransaction) return yield* sql.withTransaction(writes)
        const context = yield* Effect.context<R>()
        const provided = Effect.provideContext(writes, context)
        const done = yield* Deferred.make<A, E | SqlError>()
        let result: Exit.Exit<A, E> | undefined
        yield* Queue.offer(transactions, {
          writes: Effect.flatMap(Effect.exit(provided), (exit) => {
            result = exit
            return exit._tag === "Success" ? Effect.void : Effect.fail(exit.cause)
          }),
          succeed: Effect.suspend(() => (result ? Deferred.done(done, result) : Effect.void)),
          alone: Effect.flatMap(Effect.exit(sql.withTransaction(provided)), (exit) => Deferred.done(done, exit))
        })
        return yield* Deferred.await(done)
      })

    const writeStep = (write: Steps.StepWrite) =>
      Effect.gen(function* () {
        if (yield* inTransaction) return yield* Steps.writeStep(write).pipe(Effect.provideService(SqlClient, sql))
        const done = yield* Deferred.make<boolean, SqlError>()
        yield* Queue.offer(statements, { write, done })
        return yield* Deferred.await(done)
      })

    return { commit, writeStep }
  })
