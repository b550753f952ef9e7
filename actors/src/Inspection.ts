// What operators and the state visualizer read: every machine (definition, version, Mermaid),
// actors by kind, state, quarantine or stuckness, and one actor in full (context with its parts,
// timers, jobs, messages waiting for it, journal, dead letters). A non-terminal actor is stuck
// when nothing will move it: no timer, no pending job or message, and no state that names a
// waiting party (`meta.waitsOn`).
import { SnapshotVersionError } from "@troupe/machines/registry"
import * as Messages from "@troupe/storage/repositories/ActorMessages"
import * as Repo from "@troupe/storage/repositories/Actors"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { Bindings } from "./Binding.ts"
import { toMermaid } from "./Mermaid.ts"
import { restoreSnapshot, withEmptyParts } from "./Snapshots.ts"

export interface MachineView {
  readonly kind: string
  readonly machine: string
  readonly version: number
  readonly states: ReadonlyArray<string>
  readonly definition: unknown
  readonly mermaid: string
}

export interface ActorFilter {
  readonly kind?: string | undefined
  readonly state?: string | undefined
  readonly stuck?: boolean | undefined
  readonly quarantined?: boolean | undefined
  readonly afterActorId?: string | undefined
  readonly order?: "asc" | "desc" | undefined
  readonly limit: number
}

export interface ActorDetail {
  readonly row: Repo.SnapshotRow
  readonly context: unknown
  readonly stuck: boolean
  readonly waitsOn: ReadonlyArray<string>
  readonly timers: ReadonlyArray<Repo.TimerRow>
  readonly jobs: ReadonlyArray<Repo.JobRow>
  /** Messages told to the actor and not yet applied or refused (oldest first, at most 100). */
  readonly pendingMessages: ReadonlyArray<Messages.MessageRow>
  /** The latest journal entries (at most 200), oldest first. */
  readonly journal: ReadonlyArray<Repo.JournalRow>
  readonly deadLetters: ReadonlyArray<{
    readonly event: unknown
    readonly error: string
    readonly attempts: number
    readonly at: Date
  }>
}

/** How many journal entries one actor's detail shows (its latest). */
const journalLength = 200n

interface StatePathNode {
  readonly path: ReadonlyArray<string>
  readonly states: Readonly<Record<string, StatePathNode>>
}

/** Whether a state value is the given state or one nested in it. */
const inState = (value: string, state: string) => value === state || value.startsWith(`${state}.`)

const statePaths = (node: StatePathNode): Array<string> =>
  Object.values(node.states).flatMap((child) => [child.path.join("."), ...statePaths(child)])

export class Inspection extends Context.Service<
  Inspection,
  {
    readonly machines: Effect.Effect<ReadonlyArray<MachineView>>
    readonly list: (filter: ActorFilter) => Effect.Effect<ReadonlyArray<Repo.SnapshotRow & { readonly stuck: boolean }>>
    readonly detail: (kind: string, actorId: string, journalAfter?: bigint) => Effect.Effect<ActorDetail | undefined>
  }
