// A conversation (spec "States and transitions", rows "Conversation", "Input", "Steering input";
// supplement "Queue, drain, steering", "Turns and variants"):
//   active --archive, not a subagent or side--> archived (its sides ended, its subagent children
//     archived with it; conversation_ended archived)
//   archived --unarchive, not a subagent or side--> active (children follow; no side returns)
//   archived --a returned result (kernel task_result)--> recorded as a message turn, no reply
//   active|archived --delete, no turn pending or running in its tree--> tombstoned (its sides and
//     children ended, its sources' freezes lifted, its hosted runs still working force-stopped;
//     conversation_ended tombstoned), reaped 30 days later (durable timer); --end (told by its
//     source or parent)--> tombstoned, its work canceled
//   input pending --drain, lane idle, no block--> consumed into a turn
//   input pending --drain, cannot be served--> blocked (FIFO held behind it); a kernel row (which
//     no one may edit or delete) lands as a message instead
//   input blocked --edit--> pending (re-judged); pending or blocked --delete--> gone
//   steering input held --edit delivery_mode steer_now--> promoted
// The drain runs after every step that may free the lane or change the head: a message becomes a
// completed turn at once; a direct reply's head is judged by a job (its prompt within the model's
// window) and then opens a running turn whose sample is an inference request told to reply here.
// A regeneration of the tail is a sibling sample: its sealed request asked again, or (a run-backed
// reply) a new hosted run from the plan its event carries; the shown candidate stays until it completes.
// Every refusal names the spec's code (`refuse`); ids arrive minted in events.
import { setup } from "xstate"
import type { BlockedReason, ConversationContext, ConversationInput, Lane, QueueEntry, Tail } from "./context.ts"
import {
  type ActivateParams,
  type CancelRequestParams,
  conversationEffects as fx,
  type JudgeHeadParams,
  type MaterializeParams,
  type OpenReplyParams,
  type OpenSampleParams,
  type OpenSummaryParams,
  type RecordChangesParams,
  type RecordStateParams,
  type SettleSampleParams,
  type StopHostedRunsParams,
  type TellFollowersParams,
  type TurnParams,
  type UpdateInputParams,
  type VisibilityParams
} from "./effects.ts"
import type { ConversationEvent } from "./events.ts"

/** Caller-authored inputs a conversation holds unconsumed (scheduled ones included). */
export const inputQueueLimit = 16
/** A tombstone's rows are reaped this long after DELETE. */
export const reapAfterMillis = 30 * 24 * 60 * 60 * 1000

type Context = ConversationContext
type Event = ConversationEvent
type EventOf<T extends Event["type"]> = Extract<Event, { type: T }>
type Item = { readonly type: string; readonly [member: string]: unknown }

type EffectRequest =
  | { readonly type: typeof fx.recordChanges; readonly params: RecordChangesParams }
  | { readonly type: typeof fx.recordState; readonly params: RecordStateParams }
  | { readonly type: typeof fx.refuse; readonly params: { readonly reason: string } }
  | { readonly type: typeof fx.insertInput; readonly params: import("./effects.ts").InsertInputParams }
  | { readonly type: typeof fx.updateInput; readonly params: UpdateInputParams }
  | { readonly type: typeof fx.deleteInput; readonly params: { readonly inputId: string } }
  | {
      readonly type: typeof fx.reorderInputs
      readonly params: { readonly positions: ReadonlyArray<{ inputId: string; queuePosition: number }> }
    }
  | { readonly type: typeof fx.materializeMessage; readonly params: MaterializeParams }
  | { readonly type: typeof fx.openReply; readonly params: OpenReplyParams }
  | { readonly type: typeof fx.openSample; readonly params: OpenSampleParams }
  | { readonly type: typeof fx.openSummary; readonly params: OpenSummaryParams }
  | { readonly type: typeof fx.settleSample; readonly params: SettleSampleParams }
  | { readonly type: typeof fx.cancelRequest; readonly params: CancelRequestParams }
  | {
      readonly type: typeof fx.editTurn
      readonly params: TurnParams & { readonly variantId: string; readonly text: string }
    }
  | { readonly type: typeof fx.activateVariant; readonly params: ActivateParams }
  | { readonly type: typeof fx.setVisibility; readonly params: VisibilityParams }
  | {
      readonly type: typeof fx.concealVariant
      readonly params: { readonly turnId: string; readonly variantId: string; readonly concealed: boolean }
    }
  | { readonly type: typeof fx.deleteTurn; readonly params: TurnParams }
  | { readonly type: typeof fx.ensureTreeIdle }
  | { readonly type: typeof fx.tellFollowers; readonly params: TellFollowersParams }
  | { readonly type: typeof fx.releaseSources }
  | { readonly type: typeof fx.stopHostedRuns; readonly params: StopHostedRunsParams }
  | { readonly type: typeof fx.reap }
  | { readonly type: typeof fx.judgeHead; readonly params: JudgeHeadParams }
  | { readonly type: typeof fx.steerRun; readonly params: { readonly runId: string; readonly inputId: string } }
  | { readonly type: typeof fx.dropSteer; readonly params: { readonly runId: string; readonly inputId: string } }
  | {
      readonly type: typeof fx.reorderSteers
      readonly params: { readonly runId: string; readonly inputIds: ReadonlyArray<string> }
    }
  | {
      readonly type: typeof fx.landSteer
      readonly params: { readonly inputId: string; readonly turnId: string; readonly variantId: string }
    }

/** A step's work: a draft of the context it changes and what it asks the shell to do. */
interface Draft {
  context: {
    -readonly [K in keyof Context]: Context[K]
  } & { queue: Array<QueueEntry> }
  request(action: EffectRequest): void
  emit(item: Item): void
  due(inputId: string, delay: number): void
  undue(inputId: string): void
  reapLater(): void
}

const dueTimer = (inputId: string) => `due:${inputId}`

/** The kernel's rows (returned results, a child's first input): read first, outside the bound, never reordered. */
const kernelRow = (entry: QueueEntry) => entry.kernel || entry.child === true

/** Kernel rows first, then arrival order. */
const readOrder = (queue: ReadonlyArray<QueueEntry>) =>
  [...queue].sort((a, b) => Number(kernelRow(b)) - Number(kernelRow(a)) || a.queuePosition - b.queuePosition)

const entryOf = (context: Context, inputId: string) => context.queue.find((entry) => entry.inputId === inputId)

const replace = (draft: Draft, entry: QueueEntry) => {
  draft.context.queue = draft.context.queue.map((each) => (each.inputId === entry.inputId ? entry : each))
}

const refuse = (draft: Draft, reason: string) => draft.request({ type: fx.refuse, params: { reason } })

const bumpRevision = (draft: Draft) => {
  draft.context.contextRevision += 1
  return draft.context.contextRevision
}

