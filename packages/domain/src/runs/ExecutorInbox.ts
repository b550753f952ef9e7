// The executor inbox (spec "Inbox task (executor plane)", runs supplement "Executor inbox"): the
// rows addressed to an executor, and what it does to one: claim (a fresh token, its digest to the
// run), claim check, extend, commit (its body judged here, its standing by the run's machine, in
// the supplement's order) and progress frames (relayed, never stored, one per task per 250 ms).

import { ActorHost } from "@troupe/actors/ActorHost"
import { inboxChannel, progressChannelOf } from "@troupe/actors/bindings/run"
import { runEffects } from "@troupe/machines/run/effects"
import type { RunEvent } from "@troupe/machines/run/events"
import { defaultToolTimeoutMillis } from "@troupe/machines/run/rules/graph"
import { EventBus } from "@troupe/storage/EventBus"
import { isUuid } from "@troupe/storage/Ids"
import { withRepositories } from "@troupe/storage/Repositories"
import { ConversationsRepository } from "@troupe/storage/repositories/Conversations"
import { type ExecutorRow, ExecutorsRepository } from "@troupe/storage/repositories/Executors"
import { NamedAgentsRepository } from "@troupe/storage/repositories/NamedAgents"
import { type InboxRow, type InboxTaskRow, RunsRepository, type TaskRow } from "@troupe/storage/repositories/Runs"
import { UploadsRepository } from "@troupe/storage/repositories/Uploads"
import { Clock, Context, Effect, Layer, Schema } from "effect"
import { callerOfUser } from "../accounts/Caller.ts"
import { seesWorkspace, writeStanding } from "../conversations/Standing.ts"
import { replayable } from "../executors/EffectProfiles.ts"
import type { CallerRow, ExecutorCaller } from "../executors/Executors.ts"
import { isObject } from "../kernel/Json.ts"
import { Absent, BadParameter, type Invalid, NotPermitted, StateConflict } from "../kernel/Refusals.ts"
import { type BodyFault, judgeCommitBody, judgeExtendBody, judgeProgressBody, resultUploadIds } from "./InboxBodies.ts"
import { RunDefinition } from "./Runs.ts"
import { digestOf, newToken } from "./Tokens.ts"
import { toolRowRole } from "./Trace.ts"

/** At most one progress frame per task or process per this many milliseconds. */
const frameCadenceMillis = 250

/** An inbox row as the wire shows it (spec "Inbox task"). */
export interface InboxTaskView {
  readonly kind: string
  readonly run_public_id: string
  readonly workspace_public_id: string
  readonly conversation_public_id: string | null
  readonly parent_public_id: string | null
  readonly task_key: string
  readonly started_at: Date | null
  readonly deadline_at: Date
  readonly timeout_ms: number
  readonly claimed: boolean
  readonly addressed_to: {
    readonly role: "runner" | "agent_application" | "tool_provider"
    readonly executor_public_id?: string
  }
  readonly target?: { readonly executor_public_id: string; readonly display_name?: string }
  readonly tool_name?: string
  readonly tool_input?: Readonly<Record<string, unknown>>
  readonly tool_call_id?: string
  readonly tool_alias?: string
  /** A memory call routed to the provider overriding svc.memory, of a hosted run: its bindings. */
  readonly scope?: { readonly bindings: ReadonlyArray<unknown> }
  readonly prompt?: string
  readonly options?: ReadonlyArray<string>
  readonly multi?: boolean
  readonly effect_profile?: ExecutorRow["announcement"]["tools"][number]["effect_profile"]
}

/**
 * A relayed frame's payload within the bus's bound (PostgreSQL refuses notifications of 8000
 * bytes or more): a text tail keeps its newest characters, process lines their newest lines; a
 * frame that still does not fit is dropped (accepted false).
 */
