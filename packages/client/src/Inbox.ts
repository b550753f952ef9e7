// The executor inbox for runners and tool providers: typed calls over the contract's inbox group
// (list, claim, claimCheck, extend, commit, progress) with a transport credential, and
// `inboxWork`, the rows as they arrive: woken by the cable's work_available, polled while the
// socket is down, telling its caller when polling carries the work and when a read fails.
import type { WorkCanceled } from "@troupe/contracts/cable/ExecutorInboxChannel"
import type { Unauthorized } from "@troupe/contracts/Errors"
import {
  type Commit,
  ExecutorInboxGroup,
  type InboxTask,
  type ProcessFrame,
  type TaskFrame
} from "@troupe/contracts/executor/Inbox"
import { Duration, Effect, Queue, Ref, Stream } from "effect"
import { HttpClient } from "effect/http"
import { HttpApi, HttpApiClient } from "effect/http-api"
import { type Bearer, withBearer } from "./Bearer.ts"
import { watchInbox } from "./InboxCable.ts"

const InboxApi = HttpApi.make("executorInbox").add(ExecutorInboxGroup)

export interface InboxClientConfig {
  /** Where the server answers, e.g. http://localhost:4000. */
  readonly baseUrl: string | URL
  /** The executor's transport credential. */
  readonly bearer: Bearer
}

/** The inbox calls over the `HttpClient` in context. */
export const makeInboxClient = (config: InboxClientConfig) =>
  Effect.gen(function* () {
    const inbox = yield* HttpApiClient.group(InboxApi, {
      group: "executorInbox",
      httpClient: withBearer(yield* HttpClient.HttpClient, config.bearer),
      baseUrl: config.baseUrl
    })
    const row = (runPublicId: string, taskKey: string) => ({ run_public_id: runPublicId, task_key: taskKey })
    return {
      /** One page of rows (by dispatch time, then key). */
      list: (page: { readonly after?: string | undefined; readonly limit?: number | undefined } = {}) =>
        inbox.list({
          query: {
            ...(page.after === undefined ? {} : { after: page.after }),
            ...(page.limit === undefined ? {} : { limit: String(page.limit) })
          }
        }),
      /** Claims a tool_call row: `{task, claim: {claim_token, deadline_at}}`. */
      claim: (runPublicId: string, taskKey: string) => inbox.claim({ params: row(runPublicId, taskKey) }),
      /** Whether the claim `claimToken` is still active. */
      claimCheck: (runPublicId: string, taskKey: string, claimToken: string) =>
        inbox.claimCheck({ params: row(runPublicId, taskKey), headers: { "claim-token": claimToken } }),
      /** Moves the deadline to now + min(timeoutMs, the announced timeout), one hour at most. */
      extend: (runPublicId: string, taskKey: string, claimToken: string, timeoutMs: number) =>
        inbox.extend({
          params: row(runPublicId, taskKey),
          payload: { claim_token: claimToken, timeout_ms: timeoutMs }
        }),
      /** Settles the task with its result; answers the run's task row. */
      commit: (runPublicId: string, taskKey: string, commit: Commit) =>
        inbox.commit({ params: row(runPublicId, taskKey), payload: commit }),
      /** Relays a frame on the run's progress feed; `accepted` is false when it was dropped. */
      progress: (frame: TaskFrame | ProcessFrame) => inbox.progress({ payload: { frame } })
    } as const
  })

export type InboxClient = Effect.Success<ReturnType<typeof makeInboxClient>>

/** Why a read of the inbox failed, short of a refused credential (which ends `inboxWork`). */
export type InboxReadError = Exclude<Effect.Error<ReturnType<InboxClient["list"]>>, Unauthorized>

export interface InboxWorkOptions extends InboxClientConfig {
  /** How often the inbox is read while the cable is down (2 s). */
  readonly pollInterval?: Duration.Input | undefined
  /** How often it is read while the cable is up, in case a notice was lost (30 s). */
  readonly sweepInterval?: Duration.Input | undefined
  /** The kernel canceled a row this executor claimed. */
  readonly onCanceled?: ((message: typeof WorkCanceled.Type) => Effect.Effect<void>) | undefined
  /**
   * The cable's subscription came up (true) or went down (false). A drop alone does not say the
   * inbox is polled: the cable drops too when the whole server is out of reach (see `onPolling`).
   */
  readonly onConnection?: ((online: boolean) => Effect.Effect<void>) | undefined
  /**
   * The cable dropped while the server answers (the first read after the drop answered): the
   * inbox is read every `pollInterval` until the cable is back. Once a drop; not when that read
   * failed, as when the whole server is out of reach (`onReadFailed` has that).
   */
  readonly onPolling?: Effect.Effect<void> | undefined
  /**
   * A read failed (the server out of reach, a refusal, an answer outside the contract); it is
   * tried again at the next wake. Without it, a warning is logged.
   */
  readonly onReadFailed?: ((error: InboxReadError) => Effect.Effect<void>) | undefined
}

