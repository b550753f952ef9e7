// The domain's side of a run's work (runs supplement "Model steps and the local provider"): what
// a model round asks (its sealed request: instructions, the results it reads, its prompt; a
// continuation replays its round and answers the round's calls with their results; the uploads
// its prompt carries, one owner's, a model that cannot take them failing the round), who serves
// a model's tool call (the addressing rule), and the bus the run's notices ride.

import type { ConversationReplies } from "@troupe/actors/bindings/conversation"
import { uploadNamingKind } from "@troupe/actors/bindings/inferenceRequest"
import { type CableMessage, progressChannelOf, type RunWork } from "@troupe/actors/bindings/run"
import type { OpenRoundParams } from "@troupe/machines/run/effects"
import type { CallAddress } from "@troupe/machines/run/events"
import { defaultToolTimeoutMillis } from "@troupe/machines/run/rules/graph"
import type { EventBus } from "@troupe/storage/EventBus"
import { newPublicId } from "@troupe/storage/Ids"
import { ConversationsRepository } from "@troupe/storage/repositories/Conversations"
import { type ExecutorRow, ExecutorsRepository } from "@troupe/storage/repositories/Executors"
import { InferenceRequestsRepository } from "@troupe/storage/repositories/InferenceRequests"
import { PromptDocumentsRepository } from "@troupe/storage/repositories/PromptDocuments"
import { RunsRepository, type TaskRow } from "@troupe/storage/repositories/Runs"
import { UploadsRepository } from "@troupe/storage/repositories/Uploads"
import { Effect } from "effect"
import { type FunctionTool, renderConfiguration } from "../agents/AgentConfiguration.ts"
import { accountCostUnit, admit, recordAdmission, runPayer } from "../budgets/Admission.ts"
import { promptSlots, servesText } from "../conversations/Replies.ts"
import { replayable } from "../executors/EffectProfiles.ts"
import { emptyUsageSummary } from "../inference/Attempts.ts"
import { type CreateMembers, type InputMessage, judgeCreate } from "../inference/CreateRules.ts"
import { askerFor, mediaRefusals } from "../inference/SampleUploads.ts"
import { isObject } from "../kernel/Json.ts"
import { now } from "../kernel/Now.ts"
import type { ModelCatalog } from "../models/ModelCatalog.ts"
import { kernelDefinitionOf, kernelImportsOf } from "./KernelImports.ts"
import { outputOf, resultOf } from "./Projections.ts"
import { roundInput } from "./RoundCompaction.ts"
import { offerOf } from "./SealedRequests.ts"

/** A task's text answer (the projections' reading of its result), "" before it has one. */
const taskOutput = (task: TaskRow | undefined): string => {
  const result = task === undefined ? undefined : resultOf(task)
  return (result === undefined ? undefined : outputOf(result)) ?? ""
}

const specOf = (task: TaskRow | undefined): Readonly<Record<string, unknown>> => (isObject(task?.spec) ? task.spec : {})

const text = (value: unknown) => (typeof value === "string" ? value : "")

/**
 * A model step's `attachments`, the uploads' public ids in order (each a public id, or an object
 * naming `upload_public_id` or `public_id`, as the run's namings read them).
 */
const attachmentsOf = (spec: Readonly<Record<string, unknown>>): ReadonlyArray<string> =>
  Array.isArray(spec.attachments)
    ? spec.attachments.flatMap((each: unknown) => {
        if (typeof each === "string") return [each]
        if (!isObject(each)) return []
        const named = each.upload_public_id ?? each.public_id
        return typeof named === "string" ? [named] : []
      })
    : []

/** A round's prompt: its text, then its uploads as upload parts (text alone when it has none). */
const promptMessage = (prompt: string, uploads: ReadonlyArray<string>): InputMessage =>
  uploads.length === 0
    ? { role: "user", content: prompt }
    : {
        role: "user",
        content: [
          ...(prompt === "" ? [] : [{ type: "text", text: prompt }]),
          ...uploads.map((upload_public_id) => ({ type: "upload", upload_public_id }))
        ]
      }

