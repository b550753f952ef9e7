// The conversation memory door (spec "Member: profile memory", "Memory binding"; supplement
// "Access, default runner, messaging, memory, store"): the Memory verbs over a Reach made from the
// conversation's bindings (memory_context; null is the default roots conversation/, workspace/,
// user/, read_write; {bindings: []} reaches nothing). conversation/ is the conversation, workspace/
// its workspace, user/ the caller's human, agent/ the answerer, speaker/ the answerer's memory of a
// speaker (the binding's speaker_public_id, else the request's). Reads need read level; writes full
// level, write standing and a conversation not archived, and tell its actor (context_revision +1).
// The workspace's svc.memory override and the caller's memory ceiling hold as at the workspace door.
import type { MemoryDocumentRow, MemorySummaryRow } from "@troupe/storage/repositories/Memory"
import { Context, Effect, Layer } from "effect"
import type { Caller } from "../accounts/Caller.ts"
import { Invalid } from "../kernel/Refusals.ts"
import {
  type EditMembers,
  type GrepMembers,
  type GrepResult,
  Memory,
  type MemoryRefusal,
  type Reach,
  type RemoveMembers,
  type ShowMembers,
  type WriteMembers
} from "../memory/Memory.ts"
import type { Scope } from "../memory/MemoryRules.ts"
import { Workspaces } from "../workspaces/Workspaces.ts"
import { Conversations, type Refused, type Standing } from "./Conversations.ts"
import { type MemoryBindingMembers, unarchived } from "./Settings.ts"

/** Every verb at this door may name the speaker whose speaker/ memory it reaches. */
export interface SpeakerMember {
  readonly speaker_public_id?: string | null | undefined
}

/** Where the door is: the workspace and conversation of the URL. */
export interface DoorAt {
  readonly workspaceId: string
  readonly conversationId: string
}

const defaultRoots: ReadonlyArray<MemoryBindingMembers> = [
  { name: "conversation", scope: "conversation", access: "read_write" },
  { name: "workspace", scope: "workspace", access: "read_write" },
  { name: "user", scope: "user", access: "read_write" }
]

/** The bindings the door reads: the stored memory_context, else the default roots. */
const bindingsOf = (standing: Standing): ReadonlyArray<MemoryBindingMembers> => {
  const context = standing.row.memory_context as { readonly bindings?: ReadonlyArray<MemoryBindingMembers> } | null
  return context === null ? defaultRoots : (context.bindings ?? [])
}

type Refusal = Refused | MemoryRefusal

export class ConversationMemory extends Context.Service<
  ConversationMemory,
  {
    readonly list: (
      caller: Caller,
      at: DoorAt,
      members: SpeakerMember
    ) => Effect.Effect<ReadonlyArray<MemorySummaryRow>, Refusal>
    readonly show: (
      caller: Caller,
      at: DoorAt,
      members: ShowMembers & SpeakerMember
    ) => Effect.Effect<MemoryDocumentRow, Refusal>
    readonly grep: (
      caller: Caller,
      at: DoorAt,
      members: GrepMembers & SpeakerMember
    ) => Effect.Effect<GrepResult, Refusal>
    readonly write: (
      caller: Caller,
      at: DoorAt,
      members: WriteMembers & SpeakerMember
    ) => Effect.Effect<MemoryDocumentRow, Refusal>
    readonly edit: (
      caller: Caller,
      at: DoorAt,
      members: EditMembers & SpeakerMember
    ) => Effect.Effect<MemoryDocumentRow, Refusal>
    readonly remove: (
      caller: Caller,
      at: DoorAt,
      members: RemoveMembers & SpeakerMember
    ) => Effect.Effect<void, Refusal>
  }