/** A failure in a few words: the refusal's code, or the transport's reason and status. */
const summary = (error: unknown) => {
  const failure = error as {
    readonly _tag?: string
    readonly error?: { readonly code?: string }
    readonly reason?: { readonly _tag?: string; readonly response?: { readonly status?: number } }
  }
  if (failure.error?.code !== undefined) return failure.error.code
  const status = failure.reason?.response?.status
  return [failure._tag, failure.reason?._tag, status].filter((part) => part !== undefined).join(" ")
}

/**
 * The subscription's state. "dropped": it ended and no read has started since; the next read's
 * outcome says whether the server still answers (the inbox is polled) or is away too.
 */
type CableState = "connecting" | "up" | "dropped" | "down"

const identity = (task: InboxTask) =>
  `${task.run_public_id}/${task.task_key}/${task.started_at?.toISOString() ?? ""}/${task.kind}`

/**
 * The inbox's rows as they appear, each once while it stays listed (a row that leaves and comes
 * back, e.g. a retried task's new generation, comes again). The whole inbox is read at start,
 * whenever the cable says work_available or (re)subscribes, every `pollInterval` while the cable
 * is down and every `sweepInterval` while it is up (a lost notice costs that long at most); the
 * cable reconnects with backoff. A failed read is retried at the next wake; a refusal of the
 * credential (401 after renewal) ends the stream.
 */
export const inboxWork = (options: InboxWorkOptions) =>
  Stream.unwrap(
    Effect.gen(function* () {
      const client = yield* makeInboxClient(options)
      const wakes = yield* Queue.sliding<void>(1)
      const cable = yield* Ref.make<CableState>("connecting")
      const wake = Queue.offer(wakes, undefined)
      yield* wake
      yield* watchInbox({
        baseUrl: options.baseUrl,
        bearer: options.bearer,
        onSubscribed: (up) =>
          Effect.andThen(
            Ref.set(cable, up ? "up" : "dropped"),
            Effect.andThen(options.onConnection?.(up) ?? Effect.void, wake)
          ),
        onMessage: (message) =>
          message.type === "work_available"
            ? wake
            : message.type === "work_canceled"
              ? (options.onCanceled?.(message) ?? Effect.void)
              : Effect.void
      }).pipe(Effect.forkScoped)
      const poll = Duration.fromInputUnsafe(options.pollInterval ?? Duration.seconds(2))
      const sweep = Duration.toMillis(Duration.fromInputUnsafe(options.sweepInterval ?? Duration.seconds(30)))
      yield* Effect.gen(function* () {
        let quiet = 0
        while (true) {
          yield* Effect.sleep(poll)
          quiet += Duration.toMillis(poll)
          if ((yield* Ref.get(cable)) !== "up" || quiet >= sweep) {
            quiet = 0
            yield* wake
          }
        }
      }).pipe(Effect.forkScoped)

      const readAll = Effect.gen(function* () {
        const rows: Array<InboxTask> = []
        let after: string | undefined
        do {
          const page = yield* client.list({ after, limit: 200 })
          rows.push(...page.tasks)
          after = page.pagination.next_after ?? undefined
        } while (after !== undefined)
        return rows
      })

      /** Whether the read about to start is the first since the cable dropped. */
      const firstSinceDrop = Ref.modify(cable, (state): [boolean, CableState] =>
        state === "dropped" ? [true, "down"] : [false, state]
      )
      /** That read answered: polling carries the work, unless the cable came back meanwhile. */
      const polling = Effect.flatMap(Ref.get(cable), (state) =>
        state === "down" ? (options.onPolling ?? Effect.void) : Effect.void
      )

      let listed = new Set<string>()
      const fresh = (rows: ReadonlyArray<InboxTask>) => {
        const now = new Set(rows.map(identity))
        const unseen = rows.filter((task) => !listed.has(identity(task)))
        listed = now
        return unseen
      }

      return Stream.fromQueue(wakes).pipe(
        Stream.mapEffect(() =>
          Effect.flatMap(firstSinceDrop, (first) =>
            readAll.pipe(
              Effect.tap(() => (first ? polling : Effect.void)),
              Effect.map(fresh),
              Effect.catchIf(
                (error): error is InboxReadError => error._tag !== "Unauthorized",
                (error) =>
                  Effect.as(
                    options.onReadFailed?.(error) ??
                      Effect.logWarning(`inbox read failed (${summary(error)}); retrying at the next wake`),
                    []
                  )
              )
            )
          )
        ),
        Stream.flatMap((rows) => Stream.fromIterable(rows))
      )
    })
  )
