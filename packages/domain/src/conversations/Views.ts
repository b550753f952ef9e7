// Conversation rows as the contract shows them (supplement "Conversation", "Inputs", "Turns and
// variants"): the basic and full projections, input rows, turns with their active and running
// candidates, and variants. People are read once per answer (`people`) and looked up here.

import { inputQueueLimit } from "@troupe/machines/conversation/conversation.machine"
import type {
  ConversationRow,
  InputRow,
  SpeakerRow,
  TimelineTurnRow,
  VariantRow
} from "@troupe/storage/repositories/Conversations"
import type { VariantRuns } from "../runs/VariantRuns.ts"
import { type MailInput, mailFields } from "./MailViews.ts"
import { storedAccess } from "./Standing.ts"

export type People = ReadonlyMap<bigint, SpeakerRow>

/** A person as an answer shows one: a people row, or the caller as authentication read it. */
export type Person = Pick<SpeakerRow, "id" | "public_id" | "handle" | "kind" | "display_name">

/** People as an answer shows them. */
type Shown = ReadonlyMap<bigint, Person>

const speakerOf = (people: Shown, id: bigint | null) => {
  const person = id === null ? undefined : people.get(id)
  return person === undefined
    ? null
    : { user_public_id: person.public_id, handle: person.handle, kind: person.kind, display_name: person.display_name }
}

const publicIdOf = (people: Shown, id: bigint | null) => (id === null ? null : (people.get(id)?.public_id ?? null))

/** The people a conversation's answer names. */
export const peopleOfConversation = (row: ConversationRow) => [
  row.creator_id,
  row.answerer_id,
  ...storedAccess(row).entries.map((entry) => BigInt(entry.user_id))
]

export const conversationSummary = (row: ConversationRow, workspacePublicId: string) => ({
  public_id: row.public_id,
  workspace_public_id: workspacePublicId,
  lock_version: row.lock_version,
  title: row.title,
  metadata: row.metadata as Record<string, unknown>,
  billing_subject: row.billing_subject,
  source_conversation_public_id: row.source_public_id,
  forked_from_turn_public_id: row.forked_from_turn_public_id,
  forked_from_variant_public_id: row.forked_from_variant_public_id,
  parent:
    row.parent_public_id === null
      ? null
      : { public_id: row.parent_public_id, spawn_node_key: row.spawn_node_key, label: row.label },
  side: row.side,
  archived_at: row.archived_at,
  active_turn_public_id: row.active_turn_public_id,
  context_revision: row.context_revision,
  last_activity_at: row.last_activity_at,
  created_at: row.created_at,
  updated_at: row.updated_at
})

export interface FullExtras {
  readonly workspacePublicId: string
  /** The caller's human (the default user/ root's anchor). */
  readonly callerHumanPublicId: string | null
  readonly held: number
  readonly latestCursor: string | null
  readonly defaultRunner: DefaultRunnerBlock | null
}

/** A conversation's default runner as shown: the executor, its name and presence. */
export interface DefaultRunnerBlock {
  readonly executor_public_id: string
  readonly display_name: string
  readonly presence: "online" | "offline" | "not_yet_seen"
  readonly last_seen_at?: Date | null
}

export const conversationFull = (row: ConversationRow, people: People, extras: FullExtras) => {
  const access = storedAccess(row)
  return {
    ...conversationSummary(row, extras.workspacePublicId),
    answering_user_public_id: publicIdOf(people, row.answerer_id) ?? "",
    creator_public_id: publicIdOf(people, row.creator_id) ?? "",
    default_runner: extras.defaultRunner,
    access: {
      default: access.default as "full" | "read" | "none",
      entries: access.entries.flatMap((entry) => {
        const person = people.get(BigInt(entry.user_id))
        return person === undefined
          ? []
          : [
              {
                user_public_id: person.public_id,
                handle: person.handle,
                kind: person.kind,
                display_name: person.display_name,
                level: entry.level
              }
            ]
      })
    },
    memory_context: row.memory_context as { bindings: Array<never> } | null,
    effective_memory_context: effectiveMemoryContext(row, people, extras),
    context: row.context as Record<string, unknown> | null,
    usage_summary: row.usage_summary as Record<string, unknown>,
    input_queue: { limit: inputQueueLimit, held: extras.held },
    latest_event_cursor: extras.latestCursor
  }
}