>()("@troupe/actors/Inspection") {
  static readonly layer = Layer.effect(
    Inspection,
    Effect.gen(function* () {
      const sql = yield* SqlClient
      const bindings = yield* Bindings
      const db = <A, E>(effect: Effect.Effect<A, E, SqlClient>) =>
        effect.pipe(Effect.orDie, Effect.provideService(SqlClient, sql))

      // A listed row is read without its parts (restored empty): only its state's meta is read here.
      const resolved = (row: Repo.SnapshotRow) => {
        const binding = bindings.get(row.kind)
        const restored = binding === undefined ? undefined : restoreSnapshot(binding, row)
        return restored instanceof SnapshotVersionError ? undefined : restored
      }

      const waitingParties = (row: Repo.SnapshotRow) => {
        const snapshot = resolved(row)
        if (!snapshot) return []
        return Object.values(snapshot.getMeta() as Record<string, { waitsOn?: string } | undefined>)
          .map((meta) => meta?.waitsOn)
          .filter((party): party is string => typeof party === "string")
      }

      const machines = Effect.sync(() =>
        [...bindings.values()].map((binding) => ({
          kind: binding.kind,
          machine: binding.entry.machine.id,
          version: binding.entry.version,
          states: statePaths(binding.entry.machine.root),
          // The definition as plain JSON (actions implemented in the shell appear by name only).
          definition: JSON.parse(JSON.stringify(binding.entry.machine.root.definition)) as unknown,
          mermaid: toMermaid(binding.entry.machine)
        }))
      )

      const isStuck = (row: Repo.SnapshotRow, idle: ReadonlySet<string>) =>
        row.status === "active" &&
        row.quarantined_at === null &&
        idle.has(`${row.kind}/${row.actor_id}`) &&
        waitingParties(row).length === 0

      const list = (filter: ActorFilter) =>
        Effect.gen(function* () {
          if (filter.stuck) {
            // A quarantined actor is never stuck (an operator's restart moves it).
            if (filter.quarantined === true) return []
            const candidates = yield* db(Repo.idleActiveActors(filter.kind, 10_000))
            const idle = new Set(candidates.map((row) => `${row.kind}/${row.actor_id}`))
            const after = filter.afterActorId
            const desc = filter.order === "desc"
            return candidates
              .filter((row) => isStuck(row, idle))
              .filter((row) => filter.state === undefined || inState(row.state_value, filter.state))
              .filter((row) => after === undefined || (desc ? row.actor_id < after : row.actor_id > after))
              .sort((a, b) => (desc ? b.actor_id.localeCompare(a.actor_id) : a.actor_id.localeCompare(b.actor_id)))
              .slice(0, filter.limit)
              .map((row) => ({ ...row, stuck: true }))
          }
          // Without stuck ones (stuck=false) a batch may come up short: read on until the page is
          // full or the rows end, so the caller's limit + 1 still tells whether more follow.
          const found: Array<Repo.SnapshotRow & { readonly stuck: boolean }> = []
          let after = filter.afterActorId
          for (;;) {
            const rows = yield* db(Repo.listSnapshots({ ...filter, afterActorId: after }))
            const idle = yield* db(Repo.idleAmong(rows.map((row) => row.actor_id)))
            for (const row of rows) {
              const stuck = isStuck(row, idle)
              if (filter.stuck !== false || !stuck) found.push({ ...row, stuck })
            }
            const last = rows.at(-1)
            if (rows.length < filter.limit || found.length >= filter.limit || last === undefined) {
              return found.slice(0, filter.limit)
            }
            after = last.actor_id
          }
        })

      const detail = (kind: string, actorId: string, journalAfter = 0n) =>
        Effect.gen(function* () {
          const found = yield* db(Repo.findSnapshotWithParts(kind, actorId))
          if (!found) return undefined
          const { parts: _, ...row } = found
          const binding = bindings.get(kind)
          const context = (row.snapshot as { context?: unknown }).context ?? null
          const timers = yield* db(Repo.actorTimers(kind, actorId))
          const jobs = yield* db(Repo.actorJobs(kind, actorId))
          const pendingMessages = yield* db(Messages.pendingMessagesTo(kind, actorId, 100))
          // The latest entries: what an operator looks for is what happened last.
          const tail = row.seq > journalLength ? row.seq - journalLength : 0n
          const journal = yield* db(
            Repo.readJournal(kind, actorId, journalAfter > tail ? journalAfter : tail, Number(journalLength))
          )
          const deadLetters = yield* db(Repo.deadLetters(kind, actorId))
          const idle =
            timers.length === 0 && !jobs.some((job) => job.state === "pending") && pendingMessages.length === 0
          return {
            row,
            context: binding === undefined ? context : withEmptyParts(binding, context),
            stuck: isStuck(row, idle ? new Set([`${kind}/${actorId}`]) : new Set()),
            waitsOn: waitingParties(row),
            timers,
            jobs,
            pendingMessages,
            journal,
            deadLetters
          }
        })

      return Inspection.of({ machines, list, detail })
    })
  )
}
