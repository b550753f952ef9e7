// The live side of a conversation (supplement "Feed and conversation channel"): which reply
// sample is streaming and which inference request's stream carries its deltas (a direct reply's
// own request, or a run-backed reply's mainline round's), the feed's cursor now, a signed-in human
// as a caller, and where a conversation lives when only its id is known (the conversation page),
// judged by the standing rules.
import { encodeStreamCursor, Streams } from "@troupe/actors/Streams"
import { isUuid } from "@troupe/storage/Ids"
import { withRepositories } from "@troupe/storage/Repositories"
import { ConversationsRepository, type VariantRow } from "@troupe/storage/repositories/Conversations"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { Fragment } from "effect/sql/Statement"
import { Accounts } from "../accounts/Accounts.ts"
import { type Caller, callerOfHuman } from "../accounts/Caller.ts"
import { InferenceRequestDefinition } from "../inference/InferenceRequests.ts"
import { Absent } from "../kernel/Refusals.ts"
import { ConversationDefinition, Conversations, type Refused, type Standing } from "./Conversations.ts"

/** A reply sample that streams: its turn, its variant and the stream its deltas ride. */
export interface LiveReply {
  readonly turnPublicId: string
  readonly variantPublicId: string
  /** A run-backed reply's run and the mainline round whose request this is. */
  readonly round?: { readonly runPublicId: string; readonly taskKey: string }
  readonly source: { readonly stream: string; readonly actor: { readonly kind: string; readonly id: string } }
}

/** The turn and variant a run backs. */
export interface RunReply {
  readonly turnPublicId: string
  readonly variantPublicId: string
}

interface RoundRow {
  readonly turn_public_id: string
  readonly variant_public_id: string
  readonly run_public_id: string
  readonly task_key: string
  readonly request_public_id: string
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
    /** A run-backed reply's mainline round, as the request its latest asking made. */
    readonly round: (runPublicId: string, taskKey: string) => Effect.Effect<LiveReply | undefined>
    /** The turn and variant a run backs (none for a standalone run). */
    readonly runReply: (runPublicId: string) => Effect.Effect<RunReply | undefined>
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

      const roundReply = (row: RoundRow | undefined): LiveReply | undefined =>
        row && {
          turnPublicId: row.turn_public_id,
          variantPublicId: row.variant_public_id,
          round: { runPublicId: row.run_public_id, taskKey: row.task_key },
          source: {
            stream: inferenceRequest.stream(row.request_public_id),
            actor: { kind: inferenceRequest.kind, id: row.request_public_id }
          }
        }

      /** The mainline model rounds (with a request) of the runs backing variants, as `where` narrows them. */
      const rounds = (where: Fragment) =>
        Effect.orDie(sql<RoundRow>`
          SELECT tu.public_id::text AS turn_public_id, v.public_id::text AS variant_public_id,
            r.public_id::text AS run_public_id, t.key AS task_key, q.public_id::text AS request_public_id
          FROM runs r
          JOIN conversation_variants v ON v.run_public_id = r.public_id
          JOIN conversation_turns tu ON tu.id = v.turn_id
          JOIN run_tasks t ON t.run_id = r.id AND t.kind = 'model_task' AND t.mainline
          JOIN inference_requests q ON q.id = t.inference_request_id
          WHERE ${where}
          ORDER BY t.position DESC LIMIT 1`)

      /** The mainline round a run-backed variant is running now. */
      const runningRound = (variantId: string) =>
        Effect.map(rounds(sql`v.public_id = ${variantId} AND t.status = 'running'`), ([row]) => roundReply(row))

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
            if (found === undefined) return undefined
            return (yield* sample(found.public_id)) ?? (yield* runningRound(found.public_id))
          }),
        sample,
        round: (runPublicId, taskKey) =>
          isUuid(runPublicId)
            ? Effect.map(rounds(sql`r.public_id = ${runPublicId} AND t.key = ${taskKey}`), ([row]) => roundReply(row))
            : Effect.undefined,
        runReply: (runPublicId) =>
          Effect.gen(function* () {
            if (!isUuid(runPublicId)) return undefined
            const [found] = yield* Effect.orDie(sql<{ turn_public_id: string; variant_public_id: string }>`
              SELECT t.public_id::text AS turn_public_id, v.public_id::text AS variant_public_id
              FROM conversation_variants v JOIN conversation_turns t ON t.id = v.turn_id
              WHERE v.run_public_id = ${runPublicId}`)
            return found && { turnPublicId: found.turn_public_id, variantPublicId: found.variant_public_id }
          }),
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
