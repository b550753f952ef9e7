// What the runtime tells the tracer and the logs: each step runs in a span named for its kind and
// event (a child of the request that sent it; a delivered timer, job report or told message
// starts a trace of its own, linked to what delivered it and to the step that scheduled it when
// that is known), each job in a root span named for its kind and job, and every line logged
// inside either carries the actor's address (actor_kind, actor_id).
import { Effect, Option, type Tracer } from "effect"
import { Headers, HttpTraceContext } from "effect/http"
import type { StepOutcome } from "./ActorHost.ts"

/** The log annotations naming an actor. */
export const actorAddress = (kind: string, actorId: string) => ({ actor_kind: kind, actor_id: actorId })

const outcomeAttributes = (outcome: StepOutcome | undefined): Record<string, unknown> =>
  outcome === undefined
    ? { "troupe.step.outcome": "stale" }
    : outcome._tag === "Accepted"
      ? { "troupe.step.outcome": "accepted", "troupe.step.seq": outcome.seq }
      : { "troupe.step.outcome": outcome._tag.toLowerCase() }

/** The causes that are deliveries: their steps start traces of their own. */
const delivered = new Set(["timer", "job", "message"])

/**
 * A delivered step's links: to the span it runs under (the job that reported, or the hand-off that
 * brought it) and to the step that scheduled it, named by its W3C `traceparent`.
 */
const deliveryLinks = (scheduledBy: string | null | undefined) =>
  Effect.map(
    Effect.option(Effect.currentParentSpan),
    (enclosing): Array<Tracer.SpanLink> => [
      ...Option.match(enclosing, {
        onNone: () => [],
        onSome: (span) => [{ span, attributes: { "troupe.link": "delivered_by" } }]
      }),
      ...Option.match(traceContext(scheduledBy), {
        onNone: () => [],
        onSome: (span) => [{ span, attributes: { "troupe.link": "scheduled_by" } }]
      })
    ]
  )

const traceContext = (traceparent: string | null | undefined) =>
  traceparent ? HttpTraceContext.w3c(Headers.fromInput({ traceparent })) : Option.none()

const stepSpan =
  <A>(
    kind: string,
    actorId: string,
    eventType: string,
    cause: string,
    outcomeOf: (value: A) => Record<string, unknown>,
    scheduledBy?: string | null
  ) =>
  <B extends A, E extends { readonly _tag: string }, R>(step: Effect.Effect<B, E, R>) => {
    const traced = (links: Array<Tracer.SpanLink> | undefined) =>
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
            },
            ...(links === undefined ? {} : { root: true, links })
          },
          { captureStackTrace: false }
        ),
        Effect.annotateLogs(actorAddress(kind, actorId))
      )
    return delivered.has(cause) ? Effect.flatMap(deliveryLinks(scheduledBy), traced) : traced(undefined)
  }

/**
 * Runs one step (all its attempts) in a span `<kind> <event type>`. `cause` says what brought the
 * event (`send`, `timer`, `job`, `message`); the outcome is `accepted` (with the new seq),
 * `rejected`, `vetoed`, `stale` (a delivery already consumed) or the failure's tag. A sent step is
 * a child of the caller's span; a delivered one is the root of a trace of its own, linked to the
 * span it runs under and to `scheduledBy`, the `traceparent` of the step that scheduled it.
 */
export const traceStep = (
  kind: string,
  actorId: string,
  eventType: string,
  cause: string,
  scheduledBy?: string | null
) => stepSpan<StepOutcome | undefined>(kind, actorId, eventType, cause, outcomeAttributes, scheduledBy)

/** Runs an actor's creation, its first step (seq 1), in a span `<kind> xstate.init`. */
export const traceCreate = (kind: string, actorId: string) =>
  stepSpan<unknown>(kind, actorId, "xstate.init", "create", () => ({
    "troupe.step.outcome": "accepted",
    "troupe.step.seq": 1n
  }))

/**
 * The W3C `traceparent` of the current span, for a row that schedules a later step (a timer, a
 * job, a told message) to carry, so that step can link back; none outside a span.
 */
export const currentTraceparent: Effect.Effect<string | undefined> = Effect.map(
  Effect.option(Effect.currentSpan),
  Option.match({ onNone: () => undefined, onSome: (span) => HttpTraceContext.toHeaders(span).traceparent })
)

/**
 * Runs one job attempt (its handler and the delivery of its report) in a span `<kind> job <name>`,
 * the root of a trace of its own.
 */
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
          },
          root: true
        },
        { captureStackTrace: false }
      ),
      Effect.annotateLogs(actorAddress(job.kind, job.actor_id))
    )
