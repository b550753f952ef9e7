// A conversation's turns (supplement "Turns and variants"): the timeline window with inherited
// entries, turn and variant reads, and the content verbs (edit, regeneration, activation,
// visibility, DELETE of the tail, variant concealment, cancellation), each one event to the
// conversation's actor, whose machine judges the tail, the running reply and frozen prefixes.
import { isUuid, newPublicId } from "@troupe/storage/Ids"
import { withRepositories } from "@troupe/storage/Repositories"
import { ConversationMailRepository } from "@troupe/storage/repositories/ConversationMail"
import {
  type ConversationRow,
  ConversationsRepository,
  type TimelineTurnRow,
  type TimelineTurnWithVariants,
  type TurnRow,
  type VariantRow
} from "@troupe/storage/repositories/Conversations"
import { RunsRepository } from "@troupe/storage/repositories/Runs"
import { Context, Effect, Layer } from "effect"
import type { Caller } from "../accounts/Caller.ts"
import { flagParameter } from "../kernel/Flags.ts"
import { Idempotency, type ReceiptKey } from "../kernel/Idempotency.ts"
import { Absent, BadParameter, Invalid, StateConflict } from "../kernel/Refusals.ts"
import { ModelCatalog } from "../models/ModelCatalog.ts"
import { planHosted } from "../runs/HostedRuns.ts"
import { type VariantRuns, variantRunsOf } from "../runs/VariantRuns.ts"
import { Conversations, type Refused, type Standing } from "./Conversations.ts"
import { unarchived } from "./Settings.ts"
import { chainOf } from "./Timeline.ts"
import { type ConversationView, type TurnView, turnView, variantView } from "./Views.ts"

export interface WindowQuery {
  readonly limit?: string | undefined
  readonly after_position?: string | undefined
  readonly before_position?: string | undefined
  readonly include_hidden?: string | undefined
}

export interface RegenerationMembers {
  readonly model?:
    | { readonly model: string; readonly reasoning_enabled?: boolean | null; readonly reasoning_effort?: string | null }
    | null
    | undefined
  readonly configuration?: Readonly<Record<string, unknown>> | null | undefined
  readonly [member: string]: unknown
}

type VariantView = ReturnType<typeof variantView>

const badParameter = (message: string) => new BadParameter({ code: "parameter_invalid", message })

const position = (value: string | undefined, name: string) =>
  value === undefined
    ? Effect.succeed(null)
    : /^\d{1,9}$/.test(value)
      ? Effect.succeed(Number(value))
      : Effect.fail(badParameter(`${name} must be a turn position`))

export class Turns extends Context.Service<
  Turns,
  {
    readonly list: (
      caller: Caller,
      workspaceId: string,
      conversationId: string,
      query: WindowQuery
    ) => Effect.Effect<
      {
        turns: ReadonlyArray<TurnView>
        pagination: {
          before_position: number | null
          after_position: number | null
          has_older: boolean
          has_newer: boolean
        }
      },
      Refused
    >
    readonly show: (
      caller: Caller,
      workspaceId: string,
      conversationId: string,
      turnId: string,
      includeHidden: boolean
    ) => Effect.Effect<TurnView, Refused>
    readonly variants: (
      caller: Caller,
      workspaceId: string,
      conversationId: string,
      turnId: string
    ) => Effect.Effect<
      { variants: ReadonlyArray<VariantView>; turn: { public_id: string; inherited: boolean } },
      Refused
    >
    readonly edit: (
      caller: Caller,
      workspaceId: string,
      conversationId: string,
      turnId: string,
      text: string
    ) => Effect.Effect<TurnView, Refused>
    readonly regenerate: (
      caller: Caller,
      workspaceId: string,
      conversationId: string,
      turnId: string,
      members: RegenerationMembers
    ) => Effect.Effect<{ turn: { public_id: string; status: "running" }; variant: VariantView }, Refused>
    readonly activate: (
      caller: Caller,
      workspaceId: string,
      conversationId: string,
      turnId: string,
      variantId: string
    ) => Effect.Effect<TurnView, Refused>
    readonly conceal: (
      caller: Caller,
      workspaceId: string,
      conversationId: string,
      turnId: string,
      variantId: string,
      concealed: boolean
    ) => Effect.Effect<VariantView, Refused>
    readonly setVisibility: (
      caller: Caller,
      workspaceId: string,
      conversationId: string,
      turnId: string,
      visibility: "visible" | "hidden" | "excluded_from_context"
    ) => Effect.Effect<TurnView, Refused>
    readonly remove: (
      caller: Caller,
      workspaceId: string,
      conversationId: string,
      turnId: string
    ) => Effect.Effect<void, Refused>
    /** The regeneration acceptance kept for `key` (the caller's, on this turn), while its window lasts. */
    readonly receipt: (
      caller: Caller,
      workspaceId: string,
      conversationId: string,
      turnId: string,
      key: ReceiptKey
    ) => Effect.Effect<string, Refused>
    /** Cuts the running reply: `canceled` false when nothing was running. */
    readonly cancel: (
      caller: Caller,
      workspaceId: string,
      conversationId: string
    ) => Effect.Effect<{ conversation: ConversationView; canceled: boolean }, Refused>
  }
