// Handlers of Member: runs. Create and append bodies go to the step compiler as sent; the domain
// answers run state, which the read projections (domain/runs/Trace.ts, Graph.ts, Phases.ts,
// Transcript.ts) turn into the contract's shapes. Refusals that carry members (a raw graph name's
// path, invalid_steps entries, a stale revision, a hosted run's hosts) keep them in the envelope.
import { TroupeApi } from "@troupe/contracts/Api"
import { errors } from "@troupe/contracts/Errors"
import { CurrentMemberCaller, type MemberCaller } from "@troupe/contracts/member/Caller"
import { RunRefused } from "@troupe/domain/kernel/Refusals"
import { AuthoringRefused, InvalidSteps } from "@troupe/domain/runs/CompilerRefusals"
import { graphOf } from "@troupe/domain/runs/Graph"
import { phasesOf } from "@troupe/domain/runs/Phases"
import { type RunState, Runs, type TaskVerb } from "@troupe/domain/runs/Runs"
import { listRowOf, taskReadOf, taskRowOf, traceOf } from "@troupe/domain/runs/Trace"
import { transcriptOf } from "@troupe/domain/runs/Transcript"
import { Effect, Result } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { answerRefusals } from "../conventions/DomainRefusals.ts"
import { encodeCursor, parsePage, publicIdKey } from "../conventions/Pagination.ts"
import { feedLimit } from "./Conversations.ts"

const runStatuses = new Set(["pending", "running", "paused", "needs_attention", "canceling", "completed", "canceled"])

const trace = (state: RunState) => ({
  run: traceOf(state.run, state.tasks, state.specs, {
    held: state.held,
    replyDelivered: state.replyDelivered,
    hostTurn: state.hostTurn
  })
})

/** The refusals whose envelope carries more than code and message. */
export const answerRunRefusals = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  effect.pipe(
    Effect.catchIf(
      (error): error is E & (AuthoringRefused | InvalidSteps | RunRefused) =>
        error instanceof AuthoringRefused || error instanceof InvalidSteps || error instanceof RunRefused,
      (error) =>
        Effect.fail(
          error instanceof AuthoringRefused
            ? errors.of(error.code, error.message, { path: error.path })
            : error instanceof InvalidSteps
              ? errors.of(error.code, error.message, { steps: error.steps })
              : errors.of(error.code, error.message, {
                  ...(error.current_revision === undefined ? {} : { current_revision: error.current_revision }),
                  ...(error.conversation_public_id === undefined
                    ? {}
                    : {
                        conversation_public_id: error.conversation_public_id,
                        turn_public_id: error.turn_public_id ?? null
                      })
                })
        )
    ),
    answerRefusals
  )

/** A resolution's outcome; a word outside the vocabulary is the domain's to refuse in its turn. */
const outcomeOf = (value: unknown) =>
  value === undefined || value === null || value === "completed"
    ? ("completed" as const)
    : value === "failed"
      ? ("failed" as const)
      : ("invalid" as const)

