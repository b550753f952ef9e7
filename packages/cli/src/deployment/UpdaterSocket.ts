// The reference updater's socket (`troupe updater --fake --socket PATH`): a Unix socket, 0600,
// answering one JSON line request per connection with one JSON line (Protocol.ts), while the
// scope lives; upgrades keep walking in that scope after their request is answered.
import { chmod, lstat, rm } from "node:fs/promises"
import { createServer, type Server } from "node:net"
import { type AnswerLine, maxAnswerBytes, RequestLine } from "@troupe/domain/deployment/Protocol"
import { Effect, FiberSet, Schema } from "effect"
import { makeReferenceUpdater, type ReferenceUpdaterOptions } from "./ReferenceUpdater.ts"

const decodeRequest = Schema.decodeUnknownEffect(Schema.fromJsonString(RequestLine))

const listen = (server: Server, path: string) =>
  Effect.callback<void, Error>((resume) => {
    server.once("error", (error) => resume(Effect.fail(error)))
    server.listen(path, () => resume(Effect.void))
  })

const close = (server: Server) =>
  Effect.callback<void>((resume) => {
    server.close(() => resume(Effect.void))
  })

/** Removes a stale socket left at `path`; anything else there is left alone and refused. */
const clear = (path: string) =>
  Effect.tryPromise({
    try: async () => {
      const found = await lstat(path).catch((error: NodeJS.ErrnoException) => {
        if (error.code === "ENOENT") return undefined
        throw error
      })
      if (found === undefined) return
      if (!found.isSocket()) throw new Error(`${path} exists and is not a socket; choose another --socket`)
      await rm(path)
    },
    catch: (error) => (error instanceof Error ? error : new Error(String(error)))
  })

/** Serves the reference updater on `path` until the scope closes (a stale socket file is replaced). */
export const serveReferenceUpdater = (path: string, options: ReferenceUpdaterOptions = {}) =>
  Effect.gen(function* () {
    const runFork = yield* FiberSet.makeRuntime<never>()
    const runPromise = yield* FiberSet.makeRuntimePromise<never>()
    const updater = makeReferenceUpdater(options, (walk) => {
      runFork(walk)
    })
    const answerOf = (line: string): Effect.Effect<AnswerLine> =>
      decodeRequest(line).pipe(
        Effect.matchEffect({
          onFailure: () =>
            Effect.succeed<AnswerLine>({
              id: "",
              ok: false,
              error: { code: "invalid_request", message: "Send one JSON line {id, op, args}" }
            }),
          onSuccess: (request) =>
            updater.answer(request.op, request.args).pipe(
              Effect.match({
                onFailure: (refusal): AnswerLine => ({
                  id: request.id,
                  ok: false,
                  error: { code: refusal.code, message: refusal.message }
                }),
                onSuccess: (result): AnswerLine => ({ id: request.id, ok: true, result })
              })
            )
        })
      )
    const server = createServer((socket) => {
      let buffer = ""
      socket.setEncoding("utf8")
      socket.on("error", () => socket.destroy())
      socket.on("data", (chunk: string) => {
        if (buffer.includes("\n")) return
        buffer += chunk
        const end = buffer.indexOf("\n")
        if (end < 0 && buffer.length <= maxAnswerBytes) return
        void runPromise(answerOf(end < 0 ? "" : buffer.slice(0, end))).then((answer) =>
          socket.end(`${JSON.stringify(answer)}\n`)
        )
      })
    })
    yield* clear(path)
    yield* Effect.acquireRelease(listen(server, path), () => close(server))
    yield* Effect.tryPromise(() => chmod(path, 0o600))
  })
