// An inference request (spec "States and transitions", rows "InferenceRequest"; supplement
// "Lifecycle, attempts, fallback"):
//   queued --start (its provider call began)--> running
//   queued, its input refused at sealing (a conversation's uploads its model cannot take)--> failed
//   running --finish--> completed, or failed (a final failure, a blocked or unrescued refusal)
//   running --retryable failure, attempts left--> waiting (reads queued; the backoff is a durable
//     timer), then queued on the same route; after a route's second retryable failure, queued on
//     the next permitted candidate when one exists (run_status with model_change)
//   running --refusal, a permitted candidate, attempts left--> queued on it at once
//   queued|waiting|running --cancellation--> canceled; --deadline (durable timer)--> timed_out
//   terminal --DELETE--> tombstoned, reaped 30 days later (durable timer)
// Items, in order: run_status queued (with the acceptance); per attempt run_status running, its
// deltas, its usage, then rollback + run_status queued (retry or switch) or run_status <terminal>
// and `result`, last and once. Cancellation and the deadline end without a rollback. A request
// carrying an announcement (a run's round) announces each attempt as it starts (round_started).
import { cancel, enqueueActions, raise, setup } from "xstate"
import type { InferenceRequestContext, InferenceRequestInput, ModelChange, SkipReason } from "./context.ts"
import {
  type AnnounceAttemptParams,
  type AppendOutputParams,
  type CallProviderParams,
  inferenceRequestEffects as fx,
  type RecordStatusParams,
  type RecordUsageParams,
  type ReplyToAskerParams,
  type ResultParams
} from "./effects.ts"
import type { FailureCode, InferenceRequestEvent } from "./events.ts"

/** Provider calls per request, across every route. */
export const attemptBudget = 4
/** The first retry's backoff; each later one doubles it (or Retry-After, when longer). */
export const firstBackoffMillis = 500
/** A tombstone's row is reaped this long after DELETE. */
export const reapAfterMillis = 30 * 24 * 60 * 60 * 1000

const retryable: ReadonlySet<FailureCode> = new Set(["provider_error", "provider_overloaded", "rate_limited"])

type Context = InferenceRequestContext
type Event = InferenceRequestEvent
type Skip = { readonly model: string; readonly reason: SkipReason | "already_tried" }

const modelOf = (context: Context) => context.routes[context.route]!.model

/** The next permitted candidate after the current route, and the ones passed over on the way. */
export const nextCandidate = (context: Context): { readonly route: number; readonly skips: Array<Skip> } | null => {
  const skips: Array<Skip> = []
  for (let index = context.route + 1; index < context.routes.length; index++) {
    const route = context.routes[index]!
    if (route.skip !== null) skips.push({ model: route.model, reason: route.skip })
    else if ((context.attemptsByModel[route.model] ?? 0) > 0)
      skips.push({ model: route.model, reason: "already_tried" })
    else return { route: index, skips }
  }
  return null
}

/** Milliseconds before the retry that follows the request's k-th retryable failure. */
export const backoffMillis = (k: number, retryAfterMs: number | undefined) =>
  Math.max(firstBackoffMillis * 2 ** Math.max(0, k - 1), retryAfterMs ?? 0)

const runStatus = (status: string, context: Context, extra: Record<string, unknown> = {}) => ({
  type: "run_status",
  status,
  model: modelOf(context),
  attempt: context.attempt,
  ...extra
})

/** The `result` item: a summary; the nested result is the upstream client's terminal signal. */
const resultItem = (context: Context, result: ResultParams) => ({
  type: "result",
  status: result.status,
  ...(result.finish_quality === undefined ? {} : { finish_quality: result.finish_quality }),
  ...(result.refusal_category === undefined ? {} : { refusal_category: result.refusal_category }),
  ...(result.error === undefined ? {} : { error: result.error }),
  ...(result.model_change === undefined ? {} : { model_change: result.model_change }),
  result: { status: result.status, inference_request_public_id: context.publicId }
})

