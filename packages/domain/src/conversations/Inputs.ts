// A conversation's input queue (supplement "Inputs", "Queue, drain, steering"): create (judged
// here for what needs the catalog and the people, then accepted by the actor, which holds the
// bound and the fences and drains), the queue read, edits (re-judged), deletes, reorder and the
// materialization read. The actor decides everything that depends on the queue's state.

import type { ReplyPlan } from "@troupe/machines/conversation/context"
import { conversationEffects } from "@troupe/machines/conversation/effects"
import type { AcceptedInput, ConversationEvent } from "@troupe/machines/conversation/events"
import { isUuid, newPublicId, newReplyIds } from "@troupe/storage/Ids"
import { withRepositories } from "@troupe/storage/Repositories"
import {
  type ConversationRow,
  ConversationsRepository,
  type InputRow,
  type SpeakerRow
} from "@troupe/storage/repositories/Conversations"
import { UploadsRepository } from "@troupe/storage/repositories/Uploads"
import { Context, Effect, Layer } from "effect"
import type { Caller } from "../accounts/Caller.ts"
import { renderConfiguration } from "../agents/AgentConfiguration.ts"
import { tenYearsAfter } from "../kernel/Calendar.ts"
import { now } from "../kernel/Now.ts"
import { Absent, BadParameter, Invalid, NotPermitted, Stale, StateConflict } from "../kernel/Refusals.ts"
import { ModelCatalog } from "../models/ModelCatalog.ts"
import { contactRefusalOf } from "./Contact.ts"
import { Conversations, type Refused, type Standing } from "./Conversations.ts"
import { engineOf } from "./Engine.ts"
import { unarchived } from "./Settings.ts"
import { levelOf } from "./Standing.ts"
import { chainOf } from "./Timeline.ts"
import { type InputView, inputView, type Person } from "./Views.ts"

/** What an input create carries (the contract's members). */
export interface InputMembers {
  readonly kind?: unknown
  readonly text?: string | null | undefined
  readonly attachments?: ReadonlyArray<unknown> | null | undefined
  readonly model?:
    | { readonly model: string; readonly reasoning_enabled?: boolean | null; readonly reasoning_effort?: string | null }
    | null
    | undefined
  readonly fallback_models?: ReadonlyArray<string> | null | undefined
  readonly steps?: ReadonlyArray<unknown> | null | undefined
  readonly visible_in_context?: boolean | undefined
  readonly history?: Readonly<Record<string, unknown>> | null | undefined
  readonly inline?: unknown
  readonly deliver_at?: string | null | undefined
  readonly deliver_in?: string | null | undefined
  readonly delivery_mode?: string | null | undefined
  readonly answering_user_public_id?: unknown
  readonly speaker_public_id?: unknown
  readonly expected_context_revision?: number | null | undefined
  readonly expected_tail_turn_public_id?: string | null | undefined
  readonly expected_steering_run_public_id?: string | null | undefined
  readonly expected_lock_version?: number | undefined
  readonly [member: string]: unknown
}

/** Reply members stored on the row as given. */
const storedReplyMembers = [
  "model",
  "configuration",
  "tool_names",
  "approval_mode",
  "context_mode",
  "history",
  "execution_declaration",
  "model_selection",
  "fallback_models",
  "steps",
  "variables",
  "reasoning_replay"
]

/** Members only a reply takes: a message naming one is refused by name. */
const replyLaneMembers = [...storedReplyMembers, "inline", "answering_user_public_id"]

/** Members stored on the row as given (the rest are columns or resolved). */
const storedMembers = [...storedReplyMembers, "visible_in_context"]

const frozenMembers = ["kind", "role", "answering_user_public_id", "speaker_public_id"]
const twoMinutes = 2 * 60 * 1000
const durationUnits: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/** A party to an acceptance as it judges and shows one (a people row, or the caller). */
type Party = Person & Pick<SpeakerRow, "configuration">

/** The caller as authentication read it: no statement reads its row again. */
const personOf = ({ user }: Caller): Party => ({
  id: user.id,
  public_id: user.publicId,
  handle: user.handle,
  kind: user.kind,
  display_name: user.displayName,
  configuration: user.configuration
})

