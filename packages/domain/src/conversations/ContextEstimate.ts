// Member: context (spec "Member: context"; supplement "Assembly, estimate, compaction"): what the
// next reply would read, counted and on request rendered (a read); a manual compaction (a
// compaction_summary turn the conversation's actor opens and its summarizer fills); and the
// request a candidate's sample was sealed with. What the prompt is made of is Replies.ts's and
// Assembly.ts's; whether a compaction may start now is the actor's.

import { withDatabase } from "@troupe/storage/Defects"
import { isUuid, newPublicId } from "@troupe/storage/Ids"
import { ConversationsRepository, type SpeakerRow } from "@troupe/storage/repositories/Conversations"
import { InferenceRequestsRepository } from "@troupe/storage/repositories/InferenceRequests"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { Caller } from "../accounts/Caller.ts"
import { renderConfiguration } from "../agents/AgentConfiguration.ts"
import { StoredCall } from "../inference/StoredCall.ts"
import { Absent, Invalid, NotPermitted, StateConflict } from "../kernel/Refusals.ts"
import { ModelCatalog } from "../models/ModelCatalog.ts"
import { assemble, type Block, compactable, type HistoryOutcome, type Message } from "./Assembly.ts"
import { Conversations, type Refused, type Standing } from "./Conversations.ts"
import { compactionPolicyOf, counterFor, historyBoundOf, historyTurns, loadMaterial, servesText } from "./Replies.ts"
import { unarchived } from "./Settings.ts"
import { levelOf } from "./Standing.ts"
import { chainOf } from "./Timeline.ts"
import { type TurnView, turnView } from "./Views.ts"

/** The estimate's members as the contract decodes them (the input's members read the same way). */
export interface EstimateMembers {
  readonly prompt?: string | null | undefined
  readonly model?: { readonly model: string } | null | undefined
  readonly history?: Readonly<Record<string, unknown>> | null | undefined
  readonly answering_user_public_id?: string | null | undefined
  readonly speaker_public_id?: string | null | undefined
  readonly render?: boolean | undefined
}

export interface CompactionMembers {
  readonly model?: string | null | undefined
  readonly reasoning_enabled?: boolean | null | undefined
  readonly reasoning_effort?: string | null | undefined
}

export interface Entry {
  readonly role: string
  readonly parts: ReadonlyArray<Readonly<Record<string, unknown>>>
}

export interface EstimateAnswer {
  readonly input_tokens: number
  readonly tokenizer_exact: boolean
  readonly catalog_input_token_limit: number | null
  readonly advisory_input_token_limit: number | null
  readonly message_count: number
  readonly history: HistoryOutcome
  readonly mechanism?: string
  readonly entries?: ReadonlyArray<Entry>
  readonly storage?: { readonly bytes: number; readonly bound: number; readonly within_bound: boolean }
  readonly blocks?: ReadonlyArray<Block>
  readonly memory?: { readonly included: ReadonlyArray<string>; readonly omitted: ReadonlyArray<string> }
  readonly slots?: Readonly<Record<string, { readonly role: string; readonly bytes: number } | null>>
}

export interface SealedRequest {
  readonly request: {
    readonly entries: ReadonlyArray<Entry>
    readonly request_options: Readonly<Record<string, unknown>>
  }
}

/** A sealed request's storage bound (its canonical size). */
export const requestBound = 1024 * 1024

const invalid = (code: Invalid["code"], message: string) => new Invalid({ code, message })
const notFound = () => new Absent({ code: "not_found", message: "No such turn, variant or sealed request" })

const entryOf = (message: Message): Entry => ({ role: message.role, parts: [{ type: "text", text: message.content }] })

const decodeStored = Schema.decodeUnknownOption(StoredCall)

export class ConversationContext extends Context.Service<
  ConversationContext,
  {
    /** A read: what the next reply would send, counted; `render` adds the request itself. */
    readonly estimate: (
      caller: Caller,
      workspaceId: string,
      conversationId: string,
      members: EstimateMembers
    ) => Effect.Effect<EstimateAnswer, Refused>
    /** A compaction_summary turn, opened running. */
    readonly compaction: (
      caller: Caller,
      workspaceId: string,
      conversationId: string,
      members: CompactionMembers
    ) => Effect.Effect<{ readonly turn: TurnView }, Refused>
    /** The messages a candidate's sample was sealed with. */
    readonly sealedRequest: (
      caller: Caller,
      workspaceId: string,
      conversationId: string,
      turnId: string,
      variantId: string
    ) => Effect.Effect<SealedRequest, Refused>
  }