export const RunsHandlers = HttpApiBuilder.group(
  TroupeApi,
  "runs",
  Effect.fn(function* (handlers) {
    const runs = yield* Runs
    const command = <A, E>(run: (caller: MemberCaller) => Effect.Effect<A, E>) =>
      Effect.flatMap(CurrentMemberCaller, run)
    const taskVerb = (params: { workspace_id: string; run_id: string; task_key: string }, verb: TaskVerb) =>
      command((caller) => runs.taskVerb(caller, params.workspace_id, params.run_id, params.task_key, verb)).pipe(
        Effect.flatMap((task) =>
          Effect.map(
            command((caller) => runs.read(caller, params.workspace_id, params.run_id)),
            (state) => ({ task: taskRowOf(task, state.tasks, state.specs) })
          )
        ),
        answerRunRefusals
      )

    return handlers
      .handle("list", ({ params, query }) =>
        Effect.gen(function* () {
          const statuses = query.status === undefined ? null : query.status.split(",")
          if (statuses?.some((status) => !runStatuses.has(status))) {
            return yield* errors.parameterInvalid("status names an unknown run status")
          }
          if (query.attention !== undefined && query.attention !== "any") {
            return yield* errors.parameterInvalid("attention must be any")
          }
          const page = yield* parsePage(query, publicIdKey)
          const listed = yield* runs.list(yield* CurrentMemberCaller, params.workspace_id, {
            statuses,
            attentionOnly: query.attention === "any",
            after: page.after?.[0],
            order: page.order,
            limit: page.limit
          })
          const next_after = listed.nextAfter === null ? null : encodeCursor([listed.nextAfter], page.order)
          return { runs: listed.runs.map(listRowOf), pagination: { next_after } }
        }).pipe(answerRunRefusals)
      )
      .handle("create", ({ params, payload }) =>
        command((caller) => runs.create(caller, params.workspace_id, payload.run)).pipe(
          Effect.map(({ state, receipt }) => ({ ...trace(state), receipt })),
          answerRunRefusals
        )
      )
      .handle("show", ({ params }) =>
        command((caller) => runs.read(caller, params.workspace_id, params.run_id)).pipe(
          Effect.map(trace),
          answerRunRefusals
        )
      )
      .handle("remove", ({ params }) =>
        command((caller) => runs.remove(caller, params.workspace_id, params.run_id)).pipe(answerRunRefusals)
      )
      .handle("start", ({ params }) =>
        command((caller) => runs.verb(caller, params.workspace_id, params.run_id, { verb: "start" })).pipe(
          Effect.map(trace),
          answerRunRefusals
        )
      )
      .handle("pause", ({ params, payload }) =>
        command((caller) =>
          runs.verb(caller, params.workspace_id, params.run_id, { verb: "pause", force: payload.force ?? false })
        ).pipe(Effect.map(trace), answerRunRefusals)
      )
      .handle("resume", ({ params }) =>
        command((caller) => runs.verb(caller, params.workspace_id, params.run_id, { verb: "resume" })).pipe(
          Effect.map(trace),
          answerRunRefusals
        )
      )
      .handle("stop", ({ params, payload }) =>
        command((caller) =>
          runs.verb(caller, params.workspace_id, params.run_id, { verb: "stop", force: payload.force ?? true })
        ).pipe(Effect.map(trace), answerRunRefusals)
      )
      .handle("defaultRunner", ({ params, payload }) =>
        command((caller) =>
          runs.setDefaultRunner(caller, params.workspace_id, params.run_id, payload.executor_public_id)
        ).pipe(Effect.map(trace), answerRunRefusals)
      )
      .handle("append", ({ params, payload }) =>
        command((caller) => runs.append(caller, params.workspace_id, params.run_id, payload)).pipe(
          Effect.map((receipt) => ({ receipt })),
          answerRunRefusals
        )
      )
      .handle("events", ({ params, query }) =>
        Effect.gen(function* () {
          const limit = yield* feedLimit(query.limit)
          const found = yield* command((caller) =>
            runs.events(caller, params.workspace_id, params.run_id, query.after, limit)
          )
          return { events: found.items, pagination: found.pagination }
        }).pipe(answerRunRefusals)
      )
      .handle("phases", ({ params }) =>
        command((caller) => runs.read(caller, params.workspace_id, params.run_id)).pipe(
          Effect.map((state) => phasesOf(state.tasks, state.specs)),
          answerRunRefusals
        )
      )
      .handle("graph", ({ params }) =>
        command((caller) => runs.read(caller, params.workspace_id, params.run_id)).pipe(
          Effect.map((state) => graphOf(state.run, state.tasks, state.specs)),
          answerRunRefusals
        )
      )
      .handle("transcript", ({ params, query }) =>
        Effect.gen(function* () {
          const state = yield* command((caller) => runs.read(caller, params.workspace_id, params.run_id))
          const page = transcriptOf(state.tasks, state.specs, {
            ...(query.before === undefined ? {} : { before: query.before }),
            ...(query.limit === undefined ? {} : { limit: query.limit })
          })
          if (Result.isFailure(page)) return yield* page.failure
          return page.success
        }).pipe(answerRunRefusals)
      )
      .handle("task", ({ params }) =>
        command((caller) => runs.task(caller, params.workspace_id, params.run_id, params.task_key)).pipe(
          Effect.map(({ state, task, offer }) => ({ task: taskReadOf(task, state.tasks, state.specs, offer) })),
          answerRunRefusals
        )
      )
      .handle("taskRequest", ({ params }) =>
        command((caller) => runs.sealedRequest(caller, params.workspace_id, params.run_id, params.task_key)).pipe(
          Effect.map((request) => ({ request })),
          answerRunRefusals
        )
      )
      .handle("resolution", ({ params, payload }) =>
        taskVerb(params, {
          verb: "resolution",
          token: payload.resolution_token ?? null,
          content: payload.content ?? null,
          outcome: outcomeOf(payload.outcome)
        })
      )
      .handle("retry", ({ params, payload }) => taskVerb(params, { verb: "retry", model: payload.model ?? null }))
      .handle("abandon", ({ params }) => taskVerb(params, { verb: "abandon" }))
      .handle("approve", ({ params }) => taskVerb(params, { verb: "approve" }))
      .handle("deny", ({ params, payload }) => taskVerb(params, { verb: "deny", reason: payload.reason ?? null }))
      .handle("cancel", ({ params }) => taskVerb(params, { verb: "cancel" }))
      .handle("compact", ({ params }) => taskVerb(params, { verb: "compact" }))
  })
)
