// Platform: operators (owner or admin). Supervisors, actors and machines of the actor runtime;
// restarts are audited and idempotent. Answers are encoded from what the runtime reports (its
// snapshot, timer, job, message and journal rows, a supervisor's state): each schema's Type is
// that shape, renamed to the wire's names by `encodeKeys`.
import { Schema, SchemaTransformation } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { BadRequest, Forbidden, NotFound } from "../Errors.ts"
import { Pagination } from "../Pagination.ts"
import { PlatformAuthentication } from "./Caller.ts"

/** A stored sequence number (bigint) as a JSON number. */
const Seq = Schema.Natural.pipe(
  Schema.decodeTo(
    Schema.BigInt,
    SchemaTransformation.transform({ decode: (seq: number) => BigInt(seq), encode: (seq: bigint) => Number(seq) })
  )
)

/** A supervisor's state with its machine and actor counts. */
export const Supervisor = Schema.Struct({
  kind: Schema.String,
  machine: Schema.String,
  version: Schema.Natural,
  status: Schema.Literal("running"),
  startedAt: Schema.DateFromString,
  restarts: Schema.Natural,
  failures: Schema.Natural,
  quarantines: Schema.Natural,
  lastFailure: Schema.NullOr(
    Schema.Struct({ actorId: Schema.String, error: Schema.String, at: Schema.DateFromString }).pipe(
      Schema.encodeKeys({ actorId: "actor_id" })
    )
  ),
  live_actors: Schema.Natural,
  actors: Schema.Natural,
  active_actors: Schema.Natural,
  quarantined_actors: Schema.Natural
}).pipe(Schema.encodeKeys({ startedAt: "started_at", lastFailure: "last_failure" }))

/** An actor's snapshot row and whether it is stuck. */
const actorFields = {
  kind: Schema.String,
  actor_id: Schema.String,
  machine: Schema.String,
  version: Schema.Natural,
  seq: Seq,
  state_value: Schema.String,
  status: Schema.String,
  stuck: Schema.Boolean,
  quarantined_at: Schema.NullOr(Schema.DateFromString),
  created_at: Schema.DateFromString,
  updated_at: Schema.DateFromString
}
const actorKeys = { actor_id: "id", state_value: "state" } as const

export const ActorSummary = Schema.Struct(actorFields).pipe(Schema.encodeKeys(actorKeys))

/** A journal row. */
export const JournalEntry = Schema.Struct({
  seq: Seq,
  event: Schema.Unknown,
  from_state: Schema.NullOr(Schema.String),
  to_state: Schema.String,
  actions: Schema.Array(Schema.String),
  at: Schema.DateFromString
}).pipe(Schema.encodeKeys({ from_state: "from", to_state: "to" }))

/** A message row told to the actor and not yet applied or refused: the sender, and why it waits. */
const PendingMessage = Schema.Struct({
  from: Schema.NullOr(Schema.Struct({ kind: Schema.String, id: Schema.String })),
  event: Schema.Unknown,
  attempts: Schema.Natural,
  next_attempt_at: Schema.DateFromString,
  waiting: Schema.NullOr(Schema.String),
  created_at: Schema.DateFromString
}).pipe(
  Schema.decodeTo(
    Schema.Struct({
      from_kind: Schema.NullOr(Schema.String),
      from_actor_id: Schema.NullOr(Schema.String),
      event: Schema.Unknown,
      attempts: Schema.Natural,
      next_attempt_at: Schema.Date,
      last_error: Schema.NullOr(Schema.String),
      created_at: Schema.Date
    }),
    SchemaTransformation.transform({
      decode: ({ from, waiting, ...message }) => ({
        ...message,
        from_kind: from?.kind ?? null,
        from_actor_id: from?.id ?? null,
        last_error: waiting
      }),
      encode: ({ from_kind, from_actor_id, last_error, ...message }) => ({
        ...message,
        from: from_kind === null || from_actor_id === null ? null : { kind: from_kind, id: from_actor_id },
        waiting: last_error
      })
    })
  )
)

