// A schedule's members as judged at creation and at an edit (supplement "Schedules"): name,
// prompt, the policy its executions' first inputs carry (answerer, speaker, configuration, tool
// names, approval mode, model, model selection, fallback models) and the provenance pair. The
// stored policy keeps the answerer's and speaker's internal ids beside their public ids.
import { isUuid } from "@troupe/storage/Ids"
import { Effect } from "effect"
import type { Caller } from "../accounts/Caller.ts"
import { contactRefusalOf } from "../conversations/Contact.ts"
import type { Conversations, Standing } from "../conversations/Conversations.ts"
import { levelOf } from "../conversations/Standing.ts"
import { Invalid, NotPermitted, TooLarge } from "../kernel/Refusals.ts"
import type { ModelCatalog } from "../models/ModelCatalog.ts"

/** The policy as stored on the row (what an execution's first input carries). */
export interface StoredPolicy {
  readonly answering_user_id: string | null
  readonly answering_user_public_id: string | null
  readonly speaker_id: string | null
  readonly speaker_public_id: string | null
  readonly configuration: Readonly<Record<string, unknown>> | null
  readonly tool_names: ReadonlyArray<string> | null
  readonly approval_mode: string | null
  readonly model: Readonly<Record<string, unknown>> | null
  readonly model_selection: Readonly<Record<string, unknown>> | null
  readonly fallback_models: ReadonlyArray<string> | null
}

const emptyPolicy: StoredPolicy = {
  answering_user_id: null,
  answering_user_public_id: null,
  speaker_id: null,
  speaker_public_id: null,
  configuration: null,
  tool_names: null,
  approval_mode: null,
  model: null,
  model_selection: null,
  fallback_models: null
}

export type Members = Readonly<Record<string, unknown>>

const invalid = (message: string) => new Invalid({ code: "validation_failed", message })
const isObject = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)
const has = (members: Members, name: string) => members[name] !== undefined

/** name: at most 255 characters (null clears it). */
export const judgeName = (value: unknown) =>
  value === null || (typeof value === "string" && [...value].length <= 255)
    ? Effect.succeed(value as string | null)
    : Effect.fail(invalid("name must be a string of at most 255 characters"))

/** An execution's first input takes the prompt as its text: an input's bound, 1 MiB (else 413). */
const promptLimitBytes = 1024 * 1024
/** The stored policy's bound in canonical JSON (else 413). */
const policyLimitBytes = 64 * 1024

/** prompt: a nonblank string of at most 1 MiB. */
export const judgePrompt = (value: unknown) =>
  typeof value !== "string" || value.trim() === ""
    ? Effect.fail(invalid("prompt must be a nonblank string"))
    : Buffer.byteLength(value) > promptLimitBytes
      ? Effect.fail(new TooLarge({ code: "content_too_large", message: "prompt is over 1 MiB" }))
      : Effect.succeed(value)

/** The model members an edit may send alone (the intent then stays). */
const reasoningControls = new Set(["reasoning_enabled", "reasoning_effort"])

/**
 * The policy members given in `members`, judged and merged over `stored` (creation: null, the
 * empty policy; an edit: the stored one, whose omitted members keep their values).
 */
