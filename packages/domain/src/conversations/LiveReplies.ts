// The live side of a conversation (supplement "Feed and conversation channel"): which reply
// sample is streaming and which inference request's stream carries its deltas, the feed's cursor
// now, a signed-in human as a caller, and where a conversation lives when only its id is known
// (the conversation page), judged by the standing rules.
import { encodeStreamCursor, Streams } from "@troupe/actors/Streams"
import { isUuid } from "@troupe/storage/Ids"
import { withRepositories } from "@troupe/storage/Repositories"
import { ConversationsRepository, type VariantRow } from "@troupe/storage/repositories/Conversations"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { Accounts } from "../accounts/Accounts.ts"
import { type Caller, callerOfHuman } from "../accounts/Caller.ts"
import { InferenceRequestDefinition } from "../inference/InferenceRequests.ts"
import { Absent } from "../kernel/Refusals.ts"
import { ConversationDefinition, Conversations, type Refused, type Standing } from "./Conversations.ts"

/** A reply sample that streams: its turn, its variant and the stream its deltas ride. */
export interface LiveReply {
  readonly turnPublicId: string
  readonly variantPublicId: string
  readonly source: { readonly stream: string; readonly actor: { readonly kind: string; readonly id: string } }
}

const notFound = () => new Absent({ code: "not_found", message: "No such conversation" })

export class LiveReplies extends Context.Service<
  LiveReplies,
  {
    /** An active human by id, as a caller; undefined for anyone else. */
    readonly humanCaller: (userId: bigint) => Effect.Effect<Caller | undefined>
    /** The caller's read standing on a conversation named by its id alone (404 like absence). */
    readonly locate: (caller: Caller, conversationId: string) => Effect.Effect<Standing, Refused>
    /** The reply sample the conversation is streaming now, if any. */
    readonly running: (conversationId: string) => Effect.Effect<LiveReply | undefined>
    /** The sample a variant is, when an inference request makes it. */
    readonly sample: (variantId: string) => Effect.Effect<LiveReply | undefined>
    /** The feed's position now, as a channel's `after` ("" before item 1). */
    readonly cursor: (conversationId: string) => Effect.Effect<string>
  }
>()("@troupe/domain/conversations/LiveReplies") {
  static readonly layer = Layer.effect(
    LiveReplies,
    Effect.gen(function* () {
      const sql = yield* SqlClient
      const accounts = yield* Accounts
      const conversations = yield* Conversations
      const streams = yield* Streams
      const repository = yield* ConversationsRepository
      const conversation = yield* ConversationDefinition
      const inferenceRequest = yield* InferenceRequestDefinition
      const db = yield* withRepositories(ConversationsRepository)

      const liveReply = (variant: VariantRow): LiveReply | undefined =>
        variant.inference_request_public_id === null
          ? undefined
          : {
              turnPublicId: variant.turn_public_id,
              variantPublicId: variant.public_id,
              source: {
                stream: inferenceRequest.stream(variant.inference_request_public_id),
                actor: { kind: inferenceRequest.kind, id: variant.inference_request_public_id }
              }
            }

      const sample = (variantId: string) =>
        isUuid(variantId)
          ? Effect.map(db(repository.findVariant(variantId)), (variant) => variant && liveReply(variant))
          : Effect.undefined

      return LiveReplies.of({
        humanCaller: (userId) =>
          Effect.map(accounts.findUser(userId), (user) =>
            user?.kind === "human" && user.status === "active" ? callerOfHuman(user) : undefined
          ),
        locate: (caller, conversationId) =>
          Effect.gen(function* () {
            const rows = isUuid(conversationId)
              ? yield* Effect.orDie(sql<{ workspace_public_id: string }>`
                  SELECT w.public_id::text AS workspace_public_id FROM conversations c
                  JOIN workspaces w ON w.id = c.workspace_id WHERE c.public_id = ${conversationId}`)
              : []
            const workspace = rows[0]
            if (workspace === undefined) return yield* notFound()
            return yield* conversations.standing(caller, workspace.workspace_public_id, conversationId, "read")
          }),
        running: (conversationId) =>
          Effect.gen(function* () {
            if (!isUuid(conversationId)) return undefined
            const [found] = yield* Effect.orDie(sql<{ public_id: string }>`
              SELECT v.public_id::text AS public_id FROM conversation_variants v
              JOIN conversation_turns t ON t.id = v.turn_id
              JOIN conversations c ON c.id = t.conversation_id
              WHERE c.public_id = ${conversationId} AND t.status = 'running' AND v.status IN ('pending', 'running')
              ORDER BY v.id DESC LIMIT 1`)
            return found === undefined ? undefined : yield* sample(found.public_id)
          }),
        sample,
        cursor: (conversationId) =>
          Effect.map(Effect.orDie(streams.read(conversation.stream(conversationId), undefined, 1)), (page) =>
            page.pagination.watermark === 0
              ? ""
              : encodeStreamCursor(conversation.stream(conversationId), BigInt(page.pagination.watermark))
          )
      })
    })
  )
}
