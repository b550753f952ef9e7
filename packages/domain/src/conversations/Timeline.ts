// Where a conversation's timeline is read from: its own turns, then its source's below the fork
// position, then that source's source, and so on (inherited prefixes are read by reference).
import type {
  ConversationRow,
  ConversationsRepository,
  TimelineChain
} from "@troupe/storage/repositories/Conversations"
import { Effect } from "effect"

/** The conversation alone when it is no fork (no statement), else its chain read in one statement. */
export const chainOf = (conversations: ConversationsRepository["Service"], conversation: ConversationRow) =>
  Effect.gen(function* () {
    if (conversation.source_conversation_id === null || conversation.forked_position === null) {
      return { conversationIds: [conversation.id], below: [null] } satisfies TimelineChain
    }
    const rows = yield* conversations.timelineChain(conversation.id)
    return {
      conversationIds: rows.map((row) => row.conversation_id),
      below: rows.map((row) => row.below)
    } satisfies TimelineChain
  })