>()("@troupe/domain/conversations/Turns") {
  static readonly layer = Layer.effect(
    Turns,
    Effect.gen(function* () {
      const conversations = yield* Conversations
      const idempotency = yield* Idempotency
      const catalog = yield* ModelCatalog
      const repository = yield* ConversationsRepository
      const runs = yield* RunsRepository
      const db = yield* withRepositories(ConversationsRepository)

      const notFound = () => new Absent({ code: "not_found", message: "No such turn" })

      /** Write standing on a conversation that is not archived (409 conversation_archived before any 422). */
      const writable = (caller: Caller, workspaceId: string, conversationId: string) =>
        Effect.flatMap(conversations.standing(caller, workspaceId, conversationId, "write"), unarchived)

      /** The runs behind run-backed variants: their rounds and runner_effects, in one statement. */
      const runsOf = (variants: ReadonlyArray<{ readonly run_public_id: string | null }>) => {
        const runIds = [...new Set(variants.flatMap((variant) => variant.run_public_id ?? []))]
        return runIds.length === 0
          ? Effect.succeed<VariantRuns>(new Map())
          : Effect.map(db(runs.tasksOfRuns(runIds)), variantRunsOf)
      }

      /** The turns as the window shows them (their variants read with them), and one statement for their people. */
      const views = (turns: ReadonlyArray<TimelineTurnWithVariants>) =>
        Effect.gen(function* () {
          const backing = yield* runsOf(turns.flatMap((turn) => turn.variants))
          const people = yield* conversations.people(
            turns.flatMap((turn) => [turn.speaker_id, turn.answerer_id].filter((id): id is bigint => id !== null))
          )
          // The inputs the turns were born of (their sender fields), and those with a callback they answer.
          const inputIds = turns.flatMap((turn) => (turn.input_public_id === null ? [] : [turn.input_public_id]))
          const { inputs, sources } =
            turns.length === 0
              ? { inputs: [], sources: [] }
              : yield* db(
                  Effect.gen(function* () {
                    const mails = yield* ConversationMailRepository.make
                    return {
                      inputs: inputIds.length === 0 ? [] : yield* mails.inputMembers(inputIds),
                      sources: yield* mails.callbackInputsOf(turns.map((turn) => turn.public_id))
                    }
                  })
                )
          const born = new Map(inputs.map((input) => [input.public_id, input] as const))
          return turns.map((turn) =>
            turnView(
              turn,
              turn.variants,
              people,
              {
                input: turn.input_public_id === null ? undefined : born.get(turn.input_public_id),
                sources: sources.filter((source) => source.turn_public_id === turn.public_id)
              },
              backing
            )
          )
        })

      /** A turn of the conversation's timeline (its own, or inherited) with its variants, as the window reads it. */
      const turnIn = (target: Standing, turnId: string, includeHidden = true) =>
        Effect.gen(function* () {
          if (!isUuid(turnId)) return yield* notFound()
          const chain = yield* db(chainOf(repository, target.row))
          const turn = yield* db(repository.timelineTurn({ chain, publicId: turnId }))
          if (turn === undefined || (turn.visibility === "hidden" && !includeHidden)) return yield* notFound()
          return turn
        })

      /**
       * The candidates a regeneration may ask again: the turn's own, else (a fork's copy of a
       * candidate that holds no request, an edit) those of the turn it was copied from, up the forks.
       */
      const askable = (turn: TimelineTurnWithVariants, active: VariantRow | undefined) =>
        Effect.gen(function* () {
          const holds = (variants: ReadonlyArray<VariantRow>) =>
            variants.some((variant) => variant.inference_request_public_id !== null || variant.run_public_id !== null)
          let candidates: ReadonlyArray<VariantRow> = turn.variants
          let copied = active
          while (!holds(candidates) && copied?.source === "fork" && copied.origin_variant_public_id !== null) {
            copied = yield* db(repository.findVariant(copied.origin_variant_public_id))
            if (copied === undefined) break
            candidates = yield* db(repository.variantsOf([copied.turn_id]))
          }
          return candidates
        })

      const viewOf = (turn: TimelineTurnWithVariants) => Effect.map(views([turn]), (found) => found[0]!)

      /** The turn as it is after a write. */
      const reread = (turn: TurnRow | TimelineTurnRow, own: boolean) =>
        Effect.gen(function* () {
          const row = (yield* db(repository.findTurn(turn.public_id)))!
          return yield* viewOf({ ...row, own, variants: yield* db(repository.variantsOf([row.id])) })
        })

      /** A run-backed reply's plan compiled again for its input and answerer on `model` (or why it cannot run). */
      const replanned = (conversation: ConversationRow, turn: TimelineTurnRow, model: string) =>
        Effect.gen(function* () {
          const input = turn.input_public_id === null ? undefined : yield* repository.findInput(turn.input_public_id)
          const [answerer] = yield* repository.speakers([turn.answerer_id ?? conversation.answerer_id])
          if (input === undefined || answerer === undefined) return "no_input" as const
          return yield* planHosted(catalog, conversation, input, answerer, model)
        })

      const variantOf = (turn: TimelineTurnRow, variantId: string) =>
        Effect.gen(function* () {
          const variant = isUuid(variantId) ? yield* db(repository.findVariant(variantId)) : undefined
          if (variant === undefined || variant.turn_id !== turn.id) {
            return yield* new Absent({ code: "not_found", message: "No such variant" })
          }
          return variant
        })

      return Turns.of({
        list: (caller, workspaceId, conversationId, query) =>
          Effect.gen(function* () {
            const target = yield* conversations.standing(caller, workspaceId, conversationId, "read")
            const limit = query.limit === undefined ? 25 : Number(query.limit)
            if (!/^\d{1,3}$/.test(query.limit ?? "25") || limit < 1 || limit > 100) {
              return yield* badParameter("limit must be 1 to 100")
            }
            const after = yield* position(query.after_position, "after_position")
            const before = yield* position(query.before_position, "before_position")
            const includeHidden = yield* flagParameter(query.include_hidden, "include_hidden")
            const chain = yield* db(chainOf(repository, target.row))
            const page = yield* db(
              repository.timelineWindow({
                chain,
                afterPosition: after,
                beforePosition: before,
                includeHidden,
                from: after !== null ? "oldest" : "newest",
                limit
              })
            )
            // An empty window has no ends to look beyond: the turns beyond its cursors say it instead.
            const beyond = (bounds: { afterPosition: number | null; beforePosition: number | null }) =>
              Effect.map(
                db(repository.timeline({ chain, ...bounds, includeHidden, from: "newest", limit: 1 })),
                (found) => found.length > 0
              )
            const empty = page.turns.length === 0
            return {
              turns: yield* views(page.turns),
              pagination: {
                before_position: page.turns[0]?.position ?? null,
                after_position: page.turns.at(-1)?.position ?? null,
                has_older:
                  empty && after !== null
                    ? yield* beyond({ afterPosition: null, beforePosition: after + 1 })
                    : page.has_older,
                has_newer:
                  empty && before !== null
                    ? yield* beyond({ afterPosition: before - 1, beforePosition: null })
                    : page.has_newer
              }
            }
          }),
        show: (caller, workspaceId, conversationId, turnId, includeHidden) =>
          Effect.gen(function* () {
            const target = yield* conversations.standing(caller, workspaceId, conversationId, "read")
            return yield* viewOf(yield* turnIn(target, turnId, includeHidden))
          }),
        variants: (caller, workspaceId, conversationId, turnId) =>
          Effect.gen(function* () {
            const target = yield* conversations.standing(caller, workspaceId, conversationId, "read")
            const turn = yield* turnIn(target, turnId)
            const prompt = turn.kind === "direct_reply" ? turn.prompt_text : null
            const backing = yield* runsOf(turn.variants)
            return {
              variants: turn.variants.map((variant) =>
                variantView(variant, variant.public_id === turn.active_variant_public_id, prompt, backing)
              ),
              turn: { public_id: turn.public_id, inherited: !turn.own }
            }
          }),
        edit: (caller, workspaceId, conversationId, turnId, text) =>
          Effect.gen(function* () {
            const target = yield* writable(caller, workspaceId, conversationId)
            const turn = yield* turnIn(target, turnId)
            yield* conversations.send(target, {
              type: "turn.edit",
              turnId: turn.public_id,
              variantId: newPublicId(),
              text
            })
            return yield* reread(turn, turn.own)
          }),
        regenerate: (caller, workspaceId, conversationId, turnId, members) =>
          Effect.gen(function* () {
            const target = yield* writable(caller, workspaceId, conversationId)
            const turn = yield* turnIn(target, turnId)
            if (turn.kind === "compaction_summary") {
              return yield* new StateConflict({ code: "kernel_authored", message: "A summary turn is the kernel's" })
            }
            if (turn.kind !== "direct_reply") {
              return yield* new Invalid({ code: "validation_failed", message: "only a direct reply is regenerated" })
            }
            const active =
              turn.active_variant_public_id === null
                ? undefined
                : yield* db(repository.findVariant(turn.active_variant_public_id))
            const candidates = yield* askable(turn, active)
            // The sealed request asked again: the shown candidate's, else (an edit shown) the newest the turn holds.
            const sealed =
              active?.inference_request_public_id != null
                ? active
                : candidates.findLast((variant) => variant.inference_request_public_id !== null)
            // A run-backed reply (its shown candidate's run, else, an edit shown, the newest run it holds) runs again.
            const hostedBy =
              active?.run_public_id != null
                ? active
                : sealed === undefined
                  ? candidates.findLast((variant) => variant.run_public_id !== null)
                  : undefined
            const modelOf = (variant: typeof active) => (variant?.model as { model_ref?: string } | null)?.model_ref
            const asked = members.model?.model ?? modelOf(active) ?? modelOf(hostedBy ?? sealed)
            if (asked === undefined || !(catalog.find(asked)?.workloads.includes("text_generation") ?? false)) {
              return yield* new Invalid({ code: "validation_failed", message: "model is not a catalog text model" })
            }
            if (active !== undefined && sealed === undefined && hostedBy === undefined) {
              return yield* new Invalid({
                code: "validation_failed",
                message: "the turn holds no request to ask again"
              })
            }
            if (active === undefined)
              return yield* new StateConflict({ code: "not_terminal", message: "Nothing to regenerate" })
            const plan = hostedBy === undefined ? undefined : yield* db(replanned(target.row, turn, asked))
            if (typeof plan === "string") {
              return yield* new Invalid({ code: "validation_failed", message: `the run cannot be opened (${plan})` })
            }
            const variantId = newPublicId()
            yield* conversations.send(target, {
              type: "turn.regenerate",
              turnId: turn.public_id,
              displayedVariantId: active.public_id,
              ...(sealed === undefined || sealed.public_id === active.public_id
                ? {}
                : { sealedVariantId: sealed.public_id }),
              variantId,
              requestId: newPublicId(),
              model: asked,
              overrides: {
                ...(members.model == null ? {} : { model: members.model }),
                ...(members.configuration == null ? {} : { configuration: members.configuration })
              },
              displayedStatus: active.status,
              failureReasonKey: turn.failure_reason_key,
              ...(plan === undefined ? {} : { engine: "run" as const, plan })
            })
            const variant = (yield* db(repository.findVariant(variantId)))!
            return {
              turn: { public_id: turn.public_id, status: "running" as const },
              variant: variantView(variant, false, turn.prompt_text, yield* runsOf([variant]))
            }
          }),
        activate: (caller, workspaceId, conversationId, turnId, variantId) =>
          Effect.gen(function* () {
            const target = yield* writable(caller, workspaceId, conversationId)
            const turn = yield* turnIn(target, turnId)
            const variant = yield* variantOf(turn, variantId)
            // The active candidate is never concealed (conceal refuses it), so a concealed one is shown first.
            if (variant.concealed && turn.active_variant_public_id !== variant.public_id) {
              return yield* new Invalid({
                code: "validation_failed",
                message: "concealed: a concealed candidate is not activated; show it first"
              })
            }
            if (variant.status === "running" || variant.status === "pending") {
              return yield* new StateConflict({ code: "not_terminal", message: "The candidate has not settled" })
            }
            // A re-activation is judged as any activation (the tail only), then changes nothing.
            yield* conversations.send(target, {
              type: "turn.activate",
              turnId: turn.public_id,
              variantId: variant.public_id,
              ...(turn.active_variant_public_id === variant.public_id
                ? { reactivation: true }
                : {
                    variant: {
                      source: variant.source,
                      status: variant.status,
                      failureReasonKey: variant.failure_reason_key
                    }
                  })
            })
            return yield* reread(turn, turn.own)
          }),
        conceal: (caller, workspaceId, conversationId, turnId, variantId, concealed) =>
          Effect.gen(function* () {
            const target = yield* writable(caller, workspaceId, conversationId)
            const turn = yield* turnIn(target, turnId)
            const variant = yield* variantOf(turn, variantId)
            if (concealed && turn.active_variant_public_id === variant.public_id) {
              return yield* new Invalid({
                code: "validation_failed",
                message: "the active candidate cannot be concealed"
              })
            }
            // An inherited turn's deck is its source's: the child never writes it.
            if (!turn.own) {
              return yield* new StateConflict({ code: "branch_required", message: "The turn is inherited" })
            }
            yield* conversations.send(target, {
              type: "variant.conceal",
              turnId: turn.public_id,
              variantId: variant.public_id,
              concealed
            })
            const after = (yield* db(repository.findVariant(variant.public_id)))!
            return variantView(
              after,
              after.public_id === turn.active_variant_public_id,
              turn.kind === "direct_reply" ? turn.prompt_text : null,
              yield* runsOf([after])
            )
          }),
        setVisibility: (caller, workspaceId, conversationId, turnId, visibility) =>
          Effect.gen(function* () {
            const target = yield* writable(caller, workspaceId, conversationId)
            const turn = yield* turnIn(target, turnId)
            if (turn.kind === "compaction_summary") {
              return yield* new StateConflict({ code: "kernel_authored", message: "A summary turn cannot be hidden" })
            }
            // An own turn's visibility it already has changes no material: silent, as a re-activation (no
            // revision, no item). An inherited turn's still writes the child's override, pinning it.
            const settled = turn.status !== "running" && turn.status !== "pending"
            if (turn.own && settled && turn.visibility === visibility) {
              return yield* viewOf(turn)
            }
            yield* conversations.send(target, {
              type: "turn.visibility",
              turnId: turn.public_id,
              visibility,
              inherited: !turn.own
            })
            return yield* viewOf(yield* turnIn(target, turn.public_id))
          }),
        remove: (caller, workspaceId, conversationId, turnId) =>
          Effect.gen(function* () {
            const target = yield* writable(caller, workspaceId, conversationId)
            const turn = yield* turnIn(target, turnId)
            const previous = turn.own
              ? yield* db(repository.ownTurnBelow({ conversationId: target.row.id, position: turn.position }))
              : undefined
            yield* conversations.send(target, {
              type: "turn.delete",
              turnId: turn.public_id,
              previousTail:
                previous === undefined
                  ? null
                  : {
                      turnId: previous.public_id,
                      position: previous.position,
                      kind: previous.kind as "message" | "direct_reply" | "compaction_summary",
                      status: previous.status
                    }
            })
          }),
        receipt: (caller, workspaceId, conversationId, turnId, key) =>
          Effect.gen(function* () {
            const target = yield* conversations.standing(caller, workspaceId, conversationId, "read")
            yield* turnIn(target, turnId)
            const kept = yield* idempotency.stored(key)
            if (kept === undefined) return yield* new Absent({ code: "not_found", message: "No such regeneration" })
            return kept.body
          }),
        cancel: (caller, workspaceId, conversationId) =>
          Effect.gen(function* () {
            const target = yield* writable(caller, workspaceId, conversationId)
            const { applied } = yield* conversations.send(target, { type: "conversation.cancel" })
            return { conversation: yield* conversations.view(target), canceled: applied }
          })
      })
    })
  )
}