type EffectRequest =
  | { readonly type: typeof fx.recordStatus; readonly params: RecordStatusParams }
  | { readonly type: typeof fx.appendOutput; readonly params: AppendOutputParams }
  | { readonly type: typeof fx.dropOutput }
  | { readonly type: typeof fx.recordUsage; readonly params: RecordUsageParams }
  | { readonly type: typeof fx.recordResult; readonly params: ResultParams }
  | { readonly type: typeof fx.callProvider; readonly params: CallProviderParams }
  | { readonly type: typeof fx.replyToAsker; readonly params: ReplyToAskerParams }
  | { readonly type: typeof fx.announceAttempt; readonly params: AnnounceAttemptParams }

/** What a transition's `enqueueActions` may queue, as the helpers below use it. */
interface Queue {
  request(action: EffectRequest): void
  emit(item: { readonly type: string; readonly [member: string]: unknown }): void
  assign(values: Partial<Context>): void
  raise(event: Event, options: { readonly id: string; readonly delay: number }): void
}

/** The Queue over xstate's `enqueue` of one transition. */
const queueOf = (enqueue: {
  (action: EffectRequest): void
  emit: (item: { readonly type: string }) => void
  assign: (values: Partial<Context>) => void
  raise: (event: Event, options: { id: string; delay: number }) => void
}): Queue => ({
  request: (action) => enqueue(action),
  emit: (item) => enqueue.emit(item),
  assign: (values) => enqueue.assign(values),
  raise: (event, options) => enqueue.raise(event, options)
})

/** The terminal step: status, result row, run_status <terminal>, then `result`. */
const finish = (queue: Queue, context: Context, result: ResultParams) => {
  const params = context.modelChange === null ? result : { ...result, model_change: context.modelChange }
  queue.request({ type: fx.recordStatus, params: { status: params.status } })
  queue.request({ type: fx.recordResult, params })
  queue.emit(runStatus(params.status, context))
  queue.emit(resultItem(context, params))
  if (context.replyTo !== null) {
    queue.request({ type: fx.replyToAsker, params: { to: context.replyTo, event: repliedOf(context, params) } })
  }
}

/** The outcome told to the asker: a refusal, or overload through every attempt, is declined. */
const repliedOf = (context: Context, result: ResultParams): ReplyToAskerParams["event"] => {
  const code = result.error?.code ?? null
  // A refused input is declined too: the asker's fallback may take what the model could not.
  const declined =
    (context.refusal !== undefined && code === context.refusal) ||
    (code === "model_refused" && result.finish_quality !== "blocked") ||
    ((code === "provider_overloaded" || code === "rate_limited") && result.error?.attempt_budget_spent === true)
  return {
    type: "inference.replied",
    requestId: context.publicId,
    status: result.status,
    errorCode: code,
    declined,
    usage: result.usage ?? null,
    ...(context.replyTo?.ref === undefined ? {} : { ref: context.replyTo.ref }),
    ...(result.outcome?.tool_calls === undefined ? {} : { toolCalls: result.outcome.tool_calls })
  }
}

/** The attempt's output is dropped: the row's attempt output cleared and a rollback item. */
const rollback = (queue: Queue, context: Context, reason: "retry" | "refused" | "failed", code?: string) => {
  queue.request({ type: fx.dropOutput })
  queue.emit({ type: "rollback", reason, attempt: context.attempt, ...(code === undefined ? {} : { error: { code } }) })
}

const usageOf = (event: Event): Readonly<Record<string, unknown>> => ("usage" in event ? event.usage : {})

/** A billed attempt: its usage added to the row, and the usage item. */
const bill = (queue: Queue, context: Context, event: Event) => {
  const usage = usageOf(event)
  queue.request({ type: fx.recordUsage, params: { usage } })
  queue.emit({ type: "usage", attempt: context.attempt, model: modelOf(context), ...usage })
}

/** The next attempt on the next permitted candidate, at once (a switch never waits). */
const switchRoute = (queue: Queue, context: Context, reason: ModelChange["reason"], category?: string) => {
  const candidate = nextCandidate(context)!
  const to = context.routes[candidate.route]!.model
  const modelChange: ModelChange = {
    from: modelOf(context),
    to,
    reason,
    ...(category === undefined ? {} : { category })
  }
  queue.request({ type: fx.recordStatus, params: { status: "queued" } })
  queue.assign({
    attempt: context.attempt + 1,
    route: candidate.route,
    routeFailures: 0,
    retryableFailures: context.retryableFailures + (reason === "model_refused" ? 0 : 1),
    modelChange
  })
  queue.emit({
    type: "run_status",
    status: "queued",
    model: to,
    attempt: context.attempt + 1,
    model_change: modelChange,
    ...(candidate.skips.length > 0 ? { model_skips: candidate.skips } : {})
  })
}

