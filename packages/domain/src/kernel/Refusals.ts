// What domain rules refuse, in the spec's words: tagged classes carrying the spec's code (its
// Errors table) and a message for people. Nothing here knows HTTP: the http layer answers each
// code with the status the contract's table gives it.
import { Schema } from "effect"
import type { PatternFault } from "../memory/GrepPattern.ts"
import type { MemoryFault } from "../memory/MemoryRules.ts"
import { refusalSentence } from "./RefusalMessages.ts"

const refusal = <const Codes extends ReadonlyArray<string>>(codes: Codes) => ({
  code: Schema.Literals(codes),
  message: Schema.String
})

/** A request member absent or malformed. */
export class BadParameter extends Schema.TaggedError<BadParameter>()(
  "BadParameter",
  refusal(["parameter_missing", "parameter_invalid"])
) {}

/** Absent, or concealed from the caller: both answer alike. */
export class Absent extends Schema.TaggedError<Absent>()(
  "Absent",
  refusal([
    "not_found",
    "memory_not_found",
    "prompt_document_not_found",
    "representation_unavailable",
    "runner_not_found",
    "request_not_sealed"
  ])
) {}

/** The caller sees the subject but may not do this to it. */
export class NotPermitted extends Schema.TaggedError<NotPermitted>()(
  "NotPermitted",
  refusal([
    "not_authorized",
    "not_agent",
    "not_workspace_owner",
    "workspace_agent_identifier_mismatch",
    "memory_read_only",
    "administrator_required",
    "user_not_administrable"
  ])
) {}

/** The caller's fence (lock_version, observed pair) is not the subject's current one. */
export class Stale extends Schema.TaggedError<Stale>()(
  "Stale",
  refusal(["stale_object", "stale_context", "stale_timeline"])
) {}

/** The subject's state, or a neighbour's, refuses the command now. */
export class StateConflict extends Schema.TaggedError<StateConflict>()(
  "StateConflict",
  refusal([
    "workspace_not_active",
    "transition_in_progress",
    "memory_overridden",
    "name_taken",
    "identifier_taken",
    "shutdown_pending",
    "concurrent_write",
    "key_taken",
    "entry_limit_reached",
    "not_terminal",
    "conversation_archived",
    "conversation_busy",
    "subagent_follows_parent",
    "input_queue_full",
    "kernel_input_immutable",
    "queue_changed",
    "steering_held",
    "steering_target_changed",
    "branch_required",
    "kernel_authored",
    "runner_not_eligible",
    "duplicate_task_key",
    "not_startable",
    "not_pausable",
    "not_resumable",
    "already_terminal",
    "run_live",
    "run_not_appendable",
    "tip_live",
    "tip_unresolved",
    "not_adjudicable",
    "not_awaiting_approval",
    "not_retryable",
    "not_abandonable",
    "not_a_branch",
    "not_compactable",
    "run_settled",
    "not_claimable_kind",
    "not_addressed_here",
    "task_not_claimable",
    "already_claimed",
    "not_eligible",
    "not_claimant",
    "claim_inactive",
    "not_extendable",
    "extension_too_long",
    "execution_in_progress",
    "cost_unit_conflict",
    "budget_window_overlap",
    "budget_insufficient_headroom",
    "budget_already_revoked",
    "idempotency_envelope_mismatch"
  ])
) {
  /** The message of an actor's refusal that names only `code`. */
  static sentenceOf(code: string) {
    return refusalSentence(code, "Refused in the current state of what it acts on")
  }
}

/** A well-formed value outside its rules; the message names the member. */
export class Invalid extends Schema.TaggedError<Invalid>()(
  "Invalid",
  refusal([
    "validation_failed",
    "target_not_eligible",
    "principal_unknown",
    "provider_not_eligible",
    "provider_incomplete",
    "memory_scope_unavailable",
    "memory_full",
    "memory_document_too_large",
    "memory_description_invalid",
    "memory_edit_not_found",
    "memory_edit_ambiguous",
    "memory_pattern_invalid",
    "memory_pattern_too_costly",
    "skill_description_required",
    "prompt_slot_unavailable",
    "prompt_document_macro_unknown",
    "prompt_document_invalid",
    "model_plane_unavailable",
    "billing_subject_too_long",
    "input_over_model_limit",
    "input_media_too_large",
    "unsupported_input_media",
    "unknown_input_upload",
    "answerer_not_eligible",
    "principal_not_eligible",
    "deliver_at_in_past",
    "deliver_at_too_far",
    "deliver_at_ambiguous",
    "deliver_at_not_steerable",
    "attachments_not_steerable",
    "steering_guard_requires_steer",
    "side_conversation",
    "nothing_to_compact",
    "invalid_approval_mode",
    "invalid_approval_rules",
    "invalid_prompt_mechanism",
    "prompt_template_missing",
    "billing_subject_not_owned",
    "steps_payload_too_large",
    "await_not_resolvable",
    "unknown_await",
    "unsupported_resolve_outcome",
    "schedule_finished",
    "account_unit_unconfigured",
    "budget_exhausted"
  ])
) {
  /** The message of an actor's refusal that names only `code`. */
  static sentenceOf(code: string) {
    return refusalSentence(code, "Refused as outside the rules of what it acts on")
  }
}

/** A run's refusal that names where it stands: an append's stale revision, a hosted run's hosts. */
export class RunRefused extends Schema.TaggedError<RunRefused>()("RunRefused", {
  code: Schema.Literals(["stale_revision", "conversation_hosted"]),
  message: Schema.String,
  current_revision: Schema.optionalKey(Schema.Number),
  conversation_public_id: Schema.optionalKey(Schema.String),
  turn_public_id: Schema.optionalKey(Schema.NullOr(Schema.String))
}) {}

/** Over a storage or envelope bound. */
export class TooLarge extends Schema.TaggedError<TooLarge>()("TooLarge", refusal(["content_too_large"])) {}

export type Refusal = BadParameter | Absent | NotPermitted | Stale | StateConflict | Invalid | TooLarge

export type RefusalCode = Refusal["code"]

const classes = [BadParameter, Absent, NotPermitted, Stale, StateConflict, Invalid, TooLarge]

export const isRefusal = (value: unknown): value is Refusal => classes.some((refused) => value instanceof refused)

/** A memory or pattern rule's fault, as the refusal it is. */
export const invalidBy = (fault: MemoryFault | PatternFault) => new Invalid(fault)
