// The `troupe` command: serve, migrate, and the operator commands for people.
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Accounts } from "@troupe/domain/Accounts"
import { Credentials } from "@troupe/domain/Credentials"
import { loadServerConfig } from "@troupe/server/Config"
import { domainLayer, migratedDatabase, serverLayer } from "@troupe/server/Server"
import { findHumanByEmail } from "@troupe/storage/repositories/Accounts"
import { Cause, Console, Effect, Exit, Layer, Option } from "effect"
import { Command, Flag } from "effect/cli"
import { HttpServer } from "effect/http"
import { actors, supervisors } from "./operators.ts"

const serve = Command.make("serve", {}, () =>
  Effect.gen(function* () {
    const config = yield* loadServerConfig
    const announce = Layer.effectDiscard(
      Effect.gen(function* () {
        const server = yield* HttpServer.HttpServer
        const database =
          config.database._tag === "postgres" ? "PostgreSQL (DATABASE_URL)" : `embedded (${config.database.dataDir})`
        yield* Effect.logInfo(`Troupe listening on ${HttpServer.formatAddress(server.address)}; database: ${database}`)
      })
    )
    return yield* Layer.launch(announce.pipe(Layer.provideMerge(serverLayer(config))))
  })
).pipe(Command.withDescription("Start the HTTP server (migrations run first)"))

const migrate = Command.make("migrate", {}, () =>
  Effect.gen(function* () {
    const config = yield* loadServerConfig
    yield* Effect.scoped(Layer.build(migratedDatabase(config.database)))
    yield* Console.log("Migrations are up to date.")
  })
).pipe(Command.withDescription("Apply pending database migrations"))

const personFlags = {
  email: Flag.String("email").pipe(Flag.withDescription("Email address (the sign-in name)")),
  name: Flag.String("name").pipe(Flag.withDescription("Display name")),
  handle: Flag.String("handle").pipe(Flag.withDescription("Handle; derived from the name when omitted"), Flag.optional),
  password: Flag.String("password").pipe(
    Flag.withDescription("Password; read from the TROUPE_PASSWORD environment variable when omitted"),
    Flag.optional
  )
}

const passwordOf = (flag: Option.Option<string>) =>
  Option.match(flag, {
    onSome: Effect.succeed,
    onNone: () =>
      process.env.TROUPE_PASSWORD
        ? Effect.succeed(process.env.TROUPE_PASSWORD)
        : Effect.fail(new Error("Give --password or set TROUPE_PASSWORD"))
  })

const withAccounts = <A, E>(use: (accounts: Accounts["Service"]) => Effect.Effect<A, E>) =>
  Effect.flatMap(loadServerConfig, (config) => Effect.flatMap(Accounts, use).pipe(Effect.provide(domainLayer(config))))

const describeFailure = (error: { readonly _tag?: string; readonly message?: string }) => {
  switch (error._tag) {
    case "AlreadyInitialized":
      return "This installation already has an owner."
    case "NotInitialized":
      return "Create the owner first (troupe owner create, or /setup)."
    case "EmailTaken":
      return "That email is already in use."
    case "HandleTaken":
      return "That handle is taken."
    default:
      return error.message ?? String(error)
  }
}

const explain = <A, R>(effect: Effect.Effect<A, { readonly _tag?: string; readonly message?: string }, R>) =>
  Effect.mapError(effect, (error) => new Error(describeFailure(error)))

const ownerCreate = Command.make("create", personFlags, ({ email, name, handle, password }) =>
  Effect.gen(function* () {
    const secret = yield* passwordOf(password)
    const owner = yield* withAccounts((accounts) =>
      accounts.createOwner({ email, password: secret, displayName: name, handle: Option.getOrUndefined(handle) })
    )
    yield* Console.log(`Created owner ${owner.display_name} <${owner.email}> (@${owner.handle}, ${owner.public_id})`)
  }).pipe(explain)
).pipe(Command.withDescription("Create the installation's owner (headless first boot)"))

const userCreate = Command.make(
  "create",
  { ...personFlags, role: Flag.Literals("role", ["admin", "member"]).pipe(Flag.withDefault("member")) },
  ({ email, name, handle, password, role }) =>
    Effect.gen(function* () {
      const secret = yield* passwordOf(password)
      const user = yield* withAccounts((accounts) =>
        accounts.createHuman({
          email,
          password: secret,
          displayName: name,
          handle: Option.getOrUndefined(handle),
          role
        })
      )
      yield* Console.log(
        `Created ${user.role} ${user.display_name} <${user.email}> (@${user.handle}, ${user.public_id})`
      )
    }).pipe(explain)
).pipe(Command.withDescription("Create a human user with role admin or member"))

const tokenCreate = Command.make(
  "create",
  {
    user: Flag.String("user").pipe(Flag.withDescription("The human's email")),
    plane: Flag.Literals("plane", ["platform", "member"]).pipe(Flag.withDefault("platform")),
    name: Flag.String("name").pipe(Flag.withDescription("What the token is for"), Flag.withDefault("cli"))
  },
  ({ user, plane, name }) =>
    Effect.gen(function* () {
      const config = yield* loadServerConfig
      const token = yield* Effect.gen(function* () {
        const human = yield* findHumanByEmail(user).pipe(Effect.orDie)
        if (human?.status !== "active") return yield* Effect.fail(new Error(`No active person with email ${user}`))
        const credentials = yield* Credentials
        return yield* credentials.personalToken(human, plane, name)
      }).pipe(Effect.provide(domainLayer(config)))
      yield* Console.log(token)
    })
).pipe(
  Command.withDescription(
    "Mint a personal access token for a human (platform or member plane); printed once, only its digest is kept"
  )
)

const token = Command.make("token").pipe(
  Command.withSubcommands([tokenCreate]),
  Command.withDescription("Personal access tokens")
)

const owner = Command.make("owner").pipe(
  Command.withSubcommands([ownerCreate]),
  Command.withDescription("The installation's owner")
)
const user = Command.make("user").pipe(Command.withSubcommands([userCreate]), Command.withDescription("Human users"))

Command.make("troupe").pipe(
  Command.withDescription("Troupe: a supervised actor runtime and OAuth authorization server for agent programs"),
  Command.withSubcommands([serve, migrate, owner, user, token, supervisors, actors]),
  Command.run({ version: "0.1.0" }),
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
    // SIGTERM/SIGINT interrupt the program; a clean shutdown after that exits 0.
    teardown: (exit, onExit) =>
      onExit(Exit.isSuccess(exit) ? Number(process.exitCode ?? 0) : Cause.hasInterruptsOnly(exit.cause) ? 0 : 1)
  })
)
