// The run binding, the only writer of a run's rows after their insertion at creation: the run
// row's projection, its task rows (standing, results, rounds' answers), the hidden inference
// requests its model rounds ask (inserted and started in the step that opens a round, told to
// cancel by the step that aborts one), its tombstone and reap; and a hosted run's narrated items,
// appended to its conversation's feed. What a round's prompt is made of,
// who serves a model's tool call, and how executors and watchers hear of work are the domain's
// (`RunWork`, given when the server assembles its bindings): this binding knows rows.
import type { InferenceRequestInput } from "@troupe/machines/inferenceRequest/context"
import { machines } from "@troupe/machines/registry"
import type { TaskSpec } from "@troupe/machines/run/context"
import {
  type AddressCallsParams,
  runEffects as fx,
  type OpenRoundParams,
  type ReturnResultParams,
  type TaskProjection
} from "@troupe/machines/run/effects"
import type { CallAddress, RunEvent } from "@troupe/machines/run/events"
import { newPublicId } from "@troupe/storage/Ids"
import * as Outbox from "@troupe/storage/repositories/Outbox"
import { type NewTask, RunsRepository } from "@troupe/storage/repositories/Runs"
import { Clock, Effect } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import { streamAppendedNotice } from "../ActorHost.ts"
import { defineActor, type StepInfo, TransactionalActors, Veto } from "../Binding.ts"
import { conversationStream } from "./conversation.ts"
import type { InferenceRequestActor } from "./inferenceRequest.ts"

/** A message for the cable, published when the step commits. */
export interface CableMessage {
  readonly channel: string
  readonly payload: string
}

/** The bus channel of an executor's inbox (ExecutorInboxChannel). */
export const inboxChannel = (executorPublicId: string) => `executor_inbox:${executorPublicId}`
/** The bus channel of a run's progress frames (RunChannel `progress`). */
export const runProgressChannel = (runPublicId: string) => `run_progress:${runPublicId}`
/** The bus channel of a conversation's runs' progress frames (ConversationChannel `progress`). */
export const conversationProgressChannel = (conversationPublicId: string) =>
  `conversation_progress:${conversationPublicId}`

/** Where a run's frames go: a hosted run's ride its conversation's feed. */
export const progressChannelOf = (runPublicId: string, conversationPublicId: string | null) =>
  conversationPublicId === null ? runProgressChannel(runPublicId) : conversationProgressChannel(conversationPublicId)

/** Where a kernel call of an overridden namespace goes (the `task.kernelRouted` event's members). */
export type KernelRoute = Omit<Extract<RunEvent, { type: "task.kernelRouted" }>, "type" | "key" | "generation" | "at">

/** The domain's side of a run's work. */
export interface RunWork {
  /**
   * Seals a model round's request and inserts its hidden inference request (asked by the run);
   * answers the request actor's input without `replyTo` (the binding adds it), or the code its
   * admission refused it with (the round then fails with it).
   */
  readonly sealRound: (
    run: { readonly id: bigint; readonly publicId: string },
    round: OpenRoundParams
  ) => Effect.Effect<InferenceRequestInput | { readonly refused: string }, SqlError, SqlClient>
  /** Who serves each of a model's tool calls now (the addressing rule). */
  readonly addressCalls: (
    runPublicId: string,
    calls: AddressCallsParams["calls"]
  ) => Effect.Effect<ReadonlyArray<CallAddress>, unknown, SqlClient>
  /**
   * Carries out a kernel call of the run (its task's row keeps the call's input): what it answers
   * (the task's result), or the failure's key; or, when the run's workspace overrides the call's
   * namespace, the provider it is routed to (`routed`). It may tell other actors (a conversation's cancel).
   */
  readonly callKernel: (
    runPublicId: string,
    key: string,
    canonical: string
  ) => Effect.Effect<
    | {
        readonly outcome: "completed" | "failed"
        readonly result: Readonly<Record<string, unknown>>
        readonly errorKey: string | null
      }
    | { readonly routed: KernelRoute },
    unknown,
    SqlClient | TransactionalActors
  >
  /**
   * Puts an unwaited delegated task's result into the run's hosting conversation as a task_result
   * input (a durable message, in the step's transaction).
   */
  readonly returnResult: (
    runPublicId: string,
    params: ReturnResultParams,
    now: Date
  ) => Effect.Effect<void, SqlError, SqlClient | TransactionalActors>
  /** Publishes cable messages when the current transaction commits. */
  readonly publishOnCommit: (messages: ReadonlyArray<CableMessage>) => Effect.Effect<void, never, SqlClient>
}

