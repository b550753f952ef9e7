// Effect requests of a conversation: the row writes of each step (the conversation row, its
// inputs, turns and variants, the inference requests its replies ask), the refusal of a command
// its state does not allow, the cancellation told to a running reply, and the judging job.
import type { BlockedReason } from "./context.ts"
import type { AcceptedInput, ConversationChanges } from "./events.ts"

export const conversationEffects = {
  /** Writes changed fields, lock_version and context_revision to the conversation row. */
  recordChanges: "conversation.recordChanges",
  /** Writes the lifecycle state (active, archived, tombstoned) and context_revision. */
  recordState: "conversation.recordState",
  /** The machine refuses the command: `reason` is the spec's code. */
  refuse: "conversation.refuse",
  /** Tells the run of a run-backed reply a steer held against it (it lands at the next round). */
  steerRun: "conversation.steerRun",
  /**
   * Tells the run of a run-backed reply that a steer held against it is gone (deleted, or returned
   * to the queue when the reply settled): it never lands there.
   */
  dropSteer: "conversation.dropSteer",
  /**
   * Tells the run of a run-backed reply the new order of the steers held against it (a reorder moved
   * them): `inputIds` names every steer it holds, in the order they land.
   */
  reorderSteers: "conversation.reorderSteers",
  /** A held steer landed in the run-backed reply: consumed into its turn and candidate. */
  landSteer: "conversation.landSteer",
  /** Inserts an accepted input row at its queue position. */
  insertInput: "conversation.insertInput",
  /** Writes an input's edit, state and blocked reason, bumping its lock_version. */
  updateInput: "conversation.updateInput",
  /** Deletes an unconsumed input row. */
  deleteInput: "conversation.deleteInput",
  /** Writes new queue positions. */
  reorderInputs: "conversation.reorderInputs",
  /** A message input becomes a completed turn (its text the one variant), the input consumed. */
  materializeMessage: "conversation.materializeMessage",
  /** A direct reply's input becomes a running turn and variant, its request sealed and asked. */
  openReply: "conversation.openReply",
  /** Another sample of a turn (fallback or regeneration): a variant and its request asked, or its hosted run opened. */
  openSample: "conversation.openSample",
  /** A compaction_summary turn opens running (role user, no speaker), its summarizer's request sealed and asked. */
  openSummary: "conversation.openSummary",
  /** A sample ended: its text and usage copied to the variant, the turn's status and active variant. */
  settleSample: "conversation.settleSample",
  /** Tells a running sample's inference request to cancel. */
  cancelRequest: "conversation.cancelRequest",
  /** An edit's new candidate (source edit), activated. */
  editTurn: "conversation.editTurn",
  activateVariant: "conversation.activateVariant",
  setVisibility: "conversation.setVisibility",
  concealVariant: "conversation.concealVariant",
  deleteTurn: "conversation.deleteTurn",
  /**
   * DELETE's fence ("no live work in tree"): refused (conversation_busy) while a turn is pending or
   * running in its tree (sides, children), or a run hosted there works (pending, running, canceling).
   */
  ensureTreeIdle: "conversation.ensureTreeIdle",
  /**
   * Tells its followers what it did: archive ends its sides and archives its subagent children;
   * unarchive unarchives the children (no side returns); end (its tombstone) ends both.
   */
  tellFollowers: "conversation.tellFollowers",
  /** Tombstoned: tells each conversation it reads by reference (its source chain) to lift its freeze. */
  releaseSources: "conversation.releaseSources",
  /**
   * Tombstoned: tells every live run it hosts (a reply that settled early while its run works on)
   * to stop by force, durably in the tombstone's step; `except` is the reply already told to cancel.
   */
  stopHostedRuns: "conversation.stopHostedRuns",
  /** Deletes the conversation's rows 30 days after its tombstone. */
  reap: "conversation.reapRows",
  /** After commit: judges a direct reply's head (prompt within the model's window) and reports reply.judged. */
  judgeHead: "conversation.judgeHead"
} as const

