// Conversation-hosted runs (spec "Engine selection"; runs supplement "Run lifecycle", hosted
// runs): a run-backed reply's plan, judged when its head is judged (the answerer's approval
// settings, the input's steps, or one mainline model round over the conversation's assembled
// prompt with the answerer's tools, compiled with targets frozen then), and the run's rows
// written when the reply opens. The run's actor is started and told to run by the conversation.

import { newTaskRow } from "@troupe/actors/bindings/run"
import { ApprovalMode, ApprovalRule, CompiledTaskSpec, type RunInput } from "@troupe/machines/run/context"
import type { ConversationRow, InputRow, SpeakerRow } from "@troupe/storage/repositories/Conversations"
import { ExecutorsRepository } from "@troupe/storage/repositories/Executors"
import { RunsRepository } from "@troupe/storage/repositories/Runs"
import { Effect, Result, Schema } from "effect"
import { renderConfiguration } from "../agents/AgentConfiguration.ts"
import { kernelProfilesOf } from "../executors/KernelTools.ts"
import { isObject } from "../kernel/Json.ts"
import type { ModelCatalog } from "../models/ModelCatalog.ts"
import { compileSteps } from "./Compiler.ts"
import { otherRunTasks } from "./ForeignWaits.ts"
import { kernelAliasesOf, kernelImportsOf, offeredKernelTools } from "./KernelImports.ts"
import type { RunnerInfo } from "./StepShell.ts"
import { mintTokens } from "./Tokens.ts"

/** What a run-backed reply will run, compiled when its head was judged. */
export const HostedPlan = Schema.Struct({
  approvalMode: ApprovalMode,
  approvalRules: Schema.Array(ApprovalRule),
  tasks: Schema.Array(CompiledTaskSpec),
  rows: Schema.Record(Schema.String, Schema.Unknown),
  deliverable: Schema.String,
  defaultRunnerId: Schema.NullOr(Schema.BigInt)
})
export type HostedPlan = typeof HostedPlan.Type

export const decodeHostedPlan = Schema.decodeUnknownSync(HostedPlan)
export const encodeHostedPlan = Schema.encodeSync(HostedPlan)

/**
 * The tool names an answering agent offers its rounds: its function declarations (a deferred one is
 * found through tool_search and called through tool_call instead) and runner imports.
 */
export const offeredTools = (configuration: unknown): ReadonlyArray<string> => {
  const rendered = renderConfiguration(configuration)
  const declared = rendered.tool_definitions.flatMap((tool) =>
    tool.type === "function" && tool.defer_loading !== true ? [tool.function.name] : []
  )
  const imported = (rendered.runner_executor_public_ids?.length ?? 0) > 0 ? (rendered.runner_tool_names ?? []) : []
  return [...new Set([...declared, ...imported, ...offeredKernelTools(configuration)])]
}

/**
 * The plan of a run-backed reply to `input` answered by `answerer` on `model`: blocked
 * approval_mode_required when the answerer has no approval mode, invalid_steps when its steps no
 * longer compile (a runner gone since acceptance).
 */
