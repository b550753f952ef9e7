// A conversation's settings beside its title and metadata (supplement "Access, default runner,
// messaging, memory, store"): the default runner (a live runner its answerer may use, by the
// discovery rule) and memory_context (the bindings its replies and memory door read). Each change
// is one `conversation.configure` event to the conversation's actor (lock_version +1; for
// memory_context context_revision too); a runner change narrates default_runner_changed. The
// default_runner block of the full projection is read here too (`defaultRunnerBlock`).
import { isUuid } from "@troupe/storage/Ids"
import { withRepositories } from "@troupe/storage/Repositories"
import {
  type ConversationRow,
  ConversationsRepository,
  type SpeakerRow
} from "@troupe/storage/repositories/Conversations"
import { type ExecutorRow, ExecutorsRepository } from "@troupe/storage/repositories/Executors"
import { Context, Effect, Layer } from "effect"
import type { Caller } from "../accounts/Caller.ts"
import { presenceOf } from "../executors/Presence.ts"
import { now } from "../kernel/Now.ts"
import { Absent, Invalid, StateConflict } from "../kernel/Refusals.ts"
import { Conversations, type Refused, type Standing } from "./Conversations.ts"
import { levelOf } from "./Standing.ts"
import type { ConversationView, DefaultRunnerBlock } from "./Views.ts"

/** A memory binding as the contract decoded it (name grammar, scope and access vocabularies judged). */
export interface MemoryBindingMembers {
  readonly name: string
  readonly scope: string
  readonly access: string
  readonly conversation_public_id?: string | null | undefined
  readonly speaker_public_id?: string | null | undefined
}

/** memory_context's members: at most 16 bindings, names unique, a conversation root when nonempty. */
export interface MemoryContextMembers {
  readonly bindings: ReadonlyArray<MemoryBindingMembers>
}

/** The stored memory_context: null (the default roots) or the bindings in their stored member order. */
export type StoredMemoryContext = { readonly bindings: ReadonlyArray<Readonly<Record<string, string>>> } | null

/** Writes to an archived conversation answer 409 conversation_archived (after write standing). */
export const unarchived = (standing: Standing) =>
  standing.row.state === "archived"
    ? Effect.fail(new StateConflict({ code: "conversation_archived", message: "The conversation is archived" }))
    : Effect.succeed(standing)

/** The conversation's default runner as the full projection shows it, or null. */
export const defaultRunnerBlock = (row: ConversationRow) =>
  Effect.gen(function* () {
    if (row.default_runner_executor_id === null) return null
    const runner = yield* (yield* ExecutorsRepository).findExecutorById(row.default_runner_executor_id)
    if (runner === undefined) return null
    return {
      executor_public_id: runner.public_id,
      display_name: runner.display_name,
      presence: presenceOf(runner, yield* now),
      last_seen_at: runner.last_seen_at
    } satisfies DefaultRunnerBlock
  })

/**
 * The discovery rule for the answerer: an account-wide runner; a user-private one its human manages
 * (an agent's human is its steward); an agent-private one of the answerer (a human's: of an agent it
 * stewards).
 */
const usableBy = (runner: ExecutorRow, answerer: SpeakerRow, stewarded: ReadonlyArray<bigint>) => {
  const human = answerer.kind === "agent" ? answerer.steward_id : answerer.id
  switch (runner.assignment_scope) {
    case "account_wide":
      return true
    case "user_private":
      return runner.manager_id === human
    case "agent_private":
      return runner.agent_id !== null && (runner.agent_id === answerer.id || stewarded.includes(runner.agent_id))
  }
}

/**
 * The runner `executorPublicId` names for a conversation of the account answered by `answerer`:
 * unknown, another account's or not a runner 404 runner_not_found; revoked or not usable by the
 * answerer 409 runner_not_eligible.
 */
export const judgeRunner = (accountId: bigint, answerer: SpeakerRow, executorPublicId: string) =>
  Effect.gen(function* () {
    const executors = yield* ExecutorsRepository
    const runner = isUuid(executorPublicId) ? yield* executors.findExecutorByPublicId(executorPublicId) : undefined
    if (runner === undefined || runner.kind !== "runner" || runner.account_id !== accountId) {
      return yield* new Absent({
        code: "runner_not_found",
        message: "default_runner.executor_public_id names no runner"
      })
    }
    const stewarded = answerer.kind === "human" ? yield* executors.stewardedAgentIds(answerer.id) : []
    if (runner.status !== "active" || !usableBy(runner, answerer, stewarded)) {
      return yield* new StateConflict({
        code: "runner_not_eligible",
        message: "That runner is revoked or not one the conversation's answerer may use"
      })
    }
    return runner
  })

/** A binding in its stored member order (so equal bindings store and compare alike). */
const storedBinding = (binding: MemoryBindingMembers) => ({
  name: binding.name,
  scope: binding.scope,
  access: binding.access,
  ...(binding.conversation_public_id == null ? {} : { conversation_public_id: binding.conversation_public_id }),
  ...(binding.speaker_public_id == null ? {} : { speaker_public_id: binding.speaker_public_id })
})

