// The `troupe` command: serve, migrate, the operator commands for people, the reference runner,
// deployment administration and the reference updater.
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { loadServerConfig } from "@troupe/server/Config"
import { explainStartupFailure } from "@troupe/server/ConfigurationError"
import { consoleLoggerLayer } from "@troupe/server/ConsoleLogger"
import { migratedDatabase, serverLayer } from "@troupe/server/Server"
import { Cause, Console, Effect, Exit, Layer } from "effect"
import { Command } from "effect/cli"
import { localChannelPath } from "./Administration.ts"
import { deployment, updater } from "./deployment/command.ts"
import { serveLocalChannel } from "./LocalChannel.ts"
import { actors, supervisors } from "./operators.ts"
import { owner, token, user } from "./people.ts"
import { runner } from "./runner/command.ts"
import { serveLog } from "./ServeLog.ts"

/** How long the exit waits for stdout and stderr to take what was written (a reader may stall). */
const outputPatienceMillis = 2000

/** Calls `then` once stdout and stderr hold nothing unwritten, or after `outputPatienceMillis`. */
const afterOutput = (then: () => void) => {
  const pending = [process.stdout, process.stderr].filter((stream) => stream.writableLength > 0)
  if (pending.length === 0) return then()
  let called = false
  const once = () => {
    if (called) return
    called = true
    clearTimeout(timer)
    then()
  }
  const timer = setTimeout(once, outputPatienceMillis)
  let left = pending.length
  for (const stream of pending) {
    stream.write("", () => {
      left -= 1
      if (left === 0) once()
    })
  }
}

const serve = Command.make("serve", {}, () =>
  Effect.gen(function* () {
    const config = yield* loadServerConfig
    const log = serveLog(config)
    // On the embedded database the server also answers `troupe` commands on its local channel.
    const server =
      config.database._tag === "embedded"
        ? serveLocalChannel(localChannelPath(config.dataDir)).pipe(Layer.provideMerge(serverLayer(config)))
        : serverLayer(config)
    return yield* Layer.launch(
      log.listening.pipe(Layer.provideMerge(server), Layer.provide(log.stopped), Layer.provide(consoleLoggerLayer))
    )
  })
).pipe(Command.withDescription("Start the HTTP server (migrations run first)"))

const migrate = Command.make("migrate", {}, () =>
  Effect.gen(function* () {
    const config = yield* loadServerConfig
    yield* Effect.scoped(Layer.build(migratedDatabase(config.database)))
    yield* Console.log("Migrations are up to date.")
  })
).pipe(Command.withDescription("Apply pending database migrations"))

Command.make("troupe").pipe(
  Command.withDescription("Troupe: a supervised actor runtime and OAuth authorization server for agent programs"),
  Command.withSubcommands([serve, migrate, owner, user, token, supervisors, actors, runner, updater, deployment]),
  Command.run({ version: "0.1.0" }),
  // A failure that comes from the environment (a bad variable, a busy port, a missing database)
  // is one line naming the variable and the fix, and exit code 78 (EX_CONFIG), never a stack.
  Effect.catchCause((cause) => {
    const explained = explainStartupFailure(cause)
    return explained === undefined
      ? Effect.failCause(cause)
      : Effect.andThen(
          Console.error(`troupe: ${explained.message}`),
          Effect.sync(() => {
            process.exitCode = 78
          })
        )
  }),
  // An expected failure (bad input, refused request) is one line on stderr and exit code 1.
  Effect.catchIf(
    (error): error is Error => error instanceof Error && !("_tag" in error),
    (error) =>
      Effect.andThen(
        Console.error(`troupe: ${error.message}`),
        Effect.sync(() => {
          process.exitCode = 1
        })
      )
  ),
  Effect.provide(NodeServices.layer),
  NodeRuntime.runMain({
    // SIGTERM/SIGINT interrupt the program; a clean shutdown after that exits 0, once what was
    // written has left (on a pipe the last log lines may still be queued, and exiting drops them).
    teardown: (exit, onExit) =>
      afterOutput(() =>
        onExit(Exit.isSuccess(exit) ? Number(process.exitCode ?? 0) : Cause.hasInterruptsOnly(exit.cause) ? 0 : 1)
      )
  })
)
