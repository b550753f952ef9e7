// How a conversation's samples are asked (supplement "Assembly, estimate, compaction"): the
// material of a prompt loaded from rows (the answerer's system prompt, the workspace's character,
// the speaker's human's persona, memory by the conversation's memory_context, the history), put in
// order by Assembly.ts; a direct reply's head judged against its model's window (walls: blocked,
// cut, or compacted first); a reply's or a summary's request sealed as an inference request the
// conversation's actor starts, told to reply to it. The answered input's attachments ride on its
// user message as upload parts, the author's own uploads; a model that cannot take them fails the
// sample (its request refused at once, declined so the reply's fallback may take them).
import type { ConversationReplies, SampleRequest, WallCompaction } from "@troupe/actors/bindings/conversation"
import { uploadNamingKind } from "@troupe/actors/bindings/inferenceRequest"
import type { BlockedReason } from "@troupe/machines/conversation/context"
import { newPublicId } from "@troupe/storage/Ids"
import { type ConversationRow, ConversationsRepository } from "@troupe/storage/repositories/Conversations"
import { InferenceRequestsRepository } from "@troupe/storage/repositories/InferenceRequests"
import { type Anchor, MemoryRepository } from "@troupe/storage/repositories/Memory"
import { NamedAgentsRepository } from "@troupe/storage/repositories/NamedAgents"
import { type Host, PromptDocumentsRepository } from "@troupe/storage/repositories/PromptDocuments"
import { UploadsRepository } from "@troupe/storage/repositories/Uploads"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { renderConfiguration } from "../agents/AgentConfiguration.ts"
import { accountCostUnit, recordPayer, refused } from "../budgets/Admission.ts"
import { emptyUsageSummary } from "../inference/Attempts.ts"
import { type CreateMembers, defaultTimeoutMs, type InputMessage, judgeCreate } from "../inference/CreateRules.ts"
import { askerFor, mediaRefusals } from "../inference/SampleUploads.ts"
import { isObject } from "../kernel/Json.ts"
import { now } from "../kernel/Now.ts"
import type { ModelCatalog } from "../models/ModelCatalog.ts"
import { decodeHostedPlan, insertHosted, planHosted } from "../runs/HostedRuns.ts"
import { memoryProviderOf } from "../workspaces/WorkspaceSettings.ts"
import { withSample } from "./Accounting.ts"
import {
  assemble,
  type Count,
  compactable,
  defaultSummarizerInstructions,
  type HistoryBound,
  type HistoryTurn,
  type Material,
  type Message,
  type Role,
  type Slot,
  summaryRequest
} from "./Assembly.ts"
import { engineOf } from "./Engine.ts"
import { levelOf } from "./Standing.ts"
import { chainOf } from "./Timeline.ts"

/** Whose prompt: the answering agent, and the speaker whose human's persona and user/ memory it reads. */
export interface Parties {
  readonly answererId: bigint
  readonly speakerId: bigint
}

/** The loaded material, and the memory paths it included. */
export interface LoadedMaterial extends Material {
  readonly memoryPaths: ReadonlyArray<string>
}

type Catalog = ModelCatalog["Service"]

/** A model's counter: its provider's tokenizer over text messages (0 when the model has no provider). */
export const counterFor =
  (catalog: Catalog, ref: string): Count =>
  (messages) => {
    const model = catalog.find(ref)
    if (model === undefined || messages.length === 0) return Effect.succeed(0)
    return catalog.providerFor(ref).pipe(
      Effect.flatMap((provider) =>
        provider.countInput({
          workload: "text_generation",
          modelRef: ref,
          upstreamModel: model.upstream_model,
          messages: messages.map((message) => ({
            role: message.role,
            content: [{ type: "text", text: message.content }]
          })),
          tools: [],
          reasoning: { enabled: false, effort: null },
          attempt: 1,
          earlierAttemptsOnModel: 0
        })
      ),
      Effect.map((counted) => counted.tokens),
      Effect.orElseSucceed(() => 0)
    )
  }