const busPayloadBytes = 7_900
const fitted = (frame: Readonly<Record<string, unknown>>): string | undefined => {
  let candidate = frame
  for (let attempt = 0; attempt < 12; attempt++) {
    const text = JSON.stringify(candidate)
    const size = Buffer.byteLength(text, "utf8")
    if (size <= busPayloadBytes) return text
    const over = size - busPayloadBytes
    if (typeof candidate.text_tail === "string" && candidate.text_tail.length > 0) {
      candidate = {
        ...candidate,
        text_tail: candidate.text_tail.slice(Math.min(candidate.text_tail.length, over + 16))
      }
    } else if (Array.isArray(candidate.lines) && candidate.lines.length > 1) {
      candidate = { ...candidate, lines: candidate.lines.slice(Math.ceil(candidate.lines.length / 2)) }
    } else return undefined
  }
  return undefined
}

/** A refusal a body judge found (its status is its code's). */
export class BodyRefused extends Schema.TaggedError<BodyRefused>()("BodyRefused", {
  status: Schema.Number,
  code: Schema.String,
  message: Schema.String
}) {}

/** What a claim, claim check or extend may be refused with. */
export type ClaimRefusal = Absent | BadParameter | StateConflict | NotPermitted

export type InboxRefusal = ClaimRefusal | Invalid | BodyRefused

/** A row's deadline as the run's clock reads it at `now`: a paused run's stored deadline shifts by the pause so far. */
const deadlineOf = (row: InboxRow, now: number): Date | null =>
  row.deadline_at === null || row.run_paused_at === null
    ? row.deadline_at
    : new Date(row.deadline_at.getTime() + Math.max(0, now - row.run_paused_at.getTime()))

const viewOf = (row: InboxRow, now: number): InboxTaskView => {
  const spec = isObject(row.spec) ? row.spec : {}
  const addressed: InboxTaskView["addressed_to"] =
    row.kind === "tool_call"
      ? row.pool && !row.claimed
        ? { role: "tool_provider" }
        : {
            // A memory call routed to the provider overriding svc.memory is a tool provider's row.
            role: row.pool || spec.routed === true ? "tool_provider" : toolRowRole(row.inbox_executor_kind),
            executor_public_id: row.inbox_executor_public_id ?? ""
          }
      : { role: "agent_application", executor_public_id: row.inbox_executor_public_id ?? "" }
  return {
    kind: row.kind ?? "tool_call",
    run_public_id: row.run_public_id,
    workspace_public_id: row.workspace_public_id,
    conversation_public_id: row.conversation_public_id,
    parent_public_id: row.parent_public_id,
    task_key: row.task_key,
    started_at: row.dispatched_at,
    deadline_at: deadlineOf(row, now) ?? row.dispatched_at ?? new Date(0),
    timeout_ms: row.timeout_ms ?? 0,
    claimed: row.claimed,
    addressed_to: addressed,
    ...(row.target_executor_public_id === null
      ? {}
      : {
          target: {
            executor_public_id: row.target_executor_public_id,
            ...(row.target_display_name === null ? {} : { display_name: row.target_display_name })
          }
        }),
    // An ask row (an authored ask, or a model's ask however it was named) names no tool.
    ...(row.tool_name === null || row.kind === "ask" ? {} : { tool_name: row.tool_name }),
    ...(row.kind === "ask" ? {} : { tool_input: isObject(spec.tool_input) ? spec.tool_input : {} }),
    ...(row.tool_call_id === null || row.kind !== "tool_call" ? {} : { tool_call_id: row.tool_call_id }),
    ...(row.tool_alias === null || row.kind === "ask" ? {} : { tool_alias: row.tool_alias }),
    ...(row.kind === "tool_call" && isObject(spec.scope) && Array.isArray(spec.scope.bindings)
      ? { scope: { bindings: spec.scope.bindings } }
      : {}),
    // A model's kernel call awaiting approval carries its catalog profile (a runner tool's: below).
    ...(row.kind === "approval" && isObject(spec.effect_profile)
      ? { effect_profile: spec.effect_profile as NonNullable<InboxTaskView["effect_profile"]> }
      : {}),
    ...(row.kind === "ask" && typeof spec.prompt === "string" ? { prompt: spec.prompt } : {}),
    ...(row.kind === "ask" && Array.isArray(spec.options) ? { options: spec.options as ReadonlyArray<string> } : {}),
    ...(row.kind === "ask" && typeof spec.multi === "boolean" ? { multi: spec.multi } : {})
  }
}

/**
 * The inbox row after a step: its run's public ids as read before the step, its task's columns as
 * the step wrote them (the step's reply), so the answer reads the row as a read after it would.
 */
