// The conversation binding, the only writer of a conversation's rows after its insertion at
// creation: the conversation's fields and fences, its inputs (inserted, edited, consumed), its
// turns and variants, and the inference requests its replies ask (inserted and started in the
// step that opens a sample, told to cancel by the step that cancels it). What a prompt is made of
// and what fits a model is the domain's (`ConversationReplies`, given when the server assembles
// its bindings): this binding knows rows, not prompts. It also tells the conversations around it
// (its sides, subagent children and sources) what its lifecycle means for them, and its tombstone
// to the runs it hosts that still work (a reply settled early), durably.
import type { BlockedReason } from "@troupe/machines/conversation/context"
import { conversationEffects as fx, type JudgeHeadParams } from "@troupe/machines/conversation/effects"
import type { ConversationEvent } from "@troupe/machines/conversation/events"
import type { InferenceRequestInput } from "@troupe/machines/inferenceRequest/context"
import { machines } from "@troupe/machines/registry"
import type { RunInput } from "@troupe/machines/run/context"
import { type ConversationRow, ConversationsRepository } from "@troupe/storage/repositories/Conversations"
import { RunsRepository } from "@troupe/storage/repositories/Runs"
import { Effect } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import { defineActor, type StepInfo, TransactionalActors, Veto } from "../Binding.ts"
import { childEnded, childReplySettled } from "./childReplies.ts"
import type { InferenceRequestActor } from "./inferenceRequest.ts"
import { mailEnded, mailReplySettled } from "./mailReplies.ts"
import type { RunActor } from "./run.ts"

/** What a sample asks: the conversation, the model, and where its prompt comes from. */
export interface SampleRequest {
  readonly conversation: ConversationRow
  readonly requestId: string
  readonly model: string
  /**
   * A reply's input (its prompt assembled now), the sample whose sealed request is asked again, or
   * a compaction summary (its summarizer reads the transcript since the newest summary).
   */
  readonly from:
    | { readonly input: string }
    | { readonly sealedBy: string; readonly overrides: Readonly<Record<string, unknown>> }
    | { readonly summary: true }
}

/** A head over its model's window whose history is to be summarized first: the summary's minted ids. */
export interface WallCompaction {
  readonly compact: {
    readonly turnId: string
    readonly variantId: string
    readonly requestId: string
    readonly model: string
  }
}

/** A run-backed head that can be served: the run's compiled plan. */
export interface HostedReady {
  readonly plan: unknown
}

/** The domain's side of a conversation's replies. */
export interface ConversationReplies {
  /**
   * Whether a reply's head can be served now (its assembled prompt within the model's window; a
   * run-backed one's plan compiled), or its history is to be compacted first (a wall).
   */
  readonly judge: (
    conversationId: string,
    params: JudgeHeadParams
  ) => Effect.Effect<"ready" | BlockedReason | WallCompaction | HostedReady, unknown, SqlClient>
  /**
   * A reply's assembled prompt for its input on `model`, the input's attachments as upload parts
   * of its user message (a hosted run's first round asks it).
   */
  readonly prompt: (
    conversation: ConversationRow,
    inputId: string,
    model: string
  ) => Effect.Effect<ReadonlyArray<unknown>, SqlError, SqlClient>
  /** Writes a run-backed reply's run rows from its plan; answers the run actor's input. */
  readonly openRun: (
    conversation: ConversationRow,
    plan: unknown,
    ids: { readonly runId: string; readonly turnId: string; readonly answererId: bigint; readonly at: Date }
  ) => Effect.Effect<RunInput, SqlError, SqlClient>
  /** Seals a sample's request: its inference request row inserted; answers the request actor's input. */
  readonly seal: (request: SampleRequest) => Effect.Effect<InferenceRequestInput, SqlError, SqlClient>
  /**
   * The effective model block of a variant asked of `model`, with the reasoning controls `asked`
   * (an input's or a candidate's model block; what the model does not take falls to its defaults).
   */
  readonly modelBlock: (model: string, asked?: unknown) => Readonly<Record<string, unknown>>
  /**
   * The conversation's usage_summary after its own sample asked by inference request `requestId`
   * settled (every attempt the request made), and its context block when the sample reported
   * `usage` on `model` (else null); undefined when no such request is stored.
   */
  readonly account: (
    conversation: ConversationRow,
    sample: {
      readonly requestId: string
      readonly usage: Readonly<Record<string, unknown>> | null
      readonly model: string | null
    }
  ) => Effect.Effect<{ readonly usageSummary: unknown; readonly context: unknown } | undefined, SqlError, SqlClient>
}

