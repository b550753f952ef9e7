// The run create body's shell (runs supplement "Create and the step compiler"), judged in the
// supplement's order: raw graph names, approval mode and rules, prompt mechanism, billing subject,
// default runner, speaker, fallbacks and model selection. Pure: what it must know of the world
// (runners, models, ownership) arrives as lookups; the steps are Compiler.ts's.

import type { ApprovalMode, ApprovalRule } from "@troupe/machines/run/context"
import { approvalRuleFault } from "@troupe/machines/run/rules/approval"
import { Result } from "effect"
import { isObject } from "../kernel/Json.ts"
import { Absent, Invalid, NotPermitted, StateConflict } from "../kernel/Refusals.ts"
import { AuthoringRefused } from "./CompilerRefusals.ts"

/** Graph fields a client may not author (service spec "Member: runs" authoring rules). */
export const rawGraphNames: ReadonlySet<string> = new Set([
  "tasks",
  "depends_on",
  "input_from",
  "kind",
  "mode",
  "quorum_k",
  "loser_policy",
  "serial",
  "join",
  "reading",
  "detach",
  "deliverable",
  "window"
])

const graphNames = ["nodes", "edges"]

/** A tool as a runner announces it (SUPPLEMENT "Executor plane"). */
export interface AnnouncedTool {
  readonly name: string
  readonly timeout_ms?: number | undefined
  readonly effect_profile: Readonly<Record<string, unknown>>
}

/** A runner as the creator may see it: eligible when live and allowed to it (the discovery rule). */
export interface RunnerInfo {
  readonly publicId: string
  readonly displayName: string
  readonly eligible: boolean
  readonly tools: ReadonlyArray<AnnouncedTool>
}

export type PromptMechanism = "raw" | "default" | "assembly"

/** What the shell asks of the world, loaded by the caller before judging. */
export interface ShellLookups {
  /** A known text-generation model ref. */
  readonly model: (ref: string) => boolean
  /** A runner by public id; undefined when unknown or concealed from the creator. */
  readonly runner: (publicId: string) => RunnerInfo | undefined
  /** The creator controls this speaker (itself, or a principal it may speak for). */
  readonly controlsSpeaker: (publicId: string) => boolean
  /** The subject is unused or first used by the creator. */
  readonly ownsBillingSubject: (subject: string) => boolean
}

/** The shell as judged; the steps are compiled after it. */
export interface RunShell {
  readonly approvalMode: ApprovalMode
  readonly approvalRules: ReadonlyArray<ApprovalRule>
  readonly promptMechanism: PromptMechanism
  readonly billingSubject: string | null
  readonly defaultRunner: RunnerInfo | null
  readonly speakerId: string | null
  /** null when not given: the creator's standing list applies (as on conversation inputs). */
  readonly fallbackModels: ReadonlyArray<string> | null
}

export type ShellRefusal = AuthoringRefused | Invalid | Absent | StateConflict | NotPermitted

const given = (value: unknown): boolean => value !== undefined && value !== null

const invalid = (code: Invalid["code"], message: string) => Result.fail(new Invalid({ code, message }))

const approvalModes: ReadonlySet<string> = new Set(["bypass", "ask", "rules"])
const mechanisms: ReadonlySet<string> = new Set(["raw", "default", "assembly"])

/**
 * The first raw graph name among a body's top-level members (a create shell at `run.`, an append
 * body at its root): edge_authoring_refused, or graph_authoring_not_available for nodes/edges.
 */
export const rawGraphRefusal = (
  body: Readonly<Record<string, unknown>>,
  prefix: "run." | ""
): AuthoringRefused | undefined => {
  for (const name of rawGraphNames) {
    if (Object.hasOwn(body, name)) {
      return new AuthoringRefused({
        code: "edge_authoring_refused",
        message: `${name} is a graph field; author steps instead`,
        path: prefix + name
      })
    }
  }
  const graph = graphNames.find((name) => Object.hasOwn(body, name))
  return graph === undefined
    ? undefined
    : new AuthoringRefused({
        code: "graph_authoring_not_available",
        message: "nodes and edges cannot be authored; author steps instead",
        path: prefix + graph
      })
}

const judgeRules = (rules: unknown): Result.Result<ReadonlyArray<ApprovalRule>, Invalid> => {
  if (!given(rules)) return Result.succeed([])
  if (!Array.isArray(rules)) return invalid("invalid_approval_rules", "approval_rules must be a list of rules")
  for (const [index, rule] of rules.entries()) {
    const fault = approvalRuleFault(rule)
    if (fault !== undefined) {
      const at = fault === "rule" ? "" : `.${fault}`
      return invalid("invalid_approval_rules", `approval_rules[${index}]${at} is not a valid rule`)
    }
  }
  return Result.succeed(rules as ReadonlyArray<ApprovalRule>)
}