/** The model serves text generation in the catalog. */
export const servesText = (catalog: Catalog, ref: string | null | undefined): ref is string =>
  typeof ref === "string" && (catalog.find(ref)?.workloads.includes("text_generation") ?? false)

/** A turn's compaction policy, as its answerer declared it (null: none declared). */
export const compactionPolicyOf = (configuration: unknown) => {
  const policy = renderConfiguration(configuration).compaction_policy as unknown
  return isObject(policy)
    ? {
        mode: typeof policy.mode === "string" ? policy.mode : "kernel",
        model: typeof policy.model === "string" ? policy.model : null
      }
    : null
}

/** The history bound an input (or an estimate) states. */
export const historyBoundOf = (history: unknown): HistoryBound => {
  if (!isObject(history)) return {}
  const number = (value: unknown) => (typeof value === "number" ? value : null)
  return { max_entries: number(history.max_entries), token_budget_share: number(history.token_budget_share) }
}

const statesBound = (bound: HistoryBound) => bound.max_entries != null || bound.token_budget_share != null

const macroPattern = /\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}/g

const rendered = (text: string, values: Readonly<Record<string, string>>) =>
  text.replace(macroPattern, (whole, name: string) => values[name] ?? whole)

/**
 * Every settled visible turn of the conversation's timeline, with its active candidate's text; the
 * turn answering input `answering` (the input, never its own history, whatever its status) left out.
 */
export const historyTurns = (conversation: ConversationRow, answering?: string) =>
  Effect.gen(function* () {
    const conversations = yield* ConversationsRepository.make
    const chain = yield* chainOf(conversations, conversation)
    const turns = (yield* conversations.historyOf(chain)).filter(
      (turn) => answering === undefined || turn.input_public_id !== answering
    )
    const variants = yield* conversations.variantsOf(turns.map((turn) => turn.id))
    const byId = new Map(variants.map((variant) => [variant.public_id, variant]))
    return turns.map(
      (turn): HistoryTurn => ({
        kind: turn.kind,
        role: turn.role,
        status: turn.status,
        promptText: turn.prompt_text,
        content: turn.active_variant_public_id === null ? "" : (byId.get(turn.active_variant_public_id)?.content ?? "")
      })
    )
  })

const defaultScopes = ["conversation", "workspace", "user"]

/**
 * The memory block: the documents the conversation's memory_context binds (skills aside), by path;
 * none while the workspace's svc.memory is overridden (a tool provider serves its memory).
 */
const memoryOf = (conversation: ConversationRow, humanId: bigint, answererId: bigint) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient
    const [workspace] = yield* sql<{ tool_provider_overrides: unknown }>`
      SELECT tool_provider_overrides FROM workspaces WHERE id = ${conversation.workspace_id}`
    if (memoryProviderOf(workspace?.tool_provider_overrides) !== undefined) return { text: null, paths: [] }
    const context = conversation.memory_context
    const scopes =
      isObject(context) && Array.isArray(context.bindings)
        ? context.bindings.flatMap((binding: unknown) =>
            isObject(binding) && typeof binding.scope === "string" ? [binding.scope] : []
          )
        : defaultScopes
    const anchors = [...new Set(scopes)].flatMap((scope): Array<Anchor> => {
      switch (scope) {
        case "conversation":
          return [{ kind: "conversation", id: conversation.id }]
        case "workspace":
          return [{ kind: "workspace", id: conversation.workspace_id }]
        case "user":
          return [{ kind: "user", id: humanId }]
        case "agent":
          return [{ kind: "agent", id: answererId }]
        default:
          return []
      }
    })
    if (anchors.length === 0) return { text: null, paths: [] }
    const documents = (yield* (yield* MemoryRepository.make).documentTexts(anchors, undefined)).filter(
      (document) => document.path.split("/")[1] !== "skills"
    )
    return {
      text:
        documents.length === 0
          ? null
          : `Memory:\n\n${documents.map((document) => `${document.path}\n${document.content}`).join("\n\n")}`,
      paths: documents.map((document) => document.path)
    }
  })

/**
 * The built-in order's slots (system_prompt, character, persona) for an answerer speaking in a
 * workspace to a human, macros rendered; `kind` names where it speaks (conversation_kind).
 */
