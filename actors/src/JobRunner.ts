// The job runner: leases pending jobs (FOR UPDATE SKIP LOCKED, so nodes never share one), runs
// them after the step that queued them committed, and reports each result back to its actor as
// an event; a report is keyed by (kind, id, seq, action index), so a repeat is harmless. A
// failed job is retried with exponential backoff; a job whose runner died is leased again when
// its lease lapses, so pending jobs resume after a crash.

import { EventBus } from "@troupe/storage/EventBus"
import * as Repo from "@troupe/storage/repositories/Actors"
import { Cause, Clock, Context, Duration, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { ActorHost } from "./ActorHost.ts"
import { Bindings } from "./Binding.ts"
import { runnerLoop } from "./RunnerLoop.ts"
import { RunnerSignals } from "./Signals.ts"
import { traceJob } from "./Tracing.ts"

const batch = 16
/** How long a runner holds a job; a job still running then is cut off and retried. */
const lease = Duration.minutes(2)

/** Bus channel: a job finished or was scheduled for another attempt. */
export const jobChannel = "troupe_actor_jobs"

export interface JobNotice {
  readonly kind: string
  readonly actorId: string
  readonly job: string
  readonly name: string
  readonly outcome: "done" | "retrying"
}

/** 1 s, 2 s, 4 s, ... capped at 5 minutes. */
export const jobBackoff = (attempts: number) =>
  Duration.millis(Math.min(300_000, 1000 * 2 ** Math.max(0, attempts - 1)))

export class JobRunner extends Context.Service<
  JobRunner,
  {
    /** Runs every job ready now; answers how many ran. */
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

      const runOne = (job: Repo.JobRow) =>
        Effect.gen(function* () {
          const handler = bindings.get(job.kind)?.jobs[job.name]
          if (!handler) return yield* Effect.die(new Error(`no job handler ${job.kind}.${job.name}`))
          return yield* handler(job.params, {
            kind: job.kind,
            actorId: job.actor_id,
            seq: job.seq,
            actionIndex: job.action_index,
            attempt: job.attempts
          })
        }).pipe(
          Effect.timeout(lease),
          Effect.matchCauseEffect({
            onSuccess: (event) => Effect.andThen(host.deliver({ _tag: "Job", job }, event), notify(job, "done")),
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

      const runReady = Effect.gen(function* () {
        let ran = 0
        for (;;) {
          const at = yield* now
          const jobs = yield* Repo.leaseJobs(at, new Date(at.getTime() + Duration.toMillis(lease)), batch).pipe(
            Effect.orDie,
            Effect.provideService(SqlClient, sql)
          )
          yield* Effect.forEach(jobs, runOne, { concurrency: 8, discard: true })
          ran += jobs.length
          if (jobs.length < batch) return ran
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