const block = (draft: Draft, entry: QueueEntry, reason: BlockedReason) => {
  replace(draft, { ...entry, state: "blocked", blockedReason: reason })
  draft.request({
    type: fx.updateInput,
    params: {
      inputId: entry.inputId,
      changes: {},
      state: "blocked",
      blockedReason: reason,
      lockVersion: entry.lockVersion
    }
  })
  draft.emit({ type: "input_blocked", input_public_id: entry.inputId, blocked_reason: reason })
}

const turnStatusItem = (
  tail: Tail,
  variantId: string,
  variantStatus: string,
  extra: Record<string, unknown> = {}
): Item => ({
  type: "turn_status",
  turn_public_id: tail.turnId,
  turn_kind: tail.kind,
  status: tail.status,
  variant_public_id: variantId,
  variant_status: variantStatus,
  ...extra
})

/** A message head: a completed turn spoken by its author, the input consumed. */
const materializeMessage = (draft: Draft, entry: QueueEntry) => {
  const context = draft.context
  const position = context.nextPosition
  context.nextPosition += 1
  context.queue = context.queue.filter((each) => each.inputId !== entry.inputId)
  const revision = bumpRevision(draft)
  const tail: Tail = { turnId: entry.ids.turnId, position, kind: "message", status: "completed" }
  context.tail = tail
  draft.request({
    type: fx.materializeMessage,
    params: {
      inputId: entry.inputId,
      turnId: entry.ids.turnId,
      variantId: entry.ids.variantId,
      position,
      contextRevision: revision
    }
  })
  draft.emit({
    type: "turn_created",
    turn_public_id: tail.turnId,
    position,
    kind: "message",
    role: entry.role,
    answering_user_public_id: null,
    input_public_id: entry.inputId
  })
  draft.emit({
    type: "input_materialized",
    input_public_id: entry.inputId,
    turn_public_id: tail.turnId,
    variant_public_id: entry.ids.variantId,
    run_public_id: null
  })
  draft.emit(turnStatusItem(tail, entry.ids.variantId, "completed"))
}

/** Asks the judging job about the head as it reads now (the revision and its lock_version). */
const judgeHead = (draft: Draft, entry: QueueEntry, model: string) =>
  draft.request({
    type: fx.judgeHead,
    params: {
      inputId: entry.inputId,
      model,
      revision: draft.context.contextRevision,
      lockVersion: entry.lockVersion
    }
  })

/** While the lane is idle, the first due row that is not a held steer heads and is served. */
const drain = (draft: Draft) => {
  const context = draft.context
  while (context.lane === null) {
    const head = readOrder(context.queue).find((entry) => entry.state !== "steering" && entry.dueAt === null)
    if (head === undefined || head.state === "blocked") return
    if (head.kind === "message") {
      materializeMessage(draft, head)
      continue
    }
    const plan = head.reply
    if (plan === null || plan.model === null || !plan.modelKnown) {
      block(draft, head, "unknown_model")
      return
    }
    const engine = plan.engine ?? "direct"
    context.lane = {
      phase: "judging",
      kind: "reply",
      turnId: head.ids.turnId,
      variantId: head.ids.variantId,
      requestId: head.ids.requestId,
      inputId: head.inputId,
      model: plan.model,
      engine,
      fallback:
        plan.fallbackModel === null || engine === "run"
          ? null
          : { model: plan.fallbackModel, variantId: head.ids.fallbackVariantId, requestId: head.ids.fallbackRequestId },
      displayedVariantId: null,
      prior: null,
      canceled: false
    }
    judgeHead(draft, head, plan.model)
  }
}

/** The run a steer is held against: a running run-backed reply's; null when none runs. */
const steeredRun = (lane: Lane | null) =>
  lane !== null && lane.phase === "running" && lane.engine === "run" ? lane.requestId : null

/** A steer held against a run-backed reply that leaves it (deleted or released) is withdrawn from its run. */
const dropSteer = (draft: Draft, lane: Lane | null, entry: QueueEntry) => {
  const runId = steeredRun(lane)
  if (runId !== null && entry.state === "steering") {
    draft.request({ type: fx.dropSteer, params: { runId, inputId: entry.inputId } })
  }
}

/** A settled turn (`lane` its reply) releases its held steers (back to pending, in order) before the drain. */
const releaseSteers = (draft: Draft, lane: Lane) => {
  for (const entry of readOrder(draft.context.queue)) {
    if (entry.state !== "steering") continue
    dropSteer(draft, lane, entry)
    const released: QueueEntry = { ...entry, state: "pending", lockVersion: entry.lockVersion + 1 }
    replace(draft, released)
    draft.request({
      type: fx.updateInput,
      params: {
        inputId: entry.inputId,
        changes: {},
        state: "pending",
        blockedReason: null,
        lockVersion: released.lockVersion
      }
    })
    draft.emit({
      type: "input_edited",
      input_public_id: entry.inputId,
      state: "pending",
      lock_version: released.lockVersion,
      reason: "steer_released"
    })
  }
}

/** A judging lane for `inputId` is dropped (its head was edited or deleted): the drain judges anew. */
const dropJudging = (draft: Draft, inputId: string) => {
  const lane = draft.context.lane
  if (lane !== null && lane.phase === "judging" && lane.inputId === inputId) draft.context.lane = null
}

/** An input joins the queue and the drain runs; a `recorded` one (see `record`) joins as a message. */
const accept = (draft: Draft, event: EventOf<"input.accept">, recorded = false) => {
  const context = draft.context
  const { input } = event
  if (event.expectedContextRevision !== undefined && event.expectedContextRevision !== context.contextRevision) {
    return refuse(draft, "stale_context")
  }
  if (event.expectedTailTurnId !== undefined && event.expectedTailTurnId !== context.tail?.turnId) {
    return refuse(draft, "stale_timeline")
  }
  const lane = context.lane
  if (event.expectedSteeringRunId !== undefined && event.expectedSteeringRunId !== steeredRun(lane)) {
    return refuse(draft, "steering_target_changed")
  }
  const child = input.row.origin === "child"
  const held = context.queue.filter((entry) => !kernelRow(entry)).length
  if (!input.kernel && !child && held >= inputQueueLimit) return refuse(draft, "input_queue_full")
  const steering = input.deliveryMode !== "queue" && lane !== null && lane.phase === "running"
  const state = steering ? "steering" : "pending"
  const queuePosition = context.nextQueuePosition
  context.nextQueuePosition += 1
  context.queue = [
    ...context.queue,
    {
      inputId: input.inputId,
      kind: recorded ? "message" : input.kind,
      kernel: input.kernel,
      ...(child ? { child } : {}),
      role: input.role,
      state,
      blockedReason: null,
      deliveryMode: input.deliveryMode,
      dueAt: input.dueAt,
      queuePosition,
      lockVersion: 0,
      authorId: input.authorId,
      reply: input.reply,
      ids: input.ids
    }
  ]
  draft.request({ type: fx.insertInput, params: { input, queuePosition, state } })
  draft.emit({ type: "input_accepted", ...input.item, state, queue_position: queuePosition })
  if (input.dueAt !== null) draft.due(input.inputId, Math.max(0, input.dueAt - event.at))
  // A steer held against a run-backed reply lands at its run's next model round.
  if (steering && lane!.engine === "run") {
    draft.request({ type: fx.steerRun, params: { runId: lane!.requestId, inputId: input.inputId } })
  }
  if (recorded) recordResults(draft)
  else drain(draft)
}

