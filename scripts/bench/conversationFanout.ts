// The conversation fan-out scenario: one conversation's feed on the cable of `troupe serve`
// (scripts/bench/conversationServer.ts) to 100 and 1,000 subscribers, each its own WebSocket
// (`ws`, no compression) speaking the Action Cable protocol: welcome, subscribe to
// ConversationChannel {workspace_id, conversation_id} (live), confirmation, then the items as
// `{identifier, message: {event}}` frames. A trigger is a message input POSTed to the
// conversation: one step (accepted and drained into a completed turn), four feed items, which
// every subscriber's durable feed reads after the step's notice and sends. Against it, in the same
// run, a bare twin (scripts/bench/fanoutTwin.ts): a `ws` server in its own process holding as many
// clients, which on a PostgreSQL notification sends the same frames (the bytes the first Troupe
// subscriber received in the trigger just before) to every client. Both clocks start where the
// work starts, as heard by this process on the same database: Troupe's at the step notice of the
// conversation (the server hears the same NOTIFY), the twin's at the notification carrying its
// frames. Delivery latency = a frame's arrival at a subscriber (this process) − that instant.
// Triggers alternate (Troupe, then the twin with the frames Troupe just sent), after warm-up
// triggers of each. Reading: p50/p99 over every frame at every subscriber, p50/p99 of each
// trigger's last delivery, ratio = Troupe p99 ÷ bare p99 (goal ≤ 1.5), and the server process's
// CPU ms per trigger.
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import { type StepNotice, stepChannel } from "@troupe/actors/ActorHost"
import { cablePath } from "@troupe/http/cable/Cable"
import * as Database from "@troupe/storage/Database"
import { EventBus } from "@troupe/storage/EventBus"
import { Console, Effect, Stream } from "effect"
import { WebSocket } from "ws"
import { expectStatus, newConversation, type ServedTroupe, servedTroupe } from "./conversationServer.ts"
import { awaitAnswer, cpuMicros, freePort, startProcess } from "./http.ts"
import { formatTable } from "./measure.ts"

const levels = [100, 1000]
const warmupTriggers = 5
const measuredTriggers = Number(process.env.BENCH_FANOUT_TRIGGERS ?? 30)
const goal = 1.5
const twinChannel = "troupe_bench_fanout"
const twinScript = new URL("./fanoutTwin.ts", import.meta.url).pathname
/** Sockets opened at once while subscribing. */
const opening = 50

export interface Delivery {
  /** Every frame at every subscriber. */
  readonly p50Ms: number
  readonly p99Ms: number
  /** The last frame of each trigger to reach its last subscriber. */
  readonly lastP50Ms: number
  readonly lastP99Ms: number
}

export interface FanoutLevel {
  readonly subscribers: number
  readonly framesPerTrigger: number
  readonly triggers: number
  readonly troupe: Delivery
  readonly bare: Delivery
  /** Troupe p99 ÷ bare p99. */
  readonly ratio: number
  readonly goal: number
  readonly serverCpuMillisPerTrigger: number
}

/** The frames one trigger is expected to bring, as they arrive. */
interface Round {
  remaining: number
  readonly arrivals: Array<number>
  /** The first subscriber's frames, as sent. */
  readonly captured: Array<string>
  readonly finished: Promise<void>
  readonly finish: () => void
}

const newRound = (frames: number): Round => {
  let finish = () => {}
  const finished = new Promise<void>((done) => {
    finish = done
  })
  return { remaining: frames, arrivals: [], captured: [], finished, finish }
}

/** The subscribers of one side, counting the broadcast frames (`{"identifier"…`) of the current round. */
class Audience {
  round: Round | undefined
  readonly sockets: Array<WebSocket> = []

  attach(socket: WebSocket) {
    const first = this.sockets.length === 0
    this.sockets.push(socket)
    socket.on("message", (data: Buffer) => {
      const round = this.round
      // Pings, welcomes and confirmations begin {"type"; broadcasts {"identifier".
      if (round === undefined || data[2] !== 0x69) return
      round.arrivals.push(performance.now())
      if (first) round.captured.push(data.toString())
      if (--round.remaining === 0) round.finish()
    })
  }

  close() {
    for (const socket of this.sockets) socket.terminate()
  }
}

/** A subscriber of the conversation on Troupe's cable, once confirmed. */
const troupeSubscriber = (served: ServedTroupe, identifier: string) =>
  new Promise<WebSocket>((done, fail) => {
    const socket = new WebSocket(
      `${served.baseUrl.replace(/^http/, "ws")}${cablePath}`,
      ["actioncable-v1-json", "actioncable-unsupported"],
      { headers: { authorization: `Bearer ${served.token}` }, perMessageDeflate: false }
    )
    socket.once("error", fail)
    const handshake = (data: Buffer) => {
      const frame = JSON.parse(data.toString())
      if (frame.type === "welcome") socket.send(JSON.stringify({ command: "subscribe", identifier }))
      else if (frame.type === "confirm_subscription") {
        socket.off("message", handshake)
        done(socket)
      } else if (frame.type !== "ping") fail(new Error(`the cable answered ${data.toString()}`))
    }
    socket.on("message", handshake)
  })

