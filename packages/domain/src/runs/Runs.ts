// Runs of a workspace (spec "Member: runs"; runs supplement): create (compiled, inserted and its
// actor started in one transaction), list, read, the run verbs, append, DELETE, the default runner,
// task reads and the task verbs, and the run feed. Reads need the workspace visible; every write
// needs write standing. Everything after acceptance is the run actor's: each verb is one event.
import { ActorHost } from "@troupe/actors/ActorHost"
import { newTaskRow, runActor } from "@troupe/actors/bindings/run"
import { type StreamPage, Streams } from "@troupe/actors/Streams"
import { TaskSpec } from "@troupe/machines/run/context"
import type { RunEvent } from "@troupe/machines/run/events"
import { replyDelivered } from "@troupe/machines/run/rules/delegation"
import { EventBus } from "@troupe/storage/EventBus"
import { isUuid, newPublicId } from "@troupe/storage/Ids"
import { withRepositories } from "@troupe/storage/Repositories"
import { findSnapshotWithParts } from "@troupe/storage/repositories/Actors"
import { ConversationsRepository } from "@troupe/storage/repositories/Conversations"
import { ExecutorsRepository } from "@troupe/storage/repositories/Executors"
import { InferenceRequestsRepository } from "@troupe/storage/repositories/InferenceRequests"
import { MemoryRepository } from "@troupe/storage/repositories/Memory"
import { NamedAgentsRepository } from "@troupe/storage/repositories/NamedAgents"
import { type HostTurnRow, type RunRow, RunsRepository, type TaskRow } from "@troupe/storage/repositories/Runs"
import { Context, Effect, Layer, Option, Result, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { Caller } from "../accounts/Caller.ts"
import { renderConfiguration } from "../agents/AgentConfiguration.ts"
import { Conversations } from "../conversations/Conversations.ts"
import { compactionPolicyOf, makeConversationReplies, servesText } from "../conversations/Replies.ts"
import { Executors } from "../executors/Executors.ts"
import { kernelProfilesOf } from "../executors/KernelTools.ts"
import { InferenceRequestDefinition } from "../inference/InferenceRequests.ts"
import { isObject } from "../kernel/Json.ts"
import { now } from "../kernel/Now.ts"
import { Absent, BadParameter, Invalid, NotPermitted, RunRefused, StateConflict } from "../kernel/Refusals.ts"
import { Memory } from "../memory/Memory.ts"
import { ModelCatalog } from "../models/ModelCatalog.ts"
import { Workspaces } from "../workspaces/Workspaces.ts"
import { type CompiledSteps, compileCreate, compileSteps, type StepsRefusal } from "./Compiler.ts"
import type { AuthoringRefused, InvalidSteps } from "./CompilerRefusals.ts"
import { firstStepIsModel } from "./CompilerScan.ts"
import { ConversationMailSlot } from "./ConversationMailSlot.ts"
import { ConversationMemorySlot } from "./ConversationMemorySlot.ts"
import { creatorLookups } from "./CreatorLookups.ts"
import { makeDelegatedResults } from "./DelegatedResults.ts"
import { otherRunTasks } from "./ForeignWaits.ts"
import { makeKernelCalls } from "./KernelCalls.ts"
import { kernelAliasesOf, kernelImportsOf } from "./KernelImports.ts"
import { makeRunWork } from "./RunWork.ts"
import { offerOf, type SealedRequest, sealedOf } from "./SealedRequests.ts"
import { judgeAppendShell, type RunnerInfo, type ShellRefusal } from "./StepShell.ts"
import { digestOf, mintTokens } from "./Tokens.ts"
import type { ModelOffer } from "./Trace.ts"

/** The one definition of the run actor the runtime holds (refs need that same one). */
export class RunDefinition extends Context.Service<RunDefinition, ReturnType<typeof runActor>>()(
  "@troupe/domain/runs/RunDefinition"
) {
  static readonly layer = Layer.effect(
    RunDefinition,
    Effect.gen(function* () {
      const catalog = yield* ModelCatalog
      return runActor(
        makeRunWork(
          catalog,
          yield* EventBus,
          makeConversationReplies(catalog),
          makeKernelCalls({
            memory: yield* Memory,
            conversationMemory: yield* ConversationMemorySlot,
            mail: yield* ConversationMailSlot
          }),
          makeDelegatedResults(catalog)
        ),
        yield* InferenceRequestDefinition
      )
    })
  ).pipe(
    // A run's memory calls go through the memory rules (the domain's repositories come later).
    Layer.provide(
      Memory.layer.pipe(Layer.provide(Layer.mergeAll(MemoryRepository.layer, NamedAgentsRepository.layer)))
    ),
    // Spawn and send go through the conversation doors, installed in the slot once they exist.
    Layer.provideMerge(ConversationMailSlot.layer),
    // A hosted run's memory calls go through its conversation's memory door, installed likewise.
    Layer.provideMerge(ConversationMemorySlot.layer)
  )
}

/** A run as its rows and actor show it: the run, its tasks in authoring order, their compiled specs. */
export interface RunState {
  readonly run: RunRow
  readonly tasks: ReadonlyArray<TaskRow>
  readonly specs: ReadonlyMap<string, TaskSpec>
  /** Rows held by the run inputs door. */
  readonly held: number
  /** A hosted run whose reply settled while it runs on (its turn delivered). */
  readonly replyDelivered: boolean
  /** A hosted run's turn as its conversation shows it (its answerer, the run's variant's model); null standalone. */
  readonly hostTurn: HostTurnRow | null
}

/** What a run's snapshot tells the projections: every task's compiled spec (waits rewired by expansions). */
const SnapshotTasks = Schema.Struct({
  context: Schema.Struct({ tasks: Schema.Array(Schema.Struct({ spec: TaskSpec })) })
})
const decodeSnapshotTasks = Schema.decodeUnknownOption(SnapshotTasks)

/** What a run's snapshot tells of its reply: a hosted run's reply may settle while the run runs on. */
const SnapshotReply = Schema.Struct({
  context: Schema.Struct({
    conversationId: Schema.NullOr(Schema.String),
    replied: Schema.Boolean,
    replyTo: Schema.Unknown
  })
})
const decodeSnapshotReply = Schema.decodeUnknownOption(SnapshotReply)

/**
 * What a run's actor's committed snapshot (its tasks are parts) tells the projections, in one read:
 * the specs of its tasks, and whether a hosted run's turn was delivered while the run still runs.
 */
const snapshotFactsOf = (runPublicId: string) =>
  Effect.map(findSnapshotWithParts("run", runPublicId), (row) => {
    const tasks = decodeSnapshotTasks(row?.snapshot)
    const reply = decodeSnapshotReply(row?.snapshot)
    return {
      specs: new Map(
        Option.isSome(tasks) ? tasks.value.context.tasks.map((task) => [task.spec.key, task.spec] as const) : []
      ),
      replyDelivered: Option.isSome(reply) && replyDelivered(reply.value.context)
    }
  })

/** What an accepted create or append answers beside the run. */
export interface Receipt {
  readonly accepted_task_keys: ReadonlyArray<string>
  readonly steps: ReadonlyArray<unknown>
  readonly deliverable_task_key: string
  readonly revision: number
  readonly resolution_tokens: Readonly<Record<string, string>>
}

export type RunRefusal =
  | Absent
  | NotPermitted
  | StateConflict
  | Invalid
  | BadParameter
  | RunRefused
  | AuthoringRefused
  | InvalidSteps

/** A machine refusal's code as the refusal it is. */
export const refusalOf = (reason: string, extra: { readonly current_revision?: number } = {}): RunRefusal => {
  switch (reason) {
    case "not_found":
      return new Absent({ code: "not_found", message: "No such run or task" })
    case "parameter_missing":
      return new BadParameter({ code: "parameter_missing", message: "Send the resolution_token" })
    case "not_authorized":
      return new NotPermitted({ code: "not_authorized", message: "The run's creator has no write standing" })
    case "not_decider":
      return new NotPermitted({
        code: "not_authorized",
        message: "Only the run's creator (or its steward) decides its approvals"
      })
    case "outcome_invalid":
      return new Invalid({ code: "validation_failed", message: "outcome must be completed or failed" })
    case "stale_revision":
      return new RunRefused({ code: reason, message: "The run's revision moved on", ...extra })
    case "await_not_resolvable":
    case "unknown_await":
    case "unsupported_resolve_outcome":
      return new Invalid({ code: reason, message: Invalid.sentenceOf(reason) })
    default:
      return new StateConflict({ code: reason as StateConflict["code"], message: StateConflict.sentenceOf(reason) })
  }
}

/** What the task verbs take. */
export type TaskVerb =
  | { readonly verb: "retry"; readonly model: string | null }
  | { readonly verb: "abandon" }
  | { readonly verb: "approve" }
  | { readonly verb: "deny"; readonly reason: string | null }
  | { readonly verb: "cancel" }
  | { readonly verb: "compact" }
  | {
      readonly verb: "resolution"
      readonly token: string | null
      readonly content: unknown
      /** `invalid`: a word outside completed | failed, refused once the task's own rules pass. */
      readonly outcome: "completed" | "failed" | "invalid"
    }

export type RunVerb =
  | { readonly verb: "start" }
  | { readonly verb: "pause"; readonly force: boolean }
  | { readonly verb: "resume" }
  | { readonly verb: "stop"; readonly force: boolean }

export interface ListFilter {
  readonly statuses: ReadonlyArray<string> | null
  readonly attentionOnly: boolean
  readonly after: string | undefined
  readonly order: "asc" | "desc"
  readonly limit: number
}

export class Runs extends Context.Service<
  Runs,
  {
    readonly create: (
      caller: Caller,
      workspaceId: string,
      body: Readonly<Record<string, unknown>>
    ) => Effect.Effect<
      { readonly state: RunState; readonly receipt: Receipt },
      RunRefusal | ShellRefusal | StepsRefusal
    >
    readonly list: (
      caller: Caller,
      workspaceId: string,
      filter: ListFilter
    ) => Effect.Effect<
      { readonly runs: ReadonlyArray<RunRow>; readonly nextAfter: string | null },
      Absent | BadParameter
    >
    readonly read: (caller: Caller, workspaceId: string, runId: string) => Effect.Effect<RunState, Absent>
    /** Whether the caller may read any of the runs `runIds` (row ids), by read's rule (uploads they name). */
    readonly readsAny: (caller: Caller, runIds: ReadonlyArray<bigint>) => Effect.Effect<boolean>
    readonly verb: (
      caller: Caller,
      workspaceId: string,
      runId: string,
      verb: RunVerb
    ) => Effect.Effect<RunState, RunRefusal>
    readonly remove: (caller: Caller, workspaceId: string, runId: string) => Effect.Effect<void, RunRefusal>
    readonly setDefaultRunner: (
      caller: Caller,
      workspaceId: string,
      runId: string,
      executorId: string | null
    ) => Effect.Effect<RunState, RunRefusal>
    readonly append: (
      caller: Caller,
      workspaceId: string,
      runId: string,
      body: Readonly<Record<string, unknown>>
    ) => Effect.Effect<Receipt, RunRefusal | StepsRefusal>
    readonly task: (
      caller: Caller,
      workspaceId: string,
      runId: string,
      key: string
    ) => Effect.Effect<{ readonly state: RunState; readonly task: TaskRow; readonly offer: ModelOffer }, Absent>
    /** A model task's sealed round request (404 request_not_sealed for anything else). */
    readonly sealedRequest: (
      caller: Caller,
      workspaceId: string,
      runId: string,
      key: string
    ) => Effect.Effect<SealedRequest, Absent>
    readonly taskVerb: (
      caller: Caller,
      workspaceId: string,
      runId: string,
      key: string,
      verb: TaskVerb
    ) => Effect.Effect<TaskRow, RunRefusal>
    readonly events: (
      caller: Caller,
      workspaceId: string,
      runId: string,
      after: string | undefined,
      limit: number
    ) => Effect.Effect<StreamPage, RunRefusal>
    /** The feed and actor of a standalone run the caller may read (the cable follows both). */
    readonly eventSource: (
      caller: Caller,
      workspaceId: string,
      runId: string
    ) => Effect.Effect<
      { readonly stream: string; readonly actor: { readonly kind: string; readonly id: string } },
      RunRefusal
    >
  }
>()("@troupe/domain/runs/Runs") {
  static readonly layer = Layer.effect(
    Runs,
    Effect.gen(function* () {
      const sql = yield* SqlClient
      const catalog = yield* ModelCatalog
      const workspaces = yield* Workspaces
      const conversations = yield* Conversations
      const executors = yield* Executors
      const streams = yield* Streams
      const runs = yield* RunsRepository
      const executorRows = yield* ExecutorsRepository
      const definition = yield* RunDefinition
      const actors = (yield* ActorHost).ref(definition)
      const requests = yield* InferenceRequestsRepository
      const db = yield* withRepositories(RunsRepository, ExecutorsRepository, InferenceRequestsRepository)

      const notFound = () => new Absent({ code: "not_found", message: "No such run" })

      /** A compaction's summarizer: the creator's compaction_policy.model if it serves text (null: the task's). */
      const summarizerOf = (creatorId: bigint) =>
        Effect.map(
          db(Effect.flatMap(ConversationsRepository.make, (rows) => rows.speakers([creatorId]))),
          ([creator]) => {
            const model = compactionPolicyOf(creator?.configuration)?.model
            return servesText(catalog, model) ? model : null
          }
        )

      /** The runners the caller may use, as the compiler looks them up. */
      const runnersFor = (caller: Caller) =>
        Effect.map(executors.discover(caller, { kind: "runner" }), (found) => {
          const byId = new Map<string, RunnerInfo>(
            found.map((runner) => [
              runner.public_id,
              {
                publicId: runner.public_id,
                displayName: runner.display_name,
                eligible: runner.status === "active",
                tools: runner.served_tools
              }
            ])
          )
          return (publicId: string) => byId.get(publicId)
        })

      const hasTemplate = (caller: Caller) =>
        caller.user.kind === "agent" && isObject(renderConfiguration(caller.user.configuration).prompt_template)

      /**
       * A run of the workspace the caller sees (tombstones are absent); a hosted run follows its
       * conversation's level (what the caller may not read there is absent here).
       */
      const visible = (caller: Caller, workspaceId: string, workspaceRowId: bigint, runId: string) =>
        Effect.gen(function* () {
          const run = isUuid(runId) ? yield* db(runs.findRun(runId)) : undefined
          if (!run || run.workspace_id !== workspaceRowId || run.tombstoned_at !== null) return yield* notFound()
          if (run.conversation_public_id !== null) {
            yield* conversations
              .standing(caller, workspaceId, run.conversation_public_id, "read")
              .pipe(Effect.mapError(() => notFound()))
          }
          return run
        })

      /** A run the caller may write (a hosted run: full level on its conversation). */
      const writableRun = (caller: Caller, workspaceId: string, workspaceRowId: bigint, runId: string) =>
        Effect.gen(function* () {
          const run = yield* visible(caller, workspaceId, workspaceRowId, runId)
          if (run.conversation_public_id !== null) {
            yield* conversations
              .standing(caller, workspaceId, run.conversation_public_id, "write")
              .pipe(
                Effect.mapError((refused) =>
                  refused._tag === "NotPermitted" || refused._tag === "StateConflict" ? refused : notFound()
                )
              )
          }
          return run
        })

      const hostTurnOf = (run: RunRow) =>
        run.turn_public_id === null
          ? Effect.succeed(undefined)
          : runs.hostTurnOf({ turnPublicId: run.turn_public_id, runPublicId: run.public_id })

      const stateOf = (run: RunRow) =>
        Effect.map(
          db(
            Effect.all([
              runs.listTasks(run.id),
              snapshotFactsOf(run.public_id),
              runs.listInputs(run.id),
              hostTurnOf(run)
            ])
          ),
          ([tasks, { specs, replyDelivered }, inputs, hostTurn]): RunState => ({
            run,
            tasks,
            specs,
            held: inputs.length,
            replyDelivered,
            hostTurn: hostTurn ?? null
          })
        )

      const reread = (runId: string) =>
        Effect.flatMap(db(runs.findRun(runId)), (run) => (run ? stateOf(run) : Effect.fail(notFound())))

      /** One event to the run's actor; a refusal answers its code; the row handlers' replies otherwise. */
      const send = (runId: string, event: RunEvent) =>
        Effect.gen(function* () {
          const outcome = yield* actors.send(runId, event).pipe(Effect.orDie)
          if (outcome._tag === "Vetoed") return yield* refusalOf(outcome.reason)
          if (outcome._tag === "Rejected") {
            return yield* new StateConflict({
              code: "run_live",
              message: `The run takes no such request while it is ${outcome.state}`
            })
          }
          return outcome.replies as Readonly<Record<string, unknown>>
        })

      const writable = (caller: Caller, workspaceId: string, runId: string) =>
        Effect.flatMap(workspaces.writable(caller, workspaceId), (workspace) =>
          writableRun(caller, workspaceId, workspace.id, runId)
        )

      const at = Effect.map(now, (date) => date.getTime())

      /** An append's answer refusal that names the current revision. */
      const staleRevision = (run: RunRow) =>
        new RunRefused({
          code: "stale_revision",
          message: "The run's revision moved on",
          current_revision: run.revision
        })

      const receiptOf = (compiled: CompiledSteps, revision: number, tokens: Readonly<Record<string, string>>) => ({
        accepted_task_keys: compiled.tasks.map((task) => task.key),
        steps: compiled.receiptSteps,
        deliverable_task_key: compiled.deliverable,
        revision,
        resolution_tokens: tokens
      })

      return Runs.of({
        create: (caller, workspaceId, body) =>
          Effect.gen(function* () {
            const workspace = yield* workspaces.writable(caller, workspaceId)
            const runner = yield* runnersFor(caller)
            const creator = yield* db(creatorLookups(caller, body))
            const judged = compileCreate(body, {
              model: (ref) => servesText(catalog, ref),
              runner,
              otherRunTask: () => false,
              controlsSpeaker: creator.controlsSpeaker,
              ownsBillingSubject: creator.ownsBillingSubject,
              hasPromptTemplate: hasTemplate(caller)
            })
            if (Result.isFailure(judged)) return yield* judged.failure
            const { shell, compiled } = judged.success
            const { tasks, tokens } = mintTokens(compiled)
            const publicId = newPublicId()
            const time = yield* now
            const run = yield* db(
              Effect.gen(function* () {
                const runnerRow =
                  shell.defaultRunner === null
                    ? undefined
                    : yield* executorRows.findExecutorByPublicId(shell.defaultRunner.publicId)
                const inserted = yield* runs.insertRun({
                  publicId,
                  workspaceId: workspace.id,
                  conversationId: null,
                  turnPublicId: null,
                  creatorId: caller.user.id,
                  approvalMode: shell.approvalMode,
                  approvalRulesJson: JSON.stringify(shell.approvalRules),
                  promptMechanism: shell.promptMechanism,
                  billingSubject: shell.billingSubject,
                  requesterSpeakerId: shell.speakerId === null ? null : (creator.speakers.get(shell.speakerId) ?? null),
                  defaultRunnerId: runnerRow?.id ?? null,
                  modelSelectionJson: null,
                  fallbackModelsJson: JSON.stringify(shell.fallbackModels ?? []),
                  deliverableTaskKey: compiled.deliverable,
                  now: time
                })
                yield* runs.insertTasks(
                  inserted.id,
                  tasks.map((task, index) => newTaskRow(task, compiled.rows.get(task.key), index, time))
                )
                const application =
                  caller.user.kind === "agent"
                    ? yield* executorRows.findLiveAgentApplication(caller.user.id)
                    : undefined
                yield* actors
                  .create(publicId, {
                    publicId,
                    conversationId: null,
                    turnId: null,
                    creatorId: inserted.creator_public_id,
                    creatorApplicationId: application?.public_id ?? null,
                    approvalMode: shell.approvalMode,
                    approvalRules: shell.approvalRules,
                    tasks,
                    deliverable: compiled.deliverable,
                    kernelTools: caller.user.kind === "agent" ? kernelImportsOf(caller.user.configuration) : {},
                    kernelAliases: caller.user.kind === "agent" ? kernelAliasesOf(caller.user.configuration) : {},
                    kernelProfiles:
                      caller.user.kind === "agent" ? kernelProfilesOf(kernelImportsOf(caller.user.configuration)) : {},
                    at: time.getTime()
                  })
                  .pipe(Effect.orDie)
                return yield* runs.findRunById(inserted.id)
              }).pipe(sql.withTransaction)
            )
            return { state: yield* stateOf(run!), receipt: receiptOf(compiled, 1, tokens) }
          }),
        list: (caller, workspaceId, filter) =>
          Effect.gen(function* () {
            const workspace = yield* workspaces.read(caller, workspaceId)
            if (filter.after !== undefined && !isUuid(filter.after)) {
              return yield* new BadParameter({ code: "parameter_invalid", message: "after is not a run id" })
            }
            const scanned = yield* db(
              runs.listRuns({
                workspaceId: workspace.id,
                conversationIds: null,
                statuses: filter.statuses,
                attentionOnly: filter.attentionOnly,
                after: filter.after ?? null,
                order: filter.order,
                limit: filter.limit + 1
              })
            )
            const page = scanned.slice(0, filter.limit)
            // Hosted runs list only where their conversation is readable (a page may come out short;
            // the cursor still names the last row scanned).
            const readable: Array<RunRow> = []
            for (const run of page) {
              if (run.conversation_public_id === null) readable.push(run)
              else {
                const standing = yield* conversations
                  .standing(caller, workspaceId, run.conversation_public_id, "read")
                  .pipe(Effect.option)
                if (standing._tag === "Some") readable.push(run)
              }
            }
            return {
              runs: readable,
              nextAfter: scanned.length > filter.limit ? (page.at(-1)?.public_id ?? null) : null
            }
          }),
        read: (caller, workspaceId, runId) =>
          Effect.gen(function* () {
            const workspace = yield* workspaces.read(caller, workspaceId)
            return yield* stateOf(yield* visible(caller, workspaceId, workspace.id, runId))
          }),
        readsAny: (caller, runIds) =>
          Effect.gen(function* () {
            for (const runId of runIds) {
              const run = yield* db(runs.findRunById(runId))
              if (run === undefined) continue
              const seen = yield* Effect.gen(function* () {
                const workspace = yield* workspaces.read(caller, run.workspace_public_id)
                return yield* visible(caller, run.workspace_public_id, workspace.id, run.public_id)
              }).pipe(Effect.option)
              if (Option.isSome(seen)) return true
            }
            return false
          }),
        verb: (caller, workspaceId, runId, verb) =>
          Effect.gen(function* () {
            yield* writable(caller, workspaceId, runId)
            const time = yield* at
            const event: RunEvent =
              verb.verb === "start"
                ? { type: "run.start", at: time }
                : verb.verb === "pause"
                  ? { type: "run.pause", force: verb.force, at: time }
                  : verb.verb === "resume"
                    ? { type: "run.resume", at: time }
                    : { type: "run.stop", force: verb.force, at: time }
            yield* send(runId, event)
            return yield* reread(runId)
          }),
        remove: (caller, workspaceId, runId) =>
          Effect.gen(function* () {
            const run = yield* writable(caller, workspaceId, runId)
            if (run.conversation_id !== null) return yield* hosted(run)
            yield* send(runId, { type: "run.tombstone", at: yield* at })
          }),
        setDefaultRunner: (caller, workspaceId, runId, executorId) =>
          Effect.gen(function* () {
            const run = yield* writable(caller, workspaceId, runId)
            if (run.conversation_id !== null) return yield* hosted(run)
            const runner = executorId === null ? undefined : (yield* runnersFor(caller))(executorId)
            if (executorId !== null && runner === undefined) {
              return yield* new Absent({ code: "runner_not_found", message: "No such runner" })
            }
            if (runner !== undefined && !runner.eligible) {
              return yield* new StateConflict({ code: "runner_not_eligible", message: "That runner cannot serve you" })
            }
            // Setting the runner the run already has changes nothing and narrates nothing.
            if ((runner?.publicId ?? null) === run.default_runner_public_id) return yield* stateOf(run)
            const executor =
              runner === undefined ? null : { executorId: runner.publicId, displayName: runner.displayName }
            yield* send(runId, { type: "run.defaultRunner", executor, at: yield* at })
            return yield* reread(runId)
          }),
        append: (caller, workspaceId, runId, body) =>
          Effect.gen(function* () {
            const run = yield* writable(caller, workspaceId, runId)
            const runner = yield* runnersFor(caller)
            const expected = typeof body.expected_revision === "number" ? body.expected_revision : null
            // The compiler reads the run as its rows show it; a run that moved meanwhile is compiled again.
            for (;;) {
              const state = yield* reread(runId)
              // The run's own checks come first, in the supplement's order (the machine judges them
              // again at its step); the steps and resolve entries after them.
              if (!appendable.has(state.run.status) || state.replyDelivered) {
                return yield* new StateConflict({ code: "run_not_appendable", message: "The run takes no appends now" })
              }
              // The fence is judged in its place: a value that is no integer is malformed, never ignored.
              if (body.expected_revision != null && !Number.isSafeInteger(body.expected_revision)) {
                return yield* new BadParameter({
                  code: "parameter_invalid",
                  message: "expected_revision must be an integer"
                })
              }
              if (expected !== null && expected !== state.run.revision) return yield* staleRevision(state.run)
              const tip = state.tasks.filter((task) => task.kind === "model_task" && task.mainline).at(-1)
              if (firstStepIsModel(body.steps) && (tip?.status === "waiting" || tip?.status === "running")) {
                return yield* new StateConflict({ code: "tip_live", message: "The mainline's newest round is live" })
              }
              const deliverable = state.tasks.find((task) => task.key === state.run.deliverable_task_key)
              if (deliverable !== undefined && unresolvedRow(deliverable)) {
                return yield* new StateConflict({
                  code: "tip_unresolved",
                  message: "The deliverable failed unresolved: retry or abandon it first"
                })
              }
              const raw = judgeAppendShell(body)
              if (raw !== undefined) return yield* raw
              const defaultRunner =
                state.run.default_runner_public_id === null
                  ? null
                  : (runner(state.run.default_runner_public_id) ?? null)
              // A hosted run's waits may name tasks of earlier runs of its conversation.
              const otherRunTask = yield* db(
                otherRunTasks(body.steps, { conversationId: state.run.conversation_id, beforeRunId: state.run.id })
              )
              const compiled = compileSteps(body.steps, {
                revision: state.run.revision + 1,
                existing: state.tasks.map((task) => ({ key: task.key, kind: task.kind, mainline: task.mainline })),
                currentDeliverable: state.run.deliverable_task_key,
                promptMechanism: state.run.prompt_mechanism as "raw" | "default" | "assembly",
                firstIsSeed: false,
                defaultRunner,
                lookups: { model: (ref) => servesText(catalog, ref), runner, otherRunTask }
              })
              if (Result.isFailure(compiled)) return yield* compiled.failure
              const { tasks, tokens } = mintTokens(compiled.success)
              const resolve = yield* resolveEntries(body.resolve, state.tasks)
              const first = compiled.success.tasks[0]
              const outcome = yield* actors
                .send(run.public_id, {
                  type: "run.append",
                  compiledAt: state.run.revision,
                  expectedRevision: expected,
                  tasks,
                  details: Object.fromEntries(compiled.success.rows),
                  deliverable: compiled.success.deliverable,
                  seedIsModel: first?.kind === "model_task" && first.mainline,
                  resolve,
                  at: yield* at
                })
                .pipe(Effect.orDie)
              if (outcome._tag === "Vetoed" && outcome.reason === "recompile") continue
              if (outcome._tag === "Vetoed" && outcome.reason === "stale_revision") {
                return yield* staleRevision((yield* reread(runId)).run)
              }
              if (outcome._tag === "Vetoed") return yield* refusalOf(outcome.reason)
              return receiptOf(compiled.success, state.run.revision + 1, tokens)
            }
          }),
        task: (caller, workspaceId, runId, key) =>
          Effect.gen(function* () {
            const workspace = yield* workspaces.read(caller, workspaceId)
            const state = yield* stateOf(yield* visible(caller, workspaceId, workspace.id, runId))
            const task = state.tasks.find((each) => each.key === key)
            if (task === undefined) return yield* new Absent({ code: "not_found", message: "No such task" })
            // A model task that asked its round: what the sealed request offered and weighs.
            const request =
              task.kind === "model_task" && task.inference_request_public_id !== null
                ? yield* db(requests.findRequest(task.inference_request_public_id))
                : undefined
            const stored = isObject(request?.request) ? request.request : {}
            return { state, task, offer: isObject(stored.members) ? offerOf(stored.members) : {} }
          }),
        sealedRequest: (caller, workspaceId, runId, key) =>
          Effect.gen(function* () {
            const workspace = yield* workspaces.read(caller, workspaceId)
            const run = yield* visible(caller, workspaceId, workspace.id, runId)
            const task = yield* db(runs.findTask(run.id, key))
            if (task === undefined) return yield* new Absent({ code: "not_found", message: "No such task" })
            const request =
              task.kind === "model_task" && task.inference_request_public_id !== null
                ? yield* db(requests.findRequest(task.inference_request_public_id))
                : undefined
            const stored = isObject(request?.request) ? request.request : {}
            if (!isObject(stored.members)) {
              return yield* new Absent({ code: "request_not_sealed", message: "The task has no sealed request" })
            }
            return sealedOf(stored.members)
          }),
        taskVerb: (caller, workspaceId, runId, key, verb) =>
          Effect.gen(function* () {
            yield* writable(caller, workspaceId, runId)
            const time = yield* at
            const creator = (yield* db(runs.findRun(runId)))!
            const self = (yield* db(runs.userOf(caller.user.id)))!
            // The creator decides its run's approvals, or the human stewarding it; the actor refuses
            // anyone else once the run and task are judged (not_adjudicable, not_found first).
            const steward =
              verb.verb === "approve" || verb.verb === "deny"
                ? ((yield* db(runs.userOf(creator.creator_id)))?.steward_id ?? null)
                : null
            const decider = {
              userId: self.public_id,
              origin: caller.user.kind === "agent" ? ("agent" as const) : ("human" as const),
              decides: caller.user.id === creator.creator_id || caller.user.id === steward
            }
            const summarizer = verb.verb === "compact" ? yield* summarizerOf(creator.creator_id) : null
            const event: RunEvent =
              verb.verb === "retry"
                ? { type: "task.retry", key, model: verb.model, at: time }
                : verb.verb === "abandon"
                  ? { type: "task.abandon", key, at: time }
                  : verb.verb === "approve"
                    ? { type: "task.approve", key, by: decider, at: time }
                    : verb.verb === "deny"
                      ? { type: "task.deny", key, by: decider, reason: verb.reason, at: time }
                      : verb.verb === "cancel"
                        ? { type: "task.cancel", key, at: time }
                        : verb.verb === "compact"
                          ? { type: "task.compact", key, model: summarizer, at: time }
                          : {
                              type: "task.resolve",
                              key,
                              tokenDigest: verb.token === null ? null : digestOf(verb.token),
                              outcome: verb.outcome === "invalid" ? "completed" : verb.outcome,
                              content: verb.content ?? null,
                              fault: verb.outcome === "invalid" ? "outcome_invalid" : null,
                              at: time
                            }
            const replies = yield* send(runId, event)
            const answered = replies["run.answer"]
            if (answered !== undefined && answered !== "unchanged") return yield* refusalOf(String(answered))
            const task = yield* db(runs.findTask(creator.id, key))
            return task!
          }),
        events: (caller, workspaceId, runId, after, limit) =>
          Effect.gen(function* () {
            const workspace = yield* workspaces.read(caller, workspaceId)
            const run = yield* visible(caller, workspaceId, workspace.id, runId)
            if (run.conversation_id !== null) return yield* hosted(run)
            return yield* streams
              .read(definition.stream(run.public_id), after === "" ? undefined : after, limit)
              .pipe(
                Effect.mapError(
                  () => new BadParameter({ code: "parameter_invalid", message: "after is not a cursor of this run" })
                )
              )
          }),
        eventSource: (caller, workspaceId, runId) =>
          Effect.gen(function* () {
            const workspace = yield* workspaces.read(caller, workspaceId)
            const run = yield* visible(caller, workspaceId, workspace.id, runId)
            if (run.conversation_id !== null) return yield* hosted(run)
            return { stream: definition.stream(run.public_id), actor: { kind: definition.kind, id: run.public_id } }
          })
      })
    })
  )
}

/** Statuses a run takes appends in. */
const appendable: ReadonlySet<string> = new Set(["pending", "running", "paused", "needs_attention"])

/** A settled row whose failure nothing resolved (not absorbed, no failure_resolution). */
const unresolvedRow = (task: TaskRow) =>
  ["failed", "timed_out", "uncertain", "skipped", "canceled"].includes(task.status) &&
  task.failure_resolution === null &&
  !(task.on_failure === "absorb" && task.status !== "skipped" && task.status !== "canceled")

/** A hosted run's own feed and door answer conversation_hosted, naming its hosts. */
const hosted = (run: RunRow) =>
  Effect.fail(
    new RunRefused({
      code: "conversation_hosted",
      message: "This run is hosted by a conversation",
      conversation_public_id: run.conversation_public_id ?? "",
      turn_public_id: run.turn_public_id
    })
  )

/**
 * An append's resolve entries: a task key, or {task, content?} (completed outcomes only). Each entry
 * is judged in the supplement's order, the first faulty one answering: not an authored ask of the run
 * (unknown_await), not open (await_not_resolvable), an outcome other than completed
 * (unsupported_resolve_outcome). The run's actor judges the first two again at its step.
 */
const resolveEntries = (value: unknown, tasks: ReadonlyArray<TaskRow>) =>
  Effect.gen(function* () {
    if (value === undefined || value === null) return []
    if (!Array.isArray(value))
      return yield* new Invalid({ code: "validation_failed", message: "resolve must be a list" })
    const entries: Array<{ task: string; content: unknown }> = []
    for (const entry of value) {
      const key = typeof entry === "string" ? entry : isObject(entry) ? entry.task : undefined
      const ask = typeof key === "string" ? tasks.find((task) => task.key === key) : undefined
      if (ask === undefined || ask.await_kind !== "ask" || ask.origin !== "author") {
        return yield* new Invalid({ code: "unknown_await", message: "resolve entries name an authored ask of the run" })
      }
      if (ask.status !== "dispatched") {
        return yield* new Invalid({ code: "await_not_resolvable", message: Invalid.sentenceOf("await_not_resolvable") })
      }
      if (isObject(entry) && entry.outcome !== undefined && entry.outcome !== "completed") {
        return yield* new Invalid({ code: "unsupported_resolve_outcome", message: "resolve completes asks only" })
      }
      entries.push({ task: ask.key, content: isObject(entry) ? (entry.content ?? null) : null })
    }
    return entries
  })