const conversationOf = (step: StepInfo) =>
  Effect.flatMap(ConversationsRepository.make, (conversations) =>
    Effect.flatMap(conversations.findConversation(step.actorId), (row) =>
      row ? Effect.succeed({ conversations, row }) : Effect.die(new Error(`no conversation row for ${step.actorId}`))
    )
  )

const inputOf = (conversations: ConversationsRepository["Service"], inputId: string) =>
  Effect.flatMap(conversations.findInput(inputId), (row) =>
    row ? Effect.succeed(row) : Effect.die(new Error(`no conversation input row for ${inputId}`))
  )

const turnOf = (conversations: ConversationsRepository["Service"], turnId: string) =>
  Effect.flatMap(conversations.findTurn(turnId), (row) =>
    row ? Effect.succeed(row) : Effect.die(new Error(`no conversation turn row for ${turnId}`))
  )

/** Tells another conversation an event, durably in this step's transaction (its schema judges it on delivery). */
const tellConversation = (publicId: string, event: ConversationEvent) =>
  Effect.flatMap(TransactionalActors, (actors) => actors.reply({ kind: "conversation", actorId: publicId }, event))

/** What each follower is told when its source or parent archives, unarchives or ends. */
const toldFollower = (command: "archive" | "unarchive" | "end", side: boolean): ConversationEvent | undefined => {
  if (command === "end") return { type: "conversation.end" }
  if (command === "archive")
    return side ? { type: "conversation.end" } : { type: "conversation.follow", state: "archived" }
  return side ? undefined : { type: "conversation.follow", state: "active" }
}

const membersModel = (members: unknown) =>
  typeof members === "object" && members !== null ? (members as { model?: unknown }).model : undefined

const text = (value: unknown) => (typeof value === "string" ? value : "")
const optionalId = (value: unknown) => (typeof value === "string" && value !== "" ? BigInt(value) : null)

/** A conversation's durable feed (its steps' items, and its hosted runs'). */
export const conversationStream = (conversationPublicId: string) => `conversation:${conversationPublicId}`

