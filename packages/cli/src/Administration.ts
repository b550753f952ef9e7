// What the `troupe` administration commands do (create the owner, a human, a personal access
// token) as one RPC group and its one implementation over the domain services. The CLI runs it in
// its own process, or asks the running server that holds the embedded database (LocalChannel).
import { join } from "node:path"
import { Accounts } from "@troupe/domain/accounts/Accounts"
import { Credentials } from "@troupe/domain/accounts/Credentials"
import { withDatabase } from "@troupe/storage/Defects"
import { AccountsRepository, type UserRow } from "@troupe/storage/repositories/Accounts"
import { Context, Effect, Schema } from "effect"
import { Rpc, RpcGroup } from "effect/rpc"
import { SqlClient } from "effect/sql/SqlClient"

/** A refused command, with the sentence the CLI prints. */
export class Refusal extends Schema.TaggedError<Refusal>()("Refusal", { message: Schema.String }) {}

const personFields = {
  email: Schema.String,
  name: Schema.String,
  handle: Schema.optional(Schema.String),
  password: Schema.String
}

export const Person = Schema.Struct({
  public_id: Schema.String,
  role: Schema.String,
  display_name: Schema.String,
  email: Schema.String,
  handle: Schema.String
})

const NewPerson = Schema.Struct(personFields)
const NewUser = Schema.Struct({ ...personFields, role: Schema.Literals(["admin", "member"]) })
const NewToken = Schema.Struct({
  email: Schema.String,
  plane: Schema.Literals(["platform", "member"]),
  name: Schema.String
})

export class AdministrationRpcs extends RpcGroup.make(
  Rpc.make("CreateOwner", { payload: NewPerson, success: Person, error: Refusal }),
  Rpc.make("CreateUser", { payload: NewUser, success: Person, error: Refusal }),
  Rpc.make("CreateToken", { payload: NewToken, success: Schema.String, error: Refusal })
) {}

export class Administration extends Context.Service<
  Administration,
  {
    readonly createOwner: (input: typeof NewPerson.Type) => Effect.Effect<typeof Person.Type, Refusal>
    readonly createUser: (input: typeof NewUser.Type) => Effect.Effect<typeof Person.Type, Refusal>
    /** Mints a personal access token for an active human; answers the token (shown once). */
    readonly createToken: (input: typeof NewToken.Type) => Effect.Effect<string, Refusal>
  }
>()("@troupe/cli/Administration") {}

/** Where a server on the embedded database listens for these commands. */
export const localChannelPath = (dataDir: string) => join(dataDir, "control", "troupe.sock")

const describeFailure = (error: { readonly _tag: string; readonly message?: string }) => {
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
      return error.message ?? error._tag
  }
}

const refused = (error: { readonly _tag: string; readonly message?: string }) =>
  new Refusal({ message: describeFailure(error) })

const person = (user: UserRow) => ({
  public_id: user.public_id,
  role: user.role,
  display_name: user.display_name,
  email: user.email ?? "",
  handle: user.handle
})

/** The commands over this process's domain services. */
export const administration = Effect.gen(function* () {
  const accounts = yield* Accounts
  const credentials = yield* Credentials
  const people = yield* AccountsRepository
  const db = withDatabase(yield* SqlClient)
  return Administration.of({
    createOwner: ({ email, name, handle, password }) =>
      accounts
        .createOwner({ email, password, displayName: name, handle })
        .pipe(Effect.map(person), Effect.mapError(refused)),
    createUser: ({ email, name, handle, password, role }) =>
      accounts
        .createHuman({ email, password, displayName: name, handle, role })
        .pipe(Effect.map(person), Effect.mapError(refused)),
    createToken: ({ email, plane, name }) =>
      Effect.gen(function* () {
        const human = yield* db(people.findHumanByEmail(email))
        if (human?.status !== "active") return yield* new Refusal({ message: `No active person with email ${email}` })
        return yield* credentials.personalToken(human, plane, name).pipe(Effect.mapError(refused))
      })
  })
})

/** The RPC handlers: the same commands, for the local channel. */
export const administrationHandlers = AdministrationRpcs.toLayer(
  Effect.map(administration, (commands) =>
    AdministrationRpcs.of({
      CreateOwner: commands.createOwner,
      CreateUser: commands.createUser,
      CreateToken: commands.createToken
    })
  )
)
