// The commands for people: owner create, user create and token create. With DATABASE_URL they
// work on PostgreSQL from this process; on the embedded database they ask the running server over
// its local channel when one answers, and otherwise open the database themselves.
import { Accounts } from "@troupe/domain/accounts/Accounts"
import { Credentials } from "@troupe/domain/accounts/Credentials"
import { loadServerConfig, type ServerConfig } from "@troupe/server/Config"
import { migratedDatabase } from "@troupe/server/Server"
import { repositoriesLayer } from "@troupe/storage/Repositories"
import { Console, Effect, Layer, Option } from "effect"
import { Command, Flag } from "effect/cli"
import { Administration, administration, localChannelPath, type Refusal } from "./Administration.ts"
import { localChannelAnswers, viaLocalChannel } from "./LocalChannel.ts"

/** In this process: the domain services over the migrated database, without the actor runtime. */
const inProcess = (config: ServerConfig) =>
  Layer.effect(Administration, administration).pipe(
    Layer.provide(Layer.mergeAll(Accounts.layer, Credentials.layer)),
    Layer.provide(repositoriesLayer),
    Layer.provide(migratedDatabase(config.database))
  )

const administrationLayer = Layer.unwrap(
  Effect.gen(function* () {
    const config = yield* loadServerConfig
    if (config.database._tag === "embedded") {
      const path = localChannelPath(config.dataDir)
      if (yield* localChannelAnswers(path)) return viaLocalChannel(path)
    }
    return inProcess(config)
  })
)

/** Runs a command with Administration; a refusal becomes the plain Error main prints. */
const administer = <A>(use: (commands: Administration["Service"]) => Effect.Effect<A, Refusal>) =>
  Effect.flatMap(Administration, use).pipe(
    Effect.provide(administrationLayer),
    Effect.catchTag("Refusal", (refusal) => Effect.fail(new Error(refusal.message)))
  )

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

const ownerCreate = Command.make("create", personFlags, ({ email, name, handle, password }) =>
  Effect.gen(function* () {
    const secret = yield* passwordOf(password)
    const owner = yield* administer((commands) =>
      commands.createOwner({ email, name, password: secret, handle: Option.getOrUndefined(handle) })
    )
    yield* Console.log(`Created owner ${owner.display_name} <${owner.email}> (@${owner.handle}, ${owner.public_id})`)
  })
).pipe(Command.withDescription("Create the installation's owner (headless first boot)"))

const userCreate = Command.make(
  "create",
  { ...personFlags, role: Flag.Literals("role", ["admin", "member"]).pipe(Flag.withDefault("member")) },
  ({ email, name, handle, password, role }) =>
    Effect.gen(function* () {
      const secret = yield* passwordOf(password)
      const user = yield* administer((commands) =>
        commands.createUser({ email, name, password: secret, handle: Option.getOrUndefined(handle), role })
      )
      yield* Console.log(
        `Created ${user.role} ${user.display_name} <${user.email}> (@${user.handle}, ${user.public_id})`
      )
    })
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
      const token = yield* administer((commands) => commands.createToken({ email: user, plane, name }))
      yield* Console.log(token)
    })
).pipe(
  Command.withDescription(
    "Mint a personal access token for a human (platform or member plane); printed once, only its digest is kept"
  )
)

export const owner = Command.make("owner").pipe(
  Command.withSubcommands([ownerCreate]),
  Command.withDescription("The installation's owner")
)

export const user = Command.make("user").pipe(
  Command.withSubcommands([userCreate]),
  Command.withDescription("Human users")
)

export const token = Command.make("token").pipe(
  Command.withSubcommands([tokenCreate]),
  Command.withDescription("Personal access tokens")
)
