// A schedule's executions (supplement "Schedules", conversations supplement "Conversation"): each
// is a child conversation of the schedule's conversation (parent {public_id, spawn_node_key null,
// label null}; it inherits memory context, access, default runner and billing subject; the
// schedule's answerer, else the parent's, answers it) whose first input, authored by the schedule's
// creator (the payer), carries the prompt and the policy. The parent's creator and answerer keep
// full access to it. An agent answering it must still write in the workspace (else the execution
// fails answerer_not_eligible, the schedule's last_error_code). Opened in the schedule's step: the
// child's row and actor, the input told to it, the execution row; a parent archived (or gone)
// opens none.
// Also the schedule actor's definition.

import { TransactionalActors } from "@troupe/actors/Binding"
import type { ConversationActor } from "@troupe/actors/bindings/conversation"
import { type ScheduleWork, scheduleActor } from "@troupe/actors/bindings/schedule"
import { onStepClient } from "@troupe/storage/Repositories"
import { ConversationsRepository } from "@troupe/storage/repositories/Conversations"
import { SchedulesRepository } from "@troupe/storage/repositories/Schedules"
import { Context, Effect, Layer } from "effect"
import { renderConfiguration } from "../agents/AgentConfiguration.ts"
import { childFirstInput, openChild } from "../conversations/Children.ts"
import { ConversationDefinition } from "../conversations/Conversations.ts"
import { agentWrites } from "../conversations/Standing.ts"
import { ModelCatalog } from "../models/ModelCatalog.ts"
import type { StoredPolicy } from "./Policy.ts"
import { latestAtOrBefore, nextAfter, type Rule } from "./Rules.ts"

/** Reply members of the policy an execution's first input stores as given. */
const storedReplyMembers = [
  "configuration",
  "tool_names",
  "approval_mode",
  "model_selection",
  "fallback_models"
] as const

export const makeScheduleWork = (catalog: ModelCatalog["Service"], conversation: ConversationActor): ScheduleWork => {
  const serves = (model: string | null) =>
    model !== null && (catalog.find(model)?.workloads.includes("text_generation") ?? false)

  return {
    occurrences: (rule, at) => ({
      scheduledFor: latestAtOrBefore(rule as Rule, at) ?? at,
      nextRunAt: nextAfter(rule as Rule, at)
    }),
    dispatch: (schedulePublicId, params) =>
      Effect.gen(function* () {
        const schedules = yield* SchedulesRepository.make
        const conversations = yield* ConversationsRepository.make
        const schedule = yield* schedules.findSchedule(schedulePublicId)
        if (schedule === undefined) return "not_found"
        const parent = yield* conversations.findConversationById(schedule.conversation_id)
        if (parent === undefined || parent.state === "tombstoned") return "not_found"
        if (parent.state === "archived") return "conversation_archived"
        const policy = schedule.policy as StoredPolicy
        const at = new Date(params.at)
        const answererId = policy.answering_user_id === null ? parent.answerer_id : BigInt(policy.answering_user_id)
        const speakerId = policy.speaker_id === null ? schedule.creator_id : BigInt(policy.speaker_id)
        const people = new Map(
          (yield* conversations.speakers([
            schedule.creator_id,
            answererId,
            speakerId,
            parent.creator_id,
            parent.answerer_id
          ])).map((row) => [row.id, row])
        )
        const creator = people.get(schedule.creator_id)
        const answerer = people.get(answererId)
        if (creator === undefined || answerer === undefined || creator.status !== "active")
          return "author_not_authorized"
        if (answerer.kind === "agent") {
          // The agent must still be one that may write in the workspace (its steward may have lost sight of it).
          const workspace = (yield* conversations.standingOf(schedule.workspace_public_id, null))?.workspace
          if (workspace === undefined || !(yield* onStepClient(agentWrites(workspace, answerer))))
            return "answerer_not_eligible"
        }
        const childRowId = yield* openChild(conversation, parent, {
          publicId: params.childId,
          creatorId: schedule.creator_id,
          answererId,
          title: schedule.name,
          defaultRunnerExecutorId: null,
          publicIds: new Map([...people.values()].map((row) => [row.id, row.public_id])),
          at
        })
        yield* schedules.setParent(childRowId, parent.id)
        const actors = yield* TransactionalActors
        const configuration = answerer.kind === "agent" ? renderConfiguration(answerer.configuration) : undefined
        const asked = typeof policy.model?.model === "string" ? policy.model.model : null
        const model = asked ?? configuration?.default_model ?? parent.last_reply_model
        // The schedule's list ([] disables the fallback), else (null) the answerer's standing list.
        const fallback = (policy.fallback_models ?? configuration?.fallback_models)?.[0] ?? null
        const stored = Object.fromEntries(
          storedReplyMembers.filter((name) => policy[name] !== null).map((name) => [name, policy[name]])
        )
        const input = childFirstInput({
          inputId: params.inputId,
          text: schedule.prompt,
          creator,
          answerer,
          speakerId,
          model,
          modelKnown: serves(model),
          fallbackModel: serves(fallback) ? fallback : null,
          idempotencyKey: null,
          members: { ...stored, ...(model === null ? {} : { model: { ...(policy.model ?? {}), model } }) }
        })
        yield* actors.tell(conversation, params.childId, { type: "input.accept", at: params.at, input })
        yield* schedules.insertExecution({
          scheduleId: schedule.id,
          childConversationId: childRowId,
          inputPublicId: params.inputId,
          scheduledFor: new Date(params.scheduledFor),
          now: at
        })
        return undefined
      })
  }
}

/** The one definition of the schedule actor the runtime holds. */
export class ScheduleDefinition extends Context.Service<ScheduleDefinition, ReturnType<typeof scheduleActor>>()(
  "@troupe/domain/schedules/ScheduleDefinition"
) {
  static readonly layer = Layer.effect(
    ScheduleDefinition,
    Effect.gen(function* () {
      return scheduleActor(makeScheduleWork(yield* ModelCatalog, yield* ConversationDefinition))
    })
  )
}