/** Runs' internal ids by public id (they never change): most steps write rows of the same runs. */
const runIds = new Map<string, bigint>()
const runIdCacheSize = 10_000

const runIdOf = (runs: RunsRepository["Service"], step: StepInfo) => {
  const known = runIds.get(step.actorId)
  if (known !== undefined) return Effect.succeed(known)
  return Effect.flatMap(runs.runIdOf(step.actorId), (id) => {
    if (id === undefined) return Effect.die(new Error(`no run row for ${step.actorId}`))
    if (runIds.size >= runIdCacheSize) runIds.clear()
    runIds.set(step.actorId, id)
    return Effect.succeed(id)
  })
}

const withRun = <A, E, R>(
  step: StepInfo,
  work: (runs: RunsRepository["Service"], runId: bigint) => Effect.Effect<A, E, R>
) =>
  Effect.gen(function* () {
    const runs = yield* RunsRepository.make
    return yield* work(runs, yield* runIdOf(runs, step))
  })

/**
 * A new task's row: its standing columns, and in `spec` what the task read shows (`details`) with
 * the graph's own facts the projections read (results, structural waits, expansion parent, join).
 */
export const newTaskRow = (spec: TaskSpec, details: unknown, position: number, now: Date): NewTask => ({
  key: spec.key,
  position,
  kind: spec.kind,
  awaitKind: spec.awaitKind,
  origin: spec.origin,
  visibility: spec.visibility,
  mainline: spec.mainline,
  afterJson: JSON.stringify(spec.after),
  onFailure: spec.onFailure,
  toolName: spec.tool?.name ?? spec.called?.name ?? null,
  toolAlias: spec.tool?.alias ?? spec.called?.alias ?? null,
  toolCallId: spec.tool?.toolCallId ?? null,
  targetExecutor: spec.tool?.target.kind === "runner" ? spec.tool.target.executor.executorId : null,
  pool: spec.tool?.target.kind === "pool",
  timeoutMs: spec.tool?.timeoutMs ?? spec.ask?.timeoutMs ?? spec.wait?.timeoutMs ?? null,
  specJson: JSON.stringify({
    ...(typeof details === "object" && details !== null ? details : {}),
    graph: {
      structural: spec.structural,
      results: spec.results,
      expansion_parent: spec.expansionParent,
      join: spec.join,
      wait: spec.wait,
      revision: spec.revision,
      step: spec.step
    }
  }),
  now
})

const dateOf = (millis: number | null) => (millis === null ? null : new Date(millis))

const changeOf = (task: TaskProjection) => ({
  key: task.key,
  status: task.status,
  generation: task.generation,
  failureResolution: task.failureResolution,
  errorJson: task.error === null ? null : JSON.stringify(task.error),
  inboxKind: task.inboxKind,
  inboxExecutor: task.inboxExecutorId,
  claimedByExecutor: task.claimedBy,
  claimTokenDigest: task.claimTokenDigest,
  claimed: task.claimed,
  deadlineAt: dateOf(task.deadlineAt),
  dispatchedAt: task.inboxKind === null ? null : dateOf(task.startedAt),
  approvalJson:
    task.approval === null ? null : JSON.stringify({ ...task.approval, decided_at: dateOf(task.approval.decided_at) }),
  startedAt: dateOf(task.startedAt),
  completedAt: dateOf(task.completedAt),
  afterJson: JSON.stringify(task.after),
  targetExecutor: task.targetExecutorId,
  pool: task.pool,
  timeoutMs: task.timeoutMs
})

