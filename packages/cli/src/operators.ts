// Operator commands: typed @troupe/client calls to the running server's admin API (a restart
// must reach the process that hosts the actors, and the server audits it). The server is
// TROUPE_URL (default PUBLIC_BASE_URL, else http://localhost:$PORT); the credential is
// TROUPE_TOKEN, an owner's or admin's platform credential (an API session token from POST
// /api/v1/session, or a platform token from `troupe token create --plane platform`).
import { makeTroupeClient, statusOfRefusal, type TroupeApiClient } from "@troupe/client/Client"
import type { ActorDetail, Supervisor } from "@troupe/contracts/platform/Admin"
import { Console, Effect, Option, Redacted, Schema } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { FetchHttpClient, HttpClientError } from "effect/http"

export class OperatorError extends Error {
  override readonly name = "OperatorError"
}

export const serverUrl = () =>
  process.env.TROUPE_URL ?? process.env.PUBLIC_BASE_URL ?? `http://localhost:${process.env.PORT ?? "4000"}`

const isRefusal = (error: unknown): error is { readonly error: { readonly code: string; readonly message: string } } =>
  typeof error === "object" && error !== null && "error" in error && typeof error.error === "object"

/** One line for whatever stopped a call: the refusal's status and code, or why the server was not reached. */
export const operatorError = (error: unknown) => {
  if (error instanceof OperatorError) return error
  if (isRefusal(error)) {
    return new OperatorError(`${statusOfRefusal(error) ?? ""} ${error.error.code}: ${error.error.message}`)
  }
  if (HttpClientError.isHttpClientError(error) && error.response !== undefined) {
    return new OperatorError(`${error.response.status}: ${error.message}`)
  }
  if (error instanceof Schema.SchemaError) {
    return new OperatorError(`${serverUrl()} answered outside the contract: ${error.message}`)
  }
  return new OperatorError(`cannot reach ${serverUrl()}: ${error instanceof Error ? error.message : String(error)}`)
}

/** Calls the admin API with TROUPE_TOKEN; every failure becomes an OperatorError. */
export const call = <A, E>(request: (client: TroupeApiClient) => Effect.Effect<A, E>) =>
  Effect.gen(function* () {
    const token = process.env.TROUPE_TOKEN
    if (!token)
      return yield* Effect.fail(
        new OperatorError(
          "Set TROUPE_TOKEN to an owner's or admin's platform token (troupe token create --user EMAIL --plane platform)"
        )
      )
    const client = yield* makeTroupeClient({ baseUrl: serverUrl(), token: Redacted.make(token) })
    return yield* request(client)
  }).pipe(Effect.provide(FetchHttpClient.layer), Effect.mapError(operatorError))

/** Journal, timer and message events are XState events: the type names them. */
const eventType = (event: unknown) =>
  Option.match(Schema.decodeUnknownOption(Schema.Struct({ type: Schema.String }))(event), {
    onNone: () => "?",
    onSome: ({ type }) => type
  })

const table = (rows: ReadonlyArray<ReadonlyArray<string>>) => {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)))
  return rows
    .map((row) =>
      row
        .map((cell, column) => cell.padEnd(widths[column]!))
        .join("  ")
        .trimEnd()
    )
    .join("\n")
}

const supervisorRows = (supervisors: ReadonlyArray<typeof Supervisor.Type>) =>
  table([
    ["KIND", "ACTORS", "ACTIVE", "LIVE", "QUARANTINED", "RESTARTS", "FAILURES", "STARTED"],
    ...supervisors.map((s) => [
      s.kind,
      String(s.actors),
      String(s.active_actors),
      String(s.live_actors),
      String(s.quarantined_actors),
      String(s.restarts),
      String(s.failures),
      s.startedAt.toISOString()
    ])
  ])

const restartSupervisor = Command.make("restart", { kind: Argument.String("kind") }, ({ kind }) =>
  Effect.gen(function* () {
    const { supervisor } = yield* call((client) => client.admin.restartSupervisor({ params: { kind } }))
    yield* Console.log(`Restarted the ${kind} supervisor.\n${supervisorRows([supervisor])}`)
  })
).pipe(Command.withDescription("Restart one kind's supervisor (its live actors reload from their snapshots)"))

