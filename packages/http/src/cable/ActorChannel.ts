// ActorChannel {kind, id, after?}: the inspector's live view of one actor, for owners and
// admins. It replays the actor's journal after `after` (a seq; absent means only what happens
// from now on), then tails committed steps. The feed is subscribed BEFORE the journal is read,
// and every read continues from the last seq sent, so nothing is missed or sent twice. A
// member, an unknown kind, an unknown actor and malformed params all get the same rejection.
import { type JournalEntry, RuntimeOperations } from "@troupe/domain/runtime/RuntimeOperations"
import { StepFeed } from "@troupe/domain/runtime/StepFeed"
import { Effect, Option, Stream } from "effect"
import { type CableChannel, registerChannel, rejected } from "./Channels.ts"

/** One journal row as the client receives it. */
export interface ActorStepMessage {
  readonly seq: number
  readonly event: unknown
  readonly from: string | null
  readonly to: string
  readonly actions: ReadonlyArray<string>
  readonly at: string
  /** The actor's state after this step (the same as `to`). */
  readonly state: string
}

const pageSize = 100
const digits = /^\d{1,18}$/

const toMessage = (row: JournalEntry): ActorStepMessage => ({
  seq: Number(row.seq),
  event: row.event,
  from: row.from_state,
  to: row.to_state,
  actions: row.actions,
  at: new Date(row.at).toISOString(),
  state: row.to_state
})

/** `after`: a non-negative integer (or its decimal string); undefined when absent. */
const parseAfter = (after: unknown): bigint | undefined | "invalid" => {
  if (after === undefined || after === null) return undefined
  if (typeof after === "number" && Number.isSafeInteger(after) && after >= 0) return BigInt(after)
  if (typeof after === "string" && digits.test(after)) return BigInt(after)
  return "invalid"
}

export const actorChannel: CableChannel<RuntimeOperations | StepFeed> = {
  name: "ActorChannel",
  subscribe: (params, connection) =>
    Effect.gen(function* () {
      if (connection.identity._tag !== "Human") return yield* rejected
      const role = connection.identity.caller.user.role
      if (role !== "owner" && role !== "admin") return yield* rejected
      const { kind } = params
      const after = parseAfter(params.after)
      if (typeof kind !== "string" || typeof params.id !== "string" || after === "invalid") {
        return yield* rejected
      }
      // Step notices carry the id as stored (lower case).
      const id = params.id.toLowerCase()
      const operations = yield* RuntimeOperations
      const feed = yield* StepFeed
      // Live first: anything committed from here on reaches `steps`.
      const steps = yield* feed.subscribe
      const seq = yield* operations.currentSeq(kind, id)
      if (seq === undefined) return yield* rejected

      let cursor = after ?? seq
      /** Every journal row after the cursor, page by page, advancing the cursor. */
      const catchUp = Stream.paginate(undefined, () =>
        operations.journalAfter(kind, id, cursor, pageSize).pipe(
          Effect.map((rows) => {
            const last = rows[rows.length - 1]
            if (last !== undefined) cursor = last.seq
            return [rows.map(toMessage), rows.length === pageSize ? Option.some(undefined) : Option.none()] as const
          })
        )
      )
      const newer = steps.pipe(
        Stream.filter(
          (item) =>
            item._tag === "Resync" ||
            (item.notice.kind === kind &&
              item.notice.actorId === id &&
              digits.test(item.notice.seq) &&
              BigInt(item.notice.seq) > cursor)
        ),
        Stream.flatMap(() => catchUp)
      )
      return Stream.concat(catchUp, newer)
    })
}

export const ActorChannelLive = registerChannel(actorChannel)