>()("@troupe/domain/conversations/ConversationContext") {
  static readonly layer = Layer.effect(
    ConversationContext,
    Effect.gen(function* () {
      const conversations = yield* Conversations
      const catalog = yield* ModelCatalog
      const db = withDatabase(yield* SqlClient)
      const repository = ConversationsRepository.make

      /** The addressee: the named agent (active, full here, may write in the workspace), else the stored answerer. */
      const answererOf = (target: Standing, named: string | null | undefined) =>
        Effect.gen(function* () {
          const stored = (yield* conversations.people([target.row.answerer_id])).get(target.row.answerer_id)!
          if (named == null) return stored
          const found = isUuid(named)
            ? yield* conversations.principal(target.workspaceAccountId, { publicId: named })
            : yield* conversations.principal(target.workspaceAccountId, { handle: named })
          if (found === undefined) return yield* invalid("principal_unknown", "answering_user_public_id names nobody")
          const level = levelOf(target.row, { user: found })
          if (
            found.kind !== "agent" ||
            found.status !== "active" ||
            level !== "full" ||
            !(yield* conversations.mayWrite(target, found))
          ) {
            return yield* invalid("answerer_not_eligible", "answering_user_public_id may not answer here")
          }
          return found
        })

      /** The speaker: the caller, or the steward of an agent caller. */
      const speakerOf = (caller: Caller, target: Standing, named: string | null | undefined) =>
        Effect.gen(function* () {
          const self = (yield* conversations.people([caller.user.id])).get(caller.user.id)!
          if (named == null || named === self.public_id) return self
          const found = isUuid(named)
            ? yield* conversations.principal(target.workspaceAccountId, { publicId: named })
            : undefined
          if (found === undefined || self.kind !== "agent" || self.steward_id !== found.id) {
            return yield* new NotPermitted({ code: "not_authorized", message: "speaker_public_id may not be named" })
          }
          return found
        })

      /**
       * The model as for inputs: the stored answerer's submitted, default, last reply; another's
       * default, then its own last reply here, then the conversation's, then the submitted one.
       */
      const modelOf = (target: Standing, answerer: SpeakerRow, submitted: string | null) =>
        Effect.gen(function* () {
          const defaultModel = renderConfiguration(answerer.configuration).default_model
          const stored = answerer.id === target.row.answerer_id
          const addresseeLast =
            stored || defaultModel !== null
              ? null
              : ((yield* db(
                  Effect.flatMap(repository, (rows) =>
                    rows.lastReplyModelOf({ conversationId: target.row.id, answererId: answerer.id })
                  )
                ))?.model_ref ?? null)
          const model = stored
            ? (submitted ?? defaultModel ?? target.row.last_reply_model)
            : (defaultModel ?? addresseeLast ?? target.row.last_reply_model ?? submitted)
          if (model === null) return yield* invalid("validation_failed", "model: no model could be chosen")
          if (!servesText(catalog, model)) {
            return yield* invalid("validation_failed", `model: ${model} is not a catalog model serving text_generation`)
          }
          return model
        })

      const estimate = (caller: Caller, workspaceId: string, conversationId: string, members: EstimateMembers) =>
        Effect.gen(function* () {
          const target = yield* conversations.standing(caller, workspaceId, conversationId, "read")
          const answerer = yield* answererOf(target, members.answering_user_public_id)
          const speaker = yield* speakerOf(caller, target, members.speaker_public_id)
          const ref = yield* modelOf(target, answerer, members.model?.model ?? null)
          const model = catalog.find(ref)!
          const material = yield* db(
            loadMaterial(target.row, { answererId: answerer.id, speakerId: speaker.id }, members.prompt ?? null)
          )
          const assembled = yield* assemble(
            material,
            historyBoundOf(members.history),
            model.context_window,
            counterFor(catalog, ref)
          )
          const counted: EstimateAnswer = {
            input_tokens: assembled.tokens,
            tokenizer_exact: model.tokenizer_exact,
            catalog_input_token_limit: model.context_window,
            advisory_input_token_limit: null,
            message_count: assembled.messages.length,
            history: assembled.history
          }
          if (members.render !== true) return counted
          const entries = assembled.messages.map(entryOf)
          const bytes = Buffer.byteLength(JSON.stringify(entries))
          return {
            ...counted,
            mechanism: "default",
            entries,
            storage: { bytes, bound: requestBound, within_bound: bytes <= requestBound },
            blocks: assembled.blocks,
            memory: { included: material.memoryPaths, omitted: [] },
            slots: Object.fromEntries(
              (["system_prompt", "character", "persona"] as const).map((name) => {
                const slot = material.slots.find((each) => each.name === name)
                return [name, slot === undefined ? null : { role: slot.role, bytes: Buffer.byteLength(slot.text) }]
              })
            )
          } satisfies EstimateAnswer
        })

      /** The summarizer: the named model, else the answerer's compaction_policy.model, else the last reply's. */
      const summarizerOf = (target: Standing, named: string | null | undefined) =>
        Effect.gen(function* () {
          const answerer = (yield* conversations.people([target.row.answerer_id])).get(target.row.answerer_id)
          const model = named ?? compactionPolicyOf(answerer?.configuration)?.model ?? target.row.last_reply_model
          if (model === null) return yield* invalid("validation_failed", "model: no summarizer model could be chosen")
          if (!servesText(catalog, model)) {
            return yield* invalid("validation_failed", `model: ${model} is not a catalog model serving text_generation`)
          }
          return model
        })

      const compaction = (caller: Caller, workspaceId: string, conversationId: string, members: CompactionMembers) =>
        Effect.gen(function* () {
          // An archived conversation answers 409 conversation_archived before busy or any 422.
          const target = yield* Effect.flatMap(
            conversations.standing(caller, workspaceId, conversationId, "write"),
            unarchived
          )
          const tail = yield* db(
            Effect.flatMap(repository, (rows) =>
              Effect.flatMap(chainOf(rows, target.row), (chain) =>
                rows.timeline({
                  chain,
                  afterPosition: null,
                  beforePosition: null,
                  includeHidden: true,
                  from: "newest",
                  limit: 1
                })
              )
            )
          )
          if (tail[0]?.status === "running" || tail[0]?.status === "pending") {
            return yield* new StateConflict({ code: "conversation_busy", message: "A reply or summary is running" })
          }
          if (!compactable(yield* db(historyTurns(target.row)))) {
            return yield* invalid("nothing_to_compact", "Nothing follows the newest summary")
          }
          const model = yield* summarizerOf(target, members.model)
          const ids = { turnId: newPublicId(), variantId: newPublicId(), requestId: newPublicId() }
          yield* conversations.send(target, { type: "conversation.compact", trigger: "manual", model, ...ids })
          return { turn: yield* turnOf(ids.turnId) }
        })

      const turnOf = (turnId: string) =>
        db(
          Effect.gen(function* () {
            const rows = yield* repository
            const turn = (yield* rows.findTurn(turnId))!
            const variants = yield* rows.variantsOf([turn.id])
            return turnView({ ...turn, own: true }, variants, new Map())
          })
        )

      const sealedRequest = (
        caller: Caller,
        workspaceId: string,
        conversationId: string,
        turnId: string,
        variantId: string
      ) =>
        Effect.gen(function* () {
          const target = yield* conversations.standing(caller, workspaceId, conversationId, "read")
          if (!isUuid(turnId) || !isUuid(variantId)) return yield* notFound()
          const found = yield* db(
            Effect.gen(function* () {
              const rows = yield* repository
              const turn = yield* rows.findTurn(turnId)
              if (turn === undefined) return undefined
              const chain = yield* chainOf(rows, target.row)
              const at = chain.conversationIds.indexOf(turn.conversation_id)
              const below = chain.below[at]
              if (at < 0 || (below != null && turn.position >= below)) return undefined
              const variant = yield* rows.findVariant(variantId)
              if (variant?.turn_public_id !== turn.public_id || variant.inference_request_public_id === null) {
                return undefined
              }
              return yield* (yield* InferenceRequestsRepository.make).findRequest(variant.inference_request_public_id)
            })
          )
          const stored = found === undefined ? Option.none() : decodeStored(found.request)
          if (found === undefined || Option.isNone(stored)) return yield* notFound()
          const { messages, workload, ...options } = stored.value.call
          return {
            request: {
              entries: messages.map((message) => ({
                role: message.role,
                parts: message.content.map((part) =>
                  part.type === "text"
                    ? { type: "text", text: part.text }
                    : {
                        type: "upload",
                        upload_public_id: part.uploadPublicId,
                        content_type: part.contentType,
                        filename: part.filename
                      }
                )
              })),
              request_options: { workload, model: found.model, ...options }
            }
          } satisfies SealedRequest
        })

      return ConversationContext.of({ estimate, compaction, sealedRequest })
    })
  )
}