export const promptSlots = (
  where: { readonly workspaceId: bigint; readonly kind: string },
  answererId: bigint,
  humanId: bigint
) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient
    const conversations = yield* ConversationsRepository.make
    const documents = yield* PromptDocumentsRepository.make
    const named = yield* NamedAgentsRepository.make
    const people = yield* conversations.speakers([answererId, humanId])
    const answerer = people.find((person) => person.id === answererId)
    const human = people.find((person) => person.id === humanId)
    const [workspace] = yield* sql<{ name: string }>`SELECT name FROM workspaces WHERE id = ${where.workspaceId}`
    const macros: Record<string, string> = {
      agent: answerer?.display_name ?? "",
      user: human?.display_name ?? "",
      workspace: workspace?.name ?? "",
      date: (yield* now).toISOString().slice(0, 10),
      conversation_kind: where.kind
    }
    const document = (host: Host, slot: string) =>
      Effect.map(documents.findDocument(host, slot), (row) =>
        row === undefined ? undefined : { role: row.role as Role, text: row.content }
      )
    const definition = yield* named.findByUserId(answererId)
    const found: Array<readonly [Slot["name"], { role: Role; text: string } | undefined]> = [
      [
        "system_prompt",
        definition?.system_prompt
          ? { role: "system", text: definition.system_prompt }
          : yield* document({ kind: "user", id: answererId }, "system_prompt")
      ],
      ["character", yield* document({ kind: "workspace", id: where.workspaceId }, "character")],
      ["persona", yield* document({ kind: "user", id: humanId }, "persona")]
    ]
    return found.flatMap(
      ([name, slot]): Array<Slot> =>
        slot === undefined ? [] : [{ name, role: slot.role, text: rendered(slot.text, macros) }]
    )
  })

/** The material of a prompt for `parties`, `input` its last user text (`answering`: the input's public id). */
export const loadMaterial = (
  conversation: ConversationRow,
  parties: Parties,
  input: string | null,
  answering?: string
) =>
  Effect.gen(function* () {
    const conversations = yield* ConversationsRepository.make
    const people = yield* conversations.speakers([parties.speakerId])
    const speaker = people.find((person) => person.id === parties.speakerId)
    const humanId = speaker === undefined ? conversation.creator_id : (speaker.steward_id ?? speaker.id)
    const slots = yield* promptSlots(
      {
        workspaceId: conversation.workspace_id,
        kind: conversation.side ? "side" : conversation.parent_id === null ? "conversation" : "child"
      },
      parties.answererId,
      humanId
    )
    const memory = yield* memoryOf(conversation, humanId, parties.answererId)
    return {
      slots,
      memory: memory.text,
      memoryPaths: memory.paths,
      history: yield* historyTurns(conversation, answering),
      input
    } satisfies LoadedMaterial
  })

/** The summarizer's instructions: the answerer's summarizer prompt document, else the built-in ones. */
export const summarizerInstructions = (answererId: bigint) =>
  Effect.flatMap(PromptDocumentsRepository.make, (documents) =>
    Effect.map(
      documents.findDocument({ kind: "user", id: answererId }, "summarizer"),
      (row) => row?.content ?? defaultSummarizerInstructions
    )
  )

/** An input's attachments, as stored on its members: the uploads' public ids, in order. */
const attachmentIdsOf = (members: Readonly<Record<string, unknown>>) =>
  Array.isArray(members.attachments)
    ? members.attachments.flatMap((attachment: unknown) =>
        isObject(attachment) && typeof attachment.public_id === "string" ? [attachment.public_id] : []
      )
    : []

/**
 * The prompt with the input's attachments as upload parts after its text, on the last user
 * message (an input without text: a user message of upload parts alone, after the history).
 */
const withAttachments = (messages: ReadonlyArray<Message>, uploads: ReadonlyArray<string>, hasText: boolean) => {
  const out: Array<InputMessage> = [...messages]
  if (uploads.length === 0) return out
  const parts = uploads.map((upload_public_id) => ({ type: "upload", upload_public_id }))
  const last = messages.at(-1)
  if (hasText && last?.role === "user") {
    out[out.length - 1] = { role: "user", content: [{ type: "text", text: last.content }, ...parts] }
  } else out.push({ role: "user", content: parts })
  return out
}

