// The reference runner (`troupe runner --config FILE`): connects as a runner, announces the
// configured tools, and answers its inbox's tool calls by running their commands: claim, run
// (extending the claim while the command runs past half of it), commit (retried through an outage
// until the claim's deadline); one line per action, and
// one when it stops saying what became of the calls in flight.
import type { Bearer } from "@troupe/client/Bearer"
import { makeTroupeClient } from "@troupe/client/Client"
import { type InboxClient, inboxWork, makeInboxClient } from "@troupe/client/Inbox"
import type { Commit, InboxTask } from "@troupe/contracts/executor/Inbox"
import { Clock, Console, Data, Duration, Effect, Fiber, FiberMap, Ref, Schedule, Stream } from "effect"
import { HttpClient } from "effect/http"
import { type Reachability, transportReason, watchReachability } from "./Reachability.ts"
import { announcementOf, type RunnerConfig, type ToolConfig } from "./RunnerConfig.ts"
import { connectRunner } from "./RunnerCredential.ts"
import { commitOf, runTool } from "./ToolCommand.ts"

/** The longest extension the server grants (larger asks are refused, not capped). */
const longestExtensionMs = 3_600_000
const retryTransport = Schedule.min([Schedule.exponential(Duration.millis(500)), Schedule.spaced(Duration.seconds(30))])

const tagOf = (error: unknown) => (error as { readonly _tag?: string } | undefined)?._tag
/** Failures worth trying again: the server unreachable or overloaded, an answer outside the contract. */
const isTransient = (error: unknown) => {
  const tag = tagOf(error)
  return tag === "HttpClientError" || tag === "RateLimited"
}
const codeOf = (error: unknown) =>
  (error as { readonly error?: { readonly code?: string } } | undefined)?.error?.code ??
  transportReason(error) ??
  tagOf(error) ??
  String(error)

const say = (line: string) => Console.log(line)

/** The server would not take the configured tools. */
export class AnnouncementRefused extends Data.TaggedError("AnnouncementRefused")<{ readonly code: string }> {
  override get message() {
    return `The server refused the announcement of the tools: ${this.code}`
  }
}

/** Retries `effect` while it fails transiently, a few times (a claim or commit has a deadline). */
const persistently = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  effect.pipe(
    Effect.retry({
      while: isTransient,
      schedule: Schedule.max([Schedule.exponential(Duration.millis(250)), Schedule.recurs(6)])
    })
  )

/**
 * Retries `effect` while it fails transiently and the claim's deadline (`deadlineMs`, as last
 * extended) is still ahead: a result outlives an outage of the server for as long as the server
 * would take it, and is left to the expiry rule only once the deadline has passed.
 */
export const untilDeadline = <A, E, R>(effect: Effect.Effect<A, E, R>, deadlineMs: Effect.Effect<number>) => {
  const attempt = (delayMs: number): Effect.Effect<A, E, R> =>
    effect.pipe(
      Effect.catchIf(isTransient, (error) =>
        Effect.gen(function* () {
          if ((yield* Clock.currentTimeMillis) >= (yield* deadlineMs)) return yield* Effect.fail(error)
          yield* Effect.sleep(Duration.millis(delayMs))
          return yield* attempt(Math.min(delayMs * 2, 5_000))
        })
      )
    )
  return attempt(250)
}

export interface RunnerOptions {
  readonly config: RunnerConfig
  readonly baseUrl: string
  readonly statePath: string
  readonly identifier: string
  readonly displayName: string
}

/** One tool call, from claim to commit; never fails (what goes wrong is printed). */
const answer = (inbox: InboxClient, tools: ReadonlyMap<string, ToolConfig>, task: InboxTask) =>
  Effect.gen(function* () {
    const where = `${task.run_public_id}/${task.task_key}`
    const name = task.tool_name ?? "?"
    const claimed = yield* persistently(inbox.claim(task.run_public_id, task.task_key)).pipe(
      Effect.map((answer) => answer.claim),
      Effect.catch((error) => Effect.as(say(`not claimed ${where} ${name}: ${codeOf(error)}`), undefined))
    )
    if (claimed === undefined) return
    const token = claimed.claim_token
    yield* say(`claimed ${where} ${name}`)
    const tool = tools.get(name)
    const timeoutMs = task.timeout_ms
    const deadline = yield* Ref.make(claimed.deadline_at.getTime())
    const fields: Omit<Commit, "claim_token"> =
      tool === undefined
        ? { content: `This runner does not serve the tool ${name}.`, outcome: "failed" }
        : yield* Effect.scoped(
            Effect.gen(function* () {
              const keepClaim = Effect.gen(function* () {
                const now = yield* Clock.currentTimeMillis
                yield* Effect.sleep(Duration.millis(Math.max(250, ((yield* Ref.get(deadline)) - now) / 2)))
                const extended = yield* inbox
                  .extend(task.run_public_id, task.task_key, token, Math.min(timeoutMs, longestExtensionMs))
                  .pipe(Effect.option)
                if (extended._tag === "None") return yield* Effect.sleep(Duration.seconds(1))
                yield* Ref.set(deadline, extended.value.claim.deadline_at.getTime())
                yield* say(`extended ${where} ${name} until ${extended.value.claim.deadline_at.toISOString()}`)
              }).pipe(Effect.forever)
              yield* Effect.forkScoped(keepClaim)
              return yield* runTool(tool.command, task.tool_input ?? {}, Duration.millis(timeoutMs)).pipe(
                Effect.map((run) => commitOf(run, timeoutMs)),
                Effect.catch((error) =>
                  Effect.succeed({
                    content: `The tool could not be started: ${error.message}`,
                    outcome: "failed"
                  } as const)
                )
              )
            })
          )
    const commit = (body: Omit<Commit, "claim_token">) =>
      untilDeadline(inbox.commit(task.run_public_id, task.task_key, { ...body, claim_token: token }), Ref.get(deadline))
    const settled = yield* commit(fields).pipe(
      Effect.catchIf(
        (error) => tagOf(error) === "Unprocessable" || tagOf(error) === "ContentTooLarge",
        (error) =>
          Effect.andThen(
            say(`refused ${where} ${name}: ${codeOf(error)}; committing the refusal as a failure`),
            commit({ content: `The tool's result was refused: ${codeOf(error)}.`, outcome: "failed" })
          )
      ),
      Effect.map((answer) => answer.task),
      Effect.catch((error) => Effect.as(say(`failed ${where} ${name}: ${codeOf(error)}`), undefined))
    )
    if (settled !== undefined) yield* say(`committed ${where} ${name}: ${settled.status}`)
  })

