// The conversation reply scenario: "hello" to a completed reply with local/echo through `troupe
// serve` (scripts/bench/conversationServer.ts), one reply at a time, ten replies a conversation (a
// new conversation, made outside the timed span, every ten, so history stays short). Each reply is
// POST .../inputs {kind: direct_reply, text: "hello", model: local/echo}, then followed by the step
// notices the server's commits NOTIFY, heard by this process on the same database (so every
// instant is this process's clock): accept = POST until its 202; drain = 202 until the step
// narrating turn_status running commits (the input.accept step, the judging job, the reply.judged
// step that opens the turn and starts the inference request); inference = that step until the
// inference request's step into `completed` commits (its job's provider call, the streamed output's
// steps, the result); settle = that until the conversation's inference.replied step (usage, the
// settled variant and turn_status completed) commits. Steps are told apart afterwards from the
// journal (event_type by seq). Reading: p50/p99 of each part and of the whole (POST to
// turn_status completed committed); the parts' percentiles do not add up to the whole's. Every
// reply is checked completed with the echo.
import { performance } from "node:perf_hooks"
import { type StepNotice, stepChannel } from "@troupe/actors/ActorHost"
import * as Database from "@troupe/storage/Database"
import { EventBus } from "@troupe/storage/EventBus"
import { Console, Effect, Stream } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { expectStatus, newConversation, type ServedTroupe, servedTroupe } from "./conversationServer.ts"
import { formatTable } from "./measure.ts"

const measured = Number(process.env.BENCH_REPLIES ?? 200)
const warmup = 10
const repliesPerConversation = 10
const expectedText = "echo: hello"

export interface Percentiles {
  readonly p50Ms: number
  readonly p99Ms: number
}

export interface ReplyReport {
  readonly replies: number
  readonly whole: Percentiles
  readonly accept: Percentiles
  readonly drain: Percentiles
  readonly inference: Percentiles
  readonly settle: Percentiles
  /** Journal rows per reply: the conversation's and its inference request's. */
  readonly stepsPerReply: { readonly conversation: number; readonly inferenceRequest: number }
}

interface Heard extends StepNotice {
  readonly at: number
}

/** One reply as this process saw it: the POST's instants and the notices heard until it settled. */
interface Followed {
  readonly conversationId: string
  readonly sentAt: number
  readonly acceptedAt: number
  readonly notices: ReadonlyArray<Heard>
}

const percentiles = (values: ReadonlyArray<number>): Percentiles => {
  const sorted = Float64Array.from(values).sort()
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!
  return { p50Ms: at(50), p99Ms: at(99) }
}

/** Every step notice from now on, with the instant it was heard; `heard(from)` waits for more. */
const noticeLog = Effect.gen(function* () {
  const notices = yield* (yield* EventBus).subscribe(stepChannel)
  const log: Array<Heard> = []
  let wake: (() => void) | undefined
  yield* notices.pipe(
    Stream.runForEach((text) =>
      Effect.sync(() => {
        log.push({ ...(JSON.parse(text) as StepNotice), at: performance.now() })
        wake?.()
      })
    ),
    Effect.forkScoped
  )
  /** Waits until a notice at index ≥ `from` exists, answers the log. */
  const more = (from: number) =>
    Effect.promise(
      () =>
        new Promise<ReadonlyArray<Heard>>((done) => {
          if (log.length > from) return done(log)
          wake = () => {
            wake = undefined
            done(log)
          }
        })
    )
  return { log, more }
})

const runReplies = (served: ServedTroupe) =>
  Effect.gen(function* () {
    const { log, more } = yield* noticeLog
    const followed: Array<Followed> = []
    let conversationId = ""
    for (let index = 0; index < warmup + measured; index++) {
      if (index % repliesPerConversation === 0) conversationId = yield* newConversation(served)
      const from = log.length
      const sentAt = performance.now()
      const answer = yield* served.call("POST", `${served.conversations}/${conversationId}/inputs`, {
        input: { kind: "direct_reply", text: expectedText.slice("echo: ".length), model: { model: "local/echo" } }
      })
      const acceptedAt = performance.now()
      yield* expectStatus(answer, 202, "POST inputs")
      // Settled: the request's step into completed, then the conversation's next step.
      let seen = from
      let completedAt = -1
      for (;;) {
        const notices = yield* more(seen).pipe(
          Effect.timeoutOrElse({
            duration: "10 seconds",
            orElse: () => Effect.die(new Error(`reply ${index} did not settle within 10 s`))
          })
        )
        for (; seen < notices.length; seen++) {
          const notice = notices[seen]!
          if (notice.kind === "inferenceRequest" && notice.state === "completed") completedAt = seen
        }
        const settled = notices.findIndex(
          (notice, at) => at > completedAt && completedAt >= 0 && notice.actorId === conversationId
        )
        if (settled >= 0) {
          if (index >= warmup) {
            followed.push({ conversationId, sentAt, acceptedAt, notices: notices.slice(from, settled + 1) })
          }
          break
        }
      }
    }
    return followed
  })