export const planHosted = (
  catalog: ModelCatalog["Service"],
  conversation: ConversationRow,
  input: InputRow,
  answerer: SpeakerRow,
  model: string
) =>
  Effect.gen(function* () {
    const configuration = renderConfiguration(answerer.configuration)
    const approvalMode = configuration.approval_mode
    if (approvalMode === null || approvalMode === undefined) return "approval_mode_required" as const
    const executors = yield* ExecutorsRepository.make
    const machines = yield* executors.listDiscoverable({
      accountId: yield* accountOf(answerer.id),
      managerId: answerer.steward_id ?? answerer.id,
      agentIds: [answerer.id],
      kind: "runner",
      publicId: undefined
    })
    const runners = new Map<string, RunnerInfo>(
      machines.map((row) => [
        row.public_id,
        { publicId: row.public_id, displayName: row.display_name, eligible: true, tools: row.announcement.tools }
      ])
    )
    const defaultRow =
      conversation.default_runner_executor_id === null
        ? undefined
        : machines.find((row) => row.id === conversation.default_runner_executor_id)
    const members = isObject(input.members) ? input.members : {}
    const authored = Array.isArray(members.steps) && members.steps.length > 0 ? members.steps : null
    const steps = authored ?? [
      { model: { prompt: input.text, model: { model }, tools: offeredTools(answerer.configuration) } }
    ]
    const otherRunTask = yield* otherRunTasks(steps, { conversationId: conversation.id, beforeRunId: null })
    const compiled = compileSteps(steps, {
      revision: 1,
      existing: [],
      currentDeliverable: null,
      promptMechanism: "raw",
      firstIsSeed: true,
      defaultRunner: defaultRow === undefined ? null : (runners.get(defaultRow.public_id) ?? null),
      lookups: {
        model: (ref) => catalog.find(ref) !== undefined,
        runner: (publicId) => runners.get(publicId),
        otherRunTask
      }
    })
    if (Result.isFailure(compiled)) return "invalid_steps" as const
    const { tasks } = mintTokens(compiled.success)
    const seed = tasks.find((task) => task.kind === "model_task" && task.mainline)
    const rows: Record<string, unknown> = Object.fromEntries(compiled.success.rows)
    if (seed !== undefined) rows[seed.key] = { ...(rows[seed.key] as object), hosted_input: input.public_id }
    return encodeHostedPlan({
      approvalMode,
      approvalRules: (configuration.approval_rules ?? []) as ReadonlyArray<ApprovalRule>,
      tasks,
      rows,
      deliverable: compiled.success.deliverable,
      defaultRunnerId: defaultRow?.id ?? null
    })
  })

const accountOf = (userId: bigint) => Effect.flatMap(RunsRepository.make, (runs) => runs.accountOfUser(userId))

/**
 * Writes a run-backed reply's run (hosted by the conversation, answering the turn; created by its
 * answerer) and its tasks; answers its actor's input (the caller adds where it replies).
 */
export const insertHosted = (
  conversation: ConversationRow,
  plan: HostedPlan,
  ids: {
    readonly runId: string
    readonly turnId: string
    readonly answererId: bigint
    readonly answererConfiguration: unknown
    readonly at: Date
  }
) =>
  Effect.gen(function* () {
    const runs = yield* RunsRepository.make
    const executors = yield* ExecutorsRepository.make
    const inserted = yield* runs.insertRun({
      publicId: ids.runId,
      workspaceId: conversation.workspace_id,
      conversationId: conversation.id,
      turnPublicId: ids.turnId,
      creatorId: ids.answererId,
      approvalMode: plan.approvalMode,
      approvalRulesJson: JSON.stringify(plan.approvalRules),
      promptMechanism: "default",
      billingSubject: conversation.billing_subject,
      requesterSpeakerId: null,
      defaultRunnerId: plan.defaultRunnerId,
      modelSelectionJson: null,
      fallbackModelsJson: "[]",
      deliverableTaskKey: plan.deliverable,
      now: ids.at
    })
    yield* runs.insertTasks(
      inserted.id,
      plan.tasks.map((task, index) => newTaskRow(task, plan.rows[task.key], index, ids.at))
    )
    const application = yield* executors.findLiveAgentApplication(ids.answererId)
    return {
      publicId: ids.runId,
      conversationId: conversation.public_id,
      turnId: ids.turnId,
      creatorId: inserted.creator_public_id,
      creatorApplicationId: application?.public_id ?? null,
      approvalMode: plan.approvalMode,
      approvalRules: plan.approvalRules,
      tasks: plan.tasks,
      deliverable: plan.deliverable,
      kernelTools: kernelImportsOf(ids.answererConfiguration),
      kernelAliases: kernelAliasesOf(ids.answererConfiguration),
      kernelProfiles: kernelProfilesOf(kernelImportsOf(ids.answererConfiguration)),
      at: ids.at.getTime()
    } satisfies RunInput
  })
