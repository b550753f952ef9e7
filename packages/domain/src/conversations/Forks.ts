// Forks and sides (supplement "Forks and sides"): a new conversation reading its source's turns
// below the fork by reference, with its own copy of the fork turn (a side copies none and reads
// every settled turn), the source's settings, access, last reply model, store entries and
// conversation memory. The row, the copy and the new actor are one transaction, which also tells
// the source to freeze the prefix the child reads and to narrate fork_created, and each
// conversation further up its chain to freeze what the child reads of it (each lifts its freeze
// when the child is tombstoned).
import { ActorHost } from "@troupe/actors/ActorHost"
import type { Tail } from "@troupe/machines/conversation/context"
import { isUuid, newPublicId } from "@troupe/storage/Ids"
import { withRepositories } from "@troupe/storage/Repositories"
import {
  ConversationsRepository,
  type TimelineChain,
  type TimelineTurnRow,
  type VariantRow
} from "@troupe/storage/repositories/Conversations"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { Caller } from "../accounts/Caller.ts"
import { accountCostUnit } from "../budgets/Admission.ts"
import { emptyUsageSummary } from "../inference/Attempts.ts"
import { now } from "../kernel/Now.ts"
import { Absent, Invalid, StateConflict } from "../kernel/Refusals.ts"
import { ConversationDefinition, Conversations, type Refused, type Standing } from "./Conversations.ts"
import { type StoredAccess, storedAccess } from "./Standing.ts"
import { chainOf } from "./Timeline.ts"
import type { ConversationView } from "./Views.ts"

/** The fork's members (the contract's ForkMembers). */
export interface ForkMembers {
  readonly turn_public_id?: string | null | undefined
  readonly variant_public_id?: string | null | undefined
  readonly side?: boolean | null | undefined
  readonly title?: string | null | undefined
}

const settled = new Set(["completed", "failed", "canceled", "timed_out"])
const notFound = (what: string) => new Absent({ code: "not_found", message: `No such ${what}` })
const notTerminal = (what: string) =>
  new StateConflict({ code: "not_terminal", message: `The ${what} has not settled` })

/** The source's access for the fork: the forker's entry dropped, the source's creator full if another forks. */
const forkAccess = (source: Standing, forker: bigint, creatorPublicId: string): StoredAccess => {
  const access = storedAccess(source.row)
  const entries = access.entries.filter((entry) => entry.user_id !== String(forker))
  const creator = source.row.creator_id
  const named = creator === forker || creator === source.row.answerer_id
  return {
    default: access.default,
    entries: named
      ? entries
      : [...entries, { user_id: String(creator), user_public_id: creatorPublicId, level: "full" }]
  }
}

export class ConversationForks extends Context.Service<
  ConversationForks,
  {
    readonly fork: (
      caller: Caller,
      workspaceId: string,
      conversationId: string,
      members: ForkMembers
    ) => Effect.Effect<ConversationView, Refused>
  }