/** The next attempt on the same route, after `wait` ms (a retryable failure) or at once. */
const retryRoute = (queue: Queue, context: Context, wait: number | undefined) => {
  const retryable = wait !== undefined
  queue.request({ type: fx.recordStatus, params: { status: "queued" } })
  queue.assign({
    attempt: context.attempt + 1,
    routeFailures: context.routeFailures + (retryable ? 1 : 0),
    retryableFailures: context.retryableFailures + (retryable ? 1 : 0)
  })
  queue.emit({
    type: "run_status",
    status: "queued",
    model: modelOf(context),
    attempt: context.attempt + 1,
    ...(retryable ? { retry_after_ms: wait } : {})
  })
  if (retryable) queue.raise({ type: "inference.retry" }, { id: "retry", delay: wait })
}

const failureCode = (event: Event): FailureCode => (event.type === "inference.failed" ? event.code : "provider_error")

/** The attempt answered: its usage, then the completed result. */
const onFinished = (queue: Queue, context: Context, event: Event) => {
  bill(queue, context, event)
  const outcome = event.type === "inference.finished" ? event.outcome : undefined
  finish(queue, context, {
    status: "completed",
    ...(outcome?.finish_quality === undefined ? {} : { finish_quality: outcome.finish_quality }),
    usage: usageOf(event),
    ...(outcome === undefined ? {} : { outcome })
  })
}

/** Where a failed attempt leads: a switch, a retry after the backoff, or the request's failure. */
export const failureRoute = (context: Context, event: Event): "switch" | "retry" | "fail" => {
  const canRetry = retryable.has(failureCode(event)) && context.attempt < attemptBudget
  if (canRetry && context.routeFailures + 1 >= 2 && nextCandidate(context) !== null) return "switch"
  return canRetry ? "retry" : "fail"
}

/** Where a refusal leads: a switch to the next permitted candidate, or the request's failure. */
export const refusalRoute = (context: Context, event: Event): "switch" | "fail" =>
  event.type === "inference.refused" &&
  event.kind === "refused" &&
  nextCandidate(context) !== null &&
  context.attempt < attemptBudget
    ? "switch"
    : "fail"

/** How a failed attempt ends: a switch, a retry after the backoff, or the request's failure. */
const onFailure = (queue: Queue, context: Context, event: Event) => {
  const code = failureCode(event)
  const route = failureRoute(context, event)
  if (route === "switch") {
    rollback(queue, context, "retry")
    switchRoute(queue, context, code as ModelChange["reason"])
  } else if (route === "retry") {
    rollback(queue, context, "retry")
    const retryAfterMs = event.type === "inference.failed" ? event.retryAfterMs : undefined
    retryRoute(queue, context, backoffMillis(context.retryableFailures + 1, retryAfterMs))
  } else {
    rollback(queue, context, "failed", code)
    const budgetSpent = retryable.has(code)
    finish(queue, context, {
      status: "failed",
      error: { code, ...(budgetSpent ? { attempt_budget_spent: true } : {}) }
    })
  }
}

/** How a refusal ends: a switch to the next permitted candidate, or the request's failure. */
const onRefusal = (queue: Queue, context: Context, event: Event) => {
  const refusal = event.type === "inference.refused" ? event : undefined
  bill(queue, context, event)
  rollback(queue, context, "refused")
  if (refusalRoute(context, event) === "switch") {
    switchRoute(queue, context, "model_refused", refusal?.category)
    return
  }
  const candidate = refusal?.kind === "refused" && nextCandidate(context) !== null
  finish(queue, context, {
    status: "failed",
    finish_quality: refusal?.kind ?? "refused",
    ...(refusal?.category === undefined ? {} : { refusal_category: refusal.category }),
    error: { code: "model_refused", ...(candidate ? { attempt_budget_spent: true as const } : {}) }
  })
}

