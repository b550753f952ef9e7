// Operator commands: clients of the running server's admin API (a restart must reach the
// process that hosts the actors, and the server audits it). The server is TROUPE_URL (default
// PUBLIC_BASE_URL, else http://localhost:$PORT); the credential is TROUPE_TOKEN, an owner's or
// admin's API session token (POST /api/v1/session).
import { Console, Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"

class OperatorError extends Error {
  override readonly name = "OperatorError"
}

const serverUrl = () =>
  process.env.TROUPE_URL ?? process.env.PUBLIC_BASE_URL ?? `http://localhost:${process.env.PORT ?? "4000"}`

const call = (method: "GET" | "POST", path: string) =>
  Effect.tryPromise({
    try: async () => {
      const token = process.env.TROUPE_TOKEN
      if (!token) throw new OperatorError("Set TROUPE_TOKEN to an owner's or admin's API session token")
      const response = await fetch(new URL(path, serverUrl()), {
        method,
        headers: { authorization: `Bearer ${token}` }
      })
      const body = (await response.json().catch(() => ({}))) as Record<string, any>
      if (!response.ok) {
        throw new OperatorError(
          `${response.status} ${body.error?.code ?? ""}: ${body.error?.message ?? response.statusText}`
        )
      }
      return body
    },
    catch: (error) =>
      error instanceof OperatorError ? error : new OperatorError(`cannot reach ${serverUrl()}: ${String(error)}`)
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

const supervisorRows = (supervisors: ReadonlyArray<Record<string, any>>) =>
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
      s.started_at
    ])
  ])

const restartSupervisor = Command.make("restart", { kind: Argument.String("kind") }, ({ kind }) =>
  Effect.gen(function* () {
    const body = yield* call("POST", `/api/v1/admin/supervisors/${encodeURIComponent(kind)}/restart`)
    yield* Console.log(`Restarted the ${kind} supervisor.\n${supervisorRows([body.supervisor])}`)
  })
).pipe(Command.withDescription("Restart one kind's supervisor (its live actors reload from their snapshots)"))

export const supervisors = Command.make("supervisors", {}, () =>
  Effect.gen(function* () {
    const body = yield* call("GET", "/api/v1/admin/supervisors")
    yield* Console.log(supervisorRows(body.supervisors))
  })
).pipe(
  Command.withSubcommands([restartSupervisor]),
  Command.withDescription("List the actor runtime's supervisors (TROUPE_URL, TROUPE_TOKEN)")
)

const showActor = Command.make("show", { kind: Argument.String("kind"), id: Argument.String("id") }, ({ kind, id }) =>
  Effect.gen(function* () {
    const { actor } = yield* call("GET", `/api/v1/admin/actors/${encodeURIComponent(kind)}/${encodeURIComponent(id)}`)
    yield* Console.log(
      [
        `${actor.kind} ${actor.id}`,
        `state: ${actor.state} (${actor.status})  seq: ${actor.seq}${actor.stuck ? "  STUCK" : ""}${
          actor.quarantined_at ? `  QUARANTINED since ${actor.quarantined_at}` : ""
        }`,
        `context: ${JSON.stringify(actor.context)}`,
        `timers: ${actor.timers.map((t: any) => `${t.id} at ${t.due_at}`).join(", ") || "none"}`,
        `jobs: ${actor.jobs.map((j: any) => `${j.name} ${j.state} (${j.attempts} attempts)`).join(", ") || "none"}`,
        `pending messages: ${actor.pending_messages.map((m: any) => `${m.event.type} (${m.waiting ?? "due"})`).join(", ") || "none"}`,
        "journal:",
        ...actor.journal.map((e: any) => `  ${e.seq}  ${e.at}  ${e.event.type}: ${e.from ?? "-"} -> ${e.to}`),
        ...(actor.dead_letters.length > 0
          ? ["dead letters:", ...actor.dead_letters.map((d: any) => `  ${d.at}  ${d.event.type}: ${d.error}`)]
          : [])
      ].join("\n")
    )
  })
).pipe(Command.withDescription("Show one actor: state, context, timers, jobs, pending messages, journal"))

const restartActor = Command.make(
  "restart",
  { kind: Argument.String("kind"), id: Argument.String("id") },
  ({ kind, id }) =>
    Effect.gen(function* () {
      const path = `/api/v1/admin/actors/${encodeURIComponent(kind)}/${encodeURIComponent(id)}/restart`
      const { actor } = yield* call("POST", path)
      yield* Console.log(`Restarted ${actor.kind} ${actor.id}: ${actor.state} at seq ${actor.seq}.`)
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
      const query = new URLSearchParams({ limit: "100" })
      if (Option.isSome(kind)) query.set("kind", kind.value)
      if (Option.isSome(state)) query.set("state", state.value)
      if (stuck) query.set("stuck", "true")
      if (quarantined) query.set("quarantined", "true")
      const body = yield* call("GET", `/api/v1/admin/actors?${query}`)
      yield* Console.log(
        table([
          ["KIND", "ID", "STATE", "SEQ", "FLAGS"],
          ...body.actors.map((a: any) => [
            a.kind,
            a.id,
            a.state,
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
