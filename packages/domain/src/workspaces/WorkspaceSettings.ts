// A workspace's settings beside its name and metadata (spec "Workspace"): the messaging policy
// and the tool provider overrides, judged whole before a replacement is written. Their shapes,
// sizes and namespaces are settled by the contract; what needs the database (that each agent is
// one of the account's, that a provider is eligible and complete) is judged here. The contact
// rule the policy states is applied where agents contact each other.
import { isUuid } from "@troupe/storage/Ids"
import { AccountsRepository } from "@troupe/storage/repositories/Accounts"
import { ExecutorsRepository } from "@troupe/storage/repositories/Executors"
import type * as Repo from "@troupe/storage/repositories/Workspaces"
import { Effect } from "effect"
import { Invalid } from "../kernel/Refusals.ts"

export const overridableNamespace = "svc.memory"

/** The tool provider serving a workspace's memory (its svc.memory override), if one does. */
export const memoryProviderOf = (overrides: unknown): string | undefined => {
  const provider =
    typeof overrides === "object" && overrides !== null
      ? (overrides as Readonly<Record<string, unknown>>)[overridableNamespace]
      : undefined
  return typeof provider === "string" ? provider : undefined
}
export const memoryVerbs = ["memory_read", "memory_write", "memory_edit", "memory_ls", "memory_grep", "memory_delete"]

/** A policy entry as the contract decoded it: public ids, each agent once, the defaults unfilled. */
export interface MessagingMembers {
  readonly agent_public_id: string
  readonly mode?: Repo.MessagingEntry["mode"]
  readonly allowed_sender_public_ids?: ReadonlyArray<string>
}

/** The stored policy for `agents`: each entry an agent of the account, mode public and no senders by default. */
export const messagingEntries = (row: Repo.WorkspaceRow, agents: ReadonlyArray<MessagingMembers>) =>
  Effect.flatMap(AccountsRepository, (accounts) =>
    Effect.forEach(agents, (entry, index) =>
      Effect.gen(function* () {
        const agent = yield* accounts.findUserByPublicId(entry.agent_public_id)
        if (agent?.kind !== "agent" || agent.account_id !== row.account_id) {
          return yield* new Invalid({
            code: "principal_unknown",
            message: `messaging.agents[${index}].agent_public_id names no agent`
          })
        }
        return {
          agent_public_id: entry.agent_public_id,
          mode: entry.mode ?? "public",
          allowed_sender_public_ids: [...new Set(entry.allowed_sender_public_ids)]
        } satisfies Repo.MessagingEntry
      })
    )
  )

/**
 * The stored overrides for `overrides`, whose namespaces the contract has judged (reserved ones,
 * then any but svc.memory): each provider's eligibility, then its completeness against its
 * announcement, in the spec's order.
 */
export const providerOverrides = (row: Repo.WorkspaceRow, overrides: Readonly<Record<string, unknown>>) =>
  Effect.gen(function* () {
    const executors = yield* ExecutorsRepository
    const resolved: Record<string, string> = {}
    for (const [namespace, providerId] of Object.entries(overrides)) {
      const provider =
        typeof providerId === "string" && isUuid(providerId)
          ? yield* executors.findExecutorByPublicId(providerId)
          : undefined
      const eligible =
        provider !== undefined &&
        provider.kind === "tool_provider" &&
        provider.status === "active" &&
        provider.account_id === row.account_id &&
        (provider.assignment_scope === "account_wide" ||
          (row.access_mode === "private" && row.owner_id === provider.manager_id))
      if (!eligible || !provider) {
        return yield* new Invalid({
          code: "provider_not_eligible",
          message: `overrides.${namespace} names no eligible tool provider`
        })
      }
      const served = new Set(provider.announcement.tools.map((tool) => tool.name))
      const missing = memoryVerbs.filter((verb) => !served.has(verb))
      if (missing.length > 0) {
        return yield* new Invalid({
          code: "provider_incomplete",
          message: `The provider does not announce ${missing.join(", ")}`
        })
      }
      resolved[namespace] = provider.public_id
    }
    return resolved
  })
