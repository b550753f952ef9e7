// The schedule doors (spec "Member: schedules"; supplement "Schedules"): create (the row and its
// actor in one transaction), the lists (one conversation's, a workspace's readable conversations'),
// the read, the edit, the verbs and the executions. Standing is the conversation's (reads need
// read level, writes full level and write standing); the schedule's actor judges what depends on
// its state and dates nothing itself: instants and ids come in its events.
import { ActorHost } from "@troupe/actors/ActorHost"
import type { ScheduleEvent } from "@troupe/machines/schedule/events"
import { isUuid, newPublicId } from "@troupe/storage/Ids"
import { withRepositories } from "@troupe/storage/Repositories"
import { type ScheduleRow, SchedulesRepository } from "@troupe/storage/repositories/Schedules"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { Caller } from "../accounts/Caller.ts"
import { Conversations, type Refused, type Standing } from "../conversations/Conversations.ts"
import { unarchived } from "../conversations/Settings.ts"
import { levelOf } from "../conversations/Standing.ts"
import { now } from "../kernel/Now.ts"
import { Absent, BadParameter, Invalid, Stale, StateConflict, type TooLarge } from "../kernel/Refusals.ts"
import { ModelCatalog } from "../models/ModelCatalog.ts"
import { Workspaces } from "../workspaces/Workspaces.ts"
import { ScheduleDefinition } from "./Executions.ts"
import { judgeName, judgePolicy, judgePrompt, judgeSource, type Members, type StoredPolicy } from "./Policy.ts"
import { isRuleFault, judgeRule, nextAfter, type Rule } from "./Rules.ts"
import { type ExecutionView, executionView, type ScheduleView, scheduleView } from "./Views.ts"

export type Verb = "pause" | "resume" | "cancel" | "run"

/** The conversation doors' refusals, and a prompt or policy over its bound. */
export type ScheduleRefused = Refused | TooLarge

export interface PageQuery {
  readonly after?: string | undefined
  readonly limit?: string | undefined
  readonly order?: string | undefined
}

const notFound = () => new Absent({ code: "not_found", message: "No such schedule" })
const badParameter = (message: string) => new BadParameter({ code: "parameter_invalid", message })
const finished = () => new Invalid({ code: "schedule_finished", message: "The schedule is canceled or completed" })
const policyMembers = [
  "answering_user_public_id",
  "speaker_public_id",
  "configuration",
  "tool_names",
  "approval_mode",
  "model",
  "model_selection",
  "fallback_models"
]

const limitOf = (value: string | undefined) => {
  const limit = value === undefined ? 25 : Number(value)
  return /^\d+$/.test(value ?? "25") && limit >= 1 && limit <= 100 ? limit : undefined
}

const cursorOf = (parts: ReadonlyArray<string>) => Buffer.from(JSON.stringify(parts)).toString("base64url")
const partsOf = (cursor: string): ReadonlyArray<string> | undefined => {
  try {
    const parts = JSON.parse(Buffer.from(cursor, "base64url").toString())
    return Array.isArray(parts) && parts.every((part) => typeof part === "string") ? parts : undefined
  } catch {
    return undefined
  }
}

