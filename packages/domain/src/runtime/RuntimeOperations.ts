// What operators read and record beside the actor runtime's own services (ActorHost, Inspection,
// Supervision): the audit trail of their actions, actor counts per kind, and one actor's journal
// after a seq (the live view). An actor id that is no UUID names no actor.
import { withDatabase } from "@troupe/storage/Defects"
import { isUuid } from "@troupe/storage/Ids"
import * as Actors from "@troupe/storage/repositories/Actors"
import { AuditRepository } from "@troupe/storage/repositories/Audit"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { now } from "../kernel/Now.ts"

export type JournalEntry = Actors.JournalRow

export interface ActorCounts {
  readonly kind: string
  readonly actors: number
  readonly active: number
  readonly quarantined: number
}

export class RuntimeOperations extends Context.Service<
  RuntimeOperations,
  {
    /** Records an operator's action on a target (`kind` or `kind/id`). */
    readonly audit: (entry: {
      readonly userId: bigint
      readonly action: string
      readonly target: string
      readonly details: unknown
    }) => Effect.Effect<void>
    readonly actorCounts: Effect.Effect<ReadonlyArray<ActorCounts>>
    /** The actor's current seq, or undefined when there is no such actor. */
    readonly currentSeq: (kind: string, actorId: string) => Effect.Effect<bigint | undefined>
    /** Up to `limit` journal entries after `afterSeq`, in order. */
    readonly journalAfter: (
      kind: string,
      actorId: string,
      afterSeq: bigint,
      limit: number
    ) => Effect.Effect<ReadonlyArray<JournalEntry>>
  }
>()("@troupe/domain/RuntimeOperations") {
  static readonly layer = Layer.effect(
    RuntimeOperations,
    Effect.gen(function* () {
      const db = withDatabase(yield* SqlClient)
      const audit = yield* AuditRepository
      return RuntimeOperations.of({
        audit: (entry) => db(Effect.flatMap(now, (at) => audit.append({ ...entry, at }))),
        actorCounts: db(
          Effect.map(Actors.countByKind, (rows) =>
            rows.map((row) => ({
              kind: row.kind,
              actors: Number(row.actors),
              active: Number(row.active),
              quarantined: Number(row.quarantined)
            }))
          )
        ),
        currentSeq: (kind, actorId) =>
          isUuid(actorId)
            ? db(Effect.map(Actors.findSnapshot(kind, actorId), (row) => row?.seq))
            : Effect.succeed(undefined),
        journalAfter: (kind, actorId, afterSeq, limit) => db(Actors.readJournal(kind, actorId, afterSeq, limit))
      })
    })
  )
}