const steppedRow = (before: InboxTaskRow, task: TaskRow): InboxRow => ({
  ...task,
  inbox_executor_kind: task.inbox_executor_kind ?? before.inbox_executor_kind,
  kind: task.inbox_kind,
  task_key: task.key,
  task_kind: task.kind,
  run_public_id: before.run_public_id,
  workspace_public_id: before.workspace_public_id,
  conversation_public_id: before.conversation_public_id,
  parent_public_id: before.parent_public_id,
  run_paused_at: before.run_paused_at
})

/**
 * The inbox's cursor: where a page stopped (dispatch time, run, key). A cursor whose time is no
 * instant or whose run is no UUID was never issued: refused like one that is not JSON.
 */
const Cursor = Schema.Struct({
  at: Schema.DateFromString,
  run: Schema.String.check(Schema.makeFilter((run: string) => isUuid(run), { expected: "a run public id" })),
  key: Schema.String
})
const encodeCursor = (row: InboxRow) =>
  Buffer.from(
    JSON.stringify({ at: row.dispatched_at?.toISOString() ?? "", run: row.run_public_id, key: row.task_key })
  ).toString("base64url")
const decodeCursor = (text: string) => {
  try {
    return Schema.decodeUnknownSync(Cursor)(JSON.parse(Buffer.from(text, "base64url").toString("utf8")))
  } catch {
    return undefined
  }
}

/** A machine refusal of a claim, check, extend or commit as the refusal it is. */
const claimRefusalOf = (reason: string): ClaimRefusal =>
  reason === "not_found"
    ? new Absent({ code: "not_found", message: "No such inbox task" })
    : reason === "not_authorized"
      ? new NotPermitted({ code: "not_authorized", message: "The run's creator has no write standing" })
      : new StateConflict({ code: reason as StateConflict["code"], message: StateConflict.sentenceOf(reason) })

const faultOf = (fault: BodyFault) =>
  new BodyRefused({ status: fault.status, code: fault.code, message: fault.message })

export class ExecutorInbox extends Context.Service<
  ExecutorInbox,
  {
    readonly list: (
      caller: ExecutorCaller,
      after: string | undefined,
      limit: string | undefined
    ) => Effect.Effect<
      { readonly tasks: ReadonlyArray<InboxTaskView>; readonly next_after: string | null },
      BadParameter
    >
    readonly claim: (
      caller: ExecutorCaller,
      runId: string,
      key: string
    ) => Effect.Effect<
      { readonly task: InboxTaskView; readonly claim: { readonly claim_token: string; readonly deadline_at: Date } },
      ClaimRefusal
    >
    readonly claimCheck: (
      caller: ExecutorCaller,
      runId: string,
      key: string,
      token: string | undefined
    ) => Effect.Effect<{ readonly active: boolean }, ClaimRefusal>
    readonly extend: (
      caller: ExecutorCaller,
      runId: string,
      key: string,
      body: unknown
    ) => Effect.Effect<
      { readonly task: InboxTaskView; readonly claim: { readonly claim_token: string; readonly deadline_at: Date } },
      ClaimRefusal | BodyRefused
    >
    readonly commit: (
      caller: ExecutorCaller,
      runId: string,
      key: string,
      body: unknown
    ) => Effect.Effect<TaskRow, InboxRefusal>
    readonly progress: (caller: ExecutorCaller, body: unknown) => Effect.Effect<boolean, BodyRefused>
  }
