// Random keys made once per installation (the CSRF key, ...): the first node to ask stores a
// fresh 32-byte key under the name; every node reads the same key from then on.
import { randomBytes } from "node:crypto"
import { InstallationSecretsRepository } from "@troupe/storage/repositories/InstallationSecrets"
import { Context, Effect, Layer } from "effect"
import { now } from "../kernel/Now.ts"

export class InstallationSecrets extends Context.Service<
  InstallationSecrets,
  { readonly secret: (name: string) => Effect.Effect<Uint8Array> }
>()("@troupe/domain/accounts/InstallationSecrets") {
  static readonly layer = Layer.effect(
    InstallationSecrets,
    Effect.gen(function* () {
      const secrets = yield* InstallationSecretsRepository
      return InstallationSecrets.of({
        secret: (name) => Effect.flatMap(now, (at) => secrets.getOrCreate(name, randomBytes(32), at)).pipe(Effect.orDie)
      })
    })
  )
}