export const runActor = (work: RunWork, inference: InferenceRequestActor) =>
  defineActor({
    kind: "run",
    entry: machines.run,
    resourceType: "run",
    stream: (actorId) => `run:${actorId}`,
    // A round's reply, a job's report or a timer carries no instant of its own: the step's is theirs.
    stamp: (event, now) => ("at" in event ? event : { ...event, at: now.getTime() }),
    // Every task's standing is a row of its own: a step writes the tasks it changed, not them all.
    parts: { tasks: (task) => task.spec.key },
    rows: {
      [fx.refuse]: (params) => Effect.fail(new Veto({ reason: params.reason })),
      [fx.answer]: (params) => Effect.succeed(params.reason),
      [fx.recordRun]: (params, step) =>
        Effect.flatMap(RunsRepository.make, (runs) =>
          runs.setRunProjection(step.actorId, {
            status: params.status,
            attentionJson: params.attention === null ? null : JSON.stringify(params.attention),
            revision: params.revision,
            deliverableTaskKey: params.deliverable,
            startedAt: dateOf(params.startedAt),
            pausedAt: dateOf(params.pausedAt),
            completedAt: dateOf(params.completedAt),
            now: step.now
          })
        ),
      [fx.recordTasks]: (params, step) =>
        withRun(step, (runs, runId) => runs.updateTasks(runId, params.tasks.map(changeOf), step.now)),
      [fx.insertTasks]: (params, step) =>
        withRun(step, (runs, runId) =>
          runs.insertTasks(
            runId,
            params.tasks.map((spec, index) =>
              newTaskRow(spec, params.details[spec.key], params.firstPosition + index, step.now)
            )
          )
        ),
      [fx.recordResult]: (params, step) =>
        withRun(step, (runs, runId) =>
          params.from === undefined
            ? runs.setTaskResult(runId, params.key, JSON.stringify(params.result), step.now)
            : params.fromRun === undefined
              ? runs.copyTaskResult(runId, params.key, params.from, step.now)
              : runs.copyForeignTaskResult(runId, params.key, { run: params.fromRun, key: params.from }, step.now)
        ),
      [fx.openRound]: (params, step) =>
        withRun(step, (runs, runId) =>
          Effect.gen(function* () {
            const sealed = yield* work.sealRound({ id: runId, publicId: step.actorId }, params)
            const actors = yield* TransactionalActors
            if ("refused" in sealed) {
              // Refused before any work started: the round answers itself as a failed request would.
              return yield* actors.reply(
                { kind: "run", actorId: step.actorId },
                {
                  type: "inference.replied",
                  requestId: "",
                  status: "failed",
                  errorCode: sealed.refused,
                  declined: false,
                  usage: null,
                  ref: params.ref
                }
              )
            }
            yield* runs.setTaskRequest(runId, params.key, sealed.publicId)
            yield* actors.create(inference, sealed.publicId, {
              ...sealed,
              replyTo: { kind: "run", actorId: step.actorId, ref: params.ref }
            })
          })
        ),
      [fx.cancelRound]: (params, step) =>
        withRun(step, (runs, runId) =>
          Effect.gen(function* () {
            const task = yield* runs.findTask(runId, params.key)
            if (task?.inference_request_public_id == null) return
            const actors = yield* TransactionalActors
            yield* actors.tell(inference, task.inference_request_public_id, { type: "inference.cancel" })
          })
        ),
      [fx.routeTask]: (params, step) =>
        withRun(step, (runs, runId) =>
          runs.routeTask(
            runId,
            params.key,
            params,
            JSON.stringify({ routed: true, ...(params.scope === null ? {} : { scope: params.scope }) }),
            step.now
          )
        ),
      [fx.recordRound]: (params, step) =>
        withRun(step, (runs, runId) =>
          runs.recordRoundAnswer(
            runId,
            params.key,
            params.usage === null ? null : JSON.stringify(params.usage),
            step.now
          )
        ),
      [fx.recordDefaultRunner]: (params, step) =>
        Effect.flatMap(RunsRepository.make, (runs) => runs.setDefaultRunner(step.actorId, params.executorId, step.now)),
      [fx.recordTombstone]: (_, step) =>
        Effect.flatMap(RunsRepository.make, (runs) => runs.tombstoneRun(step.actorId, step.now)),
      [fx.reap]: (_, step) => Effect.flatMap(RunsRepository.make, (runs) => runs.deleteRun(step.actorId)),
      [fx.notifyExecutors]: (params) =>
        work.publishOnCommit(
          params.messages.flatMap((each) =>
            each.executorIds.map((executorId) => ({
              channel: inboxChannel(executorId),
              payload: JSON.stringify(each.message)
            }))
          )
        ),
      [fx.insertInput]: (params, step) =>
        withRun(step, (runs, runId) =>
          runs.insertInput(runId, {
            publicId: params.inputId,
            authorId: BigInt(String(params.row.authorId)),
            text: String(params.row.text ?? ""),
            steer: params.steer,
            position: params.position,
            deliverAt: dateOf(params.dueAt),
            idempotencyKey: typeof params.row.idempotencyKey === "string" ? params.row.idempotencyKey : null,
            now: step.now
          })
        ),
      [fx.updateInput]: (params, step) =>
        Effect.flatMap(RunsRepository.make, (runs) =>
          runs.updateInput(params.inputId, {
            state: params.state,
            lockVersion: params.lockVersion,
            position: params.position,
            deliverAt: dateOf(params.dueAt),
            text: params.text,
            taskKey: params.taskKey,
            now: step.now
          })
        ),
      [fx.deleteInput]: (params) => Effect.flatMap(RunsRepository.make, (runs) => runs.deleteInput(params.inputId)),
      // A wait on another run's task: only an earlier run of the same conversation holding that task
      // is asked to watch it; anything else answers this run's wait not_found (a message to itself).
      [fx.watchTask]: (params, step) =>
        withRun(step, (runs, runId) =>
          Effect.gen(function* () {
            const actors = yield* TransactionalActors
            const self = yield* runs.findRunById(runId)
            const held =
              self?.conversation_id == null
                ? []
                : yield* runs.tasksOfEarlierRuns({
                    conversationId: self.conversation_id,
                    beforeRunId: runId,
                    tasks: [{ run: params.run, key: params.task }]
                  })
            if (held.length === 0) {
              return yield* actors.reply(
                { kind: "run", actorId: step.actorId },
                { type: "wait.answered", key: params.key, generation: params.generation, outcome: "not_found" }
              )
            }
            yield* actors.reply(
              { kind: "run", actorId: held[0]!.run },
              {
                type: "task.watch",
                key: params.task,
                watcher: { run: step.actorId, key: params.key, generation: params.generation }
              }
            )
          })
        ),
      [fx.answerWatcher]: ({ watcher, outcome }) =>
        Effect.flatMap(TransactionalActors, (actors) =>
          actors.reply(
            { kind: "run", actorId: watcher.run },
            { type: "wait.answered", key: watcher.key, generation: watcher.generation, outcome }
          )
        ),
      [fx.replyToHost]: (params) =>
        Effect.flatMap(TransactionalActors, (actors) => actors.reply(params.to, params.event)),
      [fx.returnResult]: (params, step) => work.returnResult(step.actorId, params, step.now),
      // A hosted run's items, in this step's transaction, numbered after the conversation feed's head
      // (its head row serializes them with the conversation's own steps); its readers are woken.
      [fx.narrateOnHost]: (params, step) =>
        Effect.andThen(
          Outbox.append(
            conversationStream(params.conversationId),
            params.items.map(({ type, ...payload }) => ({
              publicId: newPublicId(),
              type,
              resourceType: "run",
              resourcePublicId: step.actorId,
              payload,
              occurredAt: step.now
            }))
          ),
          work.publishOnCommit([streamAppendedNotice("conversation", params.conversationId)])
        ),
      [fx.relayFrame]: (params, step) =>
        work.publishOnCommit([
          { channel: progressChannelOf(step.actorId, params.conversationId), payload: JSON.stringify(params.frame) }
        ])
    },
    jobs: {
      [fx.callKernel]: (params, job) =>
        Effect.gen(function* () {
          const answer = yield* work.callKernel(job.actorId, params.key, params.canonical)
          const at = yield* Clock.currentTimeMillis
          const call = { key: params.key, generation: params.generation }
          return "routed" in answer
            ? { type: "task.kernelRouted" as const, ...call, ...answer.routed, at }
            : { type: "task.kernelAnswered" as const, ...call, ...answer, at }
        }),
      [fx.addressCalls]: (params, job) =>
        Effect.gen(function* () {
          const calls = yield* work.addressCalls(job.actorId, params.calls)
          return { type: "task.addressed" as const, calls, at: yield* Clock.currentTimeMillis }
        })
    }
  })

export type RunActor = ReturnType<typeof runActor>
