// The default runner and memory_context doors of Member: conversations (PUT .../default_runner,
// POST .../memory_context): members decoded by the contract, the change made by the domain's
// ConversationSettings; both answer 200 {conversation} (the full view).
import { CurrentMemberCaller } from "@troupe/contracts/member/Caller"
import type { DefaultRunnerMembers, SetMemoryContextBody } from "@troupe/contracts/member/Conversations"
import { ConversationSettings } from "@troupe/domain/conversations/Settings"
import { Effect } from "effect"
import { answerRefusals } from "../conventions/DomainRefusals.ts"

interface At {
  readonly workspace_id: string
  readonly conversation_id: string
}

export const handleSetDefaultRunner = ({
  params,
  payload
}: {
  readonly params: At
  readonly payload: DefaultRunnerMembers
}) =>
  Effect.gen(function* () {
    const settings = yield* ConversationSettings
    const caller = yield* CurrentMemberCaller
    const conversation = yield* settings.setDefaultRunner(
      caller,
      params.workspace_id,
      params.conversation_id,
      payload.executor_public_id
    )
    return { conversation }
  }).pipe(answerRefusals)

export const handleSetMemoryContext = ({
  params,
  payload
}: {
  readonly params: At
  readonly payload: SetMemoryContextBody
}) =>
  Effect.gen(function* () {
    const settings = yield* ConversationSettings
    const caller = yield* CurrentMemberCaller
    const conversation = yield* settings.setMemoryContext(
      caller,
      params.workspace_id,
      params.conversation_id,
      payload.memory_context
    )
    return { conversation }
  }).pipe(answerRefusals)
