// What a run's create shell asks of the rows about its creator (runs supplement "Shell"): the
// speakers it controls (itself; an agent, its steward too) and whether it owns the billing subject
// (no run of the account gave it yet, or the creator's first did). Loaded before the shell is judged.
import { isUuid } from "@troupe/storage/Ids"
import { ConversationsRepository } from "@troupe/storage/repositories/Conversations"
import { RunsRepository } from "@troupe/storage/repositories/Runs"
import { Effect } from "effect"
import type { Caller } from "../accounts/Caller.ts"

export const creatorLookups = Effect.fnUntraced(function* (caller: Caller, body: Readonly<Record<string, unknown>>) {
  const runs = yield* RunsRepository
  const accountId = caller.user.accountId
  /** Public id → row id of each speaker the creator may name. */
  const speakers = new Map<string, bigint>([[caller.user.publicId, caller.user.id]])
  const named = body.speaker_public_id
  if (caller.user.kind === "agent" && typeof named === "string" && isUuid(named)) {
    const people = yield* ConversationsRepository.make
    const found = yield* people.principal({ accountId, publicId: named, handle: null })
    if (found !== undefined && found.id === caller.human.id) speakers.set(named, found.id)
  }
  const subject = body.billing_subject
  const owner = typeof subject === "string" ? yield* runs.billingSubjectOwner({ accountId, subject }) : undefined
  return {
    speakers,
    controlsSpeaker: (publicId: string) => speakers.has(publicId),
    ownsBillingSubject: () => owner === undefined || owner.creator_id === caller.user.id
  }
})
