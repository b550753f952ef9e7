// Handlers of Platform: operators. Owner or admin only (403 not_authorized for anyone else);
// restarts are audited. Unknown kinds or states in a filter are 400 parameter_invalid; an
// unknown kind or actor in a path is 404. The contract's schemas encode the rows Inspection reads.

import { ActorHost } from "@troupe/actors/ActorHost"
import { type ActorDetail, Inspection } from "@troupe/actors/Inspection"
import { Supervision, type SupervisorState } from "@troupe/actors/Supervision"
import { TroupeApi } from "@troupe/contracts/Api"
import { errors } from "@troupe/contracts/Errors"
import { isPublicId } from "@troupe/contracts/PublicId"
import { CurrentPlatformCaller } from "@troupe/contracts/platform/Caller"
import { RuntimeOperations } from "@troupe/domain/runtime/RuntimeOperations"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { pageOf, parsePage, publicIdKey } from "../conventions/Pagination.ts"

const requireOperator = Effect.gen(function* () {
  const caller = yield* CurrentPlatformCaller
  if (caller.user.role !== "owner" && caller.user.role !== "admin") {
    return yield* errors.forbidden("not_authorized", "Only an owner or admin may operate the runtime")
  }
  return caller
})

/** One actor as the contract reads it: its snapshot row beside what Inspection found. */
const flat = (detail: ActorDetail) => ({ ...detail.row, ...detail })

const booleanQuery = (name: string, value: string | undefined) => {
  if (value === undefined) return Effect.succeed(undefined)
  if (value === "true" || value === "false") return Effect.succeed(value === "true")
  return Effect.fail(errors.parameterInvalid(`${name} must be true or false`))
}

export const AdminHandlers = HttpApiBuilder.group(
  TroupeApi,
  "admin",
  Effect.fn(function* (handlers) {
    const host = yield* ActorHost
    const inspection = yield* Inspection
    const supervision = yield* Supervision
    const operations = yield* RuntimeOperations

    const machines = yield* inspection.machines
    const machineOf = (kind: string) => machines.find((machine) => machine.kind === kind)

    const audit = (action: string, target: string) =>
      Effect.gen(function* () {
        const caller = yield* CurrentPlatformCaller
        yield* operations.audit({ userId: caller.user.id, action, target, details: {} })
      })

    /** A supervisor's state with its machine and the kind's actor counts. */
    const supervisorOf = (state: SupervisorState) =>
      Effect.gen(function* () {
        const counts = (yield* operations.actorCounts).find((row) => row.kind === state.kind)
        const machine = machineOf(state.kind)!
        return {
          ...state,
          machine: machine.machine,
          version: machine.version,
          status: "running" as const,
          lastFailure: state.lastFailure ?? null,
          live_actors: yield* host.liveCount(state.kind),
          actors: counts?.actors ?? 0,
          active_actors: counts?.active ?? 0,
          quarantined_actors: counts?.quarantined ?? 0
        }
      })

    const actorOr404 = (kind: string, id: string) =>
      Effect.gen(function* () {
        if (!machineOf(kind) || !isPublicId(id)) return yield* errors.notFound()
        const detail = yield* inspection.detail(kind, id)
        return detail ?? (yield* errors.notFound())
      })

    return handlers
      .handle("supervisors", () =>
        Effect.gen(function* () {
          yield* requireOperator
          const states = yield* supervision.all
          return { supervisors: yield* Effect.forEach(states, supervisorOf) }
        })
      )
      .handle("restartSupervisor", ({ params }) =>
        Effect.gen(function* () {
          yield* requireOperator
          if (!machineOf(params.kind)) return yield* errors.notFound()
          yield* host.restartKind(params.kind).pipe(Effect.orDie)
          yield* audit("supervisor.restart", params.kind)
          return { supervisor: yield* supervisorOf(yield* supervision.get(params.kind)) }
        })
      )
      .handle("actors", ({ query }) =>
        Effect.gen(function* () {
          yield* requireOperator
          const page = yield* parsePage(query, publicIdKey)
          if (query.kind !== undefined && !machineOf(query.kind)) {
            return yield* errors.parameterInvalid(`kind must be one of ${machines.map((m) => m.kind).join(", ")}`)
          }
          const knownStates =
            query.kind === undefined ? machines.flatMap((m) => m.states) : machineOf(query.kind)!.states
          if (query.state !== undefined && !knownStates.includes(query.state)) {
            return yield* errors.parameterInvalid(
              `state ${query.state} is not a state of ${query.kind ?? "any machine"}`
            )
          }
          const afterActorId = page.after?.[0]
          const rows = yield* inspection.list({
            kind: query.kind,
            state: query.state,
            stuck: yield* booleanQuery("stuck", query.stuck),
            quarantined: yield* booleanQuery("quarantined", query.quarantined),
            afterActorId,
            order: page.order,
            limit: page.limit + 1
          })
          const result = pageOf(rows, page, (row) => [row.actor_id])
          return { actors: result.items, pagination: result.pagination }
        })
      )
      .handle("actor", ({ params }) =>
        Effect.gen(function* () {
          yield* requireOperator
          return { actor: flat(yield* actorOr404(params.kind, params.id)) }
        })
      )
      .handle("restartActor", ({ params }) =>
        Effect.gen(function* () {
          yield* requireOperator
          yield* actorOr404(params.kind, params.id)
          yield* host.restartActor(params.kind, params.id)
          yield* audit("actor.restart", `${params.kind}/${params.id}`)
          return { actor: flat(yield* actorOr404(params.kind, params.id)) }
        })
      )
      .handle("machines", () =>
        Effect.gen(function* () {
          yield* requireOperator
          return { machines }
        })
      )
  })
)
