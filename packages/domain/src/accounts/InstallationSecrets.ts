// Random keys made once per installation (the CSRF key, ...): the first node to ask stores a
// fresh 32-byte key under the name; every node reads the same key from then on.
import { randomBytes } from "node:crypto"
import { withDatabase } from "@troupe/storage/Defects"
import { getOrCreate } from "@troupe/storage/repositories/InstallationSecrets"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { now } from "../kernel/Now.ts"

export class InstallationSecrets extends Context.Service<
  InstallationSecrets,
  { readonly secret: (name: string) => Effect.Effect<Uint8Array> }
>()("@troupe/domain/accounts/InstallationSecrets") {
  static readonly layer = Layer.effect(
    InstallationSecrets,
    Effect.gen(function* () {
      const db = withDatabase(yield* SqlClient)
      return InstallationSecrets.of({
        secret: (name) => db(Effect.flatMap(now, (at) => getOrCreate(name, randomBytes(32), at)))
      })
    })
  )
}