export class Schedules extends Context.Service<
  Schedules,
  {
    readonly create: (
      caller: Caller,
      workspaceId: string,
      conversationId: string,
      members: Members
    ) => Effect.Effect<ScheduleView, ScheduleRefused>
    /** One conversation's schedules, or (conversationId null) those of the workspace's readable conversations. */
    readonly list: (
      caller: Caller,
      workspaceId: string,
      conversationId: string | null,
      query: PageQuery
    ) => Effect.Effect<
      { readonly schedules: ReadonlyArray<ScheduleView>; readonly nextAfter: string | null },
      ScheduleRefused
    >
    readonly read: (
      caller: Caller,
      workspaceId: string,
      conversationId: string,
      scheduleId: string
    ) => Effect.Effect<ScheduleView, ScheduleRefused>
    readonly update: (
      caller: Caller,
      workspaceId: string,
      conversationId: string,
      scheduleId: string,
      members: Members
    ) => Effect.Effect<ScheduleView, ScheduleRefused>
    readonly verb: (
      caller: Caller,
      workspaceId: string,
      conversationId: string,
      scheduleId: string,
      verb: Verb
    ) => Effect.Effect<ScheduleView, ScheduleRefused>
    readonly executions: (
      caller: Caller,
      workspaceId: string,
      conversationId: string,
      scheduleId: string,
      query: PageQuery
    ) => Effect.Effect<
      {
        readonly executions: ReadonlyArray<ExecutionView>
        readonly nextAfter: string | null
        readonly lastCursor: string | null
      },
      ScheduleRefused
    >
  }
