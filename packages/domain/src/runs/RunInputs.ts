// The run inputs door of a standalone run (runs supplement "Tool catalog, default runner, run
// inputs"): conversation input rules, message rows only. A queued row lands at quiescence as a
// mainline round continuing the last mainline model; a steer lands before the next mainline
// round. Each write is one event to the run's actor; a hosted run answers conversation_hosted.
import { ActorHost } from "@troupe/actors/ActorHost"
import type { RunEvent } from "@troupe/machines/run/events"
import { isUuid, newPublicId } from "@troupe/storage/Ids"
import { withRepositories } from "@troupe/storage/Repositories"
import { type RunInputRow, type RunRow, RunsRepository } from "@troupe/storage/repositories/Runs"
import { Context, Effect, Layer } from "effect"
import type { Caller } from "../accounts/Caller.ts"
import { dueAtOf, type InputMembers } from "../conversations/Inputs.ts"
import { now } from "../kernel/Now.ts"
import { Absent, BadParameter, Invalid, RunRefused, Stale } from "../kernel/Refusals.ts"
import { Workspaces } from "../workspaces/Workspaces.ts"
import { RunDefinition, type RunRefusal, refusalOf } from "./Runs.ts"

/** What the run door refuses by name (the conversation door takes them). */
const refusedMembers = [
  "model",
  "configuration",
  "context_mode",
  "history",
  "reasoning_replay",
  "visible_in_context",
  "expected_context_revision",
  "expected_tail_turn_public_id"
] as const

/** A door row as the wire shows it. */
export interface RunInputView {
  readonly public_id: string
  readonly run_public_id: string
  readonly kind: "message"
  readonly text: string
  readonly state: "pending" | "steering" | "consumed"
  readonly delivery_mode: "queue" | "steer"
  readonly queue_position: number
  readonly deliver_at: Date | null
  readonly author_public_id: string
  readonly task_key: string | null
  readonly lock_version: number
  readonly created_at: Date
}

export const runInputViewOf = (run: RunRow, row: RunInputRow): RunInputView => ({
  public_id: row.public_id,
  run_public_id: run.public_id,
  kind: "message",
  text: row.text,
  state: row.state,
  delivery_mode: row.delivery_mode,
  queue_position: row.queue_position,
  deliver_at: row.deliver_at,
  author_public_id: row.author_public_id,
  task_key: row.task_key,
  lock_version: row.lock_version,
  created_at: row.created_at
})

/** The queue's bound and how many rows it holds. */
export interface RunInputQueue {
  readonly limit: number
  readonly held: number
}

export type RunInputRefusal = RunRefusal | Stale

const given = (members: Readonly<Record<string, unknown>>, name: string) =>
  members[name] !== undefined && members[name] !== null

export class RunInputs extends Context.Service<
  RunInputs,
  {
    readonly list: (
      caller: Caller,
      workspaceId: string,
      runId: string
    ) => Effect.Effect<
      { readonly inputs: ReadonlyArray<RunInputView>; readonly input_queue: RunInputQueue },
      RunInputRefusal
    >
    readonly create: (
      caller: Caller,
      workspaceId: string,
      runId: string,
      members: InputMembers,
      idempotencyKey: string | undefined
    ) => Effect.Effect<RunInputView, RunInputRefusal>
    readonly update: (
      caller: Caller,
      workspaceId: string,
      runId: string,
      inputId: string,
      members: InputMembers & { readonly expected_lock_version?: number | undefined }
    ) => Effect.Effect<RunInputView, RunInputRefusal>
    readonly remove: (
      caller: Caller,
      workspaceId: string,
      runId: string,
      inputId: string
    ) => Effect.Effect<void, RunInputRefusal>
    readonly reorder: (
      caller: Caller,
      workspaceId: string,
      runId: string,
      inputIds: ReadonlyArray<string>
    ) => Effect.Effect<
      { readonly inputs: ReadonlyArray<RunInputView>; readonly input_queue: RunInputQueue },
      RunInputRefusal
    >
  }
