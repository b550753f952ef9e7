// The local channel of a server on the embedded database, which only one process may open: the
// administration commands (Administration.ts) served as RPC over a Unix socket in the data
// directory, and the CLI's end of it. Only the OS user running the server reaches it: the socket
// is 0600 inside a 0700 directory, made before the socket is bound.
import { chmod, mkdir, rm } from "node:fs/promises"
import { connect } from "node:net"
import { dirname } from "node:path"
import { NodeSocket, NodeSocketServer } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { RpcClient, type RpcClientError, RpcSerialization, RpcServer } from "effect/rpc"
import { SocketServer } from "effect/socket"
import { Administration, AdministrationRpcs, administrationHandlers, Refusal } from "./Administration.ts"

/** The server's end: binds the socket (replacing one a dead server left) while the layer lives. */
const socketServer = (path: string) =>
  Layer.effect(
    SocketServer.SocketServer,
    Effect.gen(function* () {
      yield* Effect.tryPromise(async () => {
        await mkdir(dirname(path), { recursive: true, mode: 0o700 })
        await chmod(dirname(path), 0o700)
        // The caller holds the data directory's lock, so a socket file here is a dead server's.
        await rm(path, { force: true })
      })
      const server = yield* NodeSocketServer.make({ path })
      yield* Effect.tryPromise(() => chmod(path, 0o600))
      return server
    })
  )

/**
 * Serves the administration commands on `path` with this process's domain services. A channel
 * that cannot open is logged and left out: the server still serves HTTP.
 */
export const serveLocalChannel = (path: string) =>
  RpcServer.layer(AdministrationRpcs, { disableTracing: true }).pipe(
    Layer.provide(administrationHandlers),
    Layer.provide(RpcServer.layerProtocolSocketServer),
    Layer.provide(RpcSerialization.layerNdjson),
    Layer.provide(socketServer(path)),
    Layer.catchCause((cause) =>
      Layer.effectDiscard(
        Effect.logWarning(`The local channel at ${path} did not open; troupe commands cannot reach this server`, cause)
      )
    )
  )

/** True when a live server accepts connections on `path`. */
export const localChannelAnswers = (path: string) =>
  Effect.callback<boolean>((resume) => {
    const socket = connect({ path })
    socket.once("connect", () => {
      socket.destroy()
      resume(Effect.succeed(true))
    })
    socket.once("error", () => resume(Effect.succeed(false)))
    return Effect.sync(() => socket.destroy())
  })

/** The CLI's end: the commands, carried out by the server listening on `path`. */
export const viaLocalChannel = (path: string) =>
  Layer.effect(
    Administration,
    Effect.gen(function* () {
      const client = yield* RpcClient.make(AdministrationRpcs, { disableTracing: true })
      const relay = <A>(call: Effect.Effect<A, Refusal | RpcClientError.RpcClientError>) =>
        call.pipe(
          Effect.catchTag("RpcClientError", (error) =>
            Effect.fail(new Refusal({ message: `The server stopped answering on ${path}: ${error.message}` }))
          )
        )
      return Administration.of({
        createOwner: (input) => relay(client.CreateOwner(input)),
        createUser: (input) => relay(client.CreateUser(input)),
        createToken: (input) => relay(client.CreateToken(input))
      })
    })
  ).pipe(
    Layer.provide(RpcClient.layerProtocolSocket({ retryTransientErrors: false })),
    Layer.provide(RpcSerialization.layerNdjson),
    // The layer only describes the connection, which the client dials: building it does not fail.
    Layer.provide(Layer.orDie(NodeSocket.layerNet({ path })))
  )
