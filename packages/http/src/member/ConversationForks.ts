// The fork door (POST .../conversations/{id}/forks): the fork's members decoded by the contract,
// the fork made by the domain; 201 {conversation}. A replay is the idempotency middleware's.
import { CurrentMemberCaller } from "@troupe/contracts/member/Caller"
import type { ForkMembers } from "@troupe/contracts/member/Conversations"
import { ConversationForks } from "@troupe/domain/conversations/Forks"
import { Effect } from "effect"
import { answerRefusals } from "../conventions/DomainRefusals.ts"

export const handleFork = ({
  params,
  payload
}: {
  readonly params: { readonly workspace_id: string; readonly conversation_id: string }
  readonly payload: ForkMembers
}) =>
  Effect.gen(function* () {
    const forks = yield* ConversationForks
    const caller = yield* CurrentMemberCaller
    const conversation = yield* forks.fork(caller, params.workspace_id, params.conversation_id, payload)
    return { conversation }
  }).pipe(answerRefusals)