/**
 * The reasoning controls of `asked` (an input's, a regeneration's or a candidate's model block)
 * that `model` takes: none for a model without reasoning, an effort only from its vocabulary (the
 * rest falls to the model's defaults, so a sample asked again of another model is never refused).
 */
const reasoningFor = (catalog: Catalog, model: string, asked: unknown) => {
  const reasoning = catalog.find(model)?.reasoning ?? null
  if (reasoning === null || !isObject(asked)) return {}
  const enabled = typeof asked.reasoning_enabled === "boolean" ? asked.reasoning_enabled : undefined
  const effort =
    typeof asked.reasoning_effort === "string" && reasoning.efforts.includes(asked.reasoning_effort)
      ? asked.reasoning_effort
      : undefined
  return {
    ...(enabled === undefined ? {} : { reasoning_enabled: enabled }),
    ...(effort === undefined ? {} : { reasoning_effort: effort })
  }
}

const textCall = (
  model: string,
  messages: ReadonlyArray<Message | InputMessage>,
  reasoning: { readonly reasoning_enabled?: boolean; readonly reasoning_effort?: string } = {}
): CreateMembers => ({
  workload: "text_generation",
  model: { model, ...reasoning },
  input: messages as ReadonlyArray<InputMessage>
})

export const makeConversationReplies = (catalog: Catalog): ConversationReplies => {
  /** A reply's prompt for its input: material assembled under the input's history bound. */
  const assembleReply = (conversation: ConversationRow, inputId: string, model: string) =>
    Effect.gen(function* () {
      const conversations = yield* ConversationsRepository.make
      const input = yield* conversations.findInput(inputId)
      const parties: Parties = {
        answererId: input?.answerer_id ?? conversation.answerer_id,
        speakerId: input?.speaker_id ?? conversation.creator_id
      }
      const members = isObject(input?.members) ? input.members : {}
      const material = yield* loadMaterial(conversation, parties, input?.text ?? null, inputId)
      const bound = historyBoundOf(members.history)
      const limit = catalog.find(model)?.context_window ?? 0
      const assembled = yield* assemble(material, bound, limit, counterFor(catalog, model))
      return {
        assembled,
        material,
        bound,
        limit,
        parties,
        rawMode: members.context_mode === "raw",
        reasoning: reasoningFor(catalog, model, members.model),
        attachments: attachmentIdsOf(members),
        authorId: input?.author_id ?? conversation.creator_id
      }
    })

  /**
   * A direct reply's head at its wall: the rest alone over the limit blocks; history to cut with
   * no stated bound is cut oldest-first (policy off), blocks (raw), or is summarized first.
   */
  /**
   * Whether the head's author may still ask for it: an active user with full level on the
   * conversation (access replaced since, or the author removed, blocks it author_not_authorized).
   */
  const authorMayStill = (
    conversations: ConversationsRepository["Service"],
    conversation: ConversationRow,
    inputId: string
  ) =>
    Effect.gen(function* () {
      const input = yield* conversations.findInput(inputId)
      if (input === undefined) return true
      const [author] = yield* conversations.speakers([input.author_id])
      if (author === undefined || author.status !== "active") return false
      return levelOf(conversation, { user: author }) === "full"
    })

  /** A servable head: a direct reply is ready; a run-backed one carries its compiled plan (or blocks). */
  const readyFor = (
    conversations: ConversationsRepository["Service"],
    conversation: ConversationRow,
    inputId: string,
    model: string
  ) =>
    Effect.gen(function* () {
      const input = yield* conversations.findInput(inputId)
      const answererId = input?.answerer_id ?? conversation.answerer_id
      const [answerer] = yield* conversations.speakers([answererId])
      if (input === undefined || answerer === undefined || engineOf(answerer) === "direct") return "ready" as const
      const plan = yield* planHosted(catalog, conversation, input, answerer, model)
      return typeof plan === "string" ? (plan satisfies BlockedReason) : { plan }
    })

  const judge = (conversationId: string, inputId: string, model: string) =>
    Effect.gen(function* () {
      const conversations = yield* ConversationsRepository.make
      const conversation = yield* conversations.findConversation(conversationId)
      if (conversation === undefined || !servesText(catalog, model)) return "unknown_model" as BlockedReason
      if (!(yield* authorMayStill(conversations, conversation, inputId))) {
        return "author_not_authorized" satisfies BlockedReason
      }
      const input = yield* conversations.findInput(inputId)
      if (input !== undefined && (yield* refused(input.author_id, yield* now))) {
        return "budget_exhausted" satisfies BlockedReason
      }
      const { assembled, material, bound, limit, parties, rawMode } = yield* assembleReply(conversation, inputId, model)
      if (assembled.restTokens > limit) return "estimated_input_exceeds_model_limit" satisfies BlockedReason
      if (statesBound(bound) || assembled.history.skipped_reason !== "budget_exceeded") {
        return yield* readyFor(conversations, conversation, inputId, model)
      }
      const [answerer] = yield* conversations.speakers([parties.answererId])
      const policy = compactionPolicyOf(answerer?.configuration)
      if (policy?.mode === "off") return yield* readyFor(conversations, conversation, inputId, model)
      if (rawMode && policy?.mode !== "delegate") return "compaction_unavailable_under_raw" satisfies BlockedReason
      const newest = material.history.at(-1)
      const failedSummary = newest?.kind === "compaction_summary" && newest.status !== "completed"
      if (failedSummary || !compactable(material.history)) {
        return yield* readyFor(conversations, conversation, inputId, model)
      }
      const summarizer = [policy?.model, conversation.last_reply_model].find((ref) => servesText(catalog, ref)) ?? model
      return {
        compact: { turnId: newPublicId(), variantId: newPublicId(), requestId: newPublicId(), model: summarizer }
      } satisfies WallCompaction
    })

  /** A summary's request: the answerer's summarizer reading the transcript, trimmed oldest-first to fit. */
  const summaryMessages = (conversation: ConversationRow, model: string) =>
    Effect.gen(function* () {
      const instructions = yield* summarizerInstructions(conversation.answerer_id)
      const turns = yield* historyTurns(conversation)
      const limit = catalog.find(model)?.context_window ?? 0
      return yield* summaryRequest(instructions, turns, limit, counterFor(catalog, model))
    })

  /** A variant's (or a refused request's) effective model block on `model`. */
  const modelBlockOf = (model: string, asked?: unknown) => {
    const found = catalog.find(model)
    const reasoning = found?.reasoning ?? null
    const chosen = reasoningFor(catalog, model, asked)
    return {
      provider_id: found?.provider ?? model.split("/")[0] ?? "",
      model_ref: model,
      reasoning_enabled: reasoning === null ? false : (chosen.reasoning_enabled ?? reasoning.default_enabled),
      reasoning_effort: reasoning === null ? null : (chosen.reasoning_effort ?? reasoning.default_effort)
    }
  }

  /** A sample's members, and whose uploads they may name (a reply's: its input's author). */
  const membersOf = (request: SampleRequest) =>
    Effect.gen(function* () {
      const { from } = request
      const creator = request.conversation.creator_id
      if ("input" in from) {
        const { assembled, reasoning, attachments, authorId, material } = yield* assembleReply(
          request.conversation,
          from.input,
          request.model
        )
        const messages = withAttachments(assembled.messages, attachments, (material.input ?? "") !== "")
        return { members: textCall(request.model, messages, reasoning), owner: authorId }
      }
      if ("summary" in from) {
        return {
          members: textCall(request.model, yield* summaryMessages(request.conversation, request.model)),
          owner: creator
        }
      }
      const requests = yield* InferenceRequestsRepository.make
      return yield* resealed(catalog, requests, from.sealedBy, request.model, from.overrides, creator)
    })

  return {
    judge: (conversationId, params) => judge(conversationId, params.inputId, params.model),
    seal: (request: SampleRequest) =>
      Effect.gen(function* () {
        const requests = yield* InferenceRequestsRepository.make
        const { members, owner } = yield* membersOf(request)
        // Uploads the model cannot take (or too large, or gone since) refuse the sample, not the step.
        const judged = yield* judgeCreate(catalog, members, yield* askerFor(owner), false).pipe(
          Effect.catchIf(
            (refusal) => refusal._tag === "Invalid" && mediaRefusals.includes(refusal.code),
            (refusal) => Effect.succeed(refusal.code)
          ),
          Effect.orDie
        )
        const refused = typeof judged === "string"
        const conversations = yield* ConversationsRepository.make
        const input = "input" in request.from ? yield* conversations.findInput(request.from.input) : undefined
        const at = yield* now
        const inserted = yield* requests.insertRequest({
          publicId: request.requestId,
          workspaceId: request.conversation.workspace_id,
          creatorId: request.conversation.creator_id,
          workload: refused ? "text_generation" : judged.workload,
          modelJson: JSON.stringify(refused ? modelBlockOf(request.model) : judged.model),
          requestJson: JSON.stringify({
            ...(refused ? {} : judged.stored),
            members,
            uploads_owner: String(owner)
          }),
          billingSubject: request.conversation.billing_subject,
          usageSummaryJson: JSON.stringify(emptyUsageSummary(yield* accountCostUnit)),
          askedByConversationId: request.conversation.id,
          now: at
        })
        // The payer: the input's author; a regeneration's or a summary's, the conversation's creator.
        yield* recordPayer(inserted.id, input?.author_id ?? request.conversation.creator_id, at)
        if (refused) {
          return {
            publicId: request.requestId,
            routes: [{ model: request.model, skip: null }],
            timeoutMs: defaultTimeoutMs,
            refusal: judged
          }
        }
        const uploads = yield* UploadsRepository.make
        for (const upload of judged.uploads) yield* uploads.addNaming(upload.id, uploadNamingKind, inserted.id)
        return { publicId: request.requestId, routes: judged.routes, timeoutMs: judged.timeoutMs }
      }),
    prompt: (conversation, inputId, model) =>
      Effect.map(assembleReply(conversation, inputId, model), ({ assembled, attachments, material }) =>
        withAttachments(assembled.messages, attachments, (material.input ?? "") !== "")
      ),
    openRun: (conversation, plan, ids) =>
      Effect.gen(function* () {
        const [answerer] = yield* (yield* ConversationsRepository.make).speakers([ids.answererId])
        return yield* insertHosted(conversation, decodeHostedPlan(plan), {
          ...ids,
          answererConfiguration: answerer?.configuration
        })
      }),
    modelBlock: (model, asked) => modelBlockOf(model, asked),
    account: (conversation, sample) =>
      Effect.map(
        Effect.flatMap(InferenceRequestsRepository.make, (requests) => requests.findRequest(sample.requestId)),
        (request) =>
          request === undefined
            ? undefined
            : withSample(catalog, conversation, request.usage_summary, sample.usage, sample.model)
      )
  }
}

/**
 * A sealed request's members asked again of `model`, with a regeneration's overrides (its model
 * block's reasoning controls, else the sealed ones, as far as `model` takes them).
 */
const resealed = (
  catalog: Catalog,
  requests: InferenceRequestsRepository["Service"],
  sealedBy: string,
  model: string,
  overrides: Readonly<Record<string, unknown>>,
  creator: bigint
) =>
  Effect.gen(function* () {
    const sealed = yield* requests.findRequest(sealedBy)
    const stored = (sealed?.request ?? {}) as {
      readonly members?: CreateMembers
      readonly uploads_owner?: string
    }
    const members = stored.members ?? textCall(model, [])
    return {
      members: {
        ...members,
        model: { model, ...reasoningFor(catalog, model, overrides.model ?? members.model) },
        ...(overrides.configuration === undefined
          ? {}
          : { configuration: overrides.configuration as CreateMembers["configuration"] })
      } satisfies CreateMembers,
      // Its uploads stay the answered input's author's (a request sealed before owners were kept: the creator's).
      owner: typeof stored.uploads_owner === "string" ? BigInt(stored.uploads_owner) : creator
    }
  })