/** A returned result: a kernel task_result row (a delegated task's, a spawn's or a send's reply). */
const returnedResult = (input: EventOf<"input.accept">["input"]) => input.kernel && input.row.origin === "task_result"

/**
 * Archived: a returned result is recorded, never refused (the work that sent it ran on): it joins as
 * a message whatever its wake asked, as a passive result does (the row keeps what was asked), and
 * becomes a message turn once the lane is idle. No reply starts, now or at unarchive.
 */
const record = (draft: Draft, event: EventOf<"input.accept">) => accept(draft, event, true)

/**
 * Archived: while the lane is idle, returned results (kernel rows, in read order: one queued before
 * the archive too, so none lands ahead of an older one) become message turns; nothing else heads.
 */
const recordResults = (draft: Draft) => {
  if (draft.context.lane !== null) return
  for (const entry of readOrder(draft.context.queue)) {
    if (entry.kernel && entry.dueAt === null) materializeMessage(draft, entry)
  }
}

/** A held steer landed in the running run-backed reply's next round: consumed into its turn. */
const landed = (draft: Draft, event: EventOf<"input.landed">) => {
  const context = draft.context
  const lane = context.lane
  const entry = entryOf(context, event.inputId)
  if (lane === null || lane.engine !== "run" || entry === undefined || entry.state !== "steering") return
  context.queue = context.queue.filter((each) => each.inputId !== entry.inputId)
  draft.request({
    type: fx.landSteer,
    params: { inputId: entry.inputId, turnId: lane.turnId, variantId: lane.variantId }
  })
  draft.emit({
    type: "input_materialized",
    input_public_id: entry.inputId,
    turn_public_id: lane.turnId,
    variant_public_id: lane.variantId,
    run_public_id: lane.requestId
  })
}

const editInput = (draft: Draft, event: EventOf<"input.edit">) => {
  const entry = entryOf(draft.context, event.inputId)
  if (entry === undefined) return refuse(draft, "not_found")
  if (entry.kernel) return refuse(draft, "kernel_input_immutable")
  if (entry.state === "steering") return refuse(draft, "steering_held")
  if (event.expectedLockVersion !== undefined && event.expectedLockVersion !== entry.lockVersion) {
    return refuse(draft, "stale_object")
  }
  const dueAt = event.dueAt === undefined ? entry.dueAt : event.dueAt
  const edited: QueueEntry = {
    ...entry,
    state: "pending",
    blockedReason: null,
    dueAt,
    reply: event.reply === undefined ? entry.reply : event.reply,
    lockVersion: entry.lockVersion + 1
  }
  replace(draft, edited)
  draft.request({
    type: fx.updateInput,
    params: {
      inputId: entry.inputId,
      changes: event.changes,
      state: "pending",
      blockedReason: null,
      ...(event.dueAt === undefined ? {} : { dueAt: event.dueAt }),
      lockVersion: edited.lockVersion
    }
  })
  draft.emit({
    type: "input_edited",
    input_public_id: entry.inputId,
    state: "pending",
    lock_version: edited.lockVersion,
    reason: "edit"
  })
  if (event.dueAt !== undefined) {
    draft.undue(entry.inputId)
    if (event.dueAt !== null) draft.due(entry.inputId, Math.max(0, event.dueAt - event.at))
  }
  dropJudging(draft, entry.inputId)
  drain(draft)
}

const promote = (draft: Draft, event: EventOf<"input.promote">) => {
  const entry = entryOf(draft.context, event.inputId)
  if (entry === undefined) return refuse(draft, "not_found")
  if (entry.kernel) return refuse(draft, "kernel_input_immutable")
  if (entry.state !== "steering") return refuse(draft, "validation_failed")
  if (event.expectedLockVersion !== undefined && event.expectedLockVersion !== entry.lockVersion) {
    return refuse(draft, "stale_object")
  }
  const promoted: QueueEntry = { ...entry, deliveryMode: "steer_now", lockVersion: entry.lockVersion + 1 }
  replace(draft, promoted)
  draft.request({
    type: fx.updateInput,
    params: {
      inputId: entry.inputId,
      changes: {},
      state: "steering",
      blockedReason: null,
      deliveryMode: "steer_now",
      lockVersion: promoted.lockVersion
    }
  })
  draft.emit({
    type: "input_edited",
    input_public_id: entry.inputId,
    state: "steering",
    lock_version: promoted.lockVersion,
    reason: "promoted"
  })
}

const deleteInput = (draft: Draft, event: EventOf<"input.delete">) => {
  const entry = entryOf(draft.context, event.inputId)
  if (entry === undefined) return refuse(draft, "not_found")
  if (entry.kernel) return refuse(draft, "kernel_input_immutable")
  draft.context.queue = draft.context.queue.filter((each) => each.inputId !== entry.inputId)
  dropSteer(draft, draft.context.lane, entry)
  draft.request({ type: fx.deleteInput, params: { inputId: entry.inputId } })
  draft.emit({ type: "input_deleted", input_public_id: entry.inputId })
  if (entry.dueAt !== null) draft.undue(entry.inputId)
  dropJudging(draft, entry.inputId)
  drain(draft)
}

/** The steers held (every author's), in queue position order: the order their run lands them. */
const heldSteers = (queue: ReadonlyArray<QueueEntry>) =>
  queue
    .filter((entry) => entry.state === "steering")
    .sort((a, b) => a.queuePosition - b.queuePosition)
    .map((entry) => entry.inputId)

/**
 * Reorder: the caller's rows take their old positions in the order named; steers held against a
 * run-backed reply whose order changed are told to its run in the new order.
 */
const reorder = (draft: Draft, event: EventOf<"input.reorder">) => {
  const own = draft.context.queue.filter((entry) => !kernelRow(entry) && entry.authorId === event.authorId)
  const named = new Set(event.inputIds)
  const exact =
    named.size === event.inputIds.length && named.size === own.length && own.every((entry) => named.has(entry.inputId))
  if (!exact) return refuse(draft, "queue_changed")
  const positions = own.map((entry) => entry.queuePosition).sort((a, b) => a - b)
  const moved = event.inputIds.map((inputId, index) => ({ inputId, queuePosition: positions[index]! }))
  const before = heldSteers(draft.context.queue)
  for (const { inputId, queuePosition } of moved) {
    replace(draft, { ...entryOf(draft.context, inputId)!, queuePosition })
  }
  draft.request({ type: fx.reorderInputs, params: { positions: moved } })
  const after = heldSteers(draft.context.queue)
  const runId = steeredRun(draft.context.lane)
  if (runId !== null && after.some((inputId, index) => inputId !== before[index])) {
    draft.request({ type: fx.reorderSteers, params: { runId, inputIds: after } })
  }
  drain(draft)
}

