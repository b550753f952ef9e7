// What a child conversation's settled reply means around it, in the settling step's transaction:
// the first reply to a schedule's execution returns to the parent conversation as a task_result
// input (kernel mail: a message turn, no reply started) and tells the schedule its execution ended.
// A regeneration or any later turn of the child changes nothing (the execution settles once). A
// child that ends (its tombstone) before its first reply settled ends its execution canceled.
import type { AcceptedInput } from "@troupe/machines/conversation/events"
import { newPublicId } from "@troupe/storage/Ids"
import { type ConversationRow, ConversationsRepository } from "@troupe/storage/repositories/Conversations"
import { SchedulesRepository } from "@troupe/storage/repositories/Schedules"
import { Effect } from "effect"
import { TransactionalActors } from "../Binding.ts"

const terminal = new Set(["completed", "failed", "canceled", "timed_out"])

/** The settled turn's outcome as an execution's status. */
const executionStatus = (turnStatus: string) =>
  turnStatus === "completed"
    ? ("completed" as const)
    : turnStatus === "canceled"
      ? ("canceled" as const)
      : ("failed" as const)

export const childReplySettled = (
  child: ConversationRow,
  settled: { readonly turnId: string; readonly variantId: string; readonly turnStatus: string },
  now: Date
) =>
  Effect.gen(function* () {
    if (child.parent_id === null || !terminal.has(settled.turnStatus)) return
    const schedules = yield* SchedulesRepository.make
    const execution = yield* schedules.settleExecution({
      childConversationId: child.id,
      turnPublicId: settled.turnId,
      now
    })
    if (execution === undefined) return
    const conversations = yield* ConversationsRepository.make
    const variant = yield* conversations.findVariant(settled.variantId)
    const status = executionStatus(settled.turnStatus)
    const text =
      status === "completed"
        ? (variant?.content ?? "")
        : `The scheduled execution ${status}: ${variant?.failure_reason_key ?? status}`
    const inputId = newPublicId()
    const input: AcceptedInput = {
      inputId,
      kind: "message",
      kernel: true,
      role: "user",
      deliveryMode: "queue",
      dueAt: null,
      authorId: execution.creator_public_id,
      reply: null,
      ids: {
        turnId: newPublicId(),
        variantId: newPublicId(),
        requestId: newPublicId(),
        fallbackVariantId: newPublicId(),
        fallbackRequestId: newPublicId()
      },
      row: {
        text,
        origin: "task_result",
        author_id: String(execution.creator_id),
        idempotency_key: null,
        speaker_id: String(child.answerer_id),
        answerer_id: null,
        members: {
          delivery_mode: "queue",
          attachments: [],
          context_options: {},
          result: {
            status,
            child_conversation_public_id: child.public_id,
            input_public_id: execution.input_public_id,
            turn_public_id: settled.turnId,
            schedule_public_id: execution.schedule_public_id
          }
        }
      },
      item: {
        input_public_id: inputId,
        kind: "message",
        delivery_mode: "queue",
        origin: "task_result",
        author_public_id: execution.creator_public_id,
        answering_user_public_id: null,
        deliver_at: null
      }
    }
    const actors = yield* TransactionalActors
    yield* actors.reply(
      { kind: "conversation", actorId: execution.parent_public_id },
      { type: "input.accept", at: now.getTime(), input }
    )
    yield* actors.reply(
      { kind: "schedule", actorId: execution.schedule_public_id },
      { type: "execution.settled", inputId: execution.input_public_id, status }
    )
  })

/** A child conversation ended: its execution, still waiting on the first reply, ends canceled. */
export const childEnded = (childPublicId: string, now: Date) =>
  Effect.gen(function* () {
    const schedules = yield* SchedulesRepository.make
    const execution = yield* schedules.endExecutionOfChild({ childPublicId, now })
    if (execution === undefined) return
    const actors = yield* TransactionalActors
    yield* actors.reply(
      { kind: "schedule", actorId: execution.schedule_public_id },
      { type: "execution.settled", inputId: execution.input_public_id, status: "canceled" }
    )
  })
