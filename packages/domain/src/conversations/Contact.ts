// The contact rule (spec "Workspace" messaging policy; supplement "Access, default runner,
// messaging, memory, store"): an agent author addressing agent X, where the workspace's policy
// entry for X is private and does not list the author, is refused 422 answerer_not_eligible.
// Self-contact passes, a public entry (or none) ignores its list, and human authors are exempt.
// Called where an agent is addressed: a conversation's create naming its answerer (reading the
// two people), an input's addressee (its answering_user_public_id, else the stored answerer; on
// the people its acceptance already read).
import { ConversationsRepository, type SpeakerRow } from "@troupe/storage/repositories/Conversations"
import type { MessagingEntry } from "@troupe/storage/repositories/Workspaces"
import { Effect } from "effect"
import type { Caller } from "../accounts/Caller.ts"
import { Invalid } from "../kernel/Refusals.ts"

/** Whether the policy refuses `authorPublicId` contacting the agent `agentPublicId`. */
export const contactRefused = (
  messaging: ReadonlyArray<MessagingEntry>,
  authorPublicId: string,
  agentPublicId: string
) => {
  const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase()
  if (same(authorPublicId, agentPublicId)) return false
  const entry = messaging.find((each) => same(each.agent_public_id, agentPublicId))
  return entry?.mode === "private" && !entry.allowed_sender_public_ids.some((sender) => same(sender, authorPublicId))
}

const refusal = () =>
  new Invalid({
    code: "answerer_not_eligible",
    message: "That agent's messaging policy in this workspace does not let you contact it"
  })

/**
 * The rule on rows already read: fails 422 answerer_not_eligible when `author` (the caller), an
 * agent, may not contact `agent` under `workspace`'s messaging policy; succeeds for human authors,
 * self-contact and non-agents.
 */
export const contactRefusalOf = (
  workspace: { readonly messaging: ReadonlyArray<MessagingEntry> },
  author: Pick<SpeakerRow, "id" | "public_id" | "kind">,
  agent: Pick<SpeakerRow, "id" | "public_id" | "kind">
) =>
  author.kind === "agent" &&
  author.id !== agent.id &&
  agent.kind === "agent" &&
  contactRefused(workspace.messaging, author.public_id, agent.public_id)
    ? Effect.fail(refusal())
    : Effect.void

/**
 * Fails 422 answerer_not_eligible when the caller, an agent, may not contact the agent `agentUserId`
 * (users.id) under `workspace`'s messaging policy; succeeds for humans, self-contact and non-agents.
 */
export const contactRefusal = (
  caller: Caller,
  workspace: { readonly messaging: ReadonlyArray<MessagingEntry> },
  agentUserId: bigint
) =>
  Effect.gen(function* () {
    if (caller.user.kind !== "agent" || caller.user.id === agentUserId) return
    const people = yield* (yield* ConversationsRepository).speakers([caller.user.id, agentUserId])
    const author = people.find((person) => person.id === caller.user.id)
    const agent = people.find((person) => person.id === agentUserId)
    if (author === undefined || agent === undefined) return
    yield* contactRefusalOf(workspace, author, agent)
  })