/** A dead runner's attempt: dropped, and another follows while attempts last. */
const onLost = (queue: Queue, context: Context) => {
  if (context.attempt < attemptBudget) {
    rollback(queue, context, "retry")
    retryRoute(queue, context, undefined)
    return
  }
  rollback(queue, context, "failed", "provider_error")
  finish(queue, context, { status: "failed", error: { code: "provider_error", attempt_budget_spent: true } })
}

export const inferenceRequestMachine = setup({
  types: {
    context: {} as InferenceRequestContext,
    input: {} as InferenceRequestInput,
    events: {} as InferenceRequestEvent
  },
  actions: {
    [fx.recordStatus]: (_, _params: RecordStatusParams) => {},
    [fx.appendOutput]: (_, _params: AppendOutputParams) => {},
    [fx.dropOutput]: () => {},
    [fx.recordUsage]: (_, _params: RecordUsageParams) => {},
    [fx.recordResult]: (_, _params: ResultParams) => {},
    [fx.recordTombstone]: () => {},
    [fx.reapRow]: () => {},
    [fx.callProvider]: (_, _params: CallProviderParams) => {},
    [fx.replyToAsker]: (_, _params: ReplyToAskerParams) => {},
    [fx.announceAttempt]: (_, _params: AnnounceAttemptParams) => {}
  },
  guards: {
    ofAttempt: ({ context, event }) => "attempt" in event && event.attempt === context.attempt,
    otherAttempt: ({ context, event }) => !("attempt" in event) || event.attempt !== context.attempt,
    failureSwitches: ({ context, event }) => failureRoute(context, event) === "switch",
    failureRetries: ({ context, event }) => failureRoute(context, event) === "retry",
    refusalSwitches: ({ context, event }) => refusalRoute(context, event) === "switch",
    budgetLeft: ({ context }) => context.attempt < attemptBudget,
    inputRefused: ({ context }) => context.refusal !== undefined
  }
}).createMachine({
  id: "inferenceRequest",
  context: ({ input }) => ({
    publicId: input.publicId,
    routes: input.routes,
    timeoutMs: input.timeoutMs,
    replyTo: input.replyTo ?? null,
    announce: input.announce ?? null,
    route: 0,
    attempt: 1,
    routeFailures: 0,
    retryableFailures: 0,
    attemptsByModel: {},
    modelChange: null,
    ...(input.refusal === undefined ? {} : { refusal: input.refusal })
  }),
  initial: "live",
  states: {
    live: {
      initial: "queued",
      entry: enqueueActions(({ context, enqueue }) => {
        enqueue.emit(runStatus("queued", context))
        enqueue.raise({ type: "inference.deadline" }, { id: "deadline", delay: context.timeoutMs })
      }),
      exit: [cancel("deadline"), cancel("retry")],
      on: {
        "inference.cancel": {
          target: "canceled",
          actions: enqueueActions(({ context, enqueue }) => finish(queueOf(enqueue), context, { status: "canceled" }))
        },
        "inference.deadline": {
          target: "timed_out",
          actions: enqueueActions(({ context, enqueue }) =>
            finish(queueOf(enqueue), context, { status: "timed_out", error: { code: "timed_out" } })
          )
        }
      },
      states: {
        queued: {
          meta: { waitsOn: "a job runner to start its provider call" },
          entry: enqueueActions(({ context, enqueue }) => {
            if (context.refusal !== undefined) return
            const model = modelOf(context)
            enqueue({
              type: fx.callProvider,
              params: { attempt: context.attempt, model, earlierAttemptsOnModel: context.attemptsByModel[model] ?? 0 }
            })
          }),
          // An input its model cannot take fails at once (no attempt, nothing billed).
          always: {
            guard: "inputRefused",
            target: "#inferenceRequest.failed",
            actions: enqueueActions(({ context, enqueue }) =>
              finish(queueOf(enqueue), context, { status: "failed", error: { code: context.refusal! } })
            )
          },
          on: {
            "inference.started": {
              guard: "ofAttempt",
              target: "running",
              actions: enqueueActions(({ context, enqueue }) => {
                const model = modelOf(context)
                const made = (context.attemptsByModel[model] ?? 0) + 1
                enqueue.assign({ attemptsByModel: { ...context.attemptsByModel, [model]: made } })
                enqueue({ type: fx.recordStatus, params: { status: "running" } })
                enqueue.emit(runStatus("running", context))
                if (context.announce !== null) {
                  const { channel, frame } = context.announce
                  enqueue({
                    type: fx.announceAttempt,
                    params: { channel, frame: { ...frame, attempt: context.attempt, model } }
                  })
                }
              })
            }
          }
        },
        waiting: {
          meta: { waitsOn: "the backoff before its next attempt" },
          on: {
            "inference.retry": { target: "queued", actions: { type: fx.recordStatus, params: { status: "queued" } } }
          }
        },
        running: {
          meta: { waitsOn: "its provider call" },
          on: {
            "inference.output": {
              guard: "ofAttempt",
              actions: enqueueActions(({ event, enqueue }) => {
                if (event.type !== "inference.output") return
                enqueue({ type: fx.appendOutput, params: { items: event.items } })
                for (const item of event.items) enqueue.emit({ type: item.type, ...item.payload })
              })
            },
            "inference.finished": {
              guard: "ofAttempt",
              target: "#inferenceRequest.completed",
              actions: enqueueActions(({ context, event, enqueue }) => onFinished(queueOf(enqueue), context, event))
            },
            "inference.failed": [
              { guard: "otherAttempt" },
              {
                guard: "failureSwitches",
                target: "queued",
                actions: enqueueActions(({ context, event, enqueue }) => onFailure(queueOf(enqueue), context, event))
              },
              {
                guard: "failureRetries",
                target: "waiting",
                actions: enqueueActions(({ context, event, enqueue }) => onFailure(queueOf(enqueue), context, event))
              },
              {
                target: "#inferenceRequest.failed",
                actions: enqueueActions(({ context, event, enqueue }) => onFailure(queueOf(enqueue), context, event))
              }
            ],
            "inference.refused": [
              { guard: "otherAttempt" },
              {
                guard: "refusalSwitches",
                target: "queued",
                actions: enqueueActions(({ context, event, enqueue }) => onRefusal(queueOf(enqueue), context, event))
              },
              {
                target: "#inferenceRequest.failed",
                actions: enqueueActions(({ context, event, enqueue }) => onRefusal(queueOf(enqueue), context, event))
              }
            ],
            "inference.lost": [
              { guard: "otherAttempt" },
              {
                guard: "budgetLeft",
                target: "queued",
                actions: enqueueActions(({ context, enqueue }) => onLost(queueOf(enqueue), context))
              },
              {
                target: "#inferenceRequest.failed",
                actions: enqueueActions(({ context, enqueue }) => onLost(queueOf(enqueue), context))
              }
            ]
          }
        }
      }
    },
    completed: { meta: { waitsOn: "nothing (terminal)" }, on: { "inference.tombstone": "tombstoned" } },
    failed: { meta: { waitsOn: "nothing (terminal)" }, on: { "inference.tombstone": "tombstoned" } },
    canceled: { meta: { waitsOn: "nothing (terminal)" }, on: { "inference.tombstone": "tombstoned" } },
    timed_out: { meta: { waitsOn: "nothing (terminal)" }, on: { "inference.tombstone": "tombstoned" } },
    tombstoned: {
      meta: { waitsOn: "its reap, 30 days after DELETE" },
      entry: [{ type: fx.recordTombstone }, raise({ type: "inference.reap" }, { id: "reap", delay: reapAfterMillis })],
      on: { "inference.reap": { target: "reaped", actions: { type: fx.reapRow } } }
    },
    reaped: { type: "final" }
  }
})

export const inferenceRequestVersion = 3

/**
 * Version 1 had no asker: every request it wrote answers only its client. Version 2 announced no
 * attempt: its requests' attempts go unannounced.
 */
export const inferenceRequestMigrations = {
  2: <S extends { readonly context: unknown }>(snapshot: S) => ({
    ...snapshot,
    context: { ...(snapshot.context as object), replyTo: null }
  }),
  3: <S extends { readonly context: unknown }>(snapshot: S) => ({
    ...snapshot,
    context: { ...(snapshot.context as object), announce: null }
  })
}
