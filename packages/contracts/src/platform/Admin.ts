// Platform: operators (owner or admin). Supervisors, actors and machines of the actor runtime;
// restarts are audited and idempotent.
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { BadRequest, Forbidden, NotFound } from "../Errors.ts"
import { Pagination } from "../Pagination.ts"
import { PlatformAuthentication } from "./Caller.ts"

export const Supervisor = Schema.Struct({
  kind: Schema.String,
  machine: Schema.String,
  version: Schema.Number,
  status: Schema.Literal("running"),
  started_at: Schema.String,
  restarts: Schema.Number,
  failures: Schema.Number,
  quarantines: Schema.Number,
  last_failure: Schema.NullOr(Schema.Struct({ actor_id: Schema.String, error: Schema.String, at: Schema.String })),
  live_actors: Schema.Number,
  actors: Schema.Number,
  active_actors: Schema.Number,
  quarantined_actors: Schema.Number
})

export const ActorSummary = Schema.Struct({
  kind: Schema.String,
  id: Schema.String,
  machine: Schema.String,
  version: Schema.Number,
  seq: Schema.Number,
  state: Schema.String,
  status: Schema.String,
  stuck: Schema.Boolean,
  quarantined_at: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  updated_at: Schema.String
})

export const JournalEntry = Schema.Struct({
  seq: Schema.Number,
  event: Schema.Unknown,
  from: Schema.NullOr(Schema.String),
  to: Schema.String,
  actions: Schema.Array(Schema.String),
  at: Schema.String
})

export const ActorDetail = Schema.Struct({
  ...ActorSummary.fields,
  context: Schema.Unknown,
  waits_on: Schema.Array(Schema.String),
  timers: Schema.Array(Schema.Struct({ id: Schema.String, event: Schema.Unknown, due_at: Schema.String })),
  jobs: Schema.Array(
    Schema.Struct({
      name: Schema.String,
      state: Schema.String,
      attempts: Schema.Number,
      next_attempt_at: Schema.String,
      last_error: Schema.NullOr(Schema.String),
      seq: Schema.Number,
      action_index: Schema.Number
    })
  ),
  /** Messages told to this actor and not yet applied or refused: they wait while it is quarantined. */
  pending_messages: Schema.Array(
    Schema.Struct({
      from: Schema.NullOr(Schema.Struct({ kind: Schema.String, id: Schema.String })),
      event: Schema.Unknown,
      attempts: Schema.Number,
      next_attempt_at: Schema.String,
      waiting: Schema.NullOr(Schema.String),
      created_at: Schema.String
    })
  ),
  journal: Schema.Array(JournalEntry),
  dead_letters: Schema.Array(
    Schema.Struct({ event: Schema.Unknown, error: Schema.String, attempts: Schema.Number, at: Schema.String })
  )
})

export const MachineDescription = Schema.Struct({
  kind: Schema.String,
  machine: Schema.String,
  version: Schema.Number,
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
    }),
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
    }),
    HttpApiEndpoint.get("actor", "/api/v1/admin/actors/:kind/:id", {
      params: actorParams,
      success: Schema.Struct({ actor: ActorDetail }),
      error: adminErrors
    }),
    HttpApiEndpoint.post("restartActor", "/api/v1/admin/actors/:kind/:id/restart", {
      params: actorParams,
      success: Schema.Struct({ actor: ActorDetail }),
      error: adminErrors
    }).annotate(OpenApi.Description, "Lift the actor's quarantine and reload it from its last committed snapshot."),
    HttpApiEndpoint.get("machines", "/api/v1/admin/machines", {
      success: Schema.Struct({ machines: Schema.Array(MachineDescription) }),
      error: adminErrors
    })
  )
  .middleware(PlatformAuthentication)
  .annotateMerge(OpenApi.annotations({ title: "Platform: operators" })) {}