>()("@troupe/domain/runs/ExecutorInbox") {
  static readonly layer = Layer.effect(
    ExecutorInbox,
    Effect.gen(function* () {
      const runs = yield* RunsRepository
      const executors = yield* ExecutorsRepository
      const uploads = yield* UploadsRepository
      const conversations = yield* ConversationsRepository
      const bus = yield* EventBus
      const actors = (yield* ActorHost).ref(yield* RunDefinition)
      const db = yield* withRepositories(
        RunsRepository,
        ExecutorsRepository,
        UploadsRepository,
        ConversationsRepository,
        NamedAgentsRepository
      )
      /** When each task's or process's last frame was relayed (the cadence), forgotten once stale. */
      const lastFrame = new Map<string, number>()
      const forgetStale = (time: number) => {
        if (lastFrame.size < 10_000) return
        for (const [subject, at] of lastFrame) if (time - at >= frameCadenceMillis) lastFrame.delete(subject)
      }

      const notFound = () => new Absent({ code: "not_found", message: "No such inbox task" })

      /** The task of a run in this executor's account. */
      const taskOf = (executor: CallerRow, runId: string, key: string) =>
        Effect.gen(function* () {
          const row = isUuid(runId) ? yield* db(runs.findInboxTask(runId, key)) : undefined
          if (row === undefined || row.account_id !== executor.account_id) return yield* notFound()
          return row
        })

      const send = (runId: string, event: Extract<RunEvent, { readonly key: string }>) =>
        Effect.gen(function* () {
          const outcome = yield* actors.send(runId, event).pipe(Effect.orDie)
          if (outcome._tag === "Rejected") return yield* notFound()
          if (outcome._tag === "Vetoed") return { vetoed: outcome.reason, answer: undefined, written: undefined }
          // The claimed rows the step wrote, as they now stand (the run binding's reply).
          const written = outcome.replies[runEffects.recordTasks] as ReadonlyArray<TaskRow> | undefined
          return {
            vetoed: undefined,
            answer: outcome.replies[runEffects.answer] as string | undefined,
            written: written?.find((task) => task.key === event.key)
          }
        })

      /** The row an accepted claim or extend wrote (each writes its task, holding its claim). */
      const stepped = (written: TaskRow | undefined) =>
        written === undefined ? Effect.die(new Error("The step wrote no claimed row")) : Effect.succeed(written)

      /**
       * Whether the executor may claim a row of this run: a runner the run named, or a provider whose
       * discovery scope reaches the creator (account-wide; its human's, directly or as the agent's
       * steward; the agent it is bound to).
       */
      const eligible = (executor: CallerRow, creatorId: bigint, stewardId: bigint | null) =>
        executor.status === "active" &&
        (executor.kind === "runner" ||
          executor.assignment_scope === "account_wide" ||
          (executor.assignment_scope === "user_private" &&
            (executor.manager_id === creatorId || executor.manager_id === stewardId)) ||
          (executor.assignment_scope === "agent_private" && executor.agent_id === creatorId))

      /**
       * Whether the run's creator still has write standing (spec "Claim grant conditions"): it is
       * active (an agent, with its steward), and its workspace active. A standalone run's creator
       * must also still see the workspace and pass its dedication fence; a hosted run's creator is
       * its conversation's answerer, admitted there by the conversation (messaging may admit an
       * agent the workspace's sight and fence would not), so only the workspace's state is judged.
       */
      const creatorStands = (row: InboxTaskRow) =>
        db(
          Effect.gen(function* () {
            const stewardId = row.creator_steward_id
            const people = yield* conversations.speakers(
              stewardId === null ? [row.creator_id] : [row.creator_id, stewardId]
            )
            const creator = people.find((person) => person.id === row.creator_id)
            const human = stewardId === null ? creator : people.find((person) => person.id === stewardId)
            if (creator?.status !== "active" || human?.status !== "active") return false
            const workspace = (yield* conversations.standingOf(row.workspace_public_id, null))?.workspace
            if (workspace === undefined || workspace.state !== "active") return false
            if (row.conversation_public_id !== null) return true
            const caller = callerOfUser(creator, row.account_id)
            if (!seesWorkspace(workspace, caller)) return false
            return yield* Effect.match(writeStanding(workspace, caller), {
              onFailure: () => false,
              onSuccess: () => true
            })
          })
        )

      const at = Clock.currentTimeMillis

      return ExecutorInbox.of({
        list: (caller, after, limit) =>
          Effect.gen(function* () {
            const size = limit === undefined ? 50 : Number(limit)
            if (!/^\d{1,3}$/.test(limit ?? "50") || size < 1 || size > 200) {
              return yield* new BadParameter({ code: "parameter_invalid", message: "limit must be 1 to 200" })
            }
            const cursor = after === undefined || after === "" ? null : decodeCursor(after)
            if (cursor === undefined) {
              return yield* new BadParameter({ code: "parameter_invalid", message: "after is not an inbox cursor" })
            }
            const executor = caller.row
            // One row past the page says whether another page follows (next_after null when none does).
            const fetched = yield* db(
              runs.listInbox({
                executorId: executor.id,
                announcedToolNames: executor.announcement.tools.map((tool) => tool.name),
                isToolProvider: executor.kind === "tool_provider",
                provider: {
                  accountId: executor.account_id,
                  scope: executor.assignment_scope,
                  managerId: executor.manager_id,
                  agentId: executor.agent_id
                },
                after: cursor === null ? null : { dispatchedAt: cursor.at, runPublicId: cursor.run, key: cursor.key },
                limit: size + 1
              })
            )
            const rows = fetched.slice(0, size)
            // An approval row carries the effect profile its target announces for the tool.
            const announced = new Map<string, ExecutorRow | undefined>()
            const tasks: Array<InboxTaskView> = []
            const now = yield* at
            for (const row of rows) {
              const view = viewOf(row, now)
              const target = row.target_executor_public_id
              if (row.kind !== "approval" || target === null) {
                tasks.push(view)
                continue
              }
              if (!announced.has(target)) announced.set(target, yield* db(executors.findExecutorByPublicId(target)))
              const profile = announced.get(target)?.announcement.tools.find((tool) => tool.name === row.tool_name)
              tasks.push(profile === undefined ? view : { ...view, effect_profile: profile.effect_profile })
            }
            return { tasks, next_after: fetched.length > size ? encodeCursor(rows.at(-1)!) : null }
          }),
        claim: (caller, runId, key) =>
          Effect.gen(function* () {
            const executor = caller.row
            const row = yield* taskOf(executor, runId, key)
            const token = newToken()
            const served =
              executor.kind === "tool_provider"
                ? executor.announcement.tools.find((tool) => tool.name === row.tool_name)
                : undefined
            const sent = yield* send(runId, {
              type: "task.claim",
              key,
              executorId: executor.public_id,
              announces: served !== undefined,
              ...(served === undefined
                ? {}
                : {
                    served: {
                      timeoutMs: served.timeout_ms ?? defaultToolTimeoutMillis,
                      ...(served.timeout_ms === undefined ? {} : { announcedTimeoutMs: served.timeout_ms }),
                      replayable: replayable(served.effect_profile)
                    }
                  }),
              eligible: eligible(executor, row.creator_id, row.creator_steward_id),
              authorized: yield* creatorStands(row),
              tokenDigest: digestOf(token),
              at: yield* at
            })
            if (sent.vetoed !== undefined) return yield* claimRefusalOf(sent.vetoed)
            // Past its deadline the row settled by the expiry rule instead.
            if (sent.answer !== undefined) return yield* claimRefusalOf(sent.answer)
            const claimed = steppedRow(row, yield* stepped(sent.written))
            const now = yield* at
            return { task: viewOf(claimed, now), claim: { claim_token: token, deadline_at: deadlineOf(claimed, now)! } }
          }),
        claimCheck: (caller, runId, key, token) =>
          Effect.gen(function* () {
            const executor = caller.row
            const row = yield* taskOf(executor, runId, key)
            if (token === undefined || token === "") {
              return yield* new BadParameter({ code: "parameter_missing", message: "Send the Claim-Token header" })
            }
            if (row.claimed_by_executor_id !== executor.id || row.claim_token_digest !== digestOf(token)) {
              return yield* claimRefusalOf("not_claimant")
            }
            return { active: row.status === "dispatched" }
          }),
        extend: (caller, runId, key, body) =>
          Effect.gen(function* () {
            const executor = caller.row
            const before = yield* taskOf(executor, runId, key)
            const judged = judgeExtendBody(body)
            if (judged.fault !== null) return yield* faultOf(judged.fault)
            const { claimToken: token, timeoutMs } = judged
            const sent = yield* send(runId, {
              type: "task.extend",
              key,
              executorId: executor.public_id,
              tokenDigest: digestOf(token),
              timeoutMs,
              at: yield* at
            })
            if (sent.vetoed !== undefined) return yield* claimRefusalOf(sent.vetoed)
            const row = steppedRow(before, yield* stepped(sent.written))
            const now = yield* at
            return { task: viewOf(row, now), claim: { claim_token: token, deadline_at: deadlineOf(row, now)! } }
          }),
        commit: (caller, runId, key, body) =>
          Effect.gen(function* () {
            const executor = caller.row
            const row = yield* taskOf(executor, runId, key)
            const own = new Set<string>()
            for (const id of resultUploadIds(body)) {
              const upload = isUuid(id) ? yield* db(uploads.findUpload(id)) : undefined
              if (upload !== undefined && upload.creator_executor_id === executor.id) own.add(id)
            }
            const judged = judgeCommitBody(body, (id) => own.has(id))
            const tool = executor.announcement.tools.find((each) => each.name === row.tool_name)
            const sent = yield* send(runId, {
              type: "task.commit",
              key,
              executorId: executor.public_id,
              announces: executor.kind === "tool_provider" && tool !== undefined,
              tokenDigest: judged.claimToken === undefined ? "" : digestOf(judged.claimToken),
              outcome: judged.fault === null ? judged.outcome : "completed",
              result:
                judged.fault === null
                  ? { ...judged.result, writes: tool?.effect_profile.kind === "write", checkpoint: judged.checkpoint }
                  : {},
              fault: judged.fault?.code ?? null,
              at: yield* at
            })
            if (sent.vetoed !== undefined) {
              if (sent.vetoed === "not_claimant" && judged.claimToken === undefined) {
                return yield* new BadParameter({ code: "parameter_missing", message: "Send the claim_token" })
              }
              if (judged.fault !== null && sent.vetoed === judged.fault.code) return yield* faultOf(judged.fault)
              return yield* claimRefusalOf(sent.vetoed)
            }
            if (sent.answer === "claim_inactive") return yield* claimRefusalOf("claim_inactive")
            // A late commit of a settled task writes nothing: its row is read.
            return sent.written ?? (yield* db(runs.findTask(row.run_id, key)))!
          }),
        progress: (caller, body) =>
          Effect.gen(function* () {
            const judged = judgeProgressBody(body)
            if (judged.fault !== null) return yield* faultOf(judged.fault)
            const frame = judged.frame
            const source =
              frame.kind === "task"
                ? { run: frame.run_public_id, key: frame.task_key, token: frame.claim_token }
                : { run: frame.source.run_public_id, key: frame.source.task_key, token: frame.source.claim_token }
            const executor = caller.row
            const row = isUuid(source.run) ? yield* db(runs.findInboxTask(source.run, source.key)) : undefined
            const live =
              row !== undefined &&
              row.account_id === executor.account_id &&
              row.status === "dispatched" &&
              row.claimed_by_executor_id === executor.id &&
              row.claim_token_digest === digestOf(source.token)
            if (!live) return false
            const time = yield* at
            // A process is the runner's own, kept for one conversation (or standalone run).
            const host = row.conversation_public_id ?? source.run
            const subject =
              frame.kind === "task"
                ? `task:${source.run}:${source.key}`
                : `process:${executor.public_id}:${host}:${frame.process_id}`
            if (time - (lastFrame.get(subject) ?? 0) < frameCadenceMillis) return false
            forgetStale(time)
            lastFrame.set(subject, time)
            const relayed =
              frame.kind === "task"
                ? {
                    type: "executor_progress",
                    run_public_id: source.run,
                    task_key: source.key,
                    tool_name: row.tool_name,
                    executor_public_id: executor.public_id,
                    at: new Date(time).toISOString(),
                    ...(frame.text_tail === undefined ? {} : { text_tail: frame.text_tail }),
                    ...(frame.structured === undefined ? {} : { structured: frame.structured })
                  }
                : {
                    type: "process_output",
                    ...(row.conversation_public_id === null
                      ? { run_public_id: source.run }
                      : { conversation_public_id: row.conversation_public_id }),
                    process_id: frame.process_id,
                    executor_public_id: executor.public_id,
                    at: new Date(time).toISOString(),
                    lines: frame.lines,
                    exit: frame.exit
                  }
            const payload = fitted(relayed)
            if (payload === undefined) return false
            yield* bus.publish(progressChannelOf(source.run, row.conversation_public_id), payload)
            return true
          })
      })
    })
  )
}

export { inboxChannel }