const twinSubscriber = (url: string) =>
  new Promise<WebSocket>((done, fail) => {
    const socket = new WebSocket(url, { perMessageDeflate: false })
    socket.once("error", fail)
    socket.once("open", () => done(socket))
  })

/** Resolves `next()` with the instant this process hears the next message of a bus channel that `matches`. */
const heard = (channel: string, matches: (payload: string) => boolean) =>
  Effect.gen(function* () {
    const messages = yield* (yield* EventBus).subscribe(channel)
    let waiting: ((at: number) => void) | undefined
    yield* messages.pipe(
      Stream.runForEach((payload) =>
        Effect.sync(() => {
          if (waiting === undefined || !matches(payload)) return
          waiting(performance.now())
          waiting = undefined
        })
      ),
      Effect.forkScoped
    )
    return () =>
      new Promise<number>((done) => {
        waiting = done
      })
  })

const percentile = (sorted: Float64Array, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!

/** Latencies of every frame (arrival − start) and of each trigger's last frame. */
const deliveryOf = (triggers: ReadonlyArray<{ readonly startedAt: number; readonly round: Round }>): Delivery => {
  const every = Float64Array.from(
    triggers.flatMap(({ startedAt, round }) => round.arrivals.map((at) => at - startedAt))
  ).sort()
  const last = Float64Array.from(triggers.map(({ startedAt, round }) => Math.max(...round.arrivals) - startedAt)).sort()
  return {
    p50Ms: percentile(every, 50),
    p99Ms: percentile(every, 99),
    lastP50Ms: percentile(last, 50),
    lastP99Ms: percentile(last, 99)
  }
}

/** Waits for a round to finish; dies after 20 s with how many frames were missing. */
const awaitRound = (round: Round, side: string) =>
  Effect.promise(() => round.finished).pipe(
    Effect.timeoutOrElse({
      duration: "20 seconds",
      orElse: () => Effect.die(new Error(`${side}: ${round.remaining} frames did not arrive within 20 s`))
    })
  )

const runLevel = (served: ServedTroupe, twinUrl: string, subscribers: number) =>
  Effect.gen(function* () {
    const bus = yield* EventBus
    const conversationId = yield* newConversation(served)
    const identifier = JSON.stringify({
      channel: "ConversationChannel",
      workspace_id: served.workspaceId,
      conversation_id: conversationId
    })
    const troupe = new Audience()
    const twin = new Audience()
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        troupe.close()
        twin.close()
      })
    )
    const open = (audience: Audience, connect: () => Promise<WebSocket>) =>
      Effect.forEach(
        Array.from({ length: subscribers }),
        () => Effect.map(Effect.promise(connect), (socket) => audience.attach(socket)),
        { concurrency: opening, discard: true }
      )
    yield* open(troupe, () => troupeSubscriber(served, identifier))
    yield* open(twin, () => twinSubscriber(twinUrl))
    const nextStep = yield* heard(
      stepChannel,
      (payload) => (JSON.parse(payload) as StepNotice).actorId === conversationId
    )
    const nextTwin = yield* heard(twinChannel, () => true)

    let framesPerTrigger = 0
    let serverCpu = 0
    const troupeTrigger = Effect.gen(function* () {
      const round = newRound(framesPerTrigger === 0 ? Number.POSITIVE_INFINITY : framesPerTrigger * subscribers)
      troupe.round = round
      const step = nextStep()
      const cpuBefore = yield* cpuMicros(served.pid)
      const answer = yield* served.call("POST", `${served.conversations}/${conversationId}/inputs`, {
        input: { kind: "message", text: "hello" }
      })
      yield* expectStatus(answer, 202, "POST inputs")
      const startedAt = yield* Effect.promise(() => step)
      if (framesPerTrigger === 0) {
        // The first trigger counts what one step brings: whatever arrived once the feed went quiet.
        yield* Effect.sleep("1500 millis")
        framesPerTrigger = round.captured.length
        if (framesPerTrigger === 0 || round.arrivals.length !== framesPerTrigger * subscribers) {
          return yield* Effect.die(new Error(`uneven first trigger: ${round.arrivals.length} frames`))
        }
      } else yield* awaitRound(round, "troupe")
      serverCpu += (yield* cpuMicros(served.pid)) - cpuBefore
      troupe.round = undefined
      return { startedAt, round }
    })
    const twinTrigger = (frames: ReadonlyArray<string>) =>
      Effect.gen(function* () {
        const round = newRound(frames.length * subscribers)
        twin.round = round
        const notified = nextTwin()
        yield* bus.publish(twinChannel, JSON.stringify(frames))
        const startedAt = yield* Effect.promise(() => notified)
        yield* awaitRound(round, "twin")
        twin.round = undefined
        if (JSON.stringify(round.captured) !== JSON.stringify(frames)) {
          return yield* Effect.die(new Error("the twin's frames differ from Troupe's"))
        }
        return { startedAt, round }
      })

    for (let index = 0; index < warmupTriggers; index++) yield* twinTrigger((yield* troupeTrigger).round.captured)
    serverCpu = 0
    const troupeTriggers: Array<{ startedAt: number; round: Round }> = []
    const twinTriggers: Array<{ startedAt: number; round: Round }> = []
    for (let index = 0; index < measuredTriggers; index++) {
      const sent = yield* troupeTrigger
      troupeTriggers.push(sent)
      twinTriggers.push(yield* twinTrigger(sent.round.captured))
    }
    const troupeDelivery = deliveryOf(troupeTriggers)
    const bareDelivery = deliveryOf(twinTriggers)
    return {
      subscribers,
      framesPerTrigger,
      triggers: measuredTriggers,
      troupe: troupeDelivery,
      bare: bareDelivery,
      ratio: troupeDelivery.p99Ms / bareDelivery.p99Ms,
      goal,
      serverCpuMillisPerTrigger: serverCpu / 1000 / measuredTriggers
    } satisfies FanoutLevel
  }).pipe(Effect.scoped)

