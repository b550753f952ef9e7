// Where a conversation's timeline is read from: its own turns, then its source's below the fork
// position, then that source's source, and so on (inherited prefixes are read by reference).
import type {
  ConversationRow,
  ConversationsRepository,
  TimelineChain
} from "@troupe/storage/repositories/Conversations"
import { Effect } from "effect"

export const chainOf = (conversations: ConversationsRepository["Service"], conversation: ConversationRow) =>
  Effect.gen(function* () {
    const conversationIds: Array<bigint> = [conversation.id]
    const below: Array<number | null> = [null]
    let current = conversation
    while (current.source_conversation_id !== null && current.forked_position !== null) {
      const bound = Math.min(current.forked_position, below.at(-1) ?? current.forked_position)
      const source = yield* conversations.findConversationById(current.source_conversation_id)
      if (source === undefined) break
      conversationIds.push(source.id)
      below.push(bound)
      current = source
    }
    return { conversationIds, below } satisfies TimelineChain
  })