interface Serving {
  readonly reachability: Reachability
  /** The calls in flight, by RUN/KEY. */
  readonly working: FiberMap.FiberMap<string>
}

/** Connects, announces, and answers the inbox until the server refuses the credential. */
const serveOnce = (options: RunnerOptions, { reachability, working }: Serving) =>
  Effect.gen(function* () {
    const { bearer, executor } = yield* connectRunner(options).pipe(
      // An unreachable server is said by its outage's line; another passing failure here.
      Effect.tapError((error) =>
        isTransient(error) && transportReason(error) === undefined
          ? say(`connecting to ${options.baseUrl} failed (${codeOf(error)}); trying again`)
          : Effect.void
      ),
      Effect.retry({ while: isTransient, schedule: retryTransport })
    )
    yield* announce(options, bearer)
    yield* say(
      `serving ${options.config.tools.map((tool) => tool.name).join(", ") || "no tools"} as ` +
        `${executor.display_name} (${executor.public_id})`
    )
    const inbox = yield* makeInboxClient({ baseUrl: options.baseUrl, bearer })
    const tools = new Map(options.config.tools.map((tool) => [tool.name, tool]))
    yield* inboxWork({
      baseUrl: options.baseUrl,
      bearer,
      onConnection: (up) => (up ? Effect.andThen(reachability.answered, say("inbox: subscribed")) : Effect.void),
      onPolling: say("inbox: cable down; polling until it is back"),
      // A read the transport failed is the outage's, whose line says it once.
      onReadFailed: (error) =>
        transportReason(error) === undefined
          ? say(`inbox read failed (${codeOf(error)}); trying again at the next wake`)
          : Effect.void,
      onCanceled: (message) => {
        const key = `${message.run_public_id}/${message.task_key}`
        return Effect.andThen(FiberMap.remove(working, key), say(`canceled ${key}`))
      }
    }).pipe(
      Stream.runForEach((task) => {
        const where = `${task.run_public_id}/${task.task_key}`
        if (task.kind !== "tool_call") return say(`skipped ${where}: a ${task.kind} row is not a runner's`)
        if (task.claimed) return say(`skipped ${where}: claimed already (by this runner before a restart)`)
        return Effect.asVoid(FiberMap.run(working, where, { onlyIfMissing: true })(answer(inbox, tools, task)))
      })
    )
  })

const announce = (options: RunnerOptions, bearer: Bearer) =>
  Effect.gen(function* () {
    const client = yield* makeTroupeClient({ baseUrl: options.baseUrl, bearer })
    yield* client.executor.announce({ payload: announcementOf(options.config) }).pipe(
      Effect.retry({ while: isTransient, schedule: retryTransport }),
      Effect.mapError((error) => new AnnouncementRefused({ code: codeOf(error) }))
    )
  })

/** The runner's last line: the calls in flight are interrupted, their commands stopped, uncommitted. */
const stoppedLine = (inFlight: number) =>
  inFlight === 0
    ? "stopped; no calls were in flight"
    : `stopped; ${inFlight === 1 ? "1 call" : `${inFlight} calls`} in flight left uncommitted ` +
      "(commands stopped; each claim lapses at its deadline)"

/**
 * Serves until interrupted (SIGTERM, Ctrl-C), then says so; a refused credential connects again
 * through the device flow (RunnerCredential.ts says so).
 */
export const runRunner = (options: RunnerOptions) =>
  Effect.gen(function* () {
    const reachability = watchReachability({ baseUrl: options.baseUrl, client: yield* HttpClient.HttpClient, say })
    const working = yield* FiberMap.make<string>()
    // Served in a fiber of its own: an interruption reaches the join below first, so the last
    // line is said before the cable and the calls in flight are torn down.
    const serving = yield* serveOnce(options, { reachability, working }).pipe(
      Effect.scoped,
      Effect.catchTag("Unauthorized", () => FiberMap.clear(working)),
      Effect.forever,
      Effect.provideService(HttpClient.HttpClient, reachability.client),
      Effect.forkScoped
    )
    return yield* Fiber.join(serving).pipe(
      Effect.onInterrupt(() => Effect.flatMap(FiberMap.size(working), (inFlight) => say(stoppedLine(inFlight))))
    )
  }).pipe(Effect.scoped)