const invalid = (code: Invalid["code"], message: string) => new Invalid({ code, message })
const given = (members: InputMembers, name: string) => members[name] !== undefined && members[name] !== null

/** The stored context intent (echoed as context_options; history stays top-level too). */
const contextOptionsOf = (history: unknown, inline: unknown) => ({
  ...(history == null ? {} : { history }),
  ...(inline === undefined ? {} : { inline })
})

/** When a row is due: deliver_at (with its offset) or deliver_in from now; null when due at once. */
export const dueAtOf = (members: InputMembers, at: Date) =>
  Effect.gen(function* () {
    const { deliver_at, deliver_in } = members
    if (deliver_at != null && deliver_in != null) {
      return yield* invalid("deliver_at_ambiguous", "give deliver_at or deliver_in, not both")
    }
    if (deliver_in != null) {
      const amount = Number(deliver_in.slice(0, -1)) * durationUnits[deliver_in.at(-1)!]!
      if (at.getTime() + amount > tenYearsAfter(at.getTime()))
        return yield* invalid("deliver_at_too_far", "deliver_in is more than 10 years away")
      return amount === 0 ? null : at.getTime() + amount
    }
    if (deliver_at == null) return undefined
    const parsed = /(Z|[+-]\d{2}:?\d{2})$/.test(deliver_at) ? Date.parse(deliver_at) : Number.NaN
    if (Number.isNaN(parsed)) {
      return yield* new BadParameter({
        code: "parameter_invalid",
        message: "deliver_at must be an instant with its offset"
      })
    }
    if (parsed < at.getTime() - twoMinutes) return yield* invalid("deliver_at_in_past", "deliver_at is in the past")
    if (parsed > tenYearsAfter(at.getTime()))
      return yield* invalid("deliver_at_too_far", "deliver_at is more than 10 years away")
    return parsed <= at.getTime() ? null : parsed
  })

/**
 * What the kernel's mail (domain/runs/ConversationMail.ts) stamps on an input it sends: its origin
 * (agent: a peer send; child: a spawn's first input) and the members stored beside the others
 * (the sender fields, the callback). A peer send takes the spec's peer model order.
 */
export interface KernelStamp {
  readonly origin: "agent" | "child"
  readonly members: Readonly<Record<string, unknown>>
}

export class Inputs extends Context.Service<
  Inputs,
  {
    /**
     * Accepts an input; `idempotencyKey` is kept on the row, and a row the key already made (its
     * receipt lost with the process that accepted it) is answered again instead of a second one.
     */
    readonly create: (
      caller: Caller,
      workspaceId: string,
      conversationId: string,
      members: InputMembers,
      idempotencyKey?: string,
      stamp?: KernelStamp
    ) => Effect.Effect<InputView, Refused>
    readonly list: (
      caller: Caller,
      workspaceId: string,
      conversationId: string
    ) => Effect.Effect<{ inputs: ReadonlyArray<InputView>; input_queue: { limit: number; held: number } }, Refused>
    readonly edit: (
      caller: Caller,
      workspaceId: string,
      conversationId: string,
      inputId: string,
      members: InputMembers
    ) => Effect.Effect<InputView, Refused>
    readonly remove: (
      caller: Caller,
      workspaceId: string,
      conversationId: string,
      inputId: string
    ) => Effect.Effect<void, Refused>
    readonly reorder: (
      caller: Caller,
      workspaceId: string,
      conversationId: string,
      inputIds: ReadonlyArray<string>
    ) => Effect.Effect<{ inputs: ReadonlyArray<InputView>; input_queue: { limit: number; held: number } }, Refused>
    readonly materialization: (
      caller: Caller,
      workspaceId: string,
      conversationId: string,
      inputId: string,
      includeHidden: boolean
    ) => Effect.Effect<
      {
        input_public_id: string
        turn_public_id: string | null
        variant_public_id: string | null
        run_public_id: string | null
      },
      Refused
    >
  }
