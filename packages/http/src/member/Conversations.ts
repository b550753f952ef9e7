// Handlers of Member: conversations. Bodies arrive decoded by the contract's schemas; the domain
// judges standing and the conversation's actor its state. Fork, default runner and memory_context
// have their own modules (their rules are their features').
import { TroupeApi } from "@troupe/contracts/Api"
import { errors } from "@troupe/contracts/Errors"
import { CurrentMemberCaller, type MemberCaller } from "@troupe/contracts/member/Caller"
import { Conversations, type ListQuery, type Page } from "@troupe/domain/conversations/Conversations"
import type { ConversationSummaryView, ConversationView } from "@troupe/domain/conversations/Views"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { answerRefusals } from "../conventions/DomainRefusals.ts"
import { handleFork } from "./ConversationForks.ts"
import { handleSetDefaultRunner, handleSetMemoryContext } from "./ConversationSettings.ts"

const one = (conversation: ConversationView) => ({ conversation })
const page = (found: Page<ConversationSummaryView>) => ({
  conversations: found.items,
  pagination: { next_after: found.nextAfter }
})

/** The feed page size: default 100, 1 to 200. */
export const feedLimit = (limit: string | undefined) =>
  limit === undefined
    ? Effect.succeed(100)
    : /^\d{1,3}$/.test(limit) && Number(limit) >= 1 && Number(limit) <= 200
      ? Effect.succeed(Number(limit))
      : errors.parameterInvalid("limit must be an integer from 1 to 200")

export const ConversationsHandlers = HttpApiBuilder.group(
  TroupeApi,
  "conversations",
  Effect.fn(function* (handlers) {
    const conversations = yield* Conversations
    const command = <A, E>(run: (caller: MemberCaller) => Effect.Effect<A, E>) =>
      Effect.flatMap(CurrentMemberCaller, run)
    const list = (
      workspaceId: string | null,
      scope: "roots" | "archived" | "children",
      query: ListQuery,
      parent?: string
    ) =>
      command((caller) => conversations.list(caller, workspaceId, scope, query, parent)).pipe(
        Effect.map(page),
        answerRefusals
      )

    return handlers
      .handle("listRoots", ({ query }) => list(null, "roots", query))
      .handle("list", ({ params, query }) => list(params.workspace_id, "roots", query))
      .handle("archived", ({ params, query }) => list(params.workspace_id, "archived", query))
      .handle("children", ({ params, query }) => list(params.workspace_id, "children", query, params.conversation_id))
      .handle("show", ({ params }) =>
        command((caller) => conversations.read(caller, params.workspace_id, params.conversation_id)).pipe(
          Effect.map(one),
          answerRefusals
        )
      )
      .handle("create", ({ params, payload }) =>
        command((caller) => conversations.create(caller, params.workspace_id, payload)).pipe(
          Effect.map(one),
          answerRefusals
        )
      )
      .handle("update", ({ params, payload }) =>
        Effect.gen(function* () {
          if (payload.title === undefined && payload.metadata === undefined) {
            return yield* errors.of("parameter_missing", "give title or metadata")
          }
          return one(
            yield* conversations.update(
              yield* CurrentMemberCaller,
              params.workspace_id,
              params.conversation_id,
              payload
            )
          )
        }).pipe(answerRefusals)
      )
      .handle("remove", ({ params }) =>
        command((caller) =>
          conversations.lifecycle(caller, params.workspace_id, params.conversation_id, "tombstone")
        ).pipe(Effect.asVoid, answerRefusals)
      )
      .handle("archive", ({ params }) =>
        command((caller) =>
          conversations.lifecycle(caller, params.workspace_id, params.conversation_id, "archive")
        ).pipe(Effect.map(one), answerRefusals)
      )
      .handle("unarchive", ({ params }) =>
        command((caller) =>
          conversations.lifecycle(caller, params.workspace_id, params.conversation_id, "unarchive")
        ).pipe(Effect.map(one), answerRefusals)
      )
      .handle("replaceAccess", ({ params, payload }) =>
        command((caller) =>
          conversations.replaceAccess(caller, params.workspace_id, params.conversation_id, payload)
        ).pipe(Effect.map(one), answerRefusals)
      )
      .handle("setDefaultRunner", handleSetDefaultRunner)
      .handle("setMemoryContext", handleSetMemoryContext)
      .handle("fork", handleFork)
      .handle("events", ({ params, query }) =>
        Effect.gen(function* () {
          const limit = yield* feedLimit(query.limit)
          const found = yield* conversations.events(
            yield* CurrentMemberCaller,
            params.workspace_id,
            params.conversation_id,
            query.after,
            limit
          )
          return { events: found.items, pagination: found.pagination }
        }).pipe(answerRefusals)
      )
  })
)