/** The judged head opens its running turn (one transaction: turn_created, input_materialized, running). */
const openReply = (draft: Draft, lane: Lane, entry: QueueEntry, plan?: unknown) => {
  const context = draft.context
  const position = context.nextPosition
  context.nextPosition += 1
  context.queue = context.queue.filter((each) => each.inputId !== entry.inputId)
  const revision = bumpRevision(draft)
  const tail: Tail = { turnId: lane.turnId, position, kind: "direct_reply", status: "running" }
  context.tail = tail
  context.lane = { ...lane, phase: "running" }
  if (lane.engine === "run") {
    context.hostedRun = { runId: lane.requestId, turnId: lane.turnId, variantId: lane.variantId, model: lane.model }
  }
  draft.request({
    type: fx.openReply,
    params: {
      inputId: entry.inputId,
      turnId: lane.turnId,
      variantId: lane.variantId,
      requestId: lane.requestId,
      position,
      model: lane.model,
      answererId: entry.reply!.answererId,
      contextRevision: revision,
      engine: lane.engine ?? "direct",
      ...(plan === undefined ? {} : { plan })
    }
  })
  draft.emit({
    type: "turn_created",
    turn_public_id: lane.turnId,
    position,
    kind: "direct_reply",
    role: "assistant",
    answering_user_public_id: entry.reply!.answererId,
    input_public_id: entry.inputId
  })
  draft.emit({
    type: "input_materialized",
    input_public_id: entry.inputId,
    turn_public_id: lane.turnId,
    variant_public_id: lane.variantId,
    run_public_id: lane.engine === "run" ? lane.requestId : null
  })
  draft.emit(
    turnStatusItem(tail, lane.variantId, "running", lane.engine === "run" ? { run_public_id: lane.requestId } : {})
  )
}

/**
 * A verdict about the head as it read at an older lock_version is not taken: the edit that moved
 * it asked the job again. One without a lock_version (asked before verdicts named it) asks again.
 */
const staleVerdict = (draft: Draft, entry: QueueEntry, model: string, event: { readonly lockVersion?: number }) => {
  if (event.lockVersion === undefined) judgeHead(draft, entry, model)
  return event.lockVersion !== entry.lockVersion
}

const judged = (draft: Draft, event: EventOf<"reply.judged">) => {
  const lane = draft.context.lane
  if (lane === null || lane.phase !== "judging" || lane.inputId !== event.inputId) return
  const entry = entryOf(draft.context, event.inputId)
  if (entry === undefined || staleVerdict(draft, entry, lane.model, event)) return
  if (event.revision !== draft.context.contextRevision) return judgeHead(draft, entry, lane.model)
  if (event.verdict === "ready") return openReply(draft, lane, entry, event.plan)
  draft.context.lane = null
  // A kernel row (a returned result asking its sender's reply) is never edited or deleted: one that
  // cannot be served lands as a message (the result recorded, no reply), never a head held for good.
  if (entry.kernel) {
    materializeMessage(draft, entry)
    return drain(draft)
  }
  block(draft, entry, event.verdict)
}

const sampleSource = (lane: Lane) =>
  lane.engine === "run" ? "run" : lane.kind === "fallback" ? "fallback" : "inference"

/**
 * A sample's inference request answered: settle it, re-ask a declined first sample once, or end
 * the turn; an archived conversation settles without draining (unarchive drains).
 */
/**
 * A hosted run told where it stands: its running reply settles as a sample does; a run held for
 * attention (its turn failed) that runs again runs its turn again while the turn is still the tail
 * and nothing else replies.
 */
const runReplied = (draft: Draft, event: EventOf<"run.replied">, drains = true) => {
  const context = draft.context
  const lane = context.lane
  const status = event.status
  if (lane !== null) {
    if (status !== "running") replied(draft, { ...event, status }, drains)
    return
  }
  const hosted = context.hostedRun
  const tail = context.tail
  if (status !== "running" || hosted == null || hosted.runId !== event.requestId || tail?.turnId !== hosted.turnId) {
    return
  }
  context.lane = {
    phase: "running",
    kind: "reply",
    turnId: hosted.turnId,
    variantId: hosted.variantId,
    requestId: hosted.runId,
    inputId: null,
    model: hosted.model,
    engine: "run",
    fallback: null,
    displayedVariantId: null,
    prior: null,
    canceled: false
  }
  context.tail = { ...tail, status: "running" }
  draft.request({
    type: fx.settleSample,
    params: {
      turnId: hosted.turnId,
      variantId: hosted.variantId,
      requestId: hosted.runId,
      variantStatus: "running",
      turnStatus: "running",
      activate: true,
      failureReasonKey: null,
      turnFailureReasonKey: null,
      usage: null,
      contextRevision: context.contextRevision
    }
  })
  draft.emit(turnStatusItem(context.tail, hosted.variantId, "running", { run_public_id: hosted.runId }))
}

