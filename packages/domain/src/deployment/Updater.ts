// The service's end of the updater protocol (Protocol.ts) over the installation's Unix socket
// (SERVICE_DEPLOYMENT_SOCKET): one connection per request, one JSON line each way, bounded in
// time (check 120 s, other ops 5 s). Knows nothing of who may ask; Deployment.ts decides that.
import { randomUUID } from "node:crypto"
import { connect } from "node:net"
import { Context, Duration, Effect, Layer, Schema } from "effect"
import {
  AnswerLine,
  type ArgsOf,
  maxAnswerBytes,
  type Op,
  operations,
  type RefusalCode,
  type ResultOf,
  refusalCodes
} from "./Protocol.ts"
import { UpdaterRefused, UpdaterUnavailable } from "./UpdaterErrors.ts"

/** How long each op may take before the updater counts as unavailable (spec "Limits"). */
export const opDeadline = (op: Op): Duration.Duration => (op === "check" ? Duration.seconds(120) : Duration.seconds(5))

/** Sends one line and reads the first line of the answer; the connection closes either way. */
const exchange = (path: string, line: string) =>
  Effect.callback<string, UpdaterUnavailable>((resume) => {
    const socket = connect({ path })
    let buffer = ""
    let settled = false
    const settle = (outcome: Effect.Effect<string, UpdaterUnavailable>) => {
      if (settled) return
      settled = true
      socket.destroy()
      resume(outcome)
    }
    const unavailable = (message: string) => settle(Effect.fail(new UpdaterUnavailable({ message })))
    socket.setEncoding("utf8")
    socket.once("connect", () => socket.write(`${line}\n`))
    socket.on("data", (chunk: string) => {
      buffer += chunk
      const end = buffer.indexOf("\n")
      if (end >= 0) settle(Effect.succeed(buffer.slice(0, end)))
      else if (buffer.length > maxAnswerBytes) unavailable("The updater's answer is too long")
    })
    socket.once("error", (error: NodeJS.ErrnoException) =>
      unavailable(`The updater does not answer (${error.code ?? error.message})`)
    )
    socket.once("close", () => unavailable("The updater closed the connection without answering"))
    return Effect.sync(() => {
      settled = true
      socket.destroy()
    })
  })

const decodeAnswer = Schema.decodeUnknownEffect(Schema.fromJsonString(AnswerLine))
const isRefusalCode = (code: string): code is RefusalCode => (refusalCodes as ReadonlyArray<string>).includes(code)

export interface UpdaterShape {
  /** True when SERVICE_DEPLOYMENT_SOCKET names a socket. */
  readonly configured: boolean
  /** Runs one op; an unset socket, a silent or malformed updater is UpdaterUnavailable. */
  readonly call: <O extends Op>(
    op: O,
    args: ArgsOf<O>
  ) => Effect.Effect<ResultOf<O>, UpdaterUnavailable | UpdaterRefused>
}

export class Updater extends Context.Service<Updater, UpdaterShape>()("@troupe/domain/deployment/Updater") {
  /** The client of the updater at `socket`; undefined: none is configured. */
  static readonly layer = (socket: string | undefined) => Layer.succeed(Updater, makeUpdater(socket))
}

export const makeUpdater = (socket: string | undefined): UpdaterShape => ({
  configured: socket !== undefined,
  call: <O extends Op>(op: O, args: ArgsOf<O>): Effect.Effect<ResultOf<O>, UpdaterUnavailable | UpdaterRefused> =>
    Effect.gen(function* () {
      if (socket === undefined) {
        return yield* new UpdaterUnavailable({ message: "No updater is configured (SERVICE_DEPLOYMENT_SOCKET)" })
      }
      const id = randomUUID()
      const deadline = opDeadline(op)
      const line = yield* exchange(socket, JSON.stringify({ id, op, args })).pipe(
        Effect.timeoutOrElse({
          duration: deadline,
          orElse: () =>
            Effect.fail(
              new UpdaterUnavailable({
                message: `The updater did not answer ${op} within ${Duration.format(deadline)}`
              })
            )
        })
      )
      const outside = () => new UpdaterUnavailable({ message: `The updater answered ${op} outside the protocol` })
      const answer = yield* Effect.mapError(decodeAnswer(line), outside)
      if (answer.id !== id) return yield* outside()
      if (!answer.ok) {
        const { code, message } = answer.error
        return yield* isRefusalCode(code) ? new UpdaterRefused({ code, message }) : outside()
      }
      const schema = operations[op].result as unknown as Schema.Codec<ResultOf<O>>
      return yield* Effect.mapError(Schema.decodeUnknownEffect(schema)(answer.result), outside)
    })
})