/** Both levels on one served instance and one twin; undefined (with a note) when PostgreSQL is absent. */
export const conversationFanoutScenario = Effect.gen(function* () {
  const served = yield* servedTroupe("conversation-fanout")
  if (served === undefined) {
    yield* Console.log("Conversation fan-out: skipped (it runs `troupe serve` on PostgreSQL, which did not answer)")
    return undefined
  }
  yield* Console.log(fanoutHeader)
  const dir = yield* Effect.acquireRelease(
    Effect.promise(() => mkdtemp(join(tmpdir(), "troupe-fanout-twin-"))),
    (path) => Effect.promise(() => rm(path, { recursive: true, force: true }))
  )
  const port = yield* Effect.promise(freePort)
  const twinUrl = `http://127.0.0.1:${port}`
  const log = join(dir, "twin.log")
  yield* startProcess(
    [twinScript],
    { PORT: String(port), DATABASE_URL: served.databaseUrl, BENCH_TWIN_CHANNEL: twinChannel },
    log
  )
  yield* awaitAnswer(twinUrl, log)
  return yield* Effect.forEach(levels, (subscribers) =>
    runLevel(served, twinUrl.replace(/^http/, "ws"), subscribers)
  ).pipe(Effect.provide(Database.layer(served.database)))
}).pipe(Effect.scoped)

const fanoutHeader =
  `Conversation fan-out: one conversation's feed on the cable (ConversationChannel) to ${levels.join(" and ")} ` +
  "WebSocket subscribers, a message input per trigger, against a bare `ws` twin sending the same frames to as many " +
  `clients on a notification; ${warmupTriggers} warm-up + ${measuredTriggers} measured triggers a side, alternating; ` +
  "latency from the step's notice (the twin's notification) as this process hears it to each frame's arrival"

const fixed = (value: number, digits: number) => value.toFixed(digits)

export const fanoutTable = (levels: ReadonlyArray<FanoutLevel>) =>
  formatTable(
    [
      "subscribers",
      "frames/trigger",
      "troupe p50/p99 ms",
      "bare p50/p99 ms",
      "ratio p99",
      "goal",
      "last frame p50/p99 ms troupe | bare",
      "server CPU ms/trigger"
    ],
    levels.map((level) => [
      String(level.subscribers),
      String(level.framesPerTrigger),
      `${fixed(level.troupe.p50Ms, 2)}/${fixed(level.troupe.p99Ms, 2)}`,
      `${fixed(level.bare.p50Ms, 2)}/${fixed(level.bare.p99Ms, 2)}`,
      fixed(level.ratio, 2),
      `≤ ${level.goal}`,
      `${fixed(level.troupe.lastP50Ms, 1)}/${fixed(level.troupe.lastP99Ms, 1)} | ` +
        `${fixed(level.bare.lastP50Ms, 1)}/${fixed(level.bare.lastP99Ms, 1)}`,
      fixed(level.serverCpuMillisPerTrigger, 1)
    ])
  )