const judgeBillingSubject = (subject: unknown, lookups: ShellLookups): Result.Result<string | null, Invalid> => {
  if (!given(subject)) return Result.succeed(null)
  if (typeof subject !== "string") return invalid("validation_failed", "billing_subject must be a string")
  const bytes = Buffer.byteLength(subject, "utf8")
  if (bytes < 1 || bytes > 128) return invalid("billing_subject_too_long", "billing_subject must be 1 to 128 bytes")
  if (!lookups.ownsBillingSubject(subject)) {
    return invalid("billing_subject_not_owned", "billing_subject belongs to another user")
  }
  return Result.succeed(subject)
}

const judgeRunner = (
  publicId: unknown,
  lookups: ShellLookups
): Result.Result<RunnerInfo | null, Invalid | Absent | StateConflict> => {
  if (!given(publicId)) return Result.succeed(null)
  if (typeof publicId !== "string") {
    return invalid("validation_failed", "default_runner_executor_public_id must be a runner public id")
  }
  const runner = lookups.runner(publicId)
  if (runner === undefined) return Result.fail(new Absent({ code: "runner_not_found", message: "No such runner" }))
  if (!runner.eligible) {
    return Result.fail(
      new StateConflict({ code: "runner_not_eligible", message: "That runner is not live or not eligible for you" })
    )
  }
  return Result.succeed(runner)
}

const judgeFallbacks = (
  fallbacks: unknown,
  lookups: ShellLookups
): Result.Result<ReadonlyArray<string> | null, Invalid> => {
  if (!given(fallbacks)) return Result.succeed(null)
  if (
    !Array.isArray(fallbacks) ||
    fallbacks.length > 16 ||
    !fallbacks.every((ref) => typeof ref === "string" && lookups.model(ref)) ||
    new Set(fallbacks).size !== fallbacks.length
  ) {
    return invalid("validation_failed", "fallback_models must be at most 16 distinct catalog models")
  }
  return Result.succeed(fallbacks as ReadonlyArray<string>)
}

/**
 * Judges the create shell (the `run` member's own fields; its `steps` are left to the compiler).
 * The prompt template check (assembly) comes after the steps: see Compiler.ts `compileCreate`.
 */
export const judgeShell = (
  body: Readonly<Record<string, unknown>>,
  lookups: ShellLookups
): Result.Result<RunShell, ShellRefusal> =>
  Result.gen(function* () {
    const raw = rawGraphRefusal(body, "run.")
    if (raw !== undefined) return yield* Result.fail(raw)
    const mode = body.approval_mode
    if (typeof mode !== "string" || !approvalModes.has(mode)) {
      return yield* invalid("invalid_approval_mode", "approval_mode must be bypass, ask or rules")
    }
    const approvalRules = yield* judgeRules(body.approval_rules)
    const mechanism = body.prompt_mechanism ?? "raw"
    if (typeof mechanism !== "string" || !mechanisms.has(mechanism)) {
      return yield* invalid("invalid_prompt_mechanism", "prompt_mechanism must be raw, default or assembly")
    }
    const billingSubject = yield* judgeBillingSubject(body.billing_subject, lookups)
    const defaultRunner = yield* judgeRunner(body.default_runner_executor_public_id, lookups)
    const speaker = body.speaker_public_id
    if (given(speaker) && typeof speaker !== "string") {
      return yield* invalid("validation_failed", "speaker_public_id must be a user public id")
    }
    if (typeof speaker === "string" && !lookups.controlsSpeaker(speaker)) {
      return yield* Result.fail(
        new NotPermitted({ code: "not_authorized", message: "You do not control that speaker" })
      )
    }
    const fallbackModels = yield* judgeFallbacks(body.fallback_models, lookups)
    if (given(body.model_selection)) return yield* invalid("validation_failed", "model_selection must be null")
    return {
      approvalMode: mode as ApprovalMode,
      approvalRules,
      promptMechanism: mechanism as PromptMechanism,
      billingSubject,
      defaultRunner,
      speakerId: typeof speaker === "string" ? speaker : null,
      fallbackModels
    }
  })

/** The append body's own check (after the revision and tip checks): raw graph names at its root. */
export const judgeAppendShell = (body: unknown): AuthoringRefused | undefined =>
  isObject(body) ? rawGraphRefusal(body, "") : undefined