>()("@troupe/domain/schedules/Schedules") {
  static readonly layer = Layer.effect(
    Schedules,
    Effect.gen(function* () {
      const sql = yield* SqlClient
      const conversations = yield* Conversations
      const workspaces = yield* Workspaces
      const catalog = yield* ModelCatalog
      const repository = yield* SchedulesRepository
      const actors = (yield* ActorHost).ref(yield* ScheduleDefinition)
      const db = yield* withRepositories(SchedulesRepository)

      const viewOf = (row: ScheduleRow) =>
        Effect.map(db(repository.lastExecution(row.id)), (last) => scheduleView(row, last))

      /** The schedule of the conversation the caller stands on (else 404). */
      const scheduleIn = (target: Standing, scheduleId: string) =>
        Effect.gen(function* () {
          const row = isUuid(scheduleId) ? yield* db(repository.findSchedule(scheduleId)) : undefined
          if (row === undefined || row.conversation_id !== target.row.id) return yield* notFound()
          return row
        })

      const reread = (row: ScheduleRow) =>
        Effect.flatMap(db(repository.findSchedule(row.public_id)), (found) => viewOf(found ?? row))

      /** One event to the schedule's actor: its refusals answer their codes; a finished one refuses. */
      const send = (row: ScheduleRow, event: ScheduleEvent) =>
        Effect.gen(function* () {
          const outcome = yield* actors.send(row.public_id, event).pipe(Effect.orDie)
          if (outcome._tag === "Vetoed") {
            switch (outcome.reason) {
              case "stale_object":
                return yield* new Stale({
                  code: "stale_object",
                  message: "expected_lock_version is not the schedule's"
                })
              case "run_at_passed":
                return yield* new Invalid({ code: "validation_failed", message: "rule.run_at has passed" })
              default:
                return yield* new StateConflict({
                  code: "execution_in_progress",
                  message: "An execution is unfinished"
                })
            }
          }
          if (outcome._tag === "Rejected") {
            const canceledAgain = outcome.state === "canceled" && event.type === "schedule.cancel"
            if ((outcome.state === "canceled" || outcome.state === "completed") && !canceledAgain) {
              return yield* finished()
            }
          }
          return yield* reread(row)
        })

      const ruleOf = (raw: unknown, at: Date) => {
        const judged = judgeRule(raw, at.getTime())
        return isRuleFault(judged)
          ? Effect.fail(new Invalid({ code: "validation_failed", message: judged.message }))
          : Effect.succeed(judged)
      }

      const listPage = (caller: Caller, workspaceId: bigint, conversationId: bigint | null, query: PageQuery) =>
        Effect.gen(function* () {
          const order = query.order ?? "asc"
          if (order !== "asc" && order !== "desc") return yield* badParameter("order must be asc or desc")
          const limit = limitOf(query.limit)
          if (limit === undefined) return yield* badParameter("limit must be 1 to 100")
          const parts = query.after === undefined || query.after === "" ? null : partsOf(query.after)
          if (parts === undefined || (parts !== null && (parts[0] !== order || !isUuid(parts[1] ?? "")))) {
            return yield* badParameter("after is not a cursor of this listing")
          }
          const readable = (row: ScheduleRow) =>
            levelOf(
              {
                creator_id: row.conversation_creator_id,
                answerer_id: row.conversation_answerer_id,
                access: row.conversation_access
              },
              caller
            ) !== "none"
          // Rows of unreadable conversations are passed over: batches of limit + 1 are read until the
          // page is full and one more readable row shows that another page follows, or the rows end.
          const page: Array<ScheduleRow> = []
          let after = parts?.[1] ?? null
          let more = false
          let exhausted = false
          while (!more && !exhausted) {
            const rows = yield* db(
              repository.listSchedules({ workspaceId, conversationId, order, after, limit: limit + 1 })
            )
            exhausted = rows.length <= limit
            for (const row of rows) {
              after = row.public_id
              if (!readable(row)) continue
              if (page.length === limit) {
                more = true
                break
              }
              page.push(row)
            }
          }
          const last = page.at(-1)
          return {
            schedules: yield* Effect.forEach(page, viewOf),
            nextAfter: more && last !== undefined ? cursorOf([order, last.public_id]) : null
          }
        })

      return Schedules.of({
        create: (caller, workspaceId, conversationId, members) =>
          Effect.gen(function* () {
            const target = yield* conversations.standing(caller, workspaceId, conversationId, "write")
            yield* unarchived(target)
            if (members.prompt === undefined || members.prompt === null) {
              return yield* new BadParameter({ code: "parameter_missing", message: "schedule.prompt is required" })
            }
            if (members.rule === undefined || members.rule === null) {
              return yield* new BadParameter({ code: "parameter_missing", message: "schedule.rule is required" })
            }
            if (target.row.side) {
              return yield* new Invalid({
                code: "side_conversation",
                message: "A side conversation cannot own a schedule"
              })
            }
            const name = members.name === undefined ? null : yield* judgeName(members.name)
            const prompt = yield* judgePrompt(members.prompt)
            const at = yield* now
            const rule = yield* ruleOf(members.rule, at)
            const source = yield* judgeSource(members)
            const policy = yield* judgePolicy(caller, target, members, null, { conversations, catalog })
            const nextRunAt = nextAfter(rule, at.getTime())!
            const publicId = newPublicId()
            yield* db(
              Effect.gen(function* () {
                yield* repository.insertSchedule({
                  publicId,
                  workspaceId: target.row.workspace_id,
                  conversationId: target.row.id,
                  creatorId: caller.user.id,
                  name,
                  prompt,
                  ruleJson: JSON.stringify(rule),
                  policyJson: JSON.stringify(policy),
                  sourceRunPublicId: source.run,
                  sourceTaskKey: source.key,
                  nextRunAt: new Date(nextRunAt),
                  now: at
                })
                yield* actors.create(publicId, { rule, nextRunAt, at: at.getTime() }).pipe(Effect.orDie)
              }).pipe(sql.withTransaction)
            )
            return yield* viewOf((yield* db(repository.findSchedule(publicId)))!)
          }),
        list: (caller, workspaceId, conversationId, query) =>
          Effect.gen(function* () {
            if (conversationId === null) {
              const workspace = yield* workspaces.read(caller, workspaceId)
              return yield* listPage(caller, workspace.id, null, query)
            }
            const target = yield* conversations.standing(caller, workspaceId, conversationId, "read")
            return yield* listPage(caller, target.row.workspace_id, target.row.id, query)
          }),
        read: (caller, workspaceId, conversationId, scheduleId) =>
          Effect.gen(function* () {
            const target = yield* conversations.standing(caller, workspaceId, conversationId, "read")
            return yield* viewOf(yield* scheduleIn(target, scheduleId))
          }),
        update: (caller, workspaceId, conversationId, scheduleId, members) =>
          Effect.gen(function* () {
            const target = yield* conversations.standing(caller, workspaceId, conversationId, "write")
            yield* unarchived(target)
            const row = yield* scheduleIn(target, scheduleId)
            const expected = members.expected_lock_version
            if (expected === undefined || expected === null) {
              return yield* new BadParameter({
                code: "parameter_missing",
                message: "schedule.expected_lock_version is required"
              })
            }
            if (typeof expected !== "number" || !Number.isInteger(expected) || expected < 0 || expected > 2147483647) {
              return yield* badParameter("schedule.expected_lock_version must be an integer from 0 to 2147483647")
            }
            if (row.status === "canceled" || row.status === "completed") return yield* finished()
            if (members.source_run_public_id !== undefined || members.source_task_key !== undefined) {
              return yield* new Invalid({
                code: "validation_failed",
                message: "source_run_public_id and source_task_key are immutable"
              })
            }
            const at = yield* now
            const changes: Record<string, unknown> = {}
            if (members.name !== undefined) changes.name = yield* judgeName(members.name)
            if (members.prompt !== undefined) changes.prompt = yield* judgePrompt(members.prompt)
            let rule: Rule | undefined
            if (members.rule !== undefined) {
              rule = yield* ruleOf(members.rule, at)
              changes.rule = rule
            }
            if (policyMembers.some((name) => members[name] !== undefined)) {
              changes.policy = yield* judgePolicy(caller, target, members, row.policy as StoredPolicy, {
                conversations,
                catalog
              })
            }
            return yield* send(row, {
              type: "schedule.edit",
              at: at.getTime(),
              lockVersion: expected,
              changes,
              ...(rule === undefined ? {} : { rule, nextRunAt: nextAfter(rule, at.getTime()) })
            })
          }),
        verb: (caller, workspaceId, conversationId, scheduleId, verb) =>
          Effect.gen(function* () {
            const target = yield* conversations.standing(caller, workspaceId, conversationId, "write")
            yield* unarchived(target)
            const row = yield* scheduleIn(target, scheduleId)
            const at = (yield* now).getTime()
            switch (verb) {
              case "pause":
                return yield* send(row, { type: "schedule.pause", at })
              case "cancel":
                return yield* send(row, { type: "schedule.cancel", at })
              case "resume":
                // The actor judges the expiry (null) in the state it is in when the event arrives.
                return yield* send(row, { type: "schedule.resume", at, nextRunAt: nextAfter(row.rule as Rule, at) })
              case "run":
                return yield* send(row, { type: "schedule.run", at, childId: newPublicId(), inputId: newPublicId() })
            }
          }),
        executions: (caller, workspaceId, conversationId, scheduleId, query) =>
          Effect.gen(function* () {
            const target = yield* conversations.standing(caller, workspaceId, conversationId, "read")
            const row = yield* scheduleIn(target, scheduleId)
            const limit = limitOf(query.limit)
            if (limit === undefined) return yield* badParameter("limit must be 1 to 100")
            const given = query.after === undefined || query.after === "" ? undefined : query.after
            const parts = given === undefined ? null : partsOf(given)
            if (parts === undefined || (parts !== null && (parts[0] !== "execution" || !isUuid(parts[1] ?? "")))) {
              return yield* badParameter("after is not a cursor of this listing")
            }
            // One row past the page says whether another page follows.
            const fetched = yield* db(
              repository.listExecutions({
                scheduleId: row.id,
                after: parts === null ? null : parts[1]!,
                limit: limit + 1
              })
            )
            const rows = fetched.slice(0, limit)
            const last = rows.at(-1)
            const lastCursor = last === undefined ? (given ?? null) : cursorOf(["execution", last.input_public_id])
            return {
              executions: rows.map(executionView),
              nextAfter: fetched.length > limit ? lastCursor : null,
              lastCursor
            }
          })
      })
    })
  )
}