>()("@troupe/domain/conversations/ConversationMemory") {
  static readonly layer = Layer.effect(
    ConversationMemory,
    Effect.gen(function* () {
      const memory = yield* Memory
      const conversations = yield* Conversations
      const workspaces = yield* Workspaces

      /** The speaker a speaker binding remembers: its own, else the request's (another than its own: none). */
      const speakerOf = (standing: Standing, binding: MemoryBindingMembers, requested: string | null | undefined) =>
        Effect.gen(function* () {
          const fixed = binding.speaker_public_id ?? null
          const named = requested ?? null
          if (fixed !== null && named !== null && fixed.toLowerCase() !== named.toLowerCase()) return undefined
          const publicId = fixed ?? named
          if (publicId === null) return undefined
          const speaker = yield* conversations.principal(standing.workspaceAccountId, { publicId })
          if (speaker === undefined) {
            return yield* new Invalid({ code: "principal_unknown", message: "speaker_public_id names no principal" })
          }
          return speaker.id
        })

      /** The anchors of the bindings (the first reaching each scope), and the scopes bound read-only. */
      const reachOf = (caller: Caller, standing: Standing, speaker: string | null | undefined) =>
        Effect.gen(function* () {
          const workspace = yield* workspaces.read(caller, standing.workspacePublicId)
          const answerer = (yield* conversations.people([standing.row.answerer_id])).get(standing.row.answerer_id)
          const agentId = answerer?.kind === "agent" ? answerer.id : undefined
          const anchors: Partial<Record<Scope, Reach["anchors"][Scope]>> = {}
          const writable = new Set<Scope>()
          const reached = new Set<Scope>()
          for (const binding of bindingsOf(standing)) {
            const scope = binding.scope as Scope
            if (scope === "conversation" && binding.conversation_public_id != null) continue
            if (binding.access === "read_write") writable.add(scope)
            if (reached.has(scope)) continue
            reached.add(scope)
            if (scope === "conversation") anchors.conversation = { kind: "conversation", id: standing.row.id }
            if (scope === "workspace") anchors.workspace = { kind: "workspace", id: workspace.id }
            if (scope === "user") anchors.user = { kind: "user", id: caller.human.id }
            if (scope === "agent" && agentId !== undefined) anchors.agent = { kind: "agent", id: agentId }
            if (scope === "speaker" && agentId !== undefined) {
              const speakerId = yield* speakerOf(standing, binding, speaker)
              if (speakerId !== undefined) anchors.speaker = { kind: "speaker", id: agentId, speakerId }
            }
          }
          const base = memory.workspaceReach(caller, workspace)
          return {
            ...base,
            anchors,
            readOnlyScopes: [...reached].filter((scope) => !writable.has(scope))
          } satisfies Reach
        })

      const readDoor = (caller: Caller, at: DoorAt, members: SpeakerMember) =>
        Effect.gen(function* () {
          const standing = yield* conversations.standing(caller, at.workspaceId, at.conversationId, "read")
          return yield* reachOf(caller, standing, members.speaker_public_id)
        })

      /** A write through the door: standing first, then the verb; a done write moves context_revision. */
      const writeDoor = <A>(
        caller: Caller,
        at: DoorAt,
        members: SpeakerMember,
        verb: (reach: Reach) => Effect.Effect<A, MemoryRefusal>
      ) =>
        Effect.gen(function* () {
          const standing = yield* conversations.standing(caller, at.workspaceId, at.conversationId, "write")
          yield* unarchived(standing)
          const done = yield* verb(yield* reachOf(caller, standing, members.speaker_public_id))
          // Archived in between: the document stands; an archived conversation has no next reply.
          yield* conversations.send(standing, { type: "conversation.memoryWritten" }).pipe(Effect.ignore)
          return done
        })

      return ConversationMemory.of({
        list: (caller, at, members) => Effect.flatMap(readDoor(caller, at, members), (reach) => memory.list(reach)),
        show: (caller, at, members) =>
          Effect.flatMap(readDoor(caller, at, members), (reach) => memory.show(reach, members)),
        grep: (caller, at, members) =>
          Effect.flatMap(readDoor(caller, at, members), (reach) => memory.grep(reach, members)),
        write: (caller, at, members) => writeDoor(caller, at, members, (reach) => memory.write(reach, members)),
        edit: (caller, at, members) => writeDoor(caller, at, members, (reach) => memory.edit(reach, members)),
        remove: (caller, at, members) => writeDoor(caller, at, members, (reach) => memory.remove(reach, members))
      })
    })
  )
}
