// The kernel tools that send work to other conversations (runs supplement "Tool catalog"), for
// the run's creator as the member doors judge it; installed in ConversationMailSlot.
// - send {to, agent?, message, steer?, deliver_in?, deliver_at?, wake?, model?}: the peer send,
//   an agent-origin direct reply accepted by Inputs.create (every rule of the input door: standing,
//   addressee and contact rule, queue bound, delivery times, blocked reasons), never into the run's
//   own conversation nor its parent or an ancestor.
// - spawn {prompt, agent?, label?, lifetime?, wake?, wait?, default_runner_executor_public_id?,
//   model?}: a child of the run's conversation (parent: it, the call's task key, the label) and
//   its first input, written in one transaction as a schedule's execution is (Executions.ts); its
//   answerer an active agent that may write in the workspace (else answerer_not_eligible).
// Each input carries the sender stamp and a callback (actors/bindings/mailReplies.ts: where its
// reply returns). A standalone run has no conversation: its sends go out and nothing returns;
// spawn refuses conversation_required.
import { TransactionalActors } from "@troupe/actors/Binding"
import type { Callback } from "@troupe/actors/bindings/mailReplies"
import { isUuid, newPublicId } from "@troupe/storage/Ids"
import { withRepositories } from "@troupe/storage/Repositories"
import { findSnapshotWithParts } from "@troupe/storage/repositories/Actors"
import { ConversationMailRepository } from "@troupe/storage/repositories/ConversationMail"
import { ConversationSearchRepository } from "@troupe/storage/repositories/ConversationSearch"
import { ConversationsRepository, type SpeakerRow } from "@troupe/storage/repositories/Conversations"
import { ExecutorsRepository } from "@troupe/storage/repositories/Executors"
import type { RunRow } from "@troupe/storage/repositories/Runs"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { isSqlError } from "effect/sql/SqlError"
import { renderConfiguration } from "../agents/AgentConfiguration.ts"
import { childFirstInput, openChild } from "../conversations/Children.ts"
import { contactRefusal } from "../conversations/Contact.ts"
import { ConversationDefinition, Conversations } from "../conversations/Conversations.ts"
import { type InputMembers, Inputs } from "../conversations/Inputs.ts"
import { servesText } from "../conversations/Replies.ts"
import { judgeRunner, unarchived } from "../conversations/Settings.ts"
import { isObject } from "../kernel/Json.ts"
import { now } from "../kernel/Now.ts"
import { ModelCatalog } from "../models/ModelCatalog.ts"
import { ConversationMailSlot, type MailCall } from "./ConversationMailSlot.ts"
import { makeRunCaller } from "./RunCaller.ts"
import {
  type Arguments,
  invalid,
  optionalBoolean,
  optionalString,
  optionalWord,
  type Refusal,
  requiredString
} from "./ToolArguments.ts"
import { wakeReplyOf } from "./WakeReply.ts"

/** A spawn's label: at most this many characters (and never a UUID: `to` reads those as ids). */
const labelLength = 255
const deliverIn = /^\d+[smhd]$/
const modelReference = /^[^/\s]+\/\S+$/

const refusal = (code: string, message: string): Refusal => ({ code, message })
const asRefusal = (error: { readonly code: string; readonly message: string }): Refusal =>
  refusal(error.code, error.message)

/** The kernel's idempotency key of a call's input (a retried job finds what it made). */
const mailKey = (run: RunRow, call: MailCall) => `kernel:${run.public_id}:${call.key}:${call.generation}`

/** The model of the round whose answer made the call (the run's snapshot knows it). */
const roundModelOf = (runPublicId: string, callKey: string) =>
  Effect.map(findSnapshotWithParts("run", runPublicId), (row) => {
    const context = isObject(row?.snapshot) && isObject(row.snapshot.context) ? row.snapshot.context : {}
    const tasks = Array.isArray(context.tasks) ? context.tasks : []
    const specOf = (key: string | null) =>
      tasks.map((task) => (isObject(task) && isObject(task.spec) ? task.spec : {})).find((spec) => spec.key === key)
    const parent = specOf(callKey)?.expansionParent
    const model = specOf(typeof parent === "string" ? parent : null)?.model
    return isObject(model) && typeof model.model === "string" ? model.model : null
  })