const replied = (
  draft: Draft,
  event:
    | EventOf<"inference.replied">
    | (Omit<EventOf<"run.replied">, "status"> & { status: "completed" | "failed" | "canceled" }),
  drains = true
) => {
  const context = draft.context
  const lane = context.lane
  if (lane === null || lane.phase !== "running" || lane.requestId !== event.requestId) return
  const tail = context.tail!
  const regeneration = lane.kind === "regeneration"
  const rescued = event.declined && lane.kind === "reply" && lane.fallback !== null && !lane.canceled
  const variantStatus = event.status
  // A completed sample is shown; a first sample shows its failure; a failed regeneration or a
  // declined sample a fallback reruns stays in the deck, inactive (a failed regeneration's turn
  // returns to what it showed before). A regeneration's run held at needs_attention (told failed:
  // a run never fails terminally) is shown failed and fails the turn, as a first run-backed reply's.
  const held = regeneration && lane.engine === "run" && event.status === "failed"
  const activate = event.status === "completed" || held || (!regeneration && !rescued)
  const prior = regeneration && !activate ? lane.prior : null
  const turnStatus = rescued ? "running" : regeneration && !activate ? (prior?.status ?? "completed") : event.status
  const failureReasonKey =
    event.status === "completed" ? null : (event.errorCode ?? (event.status === "canceled" ? "canceled" : event.status))
  const turnFailureReasonKey =
    turnStatus === "running" || turnStatus === "completed"
      ? null
      : regeneration && !activate
        ? (prior?.failureReasonKey ?? null)
        : failureReasonKey
  const settledTail: Tail = { ...tail, status: turnStatus }
  context.tail = settledTail
  const revision = rescued ? context.contextRevision : bumpRevision(draft)
  draft.request({
    type: fx.settleSample,
    params: {
      turnId: lane.turnId,
      variantId: lane.variantId,
      requestId: lane.requestId,
      variantStatus,
      turnStatus,
      activate,
      failureReasonKey,
      turnFailureReasonKey,
      usage: event.usage,
      contextRevision: revision,
      ...(lane.kind === "summary" ? { summary: true } : {})
    }
  })
  if (event.usage !== null) {
    draft.emit({ type: "usage", turn_public_id: lane.turnId, variant_public_id: lane.variantId, ...event.usage })
  }
  if (event.status === "completed" && lane.kind !== "summary") context.lastReplyModel = lane.model
  // The shown run-backed candidate's run is the one that, running again after attention, runs its turn again.
  if (regeneration && activate && lane.engine === "run") {
    context.hostedRun = { runId: lane.requestId, turnId: lane.turnId, variantId: lane.variantId, model: lane.model }
  }
  if (rescued) {
    const fallback = lane.fallback!
    draft.emit({
      type: "turn_variant",
      turn_public_id: lane.turnId,
      variant_public_id: lane.variantId,
      source: sampleSource(lane),
      status: variantStatus,
      active: false
    })
    context.lane = {
      ...lane,
      kind: "fallback",
      variantId: fallback.variantId,
      requestId: fallback.requestId,
      model: fallback.model,
      fallback: null
    }
    draft.request({
      type: fx.openSample,
      params: {
        turnId: lane.turnId,
        variantId: fallback.variantId,
        requestId: fallback.requestId,
        model: fallback.model,
        source: "fallback",
        originVariantId: lane.variantId,
        overrides: {}
      }
    })
    draft.emit({
      type: "turn_variant",
      turn_public_id: lane.turnId,
      variant_public_id: fallback.variantId,
      source: "fallback",
      status: "running",
      active: false
    })
    return
  }
  if (regeneration || lane.kind === "fallback") {
    draft.emit({
      type: "turn_variant",
      turn_public_id: lane.turnId,
      variant_public_id: lane.variantId,
      source: sampleSource(lane),
      status: variantStatus,
      active: activate
    })
  }
  draft.emit(
    turnStatusItem(
      settledTail,
      activate ? lane.variantId : (lane.displayedVariantId ?? lane.variantId),
      activate ? variantStatus : (prior?.variantStatus ?? "completed"),
      turnFailureReasonKey === null ? {} : { failure_reason_key: turnFailureReasonKey }
    )
  )
  if (lane.kind === "summary" && event.status === "completed") {
    draft.emit({ type: "context_compacted", trigger: lane.trigger ?? "manual", turn_public_id: lane.turnId })
  }
  context.lane = null
  releaseSteers(draft, lane)
  if (drains) drain(draft)
}

/** A compaction_summary turn opens running (role user, no speaker) and its summarizer is asked. */
const openSummary = (draft: Draft, event: EventOf<"conversation.compact">) => {
  const context = draft.context
  const position = context.nextPosition
  context.nextPosition += 1
  const revision = bumpRevision(draft)
  const tail: Tail = { turnId: event.turnId, position, kind: "compaction_summary", status: "running" }
  context.tail = tail
  context.lane = {
    phase: "running",
    kind: "summary",
    turnId: event.turnId,
    variantId: event.variantId,
    requestId: event.requestId,
    inputId: null,
    model: event.model,
    fallback: null,
    displayedVariantId: null,
    prior: null,
    canceled: false,
    trigger: event.trigger
  }
  draft.request({
    type: fx.openSummary,
    params: {
      turnId: event.turnId,
      variantId: event.variantId,
      requestId: event.requestId,
      position,
      model: event.model,
      contextRevision: revision
    }
  })
  draft.emit({
    type: "turn_created",
    turn_public_id: event.turnId,
    position,
    kind: "compaction_summary",
    role: "user",
    answering_user_public_id: null,
    input_public_id: null
  })
  draft.emit(turnStatusItem(tail, event.variantId, "running"))
}

/**
 * A compaction. manual: refused while a reply or summary is under way (conversation_busy, judged
 * first), or with nothing after the newest completed summary (nothing_to_compact). wall: the head
 * being judged is summarized for first (its verdict at an older revision is asked again).
 */
const compact = (draft: Draft, event: EventOf<"conversation.compact">) => {
  const context = draft.context
  if (event.trigger === "manual") {
    if (context.lane !== null) return refuse(draft, "conversation_busy")
    const tail = context.tail
    // No own turn: a fork or side still reads its inherited prefix (positions through the floor).
    const nothing =
      tail === null ? context.frozenThrough === 0 : tail.kind === "compaction_summary" && tail.status === "completed"
    if (nothing) return refuse(draft, "nothing_to_compact")
    return openSummary(draft, event)
  }
  const lane = context.lane
  if (lane === null || lane.phase !== "judging" || lane.inputId !== event.inputId) return
  const entry = entryOf(context, lane.inputId)
  if (entry === undefined || staleVerdict(draft, entry, lane.model, event)) return
  if (event.revision !== context.contextRevision) return judgeHead(draft, entry, lane.model)
  openSummary(draft, event)
}

/** Content verbs aim at the tail: elsewhere, or in a frozen prefix, a branch is required. */
const tailRefusal = (context: Context, turnId: string): string | null => {
  const tail = context.tail
  if (tail === null || tail.turnId !== turnId || tail.position <= frozenThrough(context)) return "branch_required"
  if (context.lane !== null && context.lane.phase === "running" && context.lane.turnId === turnId) return "not_terminal"
  if (tail.kind === "compaction_summary") return "kernel_authored"
  return null
}

/** An edit of the tail: a new candidate (source edit), shown at once. */
const editTurn = (draft: Draft, event: EventOf<"turn.edit">) => {
  const refusal = tailRefusal(draft.context, event.turnId)
  if (refusal !== null) return refuse(draft, refusal)
  const revision = bumpRevision(draft)
  draft.request({
    type: fx.editTurn,
    params: { turnId: event.turnId, variantId: event.variantId, text: event.text, contextRevision: revision }
  })
  draft.emit({
    type: "turn_variant",
    turn_public_id: event.turnId,
    variant_public_id: event.variantId,
    source: "edit",
    status: "completed",
    active: true
  })
  // The edit is the turn's shown candidate: a failed or canceled turn is completed by it.
  const tail = draft.context.tail!
  if (tail.status === "completed") return
  draft.context.tail = { ...tail, status: "completed" }
  draft.emit(turnStatusItem(draft.context.tail, event.variantId, "completed"))
}