export type LifecycleState = "active" | "archived" | "tombstoned"

export interface RecordChangesParams {
  readonly changes: ConversationChanges
  readonly lockVersion: number
  readonly contextRevision: number
}

export interface RecordStateParams {
  readonly state: LifecycleState
  readonly lockVersion: number
}

export interface RefuseParams {
  readonly reason: string
}

export interface InsertInputParams {
  readonly input: AcceptedInput
  readonly queuePosition: number
  readonly state: "pending" | "steering"
}

export interface UpdateInputParams {
  readonly inputId: string
  readonly changes: Readonly<Record<string, unknown>>
  readonly state: "pending" | "steering" | "blocked"
  readonly blockedReason: BlockedReason | null
  readonly deliveryMode?: "queue" | "steer" | "steer_now"
  readonly dueAt?: number | null
  /** The row's lock_version after this write. */
  readonly lockVersion: number
}

export interface MaterializeParams {
  readonly inputId: string
  readonly turnId: string
  readonly variantId: string
  readonly position: number
  readonly contextRevision: number
}

export interface OpenReplyParams extends MaterializeParams {
  /** The reply's inference request, or its hosted run (engine run). */
  readonly requestId: string
  readonly model: string
  readonly answererId: string
  readonly engine: "direct" | "run"
  /** A run-backed reply's plan, as its head's verdict carried it. */
  readonly plan?: unknown
}

export interface CancelRequestParams {
  readonly requestId: string
  readonly engine: "direct" | "run"
}

export interface OpenSampleParams {
  readonly turnId: string
  readonly variantId: string
  readonly requestId: string
  readonly model: string
  readonly source: "fallback" | "inference" | "run"
  /** The candidate whose sealed request is asked again (with `overrides`). */
  readonly originVariantId: string
  readonly overrides: Readonly<Record<string, unknown>>
  /** run: a run-backed reply asked again, a new hosted run (its public id `requestId`) opened from `plan`. */
  readonly engine?: "direct" | "run"
  readonly plan?: unknown
}

export interface OpenSummaryParams {
  readonly turnId: string
  readonly variantId: string
  readonly requestId: string
  readonly position: number
  readonly model: string
  readonly contextRevision: number
}

export interface SettleSampleParams {
  readonly turnId: string
  readonly variantId: string
  readonly requestId: string
  /** running: a run-backed candidate held for attention that runs again. */
  readonly variantStatus: "completed" | "failed" | "canceled" | "timed_out" | "running"
  /** The turn's status after it: the sample's, running (a fallback follows), or what a failed regeneration returns to. */
  readonly turnStatus: string
  /** The candidate becomes the turn's active one. */
  readonly activate: boolean
  /** The sample's failure (its variant's). */
  readonly failureReasonKey: string | null
  /** The turn's failure after it (null while running or completed; a failed regeneration keeps the turn's). */
  readonly turnFailureReasonKey: string | null
  readonly usage: Readonly<Record<string, unknown>> | null
  readonly contextRevision: number
  /** A compaction summary's sample (not a reply: the last reply model stays). */
  readonly summary?: boolean
}

export interface TurnParams {
  readonly turnId: string
  readonly contextRevision: number
}

export interface VisibilityParams extends TurnParams {
  readonly visibility: string
  /** A turn read by reference: this conversation's override is written, not the turn's row. */
  readonly inherited?: boolean
}

export interface ActivateParams extends TurnParams {
  readonly variantId: string
  /** The turn's status and failure after it (its new active candidate's); absent: unchanged. */
  readonly status?: string
  readonly failureReasonKey?: string | null
}

export interface JudgeHeadParams {
  readonly inputId: string
  readonly model: string
  readonly revision: number
  /** The head's lock_version judged (a verdict for an older one is not taken). */
  readonly lockVersion: number
}

export interface TellFollowersParams {
  readonly command: "archive" | "unarchive" | "end"
}

export interface StopHostedRunsParams {
  readonly except: string | null
}