export const ConversationMail = {
  /** Installs the mail in the run actor's slot, over the conversation doors. */
  layer: Layer.effectDiscard(
    Effect.gen(function* () {
      const slot = yield* ConversationMailSlot
      const inputs = yield* Inputs
      const conversations = yield* Conversations
      const catalog = yield* ModelCatalog
      const definition = yield* ConversationDefinition
      const db = yield* withRepositories(ConversationsRepository, ExecutorsRepository)

      const callerOf = yield* makeRunCaller

      const wakeReply = (creator: SpeakerRow, roundModel: string | null, lastReplyModel: string | null) =>
        wakeReplyOf(catalog, creator, roundModel, lastReplyModel)

      /** The sender stamp and the callback an input of this call carries. */
      const stampOf = (
        run: RunRow,
        call: MailCall,
        creator: SpeakerRow,
        returns: {
          readonly wake: "auto" | "passive"
          readonly lifetime: "conversation" | "turn"
          readonly hold: boolean
          readonly roundModel: string | null
          readonly lastReplyModel: string | null
        } | null
      ) => {
        const callback: Callback | null =
          returns === null
            ? null
            : {
                run_public_id: run.public_id,
                task_key: call.key,
                generation: call.generation,
                sender_conversation_public_id: run.conversation_public_id,
                wake: returns.wake,
                lifetime: returns.lifetime,
                hold: returns.hold,
                author: { id: String(creator.id), public_id: creator.public_id },
                wake_reply:
                  returns.wake === "auto" ? wakeReply(creator, returns.roundModel, returns.lastReplyModel) : null
              }
        return {
          sender_conversation_public_id: run.conversation_public_id,
          sender_run_public_id: run.public_id,
          sender_task_key: call.key,
          ...(callback === null ? {} : { callback })
        }
      }

      /** The run's hosting conversation (none for a standalone run). */
      const hostOf = (run: RunRow) =>
        run.conversation_id === null
          ? Effect.succeed(undefined)
          : db(
              Effect.flatMap(ConversationsRepository, (repository) =>
                repository.findConversationById(run.conversation_id!)
              )
            )

      const send = (run: RunRow, call: MailCall, input: Arguments) =>
        Effect.gen(function* () {
          const to = yield* requiredString(input, "to")
          const message = yield* requiredString(input, "message")
          const agent = yield* optionalString(input, "agent")
          const steer = (yield* optionalBoolean(input, "steer")) ?? false
          const delay = yield* optionalString(input, "deliver_in")
          if (delay !== undefined && !deliverIn.test(delay)) {
            return yield* Effect.fail(invalid("deliver_in must be a duration such as 20m (digits, then s, m, h or d)"))
          }
          const at = yield* optionalString(input, "deliver_at")
          const wake = (yield* optionalWord(input, "wake", ["auto", "passive"])) ?? "auto"
          const model = yield* optionalString(input, "model")
          const { caller, creator } = yield* callerOf(run)
          const host = yield* hostOf(run)
          const targetId = isUuid(to)
            ? to
            : host === undefined
              ? undefined
              : (yield* (yield* ConversationSearchRepository.make).childByLabel({ parentId: host.id, label: to }))
                  ?.public_id
          if (targetId === undefined) {
            return yield* Effect.fail(refusal("not_found", `No conversation was spawned here as ${to}`))
          }
          // What the caller may not see is not found before anything else is said of it.
          const target = yield* Effect.mapError(
            conversations.standing(caller, run.workspace_public_id, targetId, "read"),
            asRefusal
          )
          if (host !== undefined) {
            if (target.row.id === host.id) {
              return yield* Effect.fail(
                refusal("send_to_self", "send goes to another conversation; this one is the run's own")
              )
            }
            const ancestors = yield* (yield* ConversationMailRepository.make).ancestorsOf(host.id)
            if (ancestors.some((each) => each.id === target.row.id)) {
              return yield* Effect.fail(
                refusal("send_to_ancestor", "send never goes to this conversation's parent or an ancestor")
              )
            }
          }
          const members: InputMembers = {
            kind: "direct_reply",
            text: message,
            delivery_mode: steer ? "steer" : "queue",
            ...(agent === undefined ? {} : { answering_user_public_id: agent }),
            ...(delay === undefined ? {} : { deliver_in: delay }),
            ...(at === undefined ? {} : { deliver_at: at }),
            ...(model === undefined ? {} : { model: { model } })
          }
          const returns =
            host === undefined
              ? null
              : {
                  wake,
                  lifetime: "conversation" as const,
                  hold: false,
                  roundModel: yield* roundModelOf(run.public_id, call.key),
                  lastReplyModel: host.last_reply_model
                }
          const accepted = yield* Effect.mapError(
            inputs.create(caller, run.workspace_public_id, target.row.public_id, members, mailKey(run, call), {
              origin: "agent",
              members: stampOf(run, call, creator, returns)
            }),
            asRefusal
          )
          return JSON.stringify({
            conversation_id: target.row.public_id,
            input_id: accepted.public_id,
            state: accepted.state,
            delivery_mode: accepted.delivery_mode,
            deliver_at: accepted.deliver_at,
            reply_returns: host !== undefined
          })
        })

      const spawn = (run: RunRow, call: MailCall, input: Arguments) =>
        Effect.gen(function* () {
          const prompt = yield* requiredString(input, "prompt")
          const agent = yield* optionalString(input, "agent")
          const label = yield* optionalString(input, "label")
          if (label !== undefined && (label.length > labelLength || isUuid(label))) {
            return yield* Effect.fail(invalid(`label must be at most ${labelLength} characters and not a UUID`))
          }
          const lifetime = (yield* optionalWord(input, "lifetime", ["conversation", "turn"])) ?? "conversation"
          const wake = (yield* optionalWord(input, "wake", ["auto", "passive"])) ?? "auto"
          const wait = (yield* optionalBoolean(input, "wait")) ?? false
          const runnerId = yield* optionalString(input, "default_runner_executor_public_id")
          const asked = yield* optionalString(input, "model")
          if (asked !== undefined && !modelReference.test(asked)) {
            return yield* Effect.fail(refusal("validation_failed", "model must be a provider/model reference"))
          }
          if (run.conversation_public_id === null) {
            return yield* Effect.fail(
              refusal("conversation_required", "A standalone run has no conversation to open a child under")
            )
          }
          const { caller, creator } = yield* callerOf(run)
          const host = yield* Effect.mapError(
            Effect.flatMap(
              conversations.standing(caller, run.workspace_public_id, run.conversation_public_id, "write"),
              unarchived
            ),
            asRefusal
          )
          const parent = host.row
          let answerer = creator
          if (agent !== undefined) {
            const found = yield* conversations.principal(
              host.workspaceAccountId,
              isUuid(agent) ? { publicId: agent } : { handle: agent }
            )
            if (found === undefined || found.kind !== "agent" || found.status !== "active") {
              return yield* Effect.fail(
                refusal("answerer_not_eligible", "agent must name an active agent of the account")
              )
            }
            answerer = found
          }
          if (answerer.kind !== "agent") {
            return yield* Effect.fail(refusal("answerer_not_eligible", "Only an agent answers a spawned conversation"))
          }
          if (!(yield* conversations.mayWrite(host, answerer))) {
            return yield* Effect.fail(refusal("answerer_not_eligible", "agent may not write in this workspace"))
          }
          yield* Effect.mapError(db(contactRefusal(caller, host, answerer.id)), asRefusal)
          const runner =
            runnerId === undefined
              ? undefined
              : yield* Effect.mapError(db(judgeRunner(host.workspaceAccountId, answerer, runnerId)), asRefusal)
          const configuration = renderConfiguration(answerer.configuration)
          const roundModel = yield* roundModelOf(run.public_id, call.key)
          const model = asked ?? configuration.default_model ?? roundModel ?? parent.last_reply_model
          if (!servesText(catalog, model)) {
            return yield* Effect.fail(
              refusal("unknown_model", "No model the catalog serves answers the child (name one with model)")
            )
          }
          const key = mailKey(run, call)
          const mails = yield* ConversationMailRepository.make
          const fallback = configuration.fallback_models?.[0] ?? null
          const childId = newPublicId()
          const inputId = newPublicId()
          const stamp = stampOf(run, call, creator, {
            wake,
            lifetime,
            hold: wait,
            roundModel,
            lastReplyModel: parent.last_reply_model
          })
          const first = childFirstInput({
            inputId,
            text: prompt,
            creator,
            answerer,
            speakerId: creator.id,
            model,
            modelKnown: true,
            fallbackModel: servesText(catalog, fallback) ? fallback : null,
            idempotencyKey: key,
            members: { ...stamp, model: { model } }
          })
          const people = yield* conversations.people([creator.id, answerer.id, parent.creator_id, parent.answerer_id])
          const at = yield* now
          const sql = yield* SqlClient
          const actors = yield* TransactionalActors
          const opened = yield* sql.withTransaction(
            Effect.gen(function* () {
              // The child this call opened already (its job retried, or run twice at once) is the answer.
              yield* mails.lockSpawn(key)
              const made = yield* mails.spawnedChild({ parentId: parent.id, key })
              if (made !== undefined) return made
              const childRowId = yield* openChild(definition, parent, {
                publicId: childId,
                creatorId: creator.id,
                answererId: answerer.id,
                title: label ?? null,
                defaultRunnerExecutorId: runner?.id ?? null,
                publicIds: new Map([...people.values()].map((row) => [row.id, row.public_id])),
                at
              })
              yield* mails.setSpawnParent({
                childId: childRowId,
                parentId: parent.id,
                spawnNodeKey: call.key,
                label: label ?? null,
                spawnKey: key
              })
              yield* actors.tell(definition, childId, { type: "input.accept", at: at.getTime(), input: first })
              return { public_id: childId, label: label ?? null }
            })
          )
          return JSON.stringify({ conversation_id: opened.public_id, label: opened.label })
        })

      yield* slot.install({
        send: (run, call, input) => Effect.catchIf(send(run, call, input), isSqlError, Effect.die),
        spawn: (run, call, input) => Effect.catchIf(spawn(run, call, input), isSqlError, Effect.die)
      })
    })
  )
}