/** A memory binding as stored (memory_context's members). */
interface StoredBinding {
  readonly name: string
  readonly scope: string
  readonly access: string
  readonly conversation_public_id?: string | null
  readonly speaker_public_id?: string | null
}

/** The default roots (memory_context null): conversation/, workspace/ and user/, read_write. */
const defaultRoots: ReadonlyArray<StoredBinding> = [
  { name: "conversation", scope: "conversation", access: "read_write" },
  { name: "workspace", scope: "workspace", access: "read_write" },
  { name: "user", scope: "user", access: "read_write" }
]

/** The public ids a conversation's bindings are anchored to (user: the human; agent: the answering agent). */
export interface BindingAnchors {
  readonly conversation: string
  readonly workspace: string
  readonly user: string | null
  readonly agent: string | null
}

/**
 * A conversation's bindings (its stored memory_context; null the default roots), each with its
 * anchor's UUID: conversation/ this conversation (or the one it names), workspace/ its workspace,
 * user/ the human, agent/ the answering agent, speaker/ the answering agent and the speaker it names.
 */
export const resolvedBindings = (memoryContext: unknown, anchors: BindingAnchors) => {
  const stored = memoryContext as { readonly bindings?: ReadonlyArray<StoredBinding> } | null
  const agent = anchors.agent === null ? {} : { agent_public_id: anchors.agent }
  const anchorOf = (binding: StoredBinding) => {
    switch (binding.scope) {
      case "conversation":
        return { conversation_public_id: binding.conversation_public_id ?? anchors.conversation }
      case "workspace":
        return { workspace_public_id: anchors.workspace }
      case "user":
        return anchors.user === null ? {} : { user_public_id: anchors.user }
      case "agent":
        return agent
      case "speaker":
        return {
          ...agent,
          ...(binding.speaker_public_id == null ? {} : { user_public_id: binding.speaker_public_id })
        }
      default:
        return {}
    }
  }
  const bindings = stored === null ? defaultRoots : (stored.bindings ?? [])
  return { bindings: bindings.map((binding) => ({ ...binding, ...anchorOf(binding) })) }
}

/** The bindings the next reply and the memory door read, the caller's human as user/'s anchor. */
const effectiveMemoryContext = (row: ConversationRow, people: People, extras: FullExtras) => {
  const answerer = people.get(row.answerer_id)
  return resolvedBindings(row.memory_context, {
    conversation: row.public_id,
    workspace: extras.workspacePublicId,
    user: extras.callerHumanPublicId,
    agent: answerer?.kind === "agent" ? answerer.public_id : null
  })
}

export const inputView = (row: InputRow, conversationPublicId: string, people: Shown) => {
  const members = (row.members ?? {}) as Record<string, unknown>
  // `callback` (where a kernel mail's reply returns) is the kernel's, never shown.
  const { attachments, context_options, callback: _callback, ...stored } = members
  return {
    ...stored,
    public_id: row.public_id,
    conversation_public_id: conversationPublicId,
    kind: row.kind,
    text: row.text,
    queue_position: row.queue_position,
    state: row.state,
    blocked_reason: row.blocked_reason,
    role: row.role,
    origin: row.origin as "person" | "agent" | "task_result" | "child",
    author_public_id: publicIdOf(people, row.author_id),
    speaker: speakerOf(people, row.speaker_id),
    answering_user_public_id: publicIdOf(people, row.answerer_id),
    delivery_mode: row.delivery_mode,
    deliver_at: row.deliver_at,
    visible_in_context: members.visible_in_context !== false,
    context_options: (context_options ?? {}) as { history?: unknown },
    attachments: (attachments ?? []) as Array<{
      public_id: string
      filename: string
      content_type: string
      byte_size: number
    }>,
    lock_version: row.lock_version,
    created_at: row.created_at
  }
}

