// The job runner: leases pending jobs (FOR UPDATE SKIP LOCKED, so nodes never share one), runs
// them after the step that queued them committed, and reports each result back to its actor as
// an event; a report is keyed by (kind, id, seq, action index), so a repeat is harmless. A
// failed job is retried with exponential backoff. A runner renews the lease of the jobs it runs,
// so a job may run long (a streamed provider call) while one whose runner died is leased again
// within `lease` of the death: pending jobs resume after a crash. A running job may report
// progress events to its own actor and read the actor's state (JobInfo). A job of a quarantined
// actor is not leased; one whose report meets a quarantine gives its lease back and runs again
// once an operator restarts the actor (the restart wakes this runner).

import { EventBus } from "@troupe/storage/EventBus"
import * as Repo from "@troupe/storage/repositories/Actors"
import { Cause, Clock, Context, Duration, Effect, Layer, Queue } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { ActorHost } from "./ActorHost.ts"
import { type ActorEvent, Bindings, TransactionalActors } from "./Binding.ts"
import { runnerLoop } from "./RunnerLoop.ts"
import { RunnerSignals } from "./Signals.ts"
import { traceJob } from "./Tracing.ts"

const batch = 16
/** Jobs one node runs at once. */
const slots = 8
/** How long a lease lasts unless renewed: the longest a dead runner's job waits to run again. */
const lease = Duration.seconds(15)
/** A running job's lease is renewed this often. */
const renewEvery = Duration.seconds(5)
/** A job still running after this is cut off and retried. */
const longestRun = Duration.minutes(10)

/** Bus channel: a job finished, was scheduled for another attempt, or is held by its actor's quarantine. */
export const jobChannel = "troupe_actor_jobs"

export interface JobNotice {
  readonly kind: string
  readonly actorId: string
  readonly job: string
  readonly name: string
  readonly outcome: "done" | "retrying" | "held"
}

/** 1 s, 2 s, 4 s, ... capped at 5 minutes. */
export const jobBackoff = (attempts: number) =>
  Duration.millis(Math.min(300_000, 1000 * 2 ** Math.max(0, attempts - 1)))

export class JobRunner extends Context.Service<
  JobRunner,
  {
    /** Starts the jobs ready now, as many as there are free slots; answers how many it started. */
    readonly runReady: Effect.Effect<number>
  }
>()("@troupe/actors/JobRunner") {
  static readonly layer = Layer.effect(
    JobRunner,
    Effect.gen(function* () {
      const sql = yield* SqlClient
      const host = yield* ActorHost
      const bindings = yield* Bindings
      const signals = yield* RunnerSignals
      const bus = yield* EventBus
      const notify = (job: Repo.JobRow, outcome: JobNotice["outcome"]) =>
        bus.publish(
          jobChannel,
          JSON.stringify({
            kind: job.kind,
            actorId: job.actor_id,
            job: String(job.id),
            name: job.name,
            outcome
          } satisfies JobNotice)
        )
      const now = Effect.map(Clock.currentTimeMillis, (millis) => new Date(millis))

      const withSql = <A, E>(effect: Effect.Effect<A, E, SqlClient>) => Effect.provideService(effect, SqlClient, sql)
      const renewLease = (job: Repo.JobRow) =>
        Effect.gen(function* () {
          const at = yield* now
          yield* withSql(Repo.renewJobLease(job.id, new Date(at.getTime() + Duration.toMillis(lease))))
        }).pipe(Effect.ignore, Effect.delay(renewEvery), Effect.forever)
      const report = (job: Repo.JobRow) => (event: ActorEvent) =>
        host.send(job.kind, job.actor_id, event).pipe(
          Effect.map((outcome) => (outcome._tag === "Accepted" ? ("applied" as const) : ("refused" as const))),
          Effect.catch(() => Effect.succeed("refused" as const))
        )
      const actorState = (job: Repo.JobRow) =>
        withSql(Repo.findSnapshot(job.kind, job.actor_id)).pipe(
          Effect.map((row) => row?.state_value),
          Effect.orDie
        )

      const runOne = (job: Repo.JobRow) =>
        Effect.gen(function* () {
          const handler = bindings.get(job.kind)?.jobs[job.name]
          if (!handler) return yield* Effect.die(new Error(`no job handler ${job.kind}.${job.name}`))
          yield* Effect.forkScoped(renewLease(job))
          return yield* withSql(
            Effect.provideService(
              handler(job.params, {
                kind: job.kind,
                actorId: job.actor_id,
                seq: job.seq,
                actionIndex: job.action_index,
                attempt: job.attempts,
                report: report(job),
                actorState: actorState(job)
              }),
              TransactionalActors,
              host.transactional
            )
          )
        }).pipe(
          Effect.scoped,
          Effect.timeout(longestRun),
          Effect.matchCauseEffect({
            onSuccess: (event) =>
              Effect.flatMap(host.deliver({ _tag: "Job", job }, event), (delivered) =>
                delivered === "quarantined"
                  ? Effect.andThen(withSql(Repo.releaseJobLease(job.id)).pipe(Effect.orDie), notify(job, "held"))
                  : notify(job, "done")
              ),
            onFailure: (cause) =>
              Effect.gen(function* () {
                const at = yield* now
                const retryAt = new Date(at.getTime() + Duration.toMillis(jobBackoff(job.attempts)))
                const error = Cause.pretty(cause).split("\n")[0] ?? "job failed"
                yield* Effect.logWarning(
                  `job ${job.kind}.${job.name} for ${job.actor_id} failed (attempt ${job.attempts})`
                )
                yield* Repo.retryJobLater(job.id, retryAt, error).pipe(
                  Effect.orDie,
                  Effect.provideService(SqlClient, sql)
                )
                yield* notify(job, "retrying")
              })
          }),
          traceJob(job)
        )

      // A pool of `slots` jobs: a pass leases only as many jobs as there are free slots and starts
      // them without waiting, so a long job (a streamed provider call) never holds back others,
      // and no leased job waits unrenewed for a slot. A finished job frees its slot and wakes the loop.
      const scope = yield* Effect.scope
      let running = 0
      const runInSlot = (job: Repo.JobRow) =>
        runOne(job).pipe(
          Effect.ensuring(
            Effect.suspend(() => {
              running--
              return Queue.offer(signals.jobs, undefined)
            })
          )
        )
      const runReady = Effect.gen(function* () {
        let started = 0
        for (;;) {
          const free = Math.min(slots - running, batch)
          if (free <= 0) return started
          const at = yield* now
          const jobs = yield* Repo.leaseJobs(at, new Date(at.getTime() + Duration.toMillis(lease)), free).pipe(
            Effect.orDie,
            Effect.provideService(SqlClient, sql)
          )
          for (const job of jobs) {
            running++
            yield* Effect.forkIn(runInSlot(job), scope)
          }
          started += jobs.length
          if (jobs.length < free) return started
        }
      })

      yield* runnerLoop(
        "job runner",
        runReady,
        signals.jobs,
        Repo.nextJobDue.pipe(Effect.orDie, Effect.provideService(SqlClient, sql))
      )
      return JobRunner.of({ runReady })
    })
  )
}
