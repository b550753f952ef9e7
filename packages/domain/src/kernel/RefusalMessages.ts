// The sentence a refusal answers when its refuser names only the code: a conversation's, run's or
// task's actor stepping `refuse` (machines/src/conversation, machines/src/run), the inbox's claims
// included. Each says what was refused and why, in the spec's state terms; a code with none here
// answers a generic sentence naming it. Messages are for people, not contract (spec "Errors").
import type { Invalid, StateConflict } from "./Refusals.ts"

type Sentenced = StateConflict["code"] | Invalid["code"]

const sentences: { readonly [Code in Sentenced]?: string } = {
  // Conversations: lifecycle, input queue, turns, compaction.
  conversation_archived:
    "The conversation is archived: it can be read, forked and have its access replaced, nothing else until unarchived",
  subagent_follows_parent: "A subagent conversation follows its parent: archive or unarchive the parent instead",
  side_conversation: "A side conversation is never archived, unarchived or forked; it lives and ends with its source",
  conversation_busy:
    "A reply, regeneration or summary is pending or running here (for DELETE, anywhere in the tree); " +
    "wait for it to settle or cancel it",
  kernel_input_immutable:
    "The input is the kernel's (origin task_result or child): people cannot edit, delete or reorder it",
  steering_held: "The input is a held steer: it takes only {delivery_mode: steer_now} (with expected_lock_version)",
  validation_failed:
    "Not taken in the current state: delivery_mode changes only on a held steer (to steer_now), " +
    "and only a direct_reply turn is regenerated",
  branch_required:
    "The turn is not this conversation's own tail (older, inherited, or frozen while a child reads it by reference); " +
    "fork a branch to change it",
  not_terminal: "The turn or candidate is still running; wait for it to settle",
  kernel_authored: "The turn is a compaction summary the kernel wrote: it is not edited, regenerated or deleted",
  nothing_to_compact: "Nothing follows the newest completed summary, so there is nothing to compact",
  // Inputs of a conversation or a standalone run.
  input_queue_full:
    "The input queue is full: it already holds 16 unconsumed inputs (scheduled ones included); " +
    "wait for it to drain or delete one",
  queue_changed:
    "The inputs named are not exactly your unconsumed, non-kernel inputs queued now; " +
    "read the queue and send the whole list again",
  run_settled: "The run is completed, canceled or canceling: it takes no more inputs",
  // Run verbs and append.
  not_startable: "Only a pending run starts; this run has left pending",
  not_pausable: "Only a running or needs_attention run pauses (a paused one only again with force: true)",
  not_resumable: "Only a paused run resumes",
  already_terminal: "Already settled: a completed or canceled run is not stopped, a settled task is not canceled",
  run_live: "The run is running, paused, needs_attention or canceling: only a pending or finished run is deleted",
  run_not_appendable:
    "The run takes no new work: it is not pending, running, paused or needs_attention, its hosted turn's reply " +
    "was delivered, or (for an input) it has no mainline model round to continue",
  tip_live: "The first step is a top-level model step while the run's mainline tip is still waiting or running",
  tip_unresolved:
    "The run's deliverable failed, timed_out, was uncertain, skipped or canceled and nothing resolved it; " +
    "retry or abandon it first",
  duplicate_task_key: "A task key appears twice in the steps, or a task of this run already has it",
  unknown_await: "A resolve entry names no authored ask of this run",
  unsupported_resolve_outcome: "A resolve entry only completes an ask: its outcome must be completed",
  // Task verbs.
  not_adjudicable:
    "The run is completed or canceled: its tasks take no more verbs (approve, deny, retry, abandon, resolution, " +
    "cancel, compact)",
  not_awaiting_approval:
    "The task is not at needs_approval (never parked, already decided, or past its hold: timed_out approval_expired)",
  not_retryable:
    "Only a failed, timed_out or uncertain task whose failure nothing resolved, not absorbing it and not a join, " +
    "is retried",
  not_abandonable:
    "Only a failed, timed_out, uncertain or skipped task whose failure nothing resolved, not absorbing it and " +
    "not a join, is abandoned",
  not_a_branch: "The task is a top-level model round of the run's mainline, not a branch; stop the run instead",
  not_compactable:
    "Only a model task that failed on its context size (context_window_exceeded), unresolved, not absorbing it " +
    "and not itself a summarizer, is compacted",
  await_not_resolvable: "The task is not an open ask: only a dispatched or awaiting_input ask takes a resolution",
  // Claims on inbox rows (and an authored ask's resolution token).
  not_addressed_here: "The task's inbox row is not addressed to this executor",
  not_claimable_kind: "Only tool rows are claimed; ask and approval rows are answered through the task verbs",
  task_not_claimable:
    "The task is not dispatched (not yet, or settled), or its run is not running, paused, needs_attention " +
    "or gracefully canceling",
  already_claimed: "The task is already claimed in this generation (by this executor too)",
  not_eligible:
    "This executor may not claim the task: it is not active, or its discovery scope does not reach the run's creator",
  not_claimant:
    "The claim or resolution token is not the task's current one (never claimed, wrong, from an older " +
    "generation, or another executor's claim)",
  claim_inactive: "The claim is no longer active: its deadline passed and the task settled by the expiry rule",
  not_extendable:
    "The claim cannot be extended: never claimed in this generation, settled, past its deadline, or its run is paused"
}

/** The sentence for `code`, if it has one. */
export const sentenceOf = (code: string): string | undefined =>
  Object.hasOwn(sentences, code) ? sentences[code as Sentenced] : undefined

/** The sentence for `code`, else `generic` naming it. */
export const refusalSentence = (code: string, generic: string) => sentenceOf(code) ?? `${generic} (${code})`