/** One actor in full: its summary and what Inspection reads beside it (rows of timers, jobs, ...). */
export const ActorDetail = Schema.Struct({
  ...actorFields,
  context: Schema.Unknown,
  waitsOn: Schema.Array(Schema.String),
  timers: Schema.Array(
    Schema.Struct({ timer_id: Schema.String, event: Schema.Unknown, due_at: Schema.DateFromString }).pipe(
      Schema.encodeKeys({ timer_id: "id" })
    )
  ),
  jobs: Schema.Array(
    Schema.Struct({
      name: Schema.String,
      state: Schema.String,
      attempts: Schema.Natural,
      next_attempt_at: Schema.DateFromString,
      last_error: Schema.NullOr(Schema.String),
      seq: Seq,
      action_index: Schema.Natural
    })
  ),
  /** Messages told to this actor and not yet applied or refused: they wait while it is quarantined. */
  pendingMessages: Schema.Array(PendingMessage),
  journal: Schema.Array(JournalEntry),
  deadLetters: Schema.Array(
    Schema.Struct({
      event: Schema.Unknown,
      error: Schema.String,
      attempts: Schema.Natural,
      at: Schema.DateFromString
    })
  )
}).pipe(
  Schema.encodeKeys({
    ...actorKeys,
    waitsOn: "waits_on",
    pendingMessages: "pending_messages",
    deadLetters: "dead_letters"
  })
)

export const MachineDescription = Schema.Struct({
  kind: Schema.String,
  machine: Schema.String,
  version: Schema.Natural,
  states: Schema.Array(Schema.String),
  definition: Schema.Unknown,
  mermaid: Schema.String
})

const kindParam = { kind: Schema.String }
const actorParams = { kind: Schema.String, id: Schema.String }
const adminErrors = [BadRequest, Forbidden, NotFound]

export class AdminGroup extends HttpApiGroup.make("admin")
  .add(
    HttpApiEndpoint.get("supervisors", "/api/v1/admin/supervisors", {
      success: Schema.Struct({ supervisors: Schema.Array(Supervisor) }),
      error: adminErrors
    }).annotate(OpenApi.Description, "Owner or admin. Every actor supervisor of the runtime with its counters."),
    HttpApiEndpoint.post("restartSupervisor", "/api/v1/admin/supervisors/:kind/restart", {
      params: kindParam,
      success: Schema.Struct({ supervisor: Supervisor }),
      error: adminErrors
    }).annotate(
      OpenApi.Description,
      "Drop the kind's live actors (they reload from their snapshots) and reset its counters."
    ),
    HttpApiEndpoint.get("actors", "/api/v1/admin/actors", {
      query: {
        kind: Schema.optional(Schema.String),
        state: Schema.optional(Schema.String),
        stuck: Schema.optional(Schema.String),
        quarantined: Schema.optional(Schema.String),
        after: Schema.optional(Schema.String),
        limit: Schema.optional(Schema.String),
        order: Schema.optional(Schema.String)
      },
      success: Schema.Struct({ actors: Schema.Array(ActorSummary), pagination: Pagination }),
      error: adminErrors
    }).annotate(
      OpenApi.Description,
      "Owner or admin. Actors of the runtime, filtered by kind, state, stuck or quarantined, keyset-paginated."
    ),
    HttpApiEndpoint.get("actor", "/api/v1/admin/actors/:kind/:id", {
      params: actorParams,
      success: Schema.Struct({ actor: ActorDetail }),
      error: adminErrors
    }).annotate(
      OpenApi.Description,
      "Owner or admin. One actor with its timers, jobs, dead letters and latest 200 journal entries."
    ),
    HttpApiEndpoint.post("restartActor", "/api/v1/admin/actors/:kind/:id/restart", {
      params: actorParams,
      success: Schema.Struct({ actor: ActorDetail }),
      error: adminErrors
    }).annotate(OpenApi.Description, "Lift the actor's quarantine and reload it from its last committed snapshot."),
    HttpApiEndpoint.get("machines", "/api/v1/admin/machines", {
      success: Schema.Struct({ machines: Schema.Array(MachineDescription) }),
      error: adminErrors
    }).annotate(OpenApi.Description, "Owner or admin. The machines (nodes) of the actor runtime.")
  )
  .middleware(PlatformAuthentication)
  .annotateMerge(OpenApi.annotations({ title: "Platform: operators" })) {}