export const supervisors = Command.make("supervisors", {}, () =>
  Effect.gen(function* () {
    const { supervisors } = yield* call((client) => client.admin.supervisors())
    yield* Console.log(supervisorRows(supervisors))
  })
).pipe(
  Command.withSubcommands([restartSupervisor]),
  Command.withDescription("List the actor runtime's supervisors (TROUPE_URL, TROUPE_TOKEN)")
)

const describeActor = (actor: typeof ActorDetail.Type) =>
  [
    `${actor.kind} ${actor.actor_id}`,
    `state: ${actor.state_value} (${actor.status})  seq: ${actor.seq}${actor.stuck ? "  STUCK" : ""}${
      actor.quarantined_at ? `  QUARANTINED since ${actor.quarantined_at.toISOString()}` : ""
    }`,
    `context: ${JSON.stringify(actor.context)}`,
    `timers: ${actor.timers.map((t) => `${t.timer_id} at ${t.due_at.toISOString()}`).join(", ") || "none"}`,
    `jobs: ${actor.jobs.map((j) => `${j.name} ${j.state} (${j.attempts} attempts)`).join(", ") || "none"}`,
    `pending messages: ${actor.pendingMessages.map((m) => `${eventType(m.event)} (${m.last_error ?? "due"})`).join(", ") || "none"}`,
    "journal:",
    ...actor.journal.map(
      (e) => `  ${e.seq}  ${e.at.toISOString()}  ${eventType(e.event)}: ${e.from_state ?? "-"} -> ${e.to_state}`
    ),
    ...(actor.deadLetters.length > 0
      ? ["dead letters:", ...actor.deadLetters.map((d) => `  ${d.at.toISOString()}  ${eventType(d.event)}: ${d.error}`)]
      : [])
  ].join("\n")

const showActor = Command.make("show", { kind: Argument.String("kind"), id: Argument.String("id") }, ({ kind, id }) =>
  Effect.gen(function* () {
    const { actor } = yield* call((client) => client.admin.actor({ params: { kind, id } }))
    yield* Console.log(describeActor(actor))
  })
).pipe(Command.withDescription("Show one actor: state, context, timers, jobs, pending messages, journal"))

const restartActor = Command.make(
  "restart",
  { kind: Argument.String("kind"), id: Argument.String("id") },
  ({ kind, id }) =>
    Effect.gen(function* () {
      const { actor } = yield* call((client) => client.admin.restartActor({ params: { kind, id } }))
      yield* Console.log(`Restarted ${actor.kind} ${actor.actor_id}: ${actor.state_value} at seq ${actor.seq}.`)
    })
).pipe(Command.withDescription("Restart one actor: lift its quarantine, reload its last snapshot"))

export const actors = Command.make(
  "actors",
  {
    kind: Flag.String("kind").pipe(Flag.optional),
    state: Flag.String("state").pipe(Flag.optional),
    stuck: Flag.Boolean("stuck").pipe(Flag.withDefault(false)),
    quarantined: Flag.Boolean("quarantined").pipe(Flag.withDefault(false))
  },
  ({ kind, state, stuck, quarantined }) =>
    Effect.gen(function* () {
      const query = {
        limit: "100",
        kind: Option.getOrUndefined(kind),
        state: Option.getOrUndefined(state),
        stuck: stuck ? "true" : undefined,
        quarantined: quarantined ? "true" : undefined
      }
      const { actors } = yield* call((client) => client.admin.actors({ query }))
      yield* Console.log(
        table([
          ["KIND", "ID", "STATE", "SEQ", "FLAGS"],
          ...actors.map((a) => [
            a.kind,
            a.actor_id,
            a.state_value,
            String(a.seq),
            [a.stuck ? "stuck" : "", a.quarantined_at ? "quarantined" : ""].filter(Boolean).join(",")
          ])
        ])
      )
    })
).pipe(
  Command.withSubcommands([showActor, restartActor]),
  Command.withDescription("List actors (filters: --kind, --state, --stuck, --quarantined)")
)