const statusOf = (status: string) => status as "pending" | "running" | "completed" | "failed" | "canceled" | "timed_out"

/** A candidate; a run-backed one shows its run's mainline rounds and runner_effects from `runs`. */
export const variantView = (
  variant: VariantRow,
  active: boolean,
  promptText: string | null,
  runs: VariantRuns = new Map()
) => {
  const run = variant.run_public_id === null ? undefined : runs.get(variant.run_public_id)
  return {
    public_id: variant.public_id,
    source: variant.source as "inference" | "run" | "edit" | "fallback" | "fork",
    status: statusOf(variant.status),
    active,
    ...(variant.concealed ? { concealed: true } : {}),
    model: variant.model as {
      provider_id: string
      model_ref: string
      reasoning_enabled: boolean
      reasoning_effort: string | null
    } | null,
    preview: variant.content,
    content_preview: variant.content,
    content: variant.content,
    ...(promptText === null ? {} : { prompt_text: promptText }),
    usage: variant.usage as Record<string, unknown> | null,
    failure_reason_key: variant.failure_reason_key,
    origin_variant_public_id: variant.origin_variant_public_id,
    run_public_id: variant.run_public_id,
    rounds: run?.rounds ?? [],
    runner_effects: run?.runner_effects ?? null,
    memory_context: variant.memory_context as { bindings: Array<never> } | null,
    created_at: variant.created_at
  }
}

/**
 * The turn's mail (MailViews.ts): the input it was born of (its sender and callback_result) and
 * the inputs carrying a callback that it answers (its callback_sources).
 */
export interface TurnMail {
  readonly input: MailInput | undefined
  readonly sources: ReadonlyArray<MailInput>
}

export const turnView = (
  turn: TimelineTurnRow,
  variants: ReadonlyArray<VariantRow>,
  people: People,
  mail: TurnMail = { input: undefined, sources: [] },
  runs: VariantRuns = new Map()
) => {
  const mine = variants.filter((variant) => variant.turn_id === turn.id)
  const activeRow = mine.find((variant) => variant.public_id === turn.active_variant_public_id) ?? null
  const newest = mine.at(-1)
  const runningRow =
    newest !== undefined && newest !== activeRow && (newest.status === "running" || newest.status === "pending")
      ? newest
      : null
  const reply = turn.kind === "direct_reply"
  const active = activeRow === null ? null : variantView(activeRow, true, reply ? turn.prompt_text : null, runs)
  const speaker = speakerOf(people, turn.speaker_id)
  return {
    public_id: turn.public_id,
    position: turn.position,
    kind: turn.kind as "message" | "direct_reply" | "compaction_summary",
    role: turn.role,
    status: statusOf(turn.status),
    visibility: turn.visibility as "visible" | "hidden" | "excluded_from_context",
    inherited: !turn.own,
    origin: turn.origin,
    answering_user_public_id: publicIdOf(people, turn.answerer_id),
    ...(turn.kind === "compaction_summary" || speaker === null ? {} : { speaker }),
    ...(reply ? { prompt_text: turn.prompt_text } : {}),
    model: active?.model ?? null,
    preview: active?.preview ?? null,
    content: active?.content ?? null,
    input_public_id: turn.input_public_id,
    ...mailFields(mail.input, mail.sources),
    active_variant: active,
    running_variant: runningRow === null ? null : variantView(runningRow, false, reply ? turn.prompt_text : null, runs),
    failure_reason_key: turn.failure_reason_key,
    created_at: turn.created_at
  }
}

export type TurnView = ReturnType<typeof turnView>
export type ConversationView = ReturnType<typeof conversationFull>
export type ConversationSummaryView = ReturnType<typeof conversationSummary>
export type InputView = ReturnType<typeof inputView>