>()("@troupe/domain/runs/RunInputs") {
  static readonly layer = Layer.effect(
    RunInputs,
    Effect.gen(function* () {
      const workspaces = yield* Workspaces
      const runs = yield* RunsRepository
      const db = yield* withRepositories(RunsRepository)
      const actors = (yield* ActorHost).ref(yield* RunDefinition)

      const notFound = () => new Absent({ code: "not_found", message: "No such run input" })

      /** A standalone run of the workspace (a hosted run's door answers conversation_hosted). */
      const door = (caller: Caller, workspaceId: string, runId: string, need: "read" | "write") =>
        Effect.gen(function* () {
          const workspace =
            need === "write"
              ? yield* workspaces.writable(caller, workspaceId)
              : yield* workspaces.read(caller, workspaceId)
          const run = isUuid(runId) ? yield* db(runs.findRun(runId)) : undefined
          if (run === undefined || run.workspace_id !== workspace.id || run.tombstoned_at !== null) {
            return yield* new Absent({ code: "not_found", message: "No such run" })
          }
          if (run.conversation_id !== null) {
            return yield* new RunRefused({
              code: "conversation_hosted",
              message: "This run is hosted by a conversation: send inputs there",
              conversation_public_id: run.conversation_public_id ?? "",
              turn_public_id: run.turn_public_id
            })
          }
          return run
        })

      const queueOf = (run: RunRow) =>
        Effect.map(db(runs.listInputs(run.id)), (rows) => ({
          inputs: rows.map((row) => runInputViewOf(run, row)),
          input_queue: { limit: 16, held: rows.length }
        }))

      const send = (runId: string, event: RunEvent) =>
        Effect.gen(function* () {
          const outcome = yield* actors.send(runId, event).pipe(Effect.orDie)
          if (outcome._tag === "Vetoed") {
            return yield* outcome.reason === "stale_object"
              ? new Stale({ code: "stale_object", message: "The input's lock_version moved on" })
              : refusalOf(outcome.reason)
          }
        })

      const reread = (run: RunRow, inputId: string) =>
        Effect.flatMap(db(runs.findInput(inputId)), (row) =>
          row ? Effect.succeed(runInputViewOf(run, row)) : Effect.fail(notFound())
        )

      /** The members the door refuses, and kind message only. */
      const judgeMembers = (members: Readonly<Record<string, unknown>>) =>
        Effect.gen(function* () {
          const refused = refusedMembers.find((name) => given(members, name))
          if (refused !== undefined) {
            return yield* new Invalid({ code: "validation_failed", message: `${refused} is not taken by a run input` })
          }
          if (given(members, "kind") && members.kind !== "message") {
            return yield* new Invalid({ code: "validation_failed", message: "kind must be message on a run" })
          }
        })

      return RunInputs.of({
        list: (caller, workspaceId, runId) => Effect.flatMap(door(caller, workspaceId, runId, "read"), queueOf),
        create: (caller, workspaceId, runId, members, idempotencyKey) =>
          Effect.gen(function* () {
            const run = yield* door(caller, workspaceId, runId, "write")
            yield* judgeMembers(members as Readonly<Record<string, unknown>>)
            if (typeof members.text !== "string" || members.text === "") {
              return yield* new Invalid({ code: "validation_failed", message: "text is required" })
            }
            const at = yield* now
            const dueAt = yield* dueAtOf(members, at)
            const steer = members.delivery_mode === "steer" || members.delivery_mode === "steer_now"
            const inputId = newPublicId()
            yield* send(run.public_id, {
              type: "input.accept",
              inputId,
              steer,
              dueAt: dueAt ?? null,
              row: {
                text: members.text,
                authorId: String(caller.user.id),
                ...(idempotencyKey === undefined ? {} : { idempotencyKey })
              },
              at: at.getTime()
            })
            return yield* reread(run, inputId)
          }),
        update: (caller, workspaceId, runId, inputId, members) =>
          Effect.gen(function* () {
            const run = yield* door(caller, workspaceId, runId, "write")
            yield* judgeMembers(members as Readonly<Record<string, unknown>>)
            const row = isUuid(inputId) ? yield* db(runs.findInput(inputId)) : undefined
            if (row === undefined || row.run_id !== run.id || row.state === "consumed") return yield* notFound()
            const at = yield* now
            const dueAt = yield* dueAtOf(members, at)
            if (
              members.delivery_mode != null &&
              members.delivery_mode !== "steer_now" &&
              members.delivery_mode !== row.delivery_mode
            ) {
              return yield* new Invalid({ code: "validation_failed", message: "delivery_mode of a row cannot change" })
            }
            yield* send(run.public_id, {
              type: "input.edit",
              inputId,
              expectedLockVersion: members.expected_lock_version ?? null,
              text: typeof members.text === "string" ? members.text : null,
              ...(dueAt === undefined ? {} : { dueAt }),
              steerNow: members.delivery_mode === "steer_now",
              at: at.getTime()
            })
            return yield* reread(run, inputId)
          }),
        remove: (caller, workspaceId, runId, inputId) =>
          Effect.gen(function* () {
            const run = yield* door(caller, workspaceId, runId, "write")
            const row = isUuid(inputId) ? yield* db(runs.findInput(inputId)) : undefined
            if (row === undefined || row.run_id !== run.id || row.state === "consumed") return yield* notFound()
            yield* send(run.public_id, { type: "input.delete", inputId, at: (yield* now).getTime() })
          }),
        reorder: (caller, workspaceId, runId, inputIds) =>
          Effect.gen(function* () {
            const run = yield* door(caller, workspaceId, runId, "write")
            if (inputIds.some((id) => !isUuid(id))) {
              return yield* new BadParameter({ code: "parameter_invalid", message: "inputs names a row that is no id" })
            }
            yield* send(run.public_id, { type: "input.reorder", inputIds, at: (yield* now).getTime() })
            return yield* queueOf(run)
          })
      })
    })
  )
}
