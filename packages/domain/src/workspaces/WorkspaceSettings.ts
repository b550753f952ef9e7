// A workspace's settings beside its name and metadata (spec "Workspace"): the messaging policy
// and the tool provider overrides, judged whole before a replacement is written. The contact
// rule the policy states is applied where agents contact each other.
import { isUuid } from "@troupe/storage/Ids"
import * as Accounts from "@troupe/storage/repositories/Accounts"
import * as Executors from "@troupe/storage/repositories/Executors"
import type * as Repo from "@troupe/storage/repositories/Workspaces"
import { Effect } from "effect"
import { canonicalBytes, isObject } from "../kernel/Json.ts"
import { BadParameter, Invalid, TooLarge } from "../kernel/Refusals.ts"

const invalid = (code: Invalid["code"], message: string) => new Invalid({ code, message })

export const messagingLimitBytes = 64 * 1024
export const overridableNamespace = "svc.memory"
export const reservedNamespaces = ["svc.graph", "svc.human", "svc.conversation", "svc.tools"]
export const memoryVerbs = ["memory_read", "memory_write", "memory_edit", "memory_ls", "memory_grep", "memory_delete"]

/** The stored policy for `agents` as sent: each entry an agent of the account, once. */
export const messagingEntries = (row: Repo.WorkspaceRow, agents: unknown) =>
  Effect.gen(function* () {
    if (agents === undefined || agents === null) {
      return yield* new BadParameter({ code: "parameter_missing", message: "messaging.agents is required" })
    }
    if (!Array.isArray(agents)) {
      return yield* new BadParameter({ code: "parameter_invalid", message: "messaging.agents must be an array" })
    }
    if (canonicalBytes(agents) > messagingLimitBytes) {
      return yield* new TooLarge({
        code: "content_too_large",
        message: "The messaging policy is over 64 KiB of canonical JSON"
      })
    }
    const seen = new Set<string>()
    const entries: Array<Repo.MessagingEntry> = []
    for (const [index, entry] of agents.entries()) {
      const path = `messaging.agents[${index}]`
      if (!isObject(entry) || typeof entry.agent_public_id !== "string" || !isUuid(entry.agent_public_id)) {
        return yield* invalid("validation_failed", `${path}.agent_public_id must be an agent's public id`)
      }
      const mode = entry.mode ?? "public"
      if (mode !== "public" && mode !== "private") {
        return yield* invalid("validation_failed", `${path}.mode must be public or private`)
      }
      const senders = entry.allowed_sender_public_ids ?? []
      if (!Array.isArray(senders) || !senders.every((s) => typeof s === "string" && isUuid(s))) {
        return yield* invalid("validation_failed", `${path}.allowed_sender_public_ids must be public ids`)
      }
      if (seen.has(entry.agent_public_id)) return yield* invalid("validation_failed", `${path} repeats an agent`)
      seen.add(entry.agent_public_id)
      const agent = yield* Accounts.findUserByPublicId(entry.agent_public_id)
      if (agent?.kind !== "agent" || agent.account_id !== row.account_id) {
        return yield* invalid("principal_unknown", `${path}.agent_public_id names no agent`)
      }
      entries.push({ agent_public_id: entry.agent_public_id, mode, allowed_sender_public_ids: [...new Set(senders)] })
    }
    return entries
  })

/**
 * The stored overrides for `overrides` as sent, checked in the spec's order: reserved
 * namespaces, then namespaces that are not overridable, then each provider's eligibility, then
 * its completeness against its announcement.
 */
export const providerOverrides = (row: Repo.WorkspaceRow, overrides: unknown) =>
  Effect.gen(function* () {
    if (overrides === undefined || overrides === null) {
      return yield* new BadParameter({ code: "parameter_missing", message: "overrides is required ({} clears)" })
    }
    if (!isObject(overrides)) {
      return yield* new BadParameter({ code: "parameter_invalid", message: "overrides must be an object" })
    }
    for (const namespace of Object.keys(overrides)) {
      if (reservedNamespaces.includes(namespace)) {
        return yield* invalid("reserved_namespace", `${namespace} is reserved and never overridden`)
      }
    }
    for (const namespace of Object.keys(overrides)) {
      if (namespace !== overridableNamespace) {
        return yield* invalid("validation_failed", `overrides.${namespace}: only svc.memory may be overridden`)
      }
    }
    const resolved: Record<string, string> = {}
    for (const [namespace, providerId] of Object.entries(overrides)) {
      const provider =
        typeof providerId === "string" && isUuid(providerId)
          ? yield* Executors.findExecutorByPublicId(providerId)
          : undefined
      const eligible =
        provider !== undefined &&
        provider.kind === "tool_provider" &&
        provider.status === "active" &&
        provider.account_id === row.account_id &&
        (provider.assignment_scope === "account_wide" ||
          (row.access_mode === "private" && row.owner_id === provider.manager_id))
      if (!eligible || !provider) {
        return yield* invalid("provider_not_eligible", `overrides.${namespace} names no eligible tool provider`)
      }
      const served = new Set(provider.announcement.tools.map((tool) => (tool as { name: string }).name))
      const missing = memoryVerbs.filter((verb) => !served.has(verb))
      if (missing.length > 0) {
        return yield* invalid("provider_incomplete", `The provider does not announce ${missing.join(", ")}`)
      }
      resolved[namespace] = provider.public_id
    }
    return resolved
  })