/** Regeneration: a message tail is 422 before any 409 (the spec's standing order), then the tail's fences, then busy. */
const regenerate = (draft: Draft, event: EventOf<"turn.regenerate">) => {
  const context = draft.context
  if (context.tail?.turnId === event.turnId && context.tail.kind === "message") {
    return refuse(draft, "validation_failed")
  }
  const refusal = tailRefusal(context, event.turnId)
  if (refusal !== null) return refuse(draft, refusal)
  if (context.lane !== null) return refuse(draft, "conversation_busy")
  const tail = context.tail!
  context.tail = { ...tail, status: "running" }
  context.lane = {
    phase: "running",
    kind: "regeneration",
    turnId: event.turnId,
    variantId: event.variantId,
    requestId: event.requestId,
    inputId: null,
    model: event.model,
    fallback: null,
    displayedVariantId: event.displayedVariantId,
    prior: {
      status: tail.status,
      variantStatus: event.displayedStatus ?? tail.status,
      failureReasonKey: event.failureReasonKey ?? null
    },
    canceled: false,
    ...(event.engine === "run" ? { engine: "run" as const } : {})
  }
  // A run-backed reply asked again opens a new hosted run from its plan, as its first reply did.
  const hosted = event.engine === "run"
  const source = sampleSource(context.lane)
  draft.request({
    type: fx.openSample,
    params: {
      turnId: event.turnId,
      variantId: event.variantId,
      requestId: event.requestId,
      model: event.model,
      source,
      originVariantId: event.sealedVariantId ?? event.displayedVariantId,
      overrides: event.overrides,
      ...(hosted ? { engine: "run" as const, plan: event.plan } : {})
    }
  })
  draft.emit({
    type: "turn_variant",
    turn_public_id: event.turnId,
    variant_public_id: event.variantId,
    source,
    status: "running",
    active: false
  })
  draft.emit(turnStatusItem(context.tail, event.variantId, "running", hosted ? { run_public_id: event.requestId } : {}))
}

/** Activation: the candidate is shown, and the turn takes its status and failure. */
const activate = (draft: Draft, event: EventOf<"turn.activate">) => {
  const context = draft.context
  const refusal = tailRefusal(context, event.turnId)
  if (refusal !== null) return refuse(draft, refusal)
  if (event.reactivation === true) return
  const revision = bumpRevision(draft)
  const variant = event.variant
  const status = variant === undefined ? undefined : variant.status
  const failureReasonKey = status === undefined || status === "completed" ? null : (variant?.failureReasonKey ?? null)
  draft.request({
    type: fx.activateVariant,
    params: {
      turnId: event.turnId,
      variantId: event.variantId,
      contextRevision: revision,
      ...(status === undefined ? {} : { status, failureReasonKey })
    }
  })
  draft.emit({
    type: "turn_variant",
    turn_public_id: event.turnId,
    variant_public_id: event.variantId,
    ...(variant === undefined ? {} : { source: variant.source }),
    status: status ?? "completed",
    active: true
  })
  const tail = context.tail!
  if (status === undefined || status === tail.status) return
  context.tail = { ...tail, status }
  draft.emit(
    turnStatusItem(
      context.tail,
      event.variantId,
      status,
      failureReasonKey === null ? {} : { failure_reason_key: failureReasonKey }
    )
  )
}

const runningTurn = (context: Context, turnId: string) =>
  context.lane !== null && context.lane.phase === "running" && context.lane.turnId === turnId

const setVisibility = (draft: Draft, event: EventOf<"turn.visibility">) => {
  if (runningTurn(draft.context, event.turnId)) return refuse(draft, "not_terminal")
  const revision = bumpRevision(draft)
  draft.request({
    type: fx.setVisibility,
    params: {
      turnId: event.turnId,
      visibility: event.visibility,
      contextRevision: revision,
      ...(event.inherited === true ? { inherited: true } : {})
    }
  })
  draft.emit({ type: "visibility", turn_public_id: event.turnId, visibility: event.visibility })
}

const concealVariant = (draft: Draft, event: EventOf<"variant.conceal">) => {
  const lane = draft.context.lane
  if (lane !== null && lane.phase === "running" && lane.variantId === event.variantId) {
    return refuse(draft, "not_terminal")
  }
  draft.request({ type: fx.concealVariant, params: event })
}

const deleteTurn = (draft: Draft, event: EventOf<"turn.delete">) => {
  const context = draft.context
  const refusal = tailRefusal(context, event.turnId)
  if (refusal !== null) return refuse(draft, refusal)
  const position = context.tail!.position
  const revision = bumpRevision(draft)
  context.tail = event.previousTail
  draft.request({ type: fx.deleteTurn, params: { turnId: event.turnId, contextRevision: revision } })
  draft.emit({ type: "turn_deleted", turn_public_id: event.turnId, position })
}

const cancelReply = (draft: Draft) => {
  const lane = draft.context.lane
  if (lane === null || lane.phase !== "running" || lane.canceled) return
  draft.context.lane = { ...lane, canceled: true, fallback: null }
  draft.request({ type: fx.cancelRequest, params: { requestId: lane.requestId, engine: lane.engine ?? "direct" } })
}

const configure = (draft: Draft, event: EventOf<"conversation.configure">) => {
  const context = draft.context
  context.lockVersion += 1
  if (event.changes.memory_context !== undefined) bumpRevision(draft)
  draft.request({
    type: fx.recordChanges,
    params: { changes: event.changes, lockVersion: context.lockVersion, contextRevision: context.contextRevision }
  })
  if (event.item !== null) draft.emit({ type: String(event.item.type), ...event.item })
}

const edit = (draft: Draft, event: EventOf<"conversation.edit">) => {
  const context = draft.context
  if (event.lockVersion !== context.lockVersion) return refuse(draft, "stale_object")
  context.lockVersion += 1
  draft.request({
    type: fx.recordChanges,
    params: { changes: event.changes, lockVersion: context.lockVersion, contextRevision: context.contextRevision }
  })
}

const memoryWritten = (draft: Draft) => {
  bumpRevision(draft)
  draft.request({
    type: fx.recordChanges,
    params: { changes: {}, lockVersion: draft.context.lockVersion, contextRevision: draft.context.contextRevision }
  })
}

const lifecycleRefusal = (context: Context) =>
  context.subagent ? "subagent_follows_parent" : context.side ? "side_conversation" : null

const recordState = (draft: Draft, state: RecordStateParams["state"]) => {
  draft.context.lockVersion += 1
  draft.request({ type: fx.recordState, params: { state, lockVersion: draft.context.lockVersion } })
}

/** Archive: its sides are ended first (their work canceled), its subagent children follow; then it narrates. */
const archive = (draft: Draft) => {
  draft.request({ type: fx.tellFollowers, params: { command: "archive" } })
  recordState(draft, "archived")
  cancelReply(draft)
  draft.emit({ type: "conversation_ended", reason: "archived" })
}

/** Unarchive: its subagent children follow (no side returns); what came due meanwhile drains. */
const unarchive = (draft: Draft) => {
  recordState(draft, "active")
  draft.request({ type: fx.tellFollowers, params: { command: "unarchive" } })
  drain(draft)
}

/** A scheduled input came due: it may head now (an archived conversation drains on unarchive). */
const due = (draft: Draft, event: EventOf<"input.due">, drains = true) => {
  const entry = entryOf(draft.context, event.inputId)
  if (entry === undefined || entry.dueAt === null) return
  replace(draft, { ...entry, dueAt: null })
  if (drains) drain(draft)
}

const busy = (context: Context) => context.lane !== null && context.lane.phase === "running"

/**
 * Tombstoned (DELETE, or ended by its source or parent): its sides and children end with it, the
 * conversations it reads by reference lift its freeze, and conversation_ended is its last item.
 */
