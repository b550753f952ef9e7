// A run's creator as the caller of the member doors its kernel calls go through (ConversationMail.ts,
// ConversationMemoryTools.ts): itself and the human whose access counts (callerOfUser); a creator
// no longer active cannot act (not_authorized), a workspace gone is not_found.
import { withRepositories } from "@troupe/storage/Repositories"
import { ConversationsRepository } from "@troupe/storage/repositories/Conversations"
import type { RunRow } from "@troupe/storage/repositories/Runs"
import { Effect } from "effect"
import { callerOfUser } from "../accounts/Caller.ts"
import { Conversations } from "../conversations/Conversations.ts"
import type { Refusal } from "./ToolArguments.ts"

const refusal = (code: string, message: string): Refusal => ({ code, message })

/** Made where the doors are built: the caller and creator row of a run. */
export const makeRunCaller = Effect.gen(function* () {
  const conversations = yield* Conversations
  const db = yield* withRepositories(ConversationsRepository)
  return (run: RunRow) =>
    Effect.gen(function* () {
      const creator = (yield* conversations.people([run.creator_id])).get(run.creator_id)
      if (creator === undefined || creator.status !== "active") {
        return yield* Effect.fail(refusal("not_authorized", "The run's creator cannot act here"))
      }
      const accountId = (yield* db(
        Effect.flatMap(ConversationsRepository, (repository) => repository.standingOf(run.workspace_public_id, null))
      ))?.workspace.account_id
      if (accountId === undefined) return yield* Effect.fail(refusal("not_found", "The run's workspace is gone"))
      return { caller: callerOfUser(creator, accountId), creator }
    })
})