const sameContext = (a: unknown, b: StoredMemoryContext) => {
  const normal = (context: unknown) =>
    context === null || context === undefined
      ? null
      : ((context as Partial<MemoryContextMembers>).bindings ?? []).map(storedBinding)
  return JSON.stringify(normal(a)) === JSON.stringify(normal(b))
}

const unresolved = (index: number, member: string, what: string) =>
  new Invalid({ code: "validation_failed", message: `memory_context.bindings[${index}].${member} ${what}` })

/**
 * A memory_context as stored, its own rules (names, scopes, the bound of 16, a conversation root)
 * judged by the contract: what needs the database here. A speaker_public_id names a principal of
 * the account; a conversation_public_id a conversation of the workspace the caller can see.
 */
export const judgeMemoryContext = (
  caller: Caller,
  workspace: { readonly id: bigint; readonly accountId: bigint },
  members: MemoryContextMembers | null
) =>
  Effect.gen(function* () {
    if (members === null) return null
    const repository = yield* ConversationsRepository
    for (const [index, binding] of members.bindings.entries()) {
      if (binding.speaker_public_id != null) {
        const speaker = yield* repository.principal({
          accountId: workspace.accountId,
          publicId: binding.speaker_public_id,
          handle: null
        })
        if (speaker === undefined) return yield* unresolved(index, "speaker_public_id", "names no principal")
      }
      if (binding.conversation_public_id != null) {
        const bound = yield* repository.findConversation(binding.conversation_public_id)
        const visible =
          bound !== undefined &&
          bound.workspace_id === workspace.id &&
          bound.state !== "tombstoned" &&
          levelOf(bound, caller) !== "none"
        if (!visible) return yield* unresolved(index, "conversation_public_id", "names no conversation here")
      }
    }
    return { bindings: members.bindings.map(storedBinding) } satisfies StoredMemoryContext
  })

export class ConversationSettings extends Context.Service<
  ConversationSettings,
  {
    /** PUT default_runner: a runner the answerer may use, or null to clear; 200 with the full view. */
    readonly setDefaultRunner: (
      caller: Caller,
      workspaceId: string,
      conversationId: string,
      executorPublicId: string | null
    ) => Effect.Effect<ConversationView, Refused>
    /** POST memory_context: bindings, {bindings: []} (memory off) or null (the default roots). */
    readonly setMemoryContext: (
      caller: Caller,
      workspaceId: string,
      conversationId: string,
      memoryContext: MemoryContextMembers | null
    ) => Effect.Effect<ConversationView, Refused>
  }
>()("@troupe/domain/conversations/ConversationSettings") {
  static readonly layer = Layer.effect(
    ConversationSettings,
    Effect.gen(function* () {
      const conversations = yield* Conversations
      const db = yield* withRepositories(ConversationsRepository, ExecutorsRepository)

      /** Write standing on a conversation that is not archived. */
      const writable = (caller: Caller, workspaceId: string, conversationId: string) =>
        Effect.flatMap(conversations.standing(caller, workspaceId, conversationId, "write"), unarchived)

      const publicIdOf = (id: bigint) => Effect.map(conversations.people([id]), (people) => people.get(id)?.public_id)

      return ConversationSettings.of({
        setDefaultRunner: (caller, workspaceId, conversationId, executorPublicId) =>
          Effect.gen(function* () {
            const target = yield* writable(caller, workspaceId, conversationId)
            const answerer = (yield* conversations.people([target.row.answerer_id])).get(target.row.answerer_id)!
            const runner =
              executorPublicId === null
                ? null
                : yield* db(judgeRunner(target.workspaceAccountId, answerer, executorPublicId))
            const previousId = target.row.default_runner_executor_id
            if ((runner?.id ?? null) === previousId) return yield* conversations.view(target)
            const previous = previousId === null ? undefined : yield* db(defaultRunnerBlock(target.row))
            yield* conversations.send(target, {
              type: "conversation.configure",
              changes: { default_runner_executor_id: runner === null ? null : String(runner.id) },
              item: {
                type: "default_runner_changed",
                executor_public_id: runner?.public_id ?? null,
                previous_executor_public_id: previous?.executor_public_id ?? null,
                by: (yield* publicIdOf(caller.user.id)) ?? null
              }
            })
            return yield* conversations.view(target)
          }),
        setMemoryContext: (caller, workspaceId, conversationId, memoryContext) =>
          Effect.gen(function* () {
            const target = yield* writable(caller, workspaceId, conversationId)
            const stored = yield* db(
              judgeMemoryContext(
                caller,
                { id: target.row.workspace_id, accountId: target.workspaceAccountId },
                memoryContext
              )
            )
            if (!sameContext(target.row.memory_context, stored)) {
              yield* conversations.send(target, {
                type: "conversation.configure",
                changes: { memory_context: stored },
                item: null
              })
            }
            return yield* conversations.view(target)
          })
      })
    })
  )
}