export const conversationActor = (replies: ConversationReplies, inference: InferenceRequestActor, run: RunActor) => {
  /** Inserts a sample's request and starts its actor, told to reply to this conversation. */
  const ask = (step: StepInfo, request: SampleRequest) =>
    Effect.gen(function* () {
      const input = yield* replies.seal(request)
      const actors = yield* TransactionalActors
      yield* actors.create(inference, request.requestId, {
        ...input,
        replyTo: { kind: "conversation", actorId: step.actorId }
      })
    })

  /** Writes a run-backed reply's run from its plan and starts it, hosted here, told to reply to this conversation. */
  const openRun = (
    step: StepInfo,
    conversation: ConversationRow,
    plan: unknown,
    ids: { readonly runId: string; readonly turnId: string; readonly answererId: bigint }
  ) =>
    Effect.gen(function* () {
      const runInput = yield* replies.openRun(conversation, plan, { ...ids, at: step.now })
      const actors = yield* TransactionalActors
      yield* actors.create(run, ids.runId, { ...runInput, replyTo: { kind: "conversation", actorId: step.actorId } })
      yield* actors.tell(run, ids.runId, { type: "run.start", at: step.now.getTime() })
    })

  return defineActor({
    kind: "conversation",
    entry: machines.conversation,
    resourceType: "conversation",
    stream: conversationStream,
    rows: {
      [fx.recordChanges]: (params, step) =>
        Effect.gen(function* () {
          const conversations = yield* ConversationsRepository.make
          const { changes } = params
          yield* conversations.updateConversation(
            step.actorId,
            {
              ...(changes.title === undefined ? {} : { title: changes.title }),
              ...(changes.metadata === undefined ? {} : { metadataJson: JSON.stringify(changes.metadata) }),
              ...(changes.access === undefined ? {} : { accessJson: JSON.stringify(changes.access) }),
              ...(changes.default_runner_executor_id === undefined
                ? {}
                : { defaultRunnerExecutorId: optionalId(changes.default_runner_executor_id) }),
              ...(changes.memory_context === undefined
                ? {}
                : {
                    memoryContextJson: changes.memory_context === null ? null : JSON.stringify(changes.memory_context)
                  }),
              lockVersion: params.lockVersion,
              contextRevision: params.contextRevision
            },
            step.now
          )
        }),
      [fx.recordState]: (params, step) =>
        Effect.gen(function* () {
          const conversations = yield* ConversationsRepository.make
          yield* conversations.updateConversation(
            step.actorId,
            { state: params.state, lockVersion: params.lockVersion },
            step.now
          )
          if (params.state === "tombstoned") {
            yield* childEnded(step.actorId, step.now)
            yield* mailEnded(step.actorId, step.now)
          }
        }),
      [fx.refuse]: (params) => Effect.fail(new Veto({ reason: params.reason })),
      [fx.insertInput]: (params, step) =>
        Effect.gen(function* () {
          const conversations = yield* ConversationsRepository.make
          const stored = params.input.row
          // The row as inserted answers the acceptance (the drain that follows may consume it).
          return yield* conversations.insertInput({
            publicId: params.input.inputId,
            conversationPublicId: step.actorId,
            queuePosition: params.queuePosition,
            kind: params.input.kind,
            state: params.state,
            deliveryMode: params.input.deliveryMode,
            role: params.input.role,
            origin: text(stored.origin),
            authorId: BigInt(text(stored.author_id)),
            speakerId: BigInt(text(stored.speaker_id)),
            answererId: optionalId(stored.answerer_id),
            text: text(stored.text),
            membersJson: JSON.stringify(stored.members ?? {}),
            deliverAt: params.input.dueAt === null ? null : new Date(params.input.dueAt),
            idempotencyKey: typeof stored.idempotency_key === "string" ? stored.idempotency_key : null,
            now: step.now
          })
        }),
      [fx.updateInput]: (params, step) =>
        Effect.flatMap(ConversationsRepository.make, (conversations) => {
          const { changes } = params
          return conversations.updateInput(
            params.inputId,
            {
              state: params.state,
              blockedReason: params.blockedReason,
              lockVersion: params.lockVersion,
              ...(params.deliveryMode === undefined ? {} : { deliveryMode: params.deliveryMode }),
              ...(params.dueAt === undefined
                ? {}
                : { deliverAt: params.dueAt === null ? null : new Date(params.dueAt) }),
              ...(typeof changes.text === "string" ? { text: changes.text } : {}),
              ...(changes.members === undefined ? {} : { membersJson: JSON.stringify(changes.members) })
            },
            step.now
          )
        }),
      [fx.deleteInput]: (params) =>
        Effect.flatMap(ConversationsRepository.make, (conversations) => conversations.deleteInput(params.inputId)),
      [fx.reorderInputs]: (params, step) =>
        Effect.flatMap(ConversationsRepository.make, (conversations) =>
          Effect.forEach(
            params.positions,
            ({ inputId, queuePosition }) => conversations.updateInput(inputId, { queuePosition }, step.now),
            { discard: true }
          )
        ),
      [fx.materializeMessage]: (params, step) =>
        Effect.gen(function* () {
          const conversations = yield* ConversationsRepository.make
          const made = yield* conversations.materializeMessage({
            conversationPublicId: step.actorId,
            inputPublicId: params.inputId,
            turnPublicId: params.turnId,
            variantPublicId: params.variantId,
            position: params.position,
            contextRevision: params.contextRevision,
            now: step.now
          })
          if (!made) return yield* Effect.die(new Error(`no conversation input row for ${params.inputId}`))
        }),
      [fx.openReply]: (params, step) =>
        Effect.gen(function* () {
          const { conversations, row } = yield* conversationOf(step)
          const input = yield* inputOf(conversations, params.inputId)
          const answerer = input.answerer_id ?? row.answerer_id
          const turnId = yield* conversations.insertTurn({
            publicId: params.turnId,
            conversationId: row.id,
            position: params.position,
            kind: "direct_reply",
            role: "assistant",
            status: "running",
            visibility: visibilityOf(input.members),
            origin: input.origin,
            answererId: answerer,
            speakerId: answerer,
            promptText: input.text,
            inputPublicId: input.public_id,
            activeVariantPublicId: params.variantId,
            now: step.now
          })
          const hosted = params.engine === "run"
          yield* conversations.insertVariant({
            publicId: params.variantId,
            turnId,
            source: hosted ? "run" : "inference",
            status: "running",
            modelJson: JSON.stringify(replies.modelBlock(params.model, membersModel(input.members))),
            content: "",
            originVariantPublicId: null,
            inferenceRequestPublicId: hosted ? null : params.requestId,
            runPublicId: hosted ? params.requestId : null,
            now: step.now
          })
          yield* consume(conversations, params.inputId, params.turnId, params.variantId, step)
          yield* conversations.updateConversation(
            step.actorId,
            { contextRevision: params.contextRevision, activity: true },
            step.now
          )
          if (!hosted) {
            return yield* ask(step, {
              conversation: row,
              requestId: params.requestId,
              model: params.model,
              from: { input: params.inputId }
            })
          }
          // A run-backed reply: its run, hosted here and started at once, tells its outcome back.
          yield* openRun(step, row, params.plan, {
            runId: params.requestId,
            turnId: params.turnId,
            answererId: answerer
          })
        }),
      [fx.openSample]: (params, step) =>
        Effect.gen(function* () {
          const { conversations, row } = yield* conversationOf(step)
          const turn = yield* turnOf(conversations, params.turnId)
          const originId = params.originVariantId === "" ? turn.active_variant_public_id : params.originVariantId
          const origin = originId === null ? undefined : yield* conversations.findVariant(originId)
          const hosted = params.engine === "run"
          if (origin === undefined || (!hosted && origin.inference_request_public_id === null)) {
            return yield* Effect.die(new Error(`turn ${params.turnId} has no sealed request to ask again`))
          }
          yield* conversations.insertVariant({
            publicId: params.variantId,
            turnId: turn.id,
            source: params.source,
            status: "running",
            modelJson: JSON.stringify(replies.modelBlock(params.model, params.overrides.model ?? origin.model)),
            content: "",
            // A fallback names the declined candidate, a regeneration the one whose request it asks again.
            originVariantPublicId: origin.public_id,
            inferenceRequestPublicId: hosted ? null : params.requestId,
            runPublicId: hosted ? params.requestId : null,
            now: step.now
          })
          if (turn.status !== "running")
            yield* conversations.updateTurn(turn.public_id, { status: "running" }, step.now)
          // A run-backed reply asked again: a new run for the same turn, answered by the same answerer.
          if (hosted) {
            return yield* openRun(step, row, params.plan, {
              runId: params.requestId,
              turnId: turn.public_id,
              answererId: turn.answerer_id ?? row.answerer_id
            })
          }
          yield* ask(step, {
            conversation: row,
            requestId: params.requestId,
            model: params.model,
            from: { sealedBy: origin.inference_request_public_id!, overrides: params.overrides }
          })
        }),
      [fx.openSummary]: (params, step) =>
        Effect.gen(function* () {
          const { conversations, row } = yield* conversationOf(step)
          const turnId = yield* conversations.insertTurn({
            publicId: params.turnId,
            conversationId: row.id,
            position: params.position,
            kind: "compaction_summary",
            role: "user",
            status: "running",
            visibility: "visible",
            origin: "kernel",
            answererId: null,
            speakerId: null,
            promptText: null,
            inputPublicId: null,
            activeVariantPublicId: params.variantId,
            now: step.now
          })
          yield* conversations.insertVariant({
            publicId: params.variantId,
            turnId,
            source: "inference",
            status: "running",
            modelJson: JSON.stringify(replies.modelBlock(params.model)),
            content: "",
            originVariantPublicId: null,
            inferenceRequestPublicId: params.requestId,
            now: step.now
          })
          yield* conversations.updateConversation(
            step.actorId,
            { contextRevision: params.contextRevision, activity: true },
            step.now
          )
          yield* ask(step, {
            conversation: row,
            requestId: params.requestId,
            model: params.model,
            from: { summary: true }
          })
        }),
      [fx.settleSample]: (params, step) =>
        Effect.gen(function* () {
          const { conversations, row } = yield* conversationOf(step)
          yield* conversations.settleVariant(
            params.variantId,
            {
              status: params.variantStatus,
              usageJson: params.usage === null ? null : JSON.stringify(params.usage),
              failureReasonKey: params.failureReasonKey
            },
            step.now
          )
          yield* conversations.updateTurn(
            params.turnId,
            {
              status: params.turnStatus,
              ...(params.activate ? { activeVariantPublicId: params.variantId } : {}),
              failureReasonKey: params.turnFailureReasonKey
            },
            step.now
          )
          const variant = yield* conversations.findVariant(params.variantId)
          const model = modelRefOf(variant?.model)
          // A direct sample (not a run's) counts its inference request's attempts once it settles.
          const requestId = variant?.inference_request_public_id ?? null
          const accounted =
            requestId === null ? undefined : yield* replies.account(row, { requestId, usage: params.usage, model })
          yield* conversations.updateConversation(
            step.actorId,
            {
              contextRevision: params.contextRevision,
              activity: true,
              ...(params.variantStatus === "completed" && model !== null && params.summary !== true
                ? { lastReplyModel: model }
                : {}),
              ...(accounted === undefined ? {} : { usageSummaryJson: JSON.stringify(accounted.usageSummary) }),
              ...(accounted?.context == null ? {} : { contextJson: JSON.stringify(accounted.context) })
            },
            step.now
          )
          if (params.summary !== true) {
            yield* childReplySettled(row, params, step.now)
            yield* mailReplySettled(step.actorId, params, step.now)
          }
        }),
      [fx.steerRun]: (params, step) =>
        Effect.gen(function* () {
          const conversations = yield* ConversationsRepository.make
          const input = yield* inputOf(conversations, params.inputId)
          const actors = yield* TransactionalActors
          yield* actors.tell(run, params.runId, {
            type: "input.accept",
            inputId: params.inputId,
            steer: true,
            dueAt: null,
            row: { text: input.text, authorId: String(input.author_id) },
            at: step.now.getTime()
          })
        }),
      // A run that already landed the steer (its input.landed on the way) refuses: the message is settled rejected.
      [fx.dropSteer]: (params, step) =>
        Effect.flatMap(TransactionalActors, (actors) =>
          actors.tell(run, params.runId, { type: "input.delete", inputId: params.inputId, at: step.now.getTime() })
        ),
      // A run that landed one of them meanwhile refuses (queue_changed): the message is settled rejected.
      [fx.reorderSteers]: (params, step) =>
        Effect.flatMap(TransactionalActors, (actors) =>
          actors.tell(run, params.runId, { type: "input.reorder", inputIds: params.inputIds, at: step.now.getTime() })
        ),
      [fx.landSteer]: (params, step) =>
        Effect.flatMap(ConversationsRepository.make, (conversations) =>
          consume(conversations, params.inputId, params.turnId, params.variantId, step)
        ),
      [fx.cancelRequest]: (params, step) =>
        Effect.flatMap(TransactionalActors, (actors) =>
          params.engine === "run"
            ? actors.tell(run, params.requestId, { type: "run.stop", force: true, at: step.now.getTime() })
            : actors.tell(inference, params.requestId, { type: "inference.cancel" })
        ),
      [fx.editTurn]: (params, step) =>
        Effect.gen(function* () {
          const conversations = yield* ConversationsRepository.make
          const turn = yield* turnOf(conversations, params.turnId)
          yield* conversations.insertVariant({
            publicId: params.variantId,
            turnId: turn.id,
            source: "edit",
            status: "completed",
            modelJson: null,
            content: params.text,
            originVariantPublicId: turn.active_variant_public_id,
            inferenceRequestPublicId: null,
            now: step.now
          })
          yield* conversations.updateTurn(
            params.turnId,
            { activeVariantPublicId: params.variantId, status: "completed", failureReasonKey: null },
            step.now
          )
          yield* revise(conversations, step, params.contextRevision)
        }),
      [fx.activateVariant]: (params, step) =>
        Effect.gen(function* () {
          const conversations = yield* ConversationsRepository.make
          yield* conversations.updateTurn(
            params.turnId,
            {
              activeVariantPublicId: params.variantId,
              ...(params.status === undefined
                ? {}
                : { status: params.status, failureReasonKey: params.failureReasonKey ?? null })
            },
            step.now
          )
          yield* revise(conversations, step, params.contextRevision)
        }),
      [fx.setVisibility]: (params, step) =>
        Effect.gen(function* () {
          const conversations = yield* ConversationsRepository.make
          yield* params.inherited === true
            ? conversations.overrideVisibility(step.actorId, params.turnId, params.visibility)
            : conversations.updateTurn(params.turnId, { visibility: params.visibility }, step.now)
          yield* revise(conversations, step, params.contextRevision)
        }),
      [fx.concealVariant]: (params, step) =>
        Effect.flatMap(ConversationsRepository.make, (conversations) =>
          conversations.concealVariant(params.variantId, params.concealed, step.now)
        ),
      [fx.deleteTurn]: (params, step) =>
        Effect.gen(function* () {
          const conversations = yield* ConversationsRepository.make
          yield* conversations.deleteTurn(params.turnId)
          yield* revise(conversations, step, params.contextRevision)
        }),
      [fx.ensureTreeIdle]: (_, step) =>
        Effect.gen(function* () {
          const { conversations, row } = yield* conversationOf(step)
          const found = yield* conversations.treeBusy(row.id)
          if (found?.busy === true) return yield* Effect.fail(new Veto({ reason: "conversation_busy" }))
        }),
      [fx.tellFollowers]: (params, step) =>
        Effect.gen(function* () {
          const { conversations, row } = yield* conversationOf(step)
          for (const follower of yield* conversations.followersOf(row.id)) {
            const told = toldFollower(params.command, follower.side)
            if (told !== undefined) yield* tellConversation(follower.public_id, told)
          }
        }),
      [fx.releaseSources]: (_, step) =>
        Effect.gen(function* () {
          const { conversations, row } = yield* conversationOf(step)
          let sourceId = row.source_conversation_id
          while (sourceId !== null) {
            const source = yield* conversations.findConversationById(sourceId)
            if (source === undefined) return
            yield* tellConversation(source.public_id, { type: "conversation.release", child: step.actorId })
            sourceId = source.source_conversation_id
          }
        }),
      [fx.stopHostedRuns]: (params, step) =>
        Effect.gen(function* () {
          const { row } = yield* conversationOf(step)
          const runs = yield* RunsRepository.make
          const actors = yield* TransactionalActors
          for (const runId of yield* runs.liveRunsOfConversation(row.id)) {
            if (runId !== params.except) {
              yield* actors.tell(run, runId, { type: "run.stop", force: true, at: step.now.getTime() })
            }
          }
        }),
      [fx.reap]: (_, step) =>
        Effect.flatMap(ConversationsRepository.make, (conversations) => conversations.deleteConversation(step.actorId))
    },
    jobs: {
      [fx.judgeHead]: (params, job) =>
        Effect.map(replies.judge(job.actorId, params), (verdict) =>
          typeof verdict === "object" && "plan" in verdict
            ? {
                type: "reply.judged" as const,
                inputId: params.inputId,
                revision: params.revision,
                lockVersion: params.lockVersion,
                verdict: "ready" as const,
                plan: verdict.plan
              }
            : typeof verdict === "object"
              ? {
                  type: "conversation.compact" as const,
                  trigger: "wall" as const,
                  ...verdict.compact,
                  inputId: params.inputId,
                  revision: params.revision,
                  lockVersion: params.lockVersion
                }
              : {
                  type: "reply.judged" as const,
                  inputId: params.inputId,
                  revision: params.revision,
                  lockVersion: params.lockVersion,
                  verdict
                }
        )
    }
  })
}

export type ConversationActor = ReturnType<typeof conversationActor>

/** An input with visible_in_context false makes a turn born excluded from context. */
const visibilityOf = (members: unknown) =>
  typeof members === "object" &&
  members !== null &&
  (members as { visible_in_context?: unknown }).visible_in_context === false
    ? "excluded_from_context"
    : "visible"

const modelRefOf = (model: unknown) =>
  typeof model === "object" && model !== null && typeof (model as { model_ref?: unknown }).model_ref === "string"
    ? (model as { model_ref: string }).model_ref
    : null

const consume = (
  conversations: ConversationsRepository["Service"],
  inputId: string,
  turnId: string,
  variantId: string,
  step: StepInfo
) =>
  conversations.updateInput(
    inputId,
    { state: "consumed", blockedReason: null, turnPublicId: turnId, variantPublicId: variantId },
    step.now
  )

const revise = (conversations: ConversationsRepository["Service"], step: StepInfo, contextRevision: number) =>
  conversations.updateConversation(step.actorId, { contextRevision, activity: true }, step.now)
