// What the runtime tells the tracer and the logs: each step runs in a span named for its kind and
// event (a child of the request that sent it), each job in one named for its kind and job, and
// every line logged inside either carries the actor's address (actor_kind, actor_id).
import { Effect } from "effect"
import type { StepOutcome } from "./ActorHost.ts"

/** The log annotations naming an actor. */
export const actorAddress = (kind: string, actorId: string) => ({ actor_kind: kind, actor_id: actorId })

const outcomeAttributes = (outcome: StepOutcome | undefined): Record<string, unknown> =>
  outcome === undefined
    ? { "troupe.step.outcome": "stale" }
    : outcome._tag === "Accepted"
      ? { "troupe.step.outcome": "accepted", "troupe.step.seq": outcome.seq }
      : { "troupe.step.outcome": outcome._tag.toLowerCase() }

const stepSpan =
  <A>(
    kind: string,
    actorId: string,
    eventType: string,
    cause: string,
    outcomeOf: (value: A) => Record<string, unknown>
  ) =>
  <B extends A, E extends { readonly _tag: string }, R>(step: Effect.Effect<B, E, R>) =>
    step.pipe(
      Effect.tap((value) => Effect.annotateCurrentSpan(outcomeOf(value))),
      Effect.tapError((error) => Effect.annotateCurrentSpan("troupe.step.outcome", error._tag)),
      Effect.withSpan(
        `${kind} ${eventType}`,
        {
          attributes: {
            "troupe.actor.kind": kind,
            "troupe.actor.id": actorId,
            "troupe.event.type": eventType,
            "troupe.step.cause": cause
          }
        },
        { captureStackTrace: false }
      ),
      Effect.annotateLogs(actorAddress(kind, actorId))
    )

/**
 * Runs one step (all its attempts) in a span `<kind> <event type>`. `cause` says what brought the
 * event (`send`, `timer`, `job`, ...); the outcome is `accepted` (with the new seq), `rejected`,
 * `vetoed`, `stale` (a delivery already consumed) or the failure's tag.
 */
export const traceStep = (kind: string, actorId: string, eventType: string, cause: string) =>
  stepSpan<StepOutcome | undefined>(kind, actorId, eventType, cause, outcomeAttributes)

/** Runs an actor's creation, its first step (seq 1), in a span `<kind> xstate.init`. */
export const traceCreate = (kind: string, actorId: string) =>
  stepSpan<unknown>(kind, actorId, "xstate.init", "create", () => ({
    "troupe.step.outcome": "accepted",
    "troupe.step.seq": 1n
  }))

/** Runs one job attempt (its handler and the report's step) in a span `<kind> job <name>`. */
export const traceJob =
  (job: { readonly kind: string; readonly actor_id: string; readonly name: string; readonly attempts: number }) =>
  <A, E, R>(run: Effect.Effect<A, E, R>) =>
    run.pipe(
      Effect.withSpan(
        `${job.kind} job ${job.name}`,
        {
          attributes: {
            "troupe.actor.kind": job.kind,
            "troupe.actor.id": job.actor_id,
            "troupe.job.name": job.name,
            "troupe.job.attempt": job.attempts
          }
        },
        { captureStackTrace: false }
      ),
      Effect.annotateLogs(actorAddress(job.kind, job.actor_id))
    )