export const judgePolicy = (
  caller: Caller,
  standing: Standing,
  members: Members,
  stored: StoredPolicy | null,
  services: { readonly conversations: Conversations["Service"]; readonly catalog: ModelCatalog["Service"] }
) =>
  Effect.gen(function* () {
    const { conversations, catalog } = services
    const editing = stored !== null
    const base = stored ?? emptyPolicy
    let policy: StoredPolicy = base
    const answerer = members.answering_user_public_id
    if (answerer === null) policy = { ...policy, answering_user_id: null, answering_user_public_id: null }
    else if (answerer !== undefined) {
      const found =
        typeof answerer !== "string"
          ? undefined
          : isUuid(answerer)
            ? yield* conversations.principal(standing.workspaceAccountId, { publicId: answerer })
            : yield* conversations.principal(standing.workspaceAccountId, { handle: answerer })
      const level = found === undefined ? "none" : levelOf(standing.row, { user: found })
      if (
        found === undefined ||
        found.kind !== "agent" ||
        found.status !== "active" ||
        level !== "full" ||
        !(yield* conversations.mayWrite(standing, found))
      ) {
        return yield* new Invalid({
          code: "answerer_not_eligible",
          message: "answering_user_public_id may not answer here"
        })
      }
      const self = (yield* conversations.people([caller.user.id])).get(caller.user.id)!
      yield* contactRefusalOf(standing, self, found)
      policy = { ...policy, answering_user_id: String(found.id), answering_user_public_id: found.public_id }
    }
    const speaker = members.speaker_public_id
    if (speaker === null) policy = { ...policy, speaker_id: null, speaker_public_id: null }
    else if (speaker !== undefined) {
      const self = (yield* conversations.people([caller.user.id])).get(caller.user.id)!
      const found =
        speaker === self.public_id
          ? self
          : typeof speaker === "string" && isUuid(speaker)
            ? yield* conversations.principal(standing.workspaceAccountId, { publicId: speaker })
            : undefined
      if (found === undefined || (found.id !== self.id && (self.kind !== "agent" || self.steward_id !== found.id))) {
        return yield* new NotPermitted({ code: "not_authorized", message: "speaker_public_id may not be named" })
      }
      policy = { ...policy, speaker_id: String(found.id), speaker_public_id: found.public_id }
    }
    if (has(members, "configuration")) {
      const value = members.configuration
      if (value !== null && !isObject(value)) return yield* invalid("configuration must be an object")
      policy = { ...policy, configuration: value as StoredPolicy["configuration"] }
    }
    if (has(members, "tool_names")) {
      const value = members.tool_names
      if (value !== null && !(Array.isArray(value) && value.every((name) => typeof name === "string" && name !== ""))) {
        return yield* invalid("tool_names must be an array of names")
      }
      policy = { ...policy, tool_names: value as StoredPolicy["tool_names"] }
    }
    if (has(members, "approval_mode")) {
      const value = members.approval_mode
      if (value !== null && typeof value !== "string") return yield* invalid("approval_mode must be a string")
      policy = { ...policy, approval_mode: value as string | null }
    }
    if (has(members, "model")) {
      const value = members.model
      if (value === null) policy = { ...policy, model: null }
      else {
        if (!isObject(value)) return yield* invalid("model must be an object")
        // An edit with only reasoning controls keeps the intent it had: its model, or none chosen.
        const reasoningOnly = editing && Object.keys(value).every((name) => reasoningControls.has(name))
        const merged: Readonly<Record<string, unknown>> = reasoningOnly ? { ...(base.model ?? {}), ...value } : value
        const ref = merged.model
        if ((ref !== undefined || !reasoningOnly) && (typeof ref !== "string" || catalog.find(ref) === undefined)) {
          return yield* invalid("model: model is not a model of the catalog")
        }
        if (merged.reasoning_enabled !== undefined && typeof merged.reasoning_enabled !== "boolean") {
          return yield* invalid("model.reasoning_enabled must be a boolean")
        }
        if (
          merged.reasoning_effort !== undefined &&
          merged.reasoning_effort !== null &&
          typeof merged.reasoning_effort !== "string"
        ) {
          return yield* invalid("model.reasoning_effort must be a string")
        }
        policy = { ...policy, model: merged }
      }
    }
    if (has(members, "model_selection")) {
      const value = members.model_selection
      if (value !== null && !isObject(value)) return yield* invalid("model_selection must be an object")
      policy = { ...policy, model_selection: value as StoredPolicy["model_selection"] }
    }
    if (has(members, "fallback_models")) {
      const value = members.fallback_models
      const refs = Array.isArray(value) ? value : []
      if (
        value !== null &&
        (!Array.isArray(value) ||
          refs.length > 16 ||
          new Set(refs).size !== refs.length ||
          !refs.every((ref) => typeof ref === "string" && catalog.find(ref) !== undefined))
      ) {
        return yield* invalid("fallback_models must be unique catalog models, at most 16")
      }
      policy = { ...policy, fallback_models: value as StoredPolicy["fallback_models"] }
    }
    if (Buffer.byteLength(JSON.stringify(policy)) > policyLimitBytes) {
      return yield* new TooLarge({ code: "content_too_large", message: "the schedule's policy is over 64 KiB" })
    }
    return policy
  })

/** source_run_public_id and source_task_key: both or neither. */
export const judgeSource = (members: Members) => {
  const run = members.source_run_public_id ?? null
  const key = members.source_task_key ?? null
  if (run === null && key === null) return Effect.succeed({ run: null, key: null })
  if (typeof run !== "string" || !isUuid(run) || typeof key !== "string" || key === "") {
    return Effect.fail(invalid("source_run_public_id and source_task_key are supplied together"))
  }
  return Effect.succeed({ run, key })
}