/** A result a round reads, as the user message the supplement shows. */
const resultMessage = (task: TaskRow | undefined, key: string): InputMessage => ({
  role: "user",
  content: `<task_result task="${key}" status="${task?.status ?? "unknown"}">${taskOutput(task)}</task_result>`
})

/** An announced tool's definition (the first announcing executor's description and schema). */
const definitionOf = (name: string, executors: ReadonlyArray<ExecutorRow>) => {
  const announced = executors.flatMap((executor) => executor.announcement.tools).find((tool) => tool.name === name)
  return {
    type: "function",
    function: {
      name,
      ...(announced?.description === undefined ? {} : { description: announced.description }),
      ...(announced?.input_schema === undefined ? {} : { parameters: announced.input_schema })
    }
  }
}

/** The answering agent's own declaration of a tool (a hosted run's creator), if it declares one. */
const declarationOf = (configuration: unknown, name: string) =>
  renderConfiguration(configuration).tool_definitions.find(
    (tool): tool is FunctionTool => tool.type === "function" && tool.function.name === name
  )

export const makeRunWork = (
  catalog: ModelCatalog["Service"],
  bus: EventBus["Service"],
  replies: ConversationReplies,
  callKernel: RunWork["callKernel"],
  returnResult: RunWork["returnResult"]
): RunWork => {
  /** The run's creator's configuration (its declared tools, its kernel imports). */
  const creatorConfiguration = (creatorId: bigint) =>
    Effect.gen(function* () {
      const [creator] = yield* (yield* ConversationsRepository.make).speakers([creatorId])
      return creator?.configuration
    })

  /** The executors a run's calls may go to, in the addressing rule's order of preference. */
  const candidates = (runPublicId: string) =>
    Effect.gen(function* () {
      const runs = yield* RunsRepository.make
      const executors = yield* ExecutorsRepository.make
      const run = yield* runs.findRun(runPublicId)
      if (run === undefined) return { runner: undefined, application: undefined, providers: [] }
      const runner =
        run.default_runner_id === null ? undefined : yield* executors.findExecutorById(run.default_runner_id)
      const creator = yield* executors.findLiveAgentApplication(run.creator_id)
      const accountId = runner?.account_id ?? creator?.account_id
      const providers =
        accountId === undefined
          ? []
          : yield* executors.listDiscoverable({
              accountId,
              managerId: run.creator_id,
              agentIds: [run.creator_id],
              kind: "tool_provider",
              publicId: undefined
            })
      return { runner: runner?.status === "active" ? runner : undefined, application: creator, providers }
    })

  const announcing = (executor: ExecutorRow | undefined, name: string) =>
    executor?.announcement.tools.find((tool) => tool.name === name)

  /** The messages a round sends (raw mechanism). */
  const messagesOf = (runId: bigint, round: OpenRoundParams) =>
    Effect.gen(function* () {
      const runs = yield* RunsRepository.make
      const requests = yield* InferenceRequestsRepository.make
      const task = yield* runs.findTask(runId, round.key)
      const spec = specOf(task)
      const priorMessages = (key: string) =>
        Effect.gen(function* () {
          const prior = yield* runs.findTask(runId, key)
          const request =
            prior?.inference_request_public_id == null
              ? undefined
              : yield* requests.findRequest(prior.inference_request_public_id)
          const stored = isObject(request?.request) ? request.request : {}
          const members = isObject(stored.members) ? (stored.members as unknown as CreateMembers) : undefined
          const input = Array.isArray(members?.input) ? (members.input as ReadonlyArray<InputMessage>) : []
          const result = isObject(request?.result) ? request.result : {}
          return { prior, input, answer: text(result.output_text), calls: result.tool_calls }
        })
      if (round.calls.length > 0 && round.continues !== null) {
        const { input, answer, calls } = yield* priorMessages(round.continues)
        const answers: Array<InputMessage> = []
        for (const key of round.calls) {
          const call = yield* runs.findTask(runId, key)
          const callId = call?.tool_call_id ?? text(specOf(call).tool_call_id)
          answers.push({ role: "tool", tool_call_id: callId === "" ? key : callId, content: taskOutput(call) })
        }
        const toolCalls = Array.isArray(calls) ? (calls as InputMessage["tool_calls"]) : []
        return [
          ...input,
          { role: "assistant", content: answer, tool_calls: toolCalls },
          ...answers,
          ...(yield* steersOf(round))
        ]
      }
      const messages: Array<InputMessage> = []
      const hostedInput = typeof spec.hosted_input === "string" ? spec.hosted_input : undefined
      const run = hostedInput === undefined ? undefined : yield* runs.findRunById(runId)
      const conversation =
        run?.conversation_public_id == null
          ? undefined
          : yield* (yield* ConversationsRepository.make).findConversation(run.conversation_public_id)
      if (conversation !== undefined && hostedInput !== undefined) {
        // A hosted run's first round asks the conversation's assembled prompt for its input.
        const prompt = (yield* replies.prompt(conversation, hostedInput, round.model)) as ReadonlyArray<InputMessage>
        for (const key of round.results) messages.push(resultMessage(yield* runs.findTask(runId, key), key))
        return [...prompt.slice(0, -1), ...messages, ...prompt.slice(-1), ...(yield* steersOf(round))]
      }
      if (round.continues !== null) {
        const { input, answer } = yield* priorMessages(round.continues)
        messages.push(...input, { role: "assistant", content: answer })
      } else if (text(spec.instructions) !== "") {
        messages.push({ role: "system", content: text(spec.instructions) })
      } else if (round.mainline) {
        // The seed round of a run under prompt_mechanism default or assembly (raw adds nothing).
        messages.push(...(yield* mechanismMessages(runId)))
      }
      for (const key of round.results) messages.push(resultMessage(yield* runs.findTask(runId, key), key))
      const landed = typeof spec.input_public_id === "string" ? yield* runs.findInput(spec.input_public_id) : undefined
      messages.push(promptMessage(landed?.text ?? text(spec.prompt), attachmentsOf(spec)))
      return [...messages, ...(yield* steersOf(round))]
    })

  /**
   * What a run's prompt mechanism puts before its seed round's prompt: nothing under raw; under
   * default the built-in order's slots (the creator's system prompt, the workspace's character,
   * the human's persona); under assembly the creator's prompt_template, rendered.
   */
  const mechanismMessages = (runId: bigint) =>
    Effect.gen(function* () {
      const run = yield* (yield* RunsRepository.make).findRunById(runId)
      if (run === undefined || run.prompt_mechanism === "raw") return []
      const [creator] = yield* (yield* ConversationsRepository.make).speakers([run.creator_id])
      const humanId = creator?.steward_id ?? run.creator_id
      const slots = yield* promptSlots({ workspaceId: run.workspace_id, kind: "run" }, run.creator_id, humanId)
      if (run.prompt_mechanism === "default") {
        return slots.map((slot): InputMessage => ({ role: slot.role, content: slot.text }))
      }
      const template = renderConfiguration(creator?.configuration).prompt_template
      const variables: Record<string, string> = { ...(template?.variables ?? {}) }
      const documents = yield* PromptDocumentsRepository.make
      const parts: Array<string> = []
      for (const block of template?.blocks ?? []) {
        if (block.type === "text")
          parts.push(block.text.replace(/\{\{(\w+)\}\}/g, (all, name: string) => variables[name] ?? all))
        else if (block.type === "prompt_document") {
          const document = yield* documents.findDocument({ kind: "user", id: run.creator_id }, block.slot)
          if (document !== undefined) parts.push(document.content)
        } else if (block.section === "system_prompt" || block.section === "prompt_documents") {
          const names = block.section === "system_prompt" ? ["system_prompt"] : ["character", "persona"]
          parts.push(...slots.filter((slot) => names.includes(slot.name)).map((slot) => slot.text))
        }
      }
      const assembled = parts.filter((part) => part !== "").join("\n\n")
      return assembled === "" ? [] : [{ role: "system", content: assembled } satisfies InputMessage]
    })

  /** The steering rows that land in a round, as user messages after its prompt. */
  const steersOf = (round: OpenRoundParams) =>
    Effect.gen(function* () {
      const runs = yield* RunsRepository.make
      const messages: Array<InputMessage> = []
      for (const inputId of round.steers) {
        const row = yield* runs.findInput(inputId)
        if (row !== undefined) messages.push({ role: "user", content: row.text })
      }
      return messages
    })

  /**
   * Whose uploads a round's messages may name (one owner a round): a hosted run's round answering
   * its input, the input's author; a round with its step's own attachments, the run's creator; a
   * continuation, whoever the round it replays was sealed for; else the creator.
   */
  const uploadsOwner = (runId: bigint, round: OpenRoundParams, creatorId: bigint) =>
    Effect.gen(function* () {
      const runs = yield* RunsRepository.make
      const spec = specOf(yield* runs.findTask(runId, round.key))
      const answersCalls = round.calls.length > 0 && round.continues !== null
      if (!answersCalls && typeof spec.hosted_input === "string") {
        const input = yield* (yield* ConversationsRepository.make).findInput(spec.hosted_input)
        return input?.author_id ?? creatorId
      }
      if (round.continues === null || (!answersCalls && attachmentsOf(spec).length > 0)) return creatorId
      const prior = yield* runs.findTask(runId, round.continues)
      const request =
        prior?.inference_request_public_id == null
          ? undefined
          : yield* (yield* InferenceRequestsRepository.make).findRequest(prior.inference_request_public_id)
      const stored = isObject(request?.request) ? request.request : {}
      return typeof stored.uploads_owner === "string" ? BigInt(stored.uploads_owner) : creatorId
    })

  /**
   * A round asked again (a retry, a force pause's re-ask, a compacted re-queue) carries the steers
   * consumed into it before, then the ones landing now: a consumed steer is the round's own input.
   */
  const withEarlierSteers = (runId: bigint, round: OpenRoundParams) =>
    Effect.gen(function* () {
      const consumed = yield* (yield* RunsRepository.make).steersOfTask(runId, round.key)
      const earlier = consumed.map((row) => row.public_id).filter((id) => !round.steers.includes(id))
      return earlier.length === 0 ? round : { ...round, steers: [...earlier, ...round.steers] }
    })

  return {
    sealRound: (run, asked) =>
      Effect.gen(function* () {
        // A model's delegate_task may name a model the catalog does not serve: that round fails with it.
        if (!servesText(catalog, asked.model)) return { refused: "unknown_model" }
        const round = yield* withEarlierSteers(run.id, asked)
        const runs = yield* RunsRepository.make
        const requests = yield* InferenceRequestsRepository.make
        const row = (yield* runs.findRunById(run.id))!
        const { runner, application, providers } = yield* candidates(run.publicId)
        const offered = [runner, application, ...providers].filter((each) => each !== undefined)
        const configuration = yield* creatorConfiguration(row.creator_id)
        const kernel = kernelImportsOf(configuration)
        const definitions = round.tools.map((name) => {
          const declared = declarationOf(configuration, name)
          const imported =
            kernel[name] === undefined ? undefined : kernelDefinitionOf(name, kernel[name], configuration)
          return declared !== undefined
            ? { type: "function", function: declared.function }
            : (imported ?? definitionOf(name, offered))
        })
        const members: CreateMembers = {
          workload: "text_generation",
          model: { model: round.model },
          input: yield* roundInput(catalog, run.id, round, messagesOf),
          ...(round.tools.length === 0 ? {} : { configuration: { tools: definitions } })
        }
        // Uploads the model cannot take (or too large, not the owner's, gone) fail the round with that code.
        const owner = yield* uploadsOwner(run.id, round, row.creator_id)
        const judged = yield* judgeCreate(catalog, members, yield* askerFor(owner), false).pipe(
          Effect.catchIf(
            (refusal) => refusal._tag === "Invalid" && mediaRefusals.includes(refusal.code),
            (refusal) => Effect.succeed({ refused: refusal.code })
          ),
          Effect.orDie
        )
        if ("refused" in judged) return judged
        const at = yield* now
        const admission = yield* admit(yield* runPayer(row), at).pipe(
          Effect.map((budget) => ({ budget })),
          Effect.catchTag("Invalid", (refusal) => Effect.succeed({ refused: refusal.code }))
        )
        if ("refused" in admission) return admission
        const publicId = newPublicId()
        const inserted = yield* requests.insertRequest({
          publicId,
          workspaceId: row.workspace_id,
          creatorId: row.creator_id,
          workload: judged.workload,
          modelJson: JSON.stringify(judged.model),
          requestJson: JSON.stringify({ ...judged.stored, members, uploads_owner: String(owner) }),
          billingSubject: row.billing_subject,
          usageSummaryJson: JSON.stringify(emptyUsageSummary(yield* accountCostUnit)),
          askedByRunId: run.id,
          askedByRunTaskKey: round.key,
          now: at
        })
        yield* recordAdmission(inserted.id, admission.budget, at)
        const uploads = yield* UploadsRepository.make
        for (const upload of judged.uploads) yield* uploads.addNaming(upload.id, uploadNamingKind, inserted.id)
        // Each attempt the request sends is announced on the run's progress feed (round_started).
        const announce = {
          channel: progressChannelOf(run.publicId, row.conversation_public_id),
          frame: {
            type: "round_started",
            run_public_id: run.publicId,
            task_key: round.key,
            mainline: round.mainline,
            request_bytes: offerOf({ ...members }).requestBytes
          }
        }
        return { publicId, routes: judged.routes, timeoutMs: judged.timeoutMs, announce }
      }),
    addressCalls: (runPublicId, calls) =>
      Effect.gen(function* () {
        const { runner, application, providers } = yield* candidates(runPublicId)
        const run = yield* (yield* RunsRepository.make).findRun(runPublicId)
        const configuration = run === undefined ? undefined : yield* creatorConfiguration(run.creator_id)
        const executors = yield* ExecutorsRepository.make
        const declaredRunners = new Map<string, ExecutorRow | undefined>()
        for (const call of calls) {
          const named = declarationOf(configuration, call.name)?.runner_executor_public_id
          if (named !== undefined) declaredRunners.set(call.name, yield* executors.findExecutorByPublicId(named))
        }
        return calls.map((call): CallAddress => {
          // A tool_call reaches only the declaration's function tools (what tool_search finds).
          if (call.via === "tool_call" && declarationOf(configuration, call.name) === undefined) {
            return { key: call.key, target: { kind: "not_declared" }, timeoutMs: 0, replayable: false }
          }
          const declared = declaredRunners.get(call.name)
          const direct = [declared?.status === "active" ? declared : undefined, runner, application].find(
            (each) => announcing(each, call.name) !== undefined
          )
          if (direct !== undefined) {
            const tool = announcing(direct, call.name)!
            return {
              key: call.key,
              target: { kind: "runner", executor: { executorId: direct.public_id, displayName: direct.display_name } },
              timeoutMs: tool.timeout_ms ?? defaultToolTimeoutMillis,
              ...(tool.timeout_ms === undefined ? {} : { announcedTimeoutMs: tool.timeout_ms }),
              replayable: replayable(tool.effect_profile)
            }
          }
          const pool = providers.filter((each) => announcing(each, call.name) !== undefined)
          if (pool.length === 0)
            return { key: call.key, target: { kind: "not_served" }, timeoutMs: 0, replayable: false }
          const tool = announcing(pool[0], call.name)!
          return {
            key: call.key,
            target: { kind: "pool", executorIds: pool.map((each) => each.public_id) },
            timeoutMs: tool.timeout_ms ?? defaultToolTimeoutMillis,
            ...(tool.timeout_ms === undefined ? {} : { announcedTimeoutMs: tool.timeout_ms }),
            replayable: replayable(tool.effect_profile)
          }
        })
      }),
    callKernel,
    returnResult,
    publishOnCommit: (messages: ReadonlyArray<CableMessage>) => bus.publishOnCommit(messages)
  }
}