const tombstone = (draft: Draft) => {
  const context = draft.context
  const lane = context.lane
  const canceled = lane !== null && lane.phase === "running" && lane.engine === "run" ? lane.requestId : null
  context.lane = null
  recordState(draft, "tombstoned")
  for (const entry of context.queue) if (entry.dueAt !== null) draft.undue(entry.inputId)
  draft.request({ type: fx.tellFollowers, params: { command: "end" } })
  draft.request({ type: fx.releaseSources })
  draft.request({ type: fx.stopHostedRuns, params: { except: canceled } })
  draft.emit({ type: "conversation_ended", reason: "tombstoned" })
  draft.reapLater()
}

/** DELETE: refused while a turn is pending or running here (the machine) or in its tree (the binding). */
const remove = (draft: Draft) => {
  draft.request({ type: fx.ensureTreeIdle })
  tombstone(draft)
}

/**
 * Ended by its source or parent: its running sample is canceled and settled canceled at once (a
 * tombstone takes no later reply), then it is tombstoned.
 */
const end = (draft: Draft) => {
  const lane = draft.context.lane
  if (lane !== null && lane.phase === "running") {
    if (!lane.canceled) {
      draft.request({ type: fx.cancelRequest, params: { requestId: lane.requestId, engine: lane.engine ?? "direct" } })
    }
    const regeneration = lane.kind === "regeneration"
    draft.request({
      type: fx.settleSample,
      params: {
        turnId: lane.turnId,
        variantId: lane.variantId,
        requestId: lane.requestId,
        variantStatus: "canceled",
        turnStatus: regeneration ? (lane.prior?.status ?? "completed") : "canceled",
        activate: !regeneration,
        failureReasonKey: "canceled",
        turnFailureReasonKey: regeneration ? (lane.prior?.failureReasonKey ?? null) : "canceled",
        usage: null,
        contextRevision: draft.context.contextRevision,
        ...(lane.kind === "summary" ? { summary: true } : {})
      }
    })
  }
  tombstone(draft)
}

/** Positions frozen: the floor, and what each live child reads. */
const frozenThrough = (context: Context) => Math.max(context.frozenThrough, ...Object.values(context.freezes))

const freeze = (draft: Draft, event: { readonly through: number; readonly child?: string }) => {
  const context = draft.context
  if (event.child === undefined) {
    context.frozenThrough = Math.max(context.frozenThrough, event.through)
    return
  }
  context.freezes = {
    ...context.freezes,
    [event.child]: Math.max(context.freezes[event.child] ?? 0, event.through)
  }
}

const release = (draft: Draft, event: EventOf<"conversation.release">) => {
  const { [event.child]: _released, ...rest } = draft.context.freezes
  draft.context.freezes = rest
}

const conversationSetup = setup({
  types: {
    context: {} as Context,
    input: {} as ConversationInput,
    events: {} as Event,
    emitted: {} as Item
  },
  actions: {
    [fx.recordChanges]: (_, _params: RecordChangesParams) => {},
    [fx.recordState]: (_, _params: RecordStateParams) => {},
    [fx.refuse]: (_, _params: { reason: string }) => {},
    [fx.insertInput]: (_, _params: import("./effects.ts").InsertInputParams) => {},
    [fx.updateInput]: (_, _params: UpdateInputParams) => {},
    [fx.deleteInput]: (_, _params: { inputId: string }) => {},
    [fx.reorderInputs]: (_, _params: { positions: ReadonlyArray<{ inputId: string; queuePosition: number }> }) => {},
    [fx.materializeMessage]: (_, _params: MaterializeParams) => {},
    [fx.openReply]: (_, _params: OpenReplyParams) => {},
    [fx.openSample]: (_, _params: OpenSampleParams) => {},
    [fx.openSummary]: (_, _params: OpenSummaryParams) => {},
    [fx.settleSample]: (_, _params: SettleSampleParams) => {},
    [fx.cancelRequest]: (_, _params: CancelRequestParams) => {},
    [fx.editTurn]: (_, _params: TurnParams & { variantId: string; text: string }) => {},
    [fx.activateVariant]: (_, _params: ActivateParams) => {},
    [fx.setVisibility]: (_, _params: VisibilityParams) => {},
    [fx.concealVariant]: (_, _params: { turnId: string; variantId: string; concealed: boolean }) => {},
    [fx.deleteTurn]: (_, _params: TurnParams) => {},
    [fx.ensureTreeIdle]: () => {},
    [fx.tellFollowers]: (_, _params: TellFollowersParams) => {},
    [fx.releaseSources]: () => {},
    [fx.stopHostedRuns]: (_, _params: StopHostedRunsParams) => {},
    [fx.reap]: () => {},
    [fx.judgeHead]: (_, _params: JudgeHeadParams) => {},
    [fx.steerRun]: (_, _params: { runId: string; inputId: string }) => {},
    [fx.dropSteer]: (_, _params: { runId: string; inputId: string }) => {},
    [fx.reorderSteers]: (_, _params: { runId: string; inputIds: ReadonlyArray<string> }) => {},
    [fx.landSteer]: (_, _params: { inputId: string; turnId: string; variantId: string }) => {}
  },
  guards: {
    lifecycleRefused: ({ context }: { context: Context }) => lifecycleRefusal(context) !== null,
    busy: ({ context }: { context: Context }) => busy(context),
    /** A running sample not yet told to cancel (else the command changes nothing), of the turn named if any. */
    cancelable: ({ context, event }: { context: Context; event: Event }) =>
      busy(context) &&
      !context.lane!.canceled &&
      (event.type !== "conversation.cancel" || event.turnId === undefined || event.turnId === context.lane!.turnId),
    /** Its parent was archived (a subagent child follows). */
    followsArchive: ({ event }: { event: Event }) => event.type === "conversation.follow" && event.state === "archived",
    followsUnarchive: ({ event }: { event: Event }) => event.type === "conversation.follow" && event.state === "active",
    returnedResult: ({ event }: { event: Event }) => event.type === "input.accept" && returnedResult(event.input)
  }
})

/** The transition's actions: `work` on a draft of the context, then what it asked, in order. */
const step = <T extends Event["type"]>(work: (draft: Draft, event: EventOf<T>) => void) =>
  conversationSetup.enqueueActions(({ context, event, enqueue }) => {
    const draft: Draft = {
      context: { ...context, queue: [...context.queue] },
      request: (action) => enqueue(action as never),
      emit: (item) => enqueue.emit(item),
      due: (inputId, delay) => enqueue.raise({ type: "input.due", inputId }, { id: dueTimer(inputId), delay }),
      undue: (inputId) => enqueue.cancel(dueTimer(inputId)),
      reapLater: () => enqueue.raise({ type: "conversation.reap" }, { id: "reap", delay: reapAfterMillis })
    }
    work(draft, event as EventOf<T>)
    enqueue.assign(draft.context)
  })

/** Commands an archived conversation answers 409 conversation_archived. */
const archivedRefusal = step((draft) => refuse(draft, "conversation_archived"))