/** The conversations' journal (seq → event type), and the checks that every reply completed with the echo. */
const journalOf = (conversationIds: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient
    const ids = [...new Set(conversationIds)]
    const rows = yield* sql<{ actor_id: string; seq: string; event_type: string }>`
      SELECT actor_id::text, seq::text, event_type FROM actor_journal
      WHERE kind = 'conversation' AND actor_id = ANY(${ids}::uuid[])`
    const [check] = yield* sql<{ replies: number; wrong: number; requests: number; requestSteps: number }>`
      WITH c AS (SELECT id FROM conversations WHERE public_id = ANY(${ids}::uuid[])),
           r AS (SELECT public_id FROM inference_requests WHERE asked_by_conversation_id IN (SELECT id FROM c))
      SELECT (SELECT count(*)::int FROM conversation_turns t JOIN c ON c.id = t.conversation_id
              WHERE t.kind = 'direct_reply') AS replies,
             (SELECT count(*)::int FROM conversation_turns t JOIN c ON c.id = t.conversation_id
              JOIN conversation_variants v ON v.public_id = t.active_variant_public_id
              WHERE t.kind = 'direct_reply' AND (t.status <> 'completed' OR v.content <> ${expectedText})) AS wrong,
             (SELECT count(*)::int FROM r) AS requests,
             (SELECT count(*)::int FROM actor_journal j JOIN r ON r.public_id = j.actor_id
              WHERE j.kind = 'inferenceRequest') AS "requestSteps"`
    if (check!.wrong > 0 || check!.replies !== check!.requests) {
      return yield* Effect.die(new Error(`replies did not all complete with the echo: ${JSON.stringify(check)}`))
    }
    const events = new Map(rows.map((row) => [`${row.actor_id}:${row.seq}`, row.event_type]))
    return {
      eventOf: (notice: StepNotice) => events.get(`${notice.actorId}:${notice.seq}`),
      stepsPerReply: {
        conversation: (rows.length - ids.length) / check!.replies,
        inferenceRequest: check!.requestSteps / check!.requests
      }
    }
  })

/** The parts of one reply, from its notices told apart by the journal. */
const partsOf = (reply: Followed, eventOf: (notice: StepNotice) => string | undefined) => {
  const own = (event: string) =>
    reply.notices.find((notice) => notice.actorId === reply.conversationId && eventOf(notice) === event)?.at
  const running = own("reply.judged")
  const result = reply.notices.find((notice) => notice.kind === "inferenceRequest" && notice.state === "completed")?.at
  const settled = own("inference.replied")
  if (running === undefined || result === undefined || settled === undefined) {
    throw new Error(`a reply's steps were not all heard: ${JSON.stringify(reply.notices.map(eventOf))}`)
  }
  return {
    whole: settled - reply.sentAt,
    accept: reply.acceptedAt - reply.sentAt,
    drain: running - reply.acceptedAt,
    inference: result - running,
    settle: settled - result
  }
}

/** The replies on one served instance; undefined (with a note) when PostgreSQL is absent. */
export const conversationReplyScenario = Effect.gen(function* () {
  const served = yield* servedTroupe("conversation-reply")
  if (served === undefined) {
    yield* Console.log("Conversation reply: skipped (it runs `troupe serve` on PostgreSQL, which did not answer)")
    return undefined
  }
  yield* Console.log(replyHeader)
  return yield* Effect.gen(function* () {
    const followed = yield* runReplies(served)
    const { eventOf, stepsPerReply } = yield* journalOf(followed.map((reply) => reply.conversationId))
    const parts = followed.map((reply) => partsOf(reply, eventOf))
    const of = (part: keyof (typeof parts)[number]) => percentiles(parts.map((each) => each[part]))
    return {
      replies: parts.length,
      whole: of("whole"),
      accept: of("accept"),
      drain: of("drain"),
      inference: of("inference"),
      settle: of("settle"),
      stepsPerReply
    } satisfies ReplyReport
  }).pipe(Effect.scoped, Effect.orDie, Effect.provide(Database.layer(served.database)))
}).pipe(Effect.scoped)

const replyHeader =
  `Conversation reply: "hello" to a completed local/echo reply through troupe serve, one at a time, ` +
  `${repliesPerConversation} a conversation, ${warmup} warm-up + ${measured} measured; parts from the step notices ` +
  "heard on the same database (accept = POST to 202, drain = to turn_status running, inference = to the request's " +
  "result, settle = to turn_status completed)"

const fixed = (value: number, digits: number) => value.toFixed(digits)

export const replyTable = (report: ReplyReport) =>
  [
    `journal rows/reply: conversation ${fixed(report.stepsPerReply.conversation, 2)}, ` +
      `inference request ${fixed(report.stepsPerReply.inferenceRequest, 2)}`,
    formatTable(
      ["replies", "whole p50/p99 ms", "accept", "drain", "inference", "settle"],
      [
        [
          String(report.replies),
          ...[report.whole, report.accept, report.drain, report.inference, report.settle].map(
            (part) => `${fixed(part.p50Ms, 1)}/${fixed(part.p99Ms, 1)}`
          )
        ]
      ]
    )
  ].join("\n")