>()("@troupe/domain/conversations/ConversationForks") {
  static readonly layer = Layer.effect(
    ConversationForks,
    Effect.gen(function* () {
      const sql = yield* SqlClient
      const conversations = yield* Conversations
      const repository = yield* ConversationsRepository
      const actors = (yield* ActorHost).ref(yield* ConversationDefinition)
      const db = yield* withRepositories(ConversationsRepository)

      /** A turn of the chain by public id (own or inherited), else 404. */
      const turnOf = (chain: TimelineChain, turnId: string) =>
        Effect.gen(function* () {
          const row = isUuid(turnId) ? yield* db(repository.findTurn(turnId)) : undefined
          const index = row === undefined ? -1 : chain.conversationIds.indexOf(row.conversation_id)
          const bound = chain.below[index]
          if (row === undefined || index < 0 || (bound != null && row.position >= bound)) {
            return yield* notFound("turn")
          }
          return { ...row, own: index === 0 } satisfies TimelineTurnRow
        })

      /** The fork turn and candidate: named (a variant names its turn), else the newest settled turn's active one. */
      const forkPoint = (chain: TimelineChain, members: ForkMembers) =>
        Effect.gen(function* () {
          const variantId = members.variant_public_id ?? undefined
          const named =
            variantId === undefined || !isUuid(variantId) ? undefined : yield* db(repository.findVariant(variantId))
          if (variantId !== undefined && named === undefined) return yield* notFound("variant")
          const turnId = members.turn_public_id ?? named?.turn_public_id
          const turn =
            turnId === undefined ? yield* db(repository.newestSettledTurn(chain)) : yield* turnOf(chain, turnId)
          if (turn === undefined) return undefined
          if (named !== undefined && named.turn_id !== turn.id) return yield* notFound("variant")
          if (!settled.has(turn.status)) return yield* notTerminal("turn")
          const variants = named === undefined ? yield* db(repository.variantsOf([turn.id])) : [named]
          const variant: VariantRow | undefined =
            variants.find((each) => each.public_id === turn.active_variant_public_id) ?? variants.at(-1)
          if (variant === undefined) return yield* notFound("variant")
          if (!settled.has(variant.status)) return yield* notTerminal("variant")
          return { turn, variant }
        })

      return ConversationForks.of({
        fork: (caller, workspaceId, conversationId, members) =>
          Effect.gen(function* () {
            const source = yield* conversations.standing(caller, workspaceId, conversationId, "write")
            if (source.row.side) {
              return yield* new Invalid({ code: "side_conversation", message: "A side conversation is not forked" })
            }
            const side = members.side === true
            const chain = yield* db(chainOf(repository, source.row))
            const point = side
              ? yield* Effect.map(db(repository.newestSettledTurn(chain)), (turn) =>
                  turn === undefined ? undefined : { turn, variant: undefined }
                )
              : yield* forkPoint(chain, members)
            const at = point?.turn.position ?? 0
            // A fork owns its copy of the fork turn; a side reads every settled turn by reference.
            const firstPosition = side ? at + 1 : Math.max(at, 1)
            const copy = !side && point?.variant !== undefined ? { ...point, turnId: newPublicId() } : undefined
            const people = yield* conversations.people([caller.user.id, source.row.creator_id])
            const access = forkAccess(source, caller.user.id, people.get(source.row.creator_id)?.public_id ?? "")
            const publicId = newPublicId()
            const variantId = copy === undefined ? null : newPublicId()
            const tail: Tail | null =
              copy === undefined
                ? null
                : {
                    turnId: copy.turnId,
                    position: copy.turn.position,
                    kind: copy.turn.kind as Tail["kind"],
                    status: copy.variant.status
                  }
            const row = source.row
            const stamp = yield* now
            yield* db(
              Effect.gen(function* () {
                const id = yield* repository.insertConversation({
                  publicId,
                  workspaceId: row.workspace_id,
                  creatorId: caller.user.id,
                  answererId: row.answerer_id,
                  title: members.title ?? row.title,
                  metadataJson: JSON.stringify(row.metadata ?? {}),
                  billingSubject: row.billing_subject,
                  defaultRunnerExecutorId: row.default_runner_executor_id,
                  accessJson: JSON.stringify(access),
                  memoryContextJson: row.memory_context === null ? null : JSON.stringify(row.memory_context),
                  usageSummaryJson: JSON.stringify(emptyUsageSummary(yield* accountCostUnit)),
                  side,
                  sourceConversationId: row.id,
                  forkedPosition: firstPosition,
                  forkedFromTurnPublicId: point?.turn.public_id ?? null,
                  forkedFromVariantPublicId: point?.variant?.public_id ?? point?.turn.active_variant_public_id ?? null,
                  // It inherits the source's history, so the model that history was last answered with.
                  lastReplyModel: row.last_reply_model,
                  now: stamp
                })
                if (copy !== undefined) {
                  const turnId = yield* repository.copyTurn({
                    publicId: copy.turnId,
                    conversationId: id,
                    fromTurnId: copy.turn.id,
                    variantPublicId: variantId!,
                    status: copy.variant.status,
                    failureReasonKey: copy.variant.failure_reason_key,
                    now: stamp
                  })
                  yield* repository.copyVariant(variantId!, turnId, copy.variant.public_id, stamp)
                }
                yield* repository.copyHostedRows(row.id, id, stamp)
                yield* actors
                  .create(publicId, { publicId, firstPosition, side, subagent: false, tail })
                  .pipe(Effect.orDie)
                const through = side ? at : firstPosition - 1
                for (const [index, ancestorId] of chain.conversationIds.entries()) {
                  const ancestor = index === 0 ? undefined : yield* repository.findConversationById(ancestorId)
                  if (ancestor === undefined) continue
                  yield* actors
                    .tell(ancestor.public_id, {
                      type: "conversation.freeze",
                      through: Math.min(through, (chain.below[index] ?? through + 1) - 1),
                      child: publicId
                    })
                    .pipe(Effect.orDie)
                }
                yield* actors
                  .tell(row.public_id, {
                    type: "conversation.forked",
                    through,
                    child: publicId,
                    item: {
                      conversation_public_id: publicId,
                      side,
                      turn_public_id: point?.turn.public_id ?? null,
                      variant_public_id: point?.variant?.public_id ?? point?.turn.active_variant_public_id ?? null,
                      by: people.get(caller.user.id)?.public_id ?? null
                    }
                  })
                  .pipe(Effect.orDie)
              }).pipe(sql.withTransaction)
            )
            const created = (yield* db(repository.findConversation(publicId)))!
            return yield* conversations.view({ ...source, row: created, level: "full" })
          })
      })
    })
  )
}
