// How a conversation's direct replies are asked (supplement "Assembly, estimate, compaction"): the
// prompt assembled from the history (settled visible turns, a reply
// as its prompt then its content, adjacent same-role messages merged, oldest cut first to fit the
// model's window) and the input; judged against the window before the turn opens; sealed as an
// inference request the conversation's actor starts, told to reply to it.
import type { ConversationReplies, SampleRequest } from "@troupe/actors/bindings/conversation"
import type { BlockedReason } from "@troupe/machines/conversation/context"
import { type ConversationRow, ConversationsRepository } from "@troupe/storage/repositories/Conversations"
import { InferenceRequestsRepository } from "@troupe/storage/repositories/InferenceRequests"
import { Effect } from "effect"
import { emptyUsageSummary, makeInferenceAttempts } from "../inference/Attempts.ts"
import { type CreateMembers, type InputMessage, judgeCreate } from "../inference/CreateRules.ts"
import type { ModelCatalog } from "../models/ModelCatalog.ts"
import { chainOf } from "./Timeline.ts"

type Message = { readonly role: string; readonly content: string }

/** Adjacent messages of one role become one, their texts joined by a blank line. */
export const merged = (messages: ReadonlyArray<Message>): Array<Message> => {
  const out: Array<Message> = []
  for (const message of messages) {
    const last = out.at(-1)
    if (last !== undefined && last.role === message.role) {
      out[out.length - 1] = { role: last.role, content: `${last.content}\n\n${message.content}` }
    } else out.push(message)
  }
  return out
}

/** The history's messages, oldest first, from the settled visible turns and their active variants. */
const historyMessages = (conversation: ConversationRow) =>
  Effect.gen(function* () {
    const conversations = yield* ConversationsRepository.make
    const chain = yield* chainOf(conversations, conversation)
    const turns = yield* conversations.historyOf(chain)
    const variants = yield* conversations.variantsOf(turns.map((turn) => turn.id))
    const active = new Map(variants.map((variant) => [variant.public_id, variant]))
    const messages: Array<Message> = []
    for (const turn of turns) {
      const content =
        turn.active_variant_public_id === null ? "" : (active.get(turn.active_variant_public_id)?.content ?? "")
      if (turn.kind === "direct_reply") {
        if (turn.prompt_text !== null && turn.prompt_text !== "")
          messages.push({ role: "user", content: turn.prompt_text })
        if (content !== "") messages.push({ role: "assistant", content })
      } else if (turn.kind === "compaction_summary") messages.push({ role: "user", content })
      else if (content !== "") messages.push({ role: turn.role, content })
    }
    return messages
  })

const asker = (conversation: ConversationRow) => ({
  userId: conversation.creator_id,
  find: () => Effect.undefined,
  standingFallbacks: []
})

const textCall = (model: string, messages: ReadonlyArray<Message>): CreateMembers => ({
  workload: "text_generation",
  model: { model },
  input: messages as ReadonlyArray<InputMessage>
})

export const makeConversationReplies = (catalog: ModelCatalog["Service"]): ConversationReplies => {
  const attempts = makeInferenceAttempts(catalog, () => "")

  /** The prompt of a reply to `inputId`: system, history cut oldest-first to fit, then the input. */
  const assemble = (conversation: ConversationRow, inputId: string, model: string) =>
    Effect.gen(function* () {
      const conversations = yield* ConversationsRepository.make
      const input = yield* conversations.findInput(inputId)
      const tail = input === undefined || input.text === "" ? [] : [{ role: "user", content: input.text }]
      let history = yield* historyMessages(conversation)
      for (;;) {
        const messages = merged([...history, ...tail])
        const judged = yield* Effect.result(judgeCreate(catalog, textCall(model, messages), asker(conversation)))
        if (judged._tag === "Success" || history.length === 0) return { messages, judged }
        history = history.slice(1)
      }
    })

  return {
    judge: (conversationId, params) =>
      Effect.gen(function* () {
        const conversations = yield* ConversationsRepository.make
        const conversation = yield* conversations.findConversation(conversationId)
        if (conversation === undefined) return "unknown_model" as BlockedReason
        const { judged } = yield* assemble(conversation, params.inputId, params.model)
        if (judged._tag === "Success") return "ready" as const
        return (
          judged.failure.code === "input_over_model_limit" ? "estimated_input_exceeds_model_limit" : "unknown_model"
        ) satisfies BlockedReason
      }),
    seal: (request: SampleRequest) =>
      Effect.gen(function* () {
        const requests = yield* InferenceRequestsRepository.make
        const members =
          "input" in request.from
            ? textCall(
                request.model,
                (yield* assemble(request.conversation, request.from.input, request.model)).messages
              )
            : yield* resealed(requests, request.from.sealedBy, request.model, request.from.overrides)
        const judged = yield* judgeCreate(catalog, members, asker(request.conversation), false).pipe(Effect.orDie)
        yield* requests.insertRequest({
          publicId: request.requestId,
          workspaceId: request.conversation.workspace_id,
          creatorId: request.conversation.creator_id,
          workload: judged.workload,
          modelJson: JSON.stringify(judged.model),
          requestJson: JSON.stringify({ ...judged.stored, members }),
          billingSubject: request.conversation.billing_subject,
          usageSummaryJson: JSON.stringify(emptyUsageSummary()),
          askedByConversationId: request.conversation.id,
          now: new Date()
        })
        return { publicId: request.requestId, routes: judged.routes, timeoutMs: judged.timeoutMs }
      }),
    modelBlock: (model) => {
      const found = catalog.find(model)
      return {
        provider_id: found?.provider ?? model.split("/")[0] ?? "",
        model_ref: model,
        reasoning_enabled: false,
        reasoning_effort: null
      }
    },
    account: (conversation, usage, model) => {
      const found = catalog.find(model)
      const input = Number(usage.input_tokens ?? 0)
      const output = Number(usage.output_tokens ?? 0)
      const window = found?.context_window ?? 0
      return {
        usageSummary: attempts.addUsage(attempts.countAttempt(conversation.usage_summary), usage),
        context: {
          used_tokens: input + output,
          input_tokens: input,
          output_tokens: output,
          ...(usage.cache_read_tokens === undefined ? {} : { cache_read_tokens: usage.cache_read_tokens }),
          window_tokens: window,
          used_percent: window === 0 ? 0 : Math.round(((input + output) / window) * 10000) / 100,
          as_of_model: { provider_id: found?.provider ?? model.split("/")[0], model_ref: model }
        }
      }
    }
  }
}

/** A sealed request's members asked again of `model`, with a regeneration's overrides. */
const resealed = (
  requests: InferenceRequestsRepository["Service"],
  sealedBy: string,
  model: string,
  overrides: Readonly<Record<string, unknown>>
) =>
  Effect.gen(function* () {
    const sealed = yield* requests.findRequest(sealedBy)
    const stored = (sealed?.request ?? {}) as { readonly members?: CreateMembers }
    const members = stored.members ?? textCall(model, [])
    return {
      ...members,
      model: { ...members.model, model },
      ...(overrides.configuration === undefined
        ? {}
        : { configuration: overrides.configuration as CreateMembers["configuration"] })
    } satisfies CreateMembers
  })