>()("@troupe/domain/conversations/Inputs") {
  static readonly layer = Layer.effect(
    Inputs,
    Effect.gen(function* () {
      const conversations = yield* Conversations
      const catalog = yield* ModelCatalog
      const repository = yield* ConversationsRepository
      const uploads = yield* UploadsRepository
      const db = yield* withRepositories(ConversationsRepository, UploadsRepository)

      const notFound = () => new Absent({ code: "not_found", message: "No such input" })

      const serves = (model: string | null) =>
        model !== null && (catalog.find(model)?.workloads.includes("text_generation") ?? false)

      /**
       * A model block: a provider/model reference (422 validation_failed); a catalog model judges
       * its reasoning controls (one it does not take, or an effort outside its vocabulary, 422).
       * One not in the catalog is accepted: its head blocks unknown_model.
       */
      const judgeModel = (model: InputMembers["model"]) =>
        Effect.gen(function* () {
          if (model == null) return
          if (!/^[^/\s]+\/\S+$/.test(model.model)) {
            return yield* invalid("validation_failed", "model must be a provider/model reference")
          }
          const reasoning = catalog.find(model.model)?.reasoning
          if (reasoning === undefined) return
          const effort = model.reasoning_effort ?? null
          if (reasoning === null && (model.reasoning_enabled === true || effort !== null)) {
            return yield* invalid("validation_failed", `model: ${model.model} takes no reasoning controls`)
          }
          if (reasoning !== null && effort !== null && !reasoning.efforts.includes(effort)) {
            return yield* invalid(
              "validation_failed",
              `model.reasoning_effort must be one of ${reasoning.efforts.join(", ")}`
            )
          }
        })

      /**
       * Nonempty steps need the run-backed engine (Engine.ts): a direct-engine addressee refuses
       * them (422); a run-backed one compiles them when the reply's head is judged (targets are
       * frozen then; steps that no longer compile block the head invalid_steps).
       */
      const judgeSteps = (
        steps: InputMembers["steps"],
        answerer: { readonly kind: string; readonly configuration: unknown }
      ) =>
        (steps?.length ?? 0) === 0 || engineOf(answerer) === "run"
          ? Effect.void
          : Effect.fail(invalid("validation_failed", "steps need a run-backed reply; this addressee answers directly"))

      /** The addressee's model (spec "Model selection"), judged against the catalog. */
      /**
       * The addressee's model (spec "Model selection"). The stored answerer: the row's model, its
       * default_model, the conversation's last reply model. Another addressee: its default_model,
       * its last reply model in this conversation, the conversation's, then the submitted one.
       */
      const planOf = (
        row: ConversationRow,
        answerer: {
          readonly id: bigint
          readonly public_id: string
          readonly configuration: unknown
          readonly kind: string
        },
        members: InputMembers,
        peer = false
      ) =>
        Effect.gen(function* () {
          const configuration = answerer.kind === "agent" ? renderConfiguration(answerer.configuration) : undefined
          const submitted = members.model?.model ?? null
          const defaultModel = configuration?.default_model ?? null
          const stored = answerer.id === row.answerer_id && !peer
          const addresseeLast =
            stored || defaultModel !== null
              ? null
              : ((yield* db(repository.lastReplyModelOf({ conversationId: row.id, answererId: answerer.id })))
                  ?.model_ref ?? null)
          const model = stored
            ? (submitted ?? defaultModel ?? row.last_reply_model)
            : (defaultModel ?? addresseeLast ?? row.last_reply_model ?? submitted)
          // The input's list replaces the answerer's ([] asks for no fallback); absent or null keeps it.
          const fallbacks = members.fallback_models ?? configuration?.fallback_models ?? []
          const fallback = fallbacks[0] ?? null
          return {
            model,
            modelKnown: serves(model),
            fallbackModel: serves(fallback) ? fallback : null,
            answererId: answerer.public_id,
            engine: engineOf(answerer)
          } satisfies ReplyPlan
        })

      const inputIn = (target: Standing, inputId: string) =>
        Effect.gen(function* () {
          const row = isUuid(inputId) ? yield* db(repository.findInput(inputId)) : undefined
          if (!row || row.conversation_id !== target.row.id || row.state === "consumed") return yield* notFound()
          return row
        })

      const viewsOf = (target: Standing, rows: ReadonlyArray<InputRow>) =>
        Effect.map(
          conversations.people(
            rows.flatMap((row) => [
              row.author_id,
              row.speaker_id,
              ...(row.answerer_id === null ? [] : [row.answerer_id])
            ])
          ),
          (people) => rows.map((row) => inputView(row, target.row.public_id, people))
        )

      const queueOf = (target: Standing) =>
        Effect.gen(function* () {
          const rows = yield* db(repository.queueOf(target.row.id))
          const held = rows.filter((row) => row.origin !== "task_result" && row.origin !== "child").length
          return { inputs: yield* viewsOf(target, rows), input_queue: { limit: 16, held } }
        })

      /** Attachments as upload descriptors, in order: each an upload of the caller's. */
      const attachmentsOf = (caller: Caller, attachments: ReadonlyArray<unknown>) =>
        Effect.forEach(attachments, (attachment, index) =>
          Effect.gen(function* () {
            const publicId =
              typeof attachment === "string"
                ? attachment
                : typeof attachment === "object" && attachment !== null
                  ? String(
                      (attachment as { upload_public_id?: unknown; public_id?: unknown }).upload_public_id ??
                        (attachment as { public_id?: unknown }).public_id
                    )
                  : ""
            const upload = isUuid(publicId) ? yield* db(uploads.findUpload(publicId)) : undefined
            if (!upload || upload.creator_user_id !== caller.user.id) {
              return yield* invalid("unknown_input_upload", `attachments[${index}] is not an upload of yours`)
            }
            return {
              public_id: upload.public_id,
              filename: upload.filename,
              content_type: upload.content_type,
              byte_size: upload.byte_size
            }
          })
        )

      const send = (target: Standing, event: ConversationEvent) => conversations.send(target, event)

      /**
       * expected_tail_turn_public_id names the newest visible turn of the timeline (an inherited
       * one too), else 409 stale_timeline. When that turn is the conversation's own newest turn the
       * actor fences it again in the acceptance's step (so a turn opened meanwhile is caught).
       */
      const tailFence = (target: Standing, expected: string | null | undefined) =>
        Effect.gen(function* () {
          if (expected == null) return {}
          const chain = yield* db(chainOf(repository, target.row))
          const newest = (includeHidden: boolean) =>
            Effect.map(
              db(
                repository.timeline({
                  chain,
                  afterPosition: null,
                  beforePosition: null,
                  includeHidden,
                  from: "newest",
                  limit: 1
                })
              ),
              (rows) => rows[0]
            )
          const visible = yield* newest(false)
          if (visible?.public_id !== expected) {
            return yield* new Stale({ code: "stale_timeline", message: "expected_tail_turn_public_id is not the tail" })
          }
          const tail = yield* newest(true)
          return tail?.public_id === expected && tail.own ? { expectedTailTurnId: expected } : {}
        })

      return Inputs.of({
        create: (caller, workspaceId, conversationId, members, idempotencyKey, stamp) =>
          Effect.gen(function* () {
            const {
              target,
              answerer: storedAnswerer,
              madeInputPublicId
            } = yield* conversations.acceptance(caller, workspaceId, conversationId, idempotencyKey)
            const made = madeInputPublicId === null ? undefined : yield* db(repository.findInput(madeInputPublicId))
            if (made !== undefined) {
              const [view] = yield* viewsOf(target, [made])
              // As accepted: a held steer, or pending (the drain may have consumed or blocked it since).
              return { ...view!, state: made.state === "steering" ? "steering" : "pending", blocked_reason: null }
            }
            yield* unarchived(target)
            const kind = members.kind === "message" ? "message" : "direct_reply"
            if (kind === "message") {
              const named = replyLaneMembers.find((name) => given(members, name))
              if (named !== undefined) return yield* invalid("validation_failed", `${named} is not taken by a message`)
            }
            const mode = members.delivery_mode ?? "queue"
            const steer = mode !== "queue"
            const accountId = target.workspaceAccountId
            const self = personOf(caller)
            let answerer: Party = storedAnswerer
            if (kind === "direct_reply" && typeof members.answering_user_public_id === "string") {
              const named = members.answering_user_public_id
              const found = isUuid(named)
                ? yield* conversations.principal(accountId, { publicId: named })
                : yield* conversations.principal(accountId, { handle: named })
              if (found === undefined) {
                const system = yield* db(repository.systemUser(accountId))
                const bare = named.replace(/^@/, "")
                return yield* system !== undefined && (bare === system.handle || named === system.public_id)
                  ? invalid("answerer_not_eligible", "the system user answers nobody")
                  : invalid("principal_unknown", "answering_user_public_id names nobody")
              }
              const level = levelOf(target.row, { user: found })
              if (
                found.kind !== "agent" ||
                found.status !== "active" ||
                level !== "full" ||
                !(yield* conversations.mayWrite(target, found))
              ) {
                return yield* invalid("answerer_not_eligible", "answering_user_public_id may not answer here")
              }
              answerer = found
            }
            if (kind === "direct_reply") yield* contactRefusalOf(target, self, answerer)
            const speakerId = members.speaker_public_id
            let speaker: Person = self
            if (typeof speakerId === "string" && speakerId !== self.public_id) {
              const found = isUuid(speakerId)
                ? yield* conversations.principal(accountId, { publicId: speakerId })
                : undefined
              // An agent caller's human is its steward.
              if (found === undefined || self.kind !== "agent" || caller.human.id !== found.id) {
                return yield* new NotPermitted({
                  code: "not_authorized",
                  message: "speaker_public_id may not be named"
                })
              }
              speaker = found
            }
            yield* judgeSteps(members.steps, answerer)
            const at = yield* now
            if (steer && (members.deliver_at != null || members.deliver_in != null)) {
              return yield* invalid("deliver_at_not_steerable", "a steer is delivered at the next round, not at a time")
            }
            const dueAt = (yield* dueAtOf(members, at)) ?? null
            if (steer && (members.attachments?.length ?? 0) > 0) {
              return yield* invalid("attachments_not_steerable", "a steer takes no attachments")
            }
            // The guard's run is judged by the actor (409 steering_target_changed), after every 422.
            if (members.expected_steering_run_public_id != null && !steer) {
              return yield* invalid("steering_guard_requires_steer", "expected_steering_run_public_id needs a steer")
            }
            yield* judgeModel(members.model)
            const attachments = yield* attachmentsOf(caller, members.attachments ?? [])
            const inputId = newPublicId()
            const stored = Object.fromEntries(
              storedMembers.filter((name) => given(members, name)).map((name) => [name, members[name]])
            )
            const reply =
              kind === "direct_reply" ? yield* planOf(target.row, answerer, members, stamp?.origin === "agent") : null
            const origin = stamp?.origin ?? (self.kind === "human" ? "person" : "agent")
            const accepted: AcceptedInput = {
              inputId,
              kind,
              kernel: false,
              role: "user",
              deliveryMode: mode as AcceptedInput["deliveryMode"],
              dueAt,
              authorId: self.public_id,
              reply,
              ids: newReplyIds(),
              row: {
                text: members.text ?? "",
                origin,
                author_id: String(caller.user.id),
                idempotency_key: idempotencyKey ?? null,
                speaker_id: String(speaker.id),
                answerer_id: kind === "direct_reply" ? String(answerer.id) : null,
                members: {
                  ...stored,
                  ...stamp?.members,
                  ...(reply?.model == null ? {} : { model: { ...(members.model ?? {}), model: reply.model } }),
                  delivery_mode: mode,
                  attachments,
                  context_options: contextOptionsOf(members.history, members.inline)
                }
              },
              item: {
                input_public_id: inputId,
                kind,
                delivery_mode: mode,
                origin,
                author_public_id: self.public_id,
                answering_user_public_id: kind === "direct_reply" ? answerer.public_id : null,
                deliver_at: dueAt === null ? null : new Date(dueAt).toISOString()
              }
            }
            const { replies } = yield* send(target, {
              type: "input.accept",
              at: at.getTime(),
              input: accepted,
              ...(members.expected_context_revision == null
                ? {}
                : { expectedContextRevision: members.expected_context_revision }),
              ...(yield* tailFence(target, members.expected_tail_turn_public_id)),
              ...(members.expected_steering_run_public_id == null
                ? {}
                : { expectedSteeringRunId: members.expected_steering_run_public_id })
            })
            // The row as the acceptance inserted it (the drain in the same step may have consumed it).
            const inserted = replies[conversationEffects.insertInput] as InputRow | undefined
            if (inserted === undefined) return yield* Effect.die(new Error("the acceptance wrote no input row"))
            return inputView(inserted, target.row.public_id, new Map([self, speaker, answerer].map((p) => [p.id, p])))
          }),
        list: (caller, workspaceId, conversationId) =>
          Effect.flatMap(conversations.standing(caller, workspaceId, conversationId, "read"), queueOf),
        edit: (caller, workspaceId, conversationId, inputId, members) =>
          Effect.gen(function* () {
            const target = yield* conversations.standing(caller, workspaceId, conversationId, "write")
            yield* unarchived(target)
            const row = yield* inputIn(target, inputId)
            // Every 422 of the body first (the supplement's standing order), then the row's 409s.
            const frozen = frozenMembers.find((name) => members[name] !== undefined)
            if (frozen !== undefined) return yield* invalid("validation_failed", `${frozen} is frozen at creation`)
            const held = row.state === "steering"
            if (members.delivery_mode != null) {
              if (held && members.delivery_mode !== "steer_now") {
                return yield* invalid("validation_failed", "delivery_mode of a held steer can only become steer_now")
              }
              if (!held && members.delivery_mode !== row.delivery_mode) {
                return yield* invalid("validation_failed", "delivery_mode of a queued row cannot change")
              }
            }
            const edits = Object.keys(members).filter(
              (name) => members[name] !== undefined && name !== "expected_lock_version" && name !== "delivery_mode"
            )
            const promotion = held && members.delivery_mode != null && edits.length === 0
            if (row.kind === "message") {
              const named = replyLaneMembers.find((name) => given(members, name))
              if (named !== undefined) return yield* invalid("validation_failed", `${named} is not taken by a message`)
            }
            yield* judgeModel(members.model)
            const addressee = row.answerer_id ?? target.row.answerer_id
            yield* judgeSteps(members.steps, (yield* conversations.people([addressee])).get(addressee)!)
            const steer = row.delivery_mode !== "queue"
            if (steer && (members.deliver_at != null || members.deliver_in != null)) {
              return yield* invalid("deliver_at_not_steerable", "a steer is delivered at the next round, not at a time")
            }
            if (steer && (members.attachments?.length ?? 0) > 0) {
              return yield* invalid("attachments_not_steerable", "a steer takes no attachments")
            }
            const at = yield* now
            // Times: absent keeps, a time reschedules, deliver_in 0s (or a time now) is due now.
            const dueAt = yield* dueAtOf(members, at)
            // Attachments: absent or null keeps the binding, [] unbinds, a list rebinds in order.
            const attachments =
              members.attachments === undefined || members.attachments === null
                ? undefined
                : yield* attachmentsOf(caller, members.attachments)
            if (row.origin === "task_result" || row.origin === "child") {
              return yield* new StateConflict({ code: "kernel_input_immutable", message: "Kernel rows are immutable" })
            }
            const expected =
              members.expected_lock_version === undefined ? {} : { expectedLockVersion: members.expected_lock_version }
            if (promotion) {
              yield* send(target, { type: "input.promote", inputId: row.public_id, ...expected })
            } else if (held) {
              return yield* new StateConflict({ code: "steering_held", message: "A held steer takes only steer_now" })
            } else if (edits.length > 0 || members.delivery_mode == null) {
              const stored = row.members as Record<string, unknown>
              // Each supplied member replaces its stored intent whole (history, reasoning_replay,
              // steps: [] clears); steps null keeps.
              const changedMembers = Object.fromEntries(
                storedMembers
                  .filter((name) => members[name] !== undefined && !(name === "steps" && members.steps === null))
                  .map((name) => [name, members[name]])
              )
              const merged: Record<string, unknown> = {
                ...stored,
                ...changedMembers,
                ...(attachments === undefined ? {} : { attachments })
              }
              const storedOptions = (stored.context_options ?? {}) as { readonly inline?: unknown }
              merged.context_options = contextOptionsOf(merged.history, storedOptions.inline)
              const conversationRow = target.row
              const answererId = row.answerer_id ?? conversationRow.answerer_id
              const answerer = (yield* conversations.people([answererId])).get(answererId)!
              const reply =
                row.kind === "direct_reply"
                  ? yield* planOf(conversationRow, answerer, {
                      ...(merged as InputMembers),
                      model: (merged.model ?? null) as InputMembers["model"]
                    })
                  : undefined
              if (reply?.model != null) {
                merged.model = { ...((merged.model ?? {}) as Record<string, unknown>), model: reply.model }
              }
              yield* send(target, {
                type: "input.edit",
                at: at.getTime(),
                inputId: row.public_id,
                ...expected,
                changes: {
                  // Text: "" clears the words and keeps the pictures (attachments).
                  ...(members.text == null ? {} : { text: members.text }),
                  members: merged
                },
                ...(reply === undefined ? {} : { reply }),
                ...(dueAt === undefined ? {} : { dueAt })
              })
            }
            const after = (yield* db(repository.findInput(row.public_id)))!
            const [view] = yield* viewsOf(target, [after])
            return view!
          }),
        remove: (caller, workspaceId, conversationId, inputId) =>
          Effect.gen(function* () {
            const target = yield* conversations.standing(caller, workspaceId, conversationId, "write")
            yield* unarchived(target)
            const row = yield* inputIn(target, inputId)
            // A spawn's or a schedule's first input (origin child) is the kernel's as a task_result is.
            if (row.origin === "task_result" || row.origin === "child") {
              return yield* new StateConflict({ code: "kernel_input_immutable", message: "Kernel rows are immutable" })
            }
            yield* send(target, { type: "input.delete", inputId: row.public_id })
          }),
        reorder: (caller, workspaceId, conversationId, inputIds) =>
          Effect.gen(function* () {
            const target = yield* conversations.standing(caller, workspaceId, conversationId, "write")
            yield* unarchived(target)
            const self = (yield* conversations.people([caller.user.id])).get(caller.user.id)!
            const kernel = (yield* db(repository.queueOf(target.row.id))).filter(
              (row) => row.origin === "task_result" || row.origin === "child"
            )
            if (kernel.some((row) => inputIds.includes(row.public_id))) {
              return yield* new StateConflict({
                code: "kernel_input_immutable",
                message: "Kernel rows keep their place"
              })
            }
            yield* send(target, { type: "input.reorder", authorId: self.public_id, inputIds })
            return yield* queueOf(target)
          }),
        materialization: (caller, workspaceId, conversationId, inputId, includeHidden) =>
          Effect.gen(function* () {
            const target = yield* conversations.standing(caller, workspaceId, conversationId, "read")
            const row = isUuid(inputId) ? yield* db(repository.findInput(inputId)) : undefined
            if (!row || row.conversation_id !== target.row.id) return yield* notFound()
            if (row.turn_public_id !== null) {
              const turn = yield* db(repository.findTurn(row.turn_public_id))
              if (turn === undefined || (turn.visibility === "hidden" && !includeHidden)) return yield* notFound()
            }
            const variant =
              row.variant_public_id === null ? undefined : yield* db(repository.findVariant(row.variant_public_id))
            return {
              input_public_id: row.public_id,
              turn_public_id: row.turn_public_id,
              variant_public_id: row.variant_public_id,
              run_public_id: variant?.run_public_id ?? null
            }
          })
      })
    })
  )
}