const refuseLifecycle = step((draft) => refuse(draft, lifecycleRefusal(draft.context)!))

/** DELETE is refused while a reply is pending or running (the binding judges the rest of the tree). */
const tombstoneTransitions = [
  { guard: "busy" as const, actions: step((draft) => refuse(draft, "conversation_busy")) },
  { target: "tombstoned" as const, actions: step(remove) }
]

/** What an active or archived conversation takes alike: its children's freezes, its end, narration. */
const liveTransitions = {
  "conversation.freeze": { actions: step<"conversation.freeze">(freeze) },
  "conversation.forked": {
    actions: step<"conversation.forked">((draft, event) => {
      freeze(draft, event)
      draft.emit({ ...event.item, type: "fork_created" })
    })
  },
  "conversation.release": { actions: step(release) },
  "conversation.end": { target: "tombstoned" as const, actions: step(end) },
  "principal.renamed": {
    actions: step<"principal.renamed">((draft, event) => draft.emit({ type: "handle_changed", ...event.item }))
  }
}

export const conversationMachine = conversationSetup.createMachine({
  id: "conversation",
  context: ({ input }) => ({
    publicId: input.publicId,
    side: input.side,
    subagent: input.subagent,
    lockVersion: 0,
    contextRevision: 0,
    nextPosition: input.tail === null ? input.firstPosition : input.tail.position + 1,
    nextQueuePosition: 0,
    queue: [],
    lane: null,
    tail: input.tail,
    lastReplyModel: null,
    frozenThrough: input.firstPosition - 1,
    freezes: {}
  }),
  initial: "active",
  states: {
    active: {
      meta: { waitsOn: "its members (inputs), its reply's inference request, or its scheduled inputs' timers" },
      on: {
        ...liveTransitions,
        "conversation.follow": {
          guard: "followsArchive",
          target: "archived",
          actions: step(archive)
        },
        "conversation.edit": { actions: step(edit) },
        "conversation.configure": { actions: step(configure) },
        "conversation.memoryWritten": { actions: step(memoryWritten) },
        "conversation.archive": [
          { guard: "lifecycleRefused", actions: refuseLifecycle },
          { target: "archived", actions: step(archive) }
        ],
        // Nothing to unarchive here, but a side or a subagent answers its refusal in every state.
        "conversation.unarchive": { guard: "lifecycleRefused", actions: refuseLifecycle },
        "conversation.tombstone": tombstoneTransitions,
        "conversation.cancel": { guard: "cancelable", actions: step(cancelReply) },
        "input.accept": { actions: step(accept) },
        "input.edit": { actions: step(editInput) },
        "input.promote": { actions: step(promote) },
        "input.delete": { actions: step(deleteInput) },
        "input.reorder": { actions: step(reorder) },
        "input.due": { actions: step<"input.due">((draft, event) => due(draft, event)) },
        "reply.judged": { actions: step(judged) },
        "conversation.compact": { actions: step(compact) },
        "inference.replied": { actions: step(replied) },
        "run.replied": { actions: step(runReplied) },
        "input.landed": { actions: step(landed) },
        "turn.edit": { actions: step(editTurn) },
        "turn.regenerate": { actions: step(regenerate) },
        "turn.activate": { actions: step(activate) },
        "turn.visibility": { actions: step(setVisibility) },
        "turn.delete": { actions: step(deleteTurn) },
        "variant.conceal": { actions: step(concealVariant) }
      }
    },
    archived: {
      meta: { waitsOn: "its members (unarchive or delete), or its parent's unarchive" },
      on: {
        ...liveTransitions,
        "conversation.unarchive": [
          { guard: "lifecycleRefused", actions: refuseLifecycle },
          { target: "active", actions: step(unarchive) }
        ],
        "conversation.archive": { guard: "lifecycleRefused", actions: refuseLifecycle },
        "conversation.follow": {
          guard: "followsUnarchive",
          target: "active",
          actions: step(unarchive)
        },
        "conversation.configure": {
          actions: step<"conversation.configure">((draft, event) =>
            Object.keys(event.changes).some((name) => name !== "access")
              ? refuse(draft, "conversation_archived")
              : configure(draft, event)
          )
        },
        "conversation.tombstone": tombstoneTransitions,
        "inference.replied": {
          actions: step<"inference.replied">((draft, event) => {
            replied(draft, event, false)
            recordResults(draft)
          })
        },
        "run.replied": {
          actions: step<"run.replied">((draft, event) => {
            runReplied(draft, event, false)
            recordResults(draft)
          })
        },
        "input.due": { actions: step<"input.due">((draft, event) => due(draft, event, false)) },
        "reply.judged": {
          actions: step<"reply.judged">((draft, event) => {
            if (draft.context.lane?.inputId === event.inputId) draft.context.lane = null
            recordResults(draft)
          })
        },
        "conversation.compact": {
          actions: step<"conversation.compact">((draft, event) => {
            if (event.trigger === "manual") return refuse(draft, "conversation_archived")
            if (draft.context.lane?.inputId === event.inputId) draft.context.lane = null
            recordResults(draft)
          })
        },
        "conversation.edit": { actions: archivedRefusal },
        "conversation.memoryWritten": { actions: archivedRefusal },
        "input.accept": [{ guard: "returnedResult", actions: step(record) }, { actions: archivedRefusal }],
        "input.edit": { actions: archivedRefusal },
        "input.promote": { actions: archivedRefusal },
        "input.delete": { actions: archivedRefusal },
        "input.reorder": { actions: archivedRefusal },
        "turn.edit": { actions: archivedRefusal },
        "turn.regenerate": { actions: archivedRefusal },
        "turn.activate": { actions: archivedRefusal },
        "turn.visibility": { actions: archivedRefusal },
        "turn.delete": { actions: archivedRefusal },
        "variant.conceal": { actions: archivedRefusal },
        "conversation.cancel": { guard: "cancelable", actions: step(cancelReply) }
      }
    },
    tombstoned: {
      meta: { waitsOn: "its reap, 30 days after DELETE" },
      on: { "conversation.reap": { target: "reaped", actions: { type: fx.reap } } }
    },
    reaped: { type: "final" }
  }
})

/**
 * 2: per-child freezes (`freezes`; a version-1 frozenThrough stays the floor) and a regeneration
 * lane's `prior` (what a failed one returns to; version 1 returned to completed).
 */
export const conversationVersion = 2

const migrateLane = (lane: Record<string, unknown> | null) =>
  lane === null
    ? null
    : {
        ...lane,
        prior:
          lane.kind === "regeneration"
            ? { status: "completed", variantStatus: "completed", failureReasonKey: null }
            : null
      }

export const conversationMigrations = {
  2: <S extends { readonly context: unknown }>(snapshot: S) => {
    const context = snapshot.context as Record<string, unknown>
    return {
      ...snapshot,
      context: { ...context, freezes: {}, lane: migrateLane(context.lane as Record<string, unknown> | null) }
    }
  }
}
