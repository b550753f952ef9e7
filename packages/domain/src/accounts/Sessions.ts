// Sessions: sign-in with email and password (API bearer or browser cookie), authentication of
// a presented session token, and revocation. Sessions live 30 days from issuance, never extended.

import { ActorHost } from "@troupe/actors/ActorHost"
import { apiSessionActor } from "@troupe/actors/bindings/apiSession"
import { sessionLifeMillis } from "@troupe/machines/apiSession/effects"
import { newPublicId } from "@troupe/storage/Ids"
import { AccountsRepository, type UserRow } from "@troupe/storage/repositories/Accounts"
import * as Repo from "@troupe/storage/repositories/Sessions"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { InvalidCredentials, Unauthenticated } from "../kernel/Errors.ts"
import { now } from "../kernel/Now.ts"
import { verifyPassword } from "./Passwords.ts"
import { mintSessionToken, parseSessionToken, sessionSecretMatches } from "./SessionTokens.ts"

export { sessionLifeMillis }

export type SessionKind = Repo.SessionRow["kind"]

export interface Authenticated {
  readonly session: Repo.SessionRow
  readonly user: UserRow
}

export interface SignedIn extends Authenticated {
  /** The raw token: shown once, never stored. */
  readonly token: string
}

const printable = (value: unknown, max: number): value is string =>
  typeof value === "string" && value.length > 0 && value.length <= max && !value.includes("\u0000")

export class Sessions extends Context.Service<
  Sessions,
  {
    /** Any failure (unknown email, wrong password, inactive user, malformed values) is InvalidCredentials. */
    readonly signIn: (
      email: unknown,
      password: unknown,
      kind: SessionKind
    ) => Effect.Effect<SignedIn, InvalidCredentials>
    /** A live session for the token, or Unauthenticated without saying why. */
    readonly authenticate: (token: string) => Effect.Effect<Authenticated, Unauthenticated>
    /** Revokes the session through its actor: the token stops authenticating with the commit. */
    readonly revoke: (sessionPublicId: string) => Effect.Effect<void>
  }
>()("@troupe/domain/accounts/Sessions") {
  static readonly layer = Layer.effect(
    Sessions,
    Effect.gen(function* () {
      const sql = yield* SqlClient
      const accounts = yield* AccountsRepository
      const rows = yield* Repo.SessionsRepository
      const sessions = (yield* ActorHost).ref(apiSessionActor)

      const signIn = (email: unknown, password: unknown, kind: SessionKind) =>
        Effect.gen(function* () {
          const wellFormed = printable(email, 254) && printable(password, 1024)
          const user = wellFormed ? yield* accounts.findHumanByEmail(email.trim()) : undefined
          const passwordMatches = yield* verifyPassword(
            typeof password === "string" ? password : "",
            user?.password_digest ?? null
          )
          if (!user || !passwordMatches || user.status !== "active") return yield* new InvalidCredentials()
          const issuedAt = yield* now
          const minted = mintSessionToken()
          const session = yield* Effect.gen(function* () {
            const row = yield* rows.insertSession({
              publicId: newPublicId(),
              userId: user.id,
              kind,
              lookup: minted.lookup,
              salt: minted.salt,
              digest: minted.digest,
              issuedAt,
              expiresAt: new Date(issuedAt.getTime() + sessionLifeMillis)
            })
            yield* sessions.create(row.public_id, { kind }).pipe(Effect.orDie)
            return row
          }).pipe(sql.withTransaction)
          return { session, user, token: minted.token }
        }).pipe(Effect.catchTag("SqlError", Effect.die))

      const authenticate = (token: string) =>
        Effect.gen(function* () {
          const parsed = parseSessionToken(token)
          if (!parsed) return yield* new Unauthenticated()
          const session = yield* rows.findSessionByLookup(parsed.lookup)
          if (!session || !sessionSecretMatches(parsed.secret, session.salt, session.digest)) {
            return yield* new Unauthenticated()
          }
          const at = yield* now
          if (session.state !== "active" || at.getTime() >= session.expires_at.getTime()) {
            return yield* new Unauthenticated()
          }
          const user = yield* accounts.findUserById(session.user_id)
          if (user?.kind !== "human" || user.status !== "active") return yield* new Unauthenticated()
          return { session, user }
        }).pipe(Effect.catchTag("SqlError", Effect.die))

      const revoke = (sessionPublicId: string) =>
        sessions.send(sessionPublicId, { type: "session.revoke" }).pipe(Effect.asVoid, Effect.orDie)

      return Sessions.of({ signIn, authenticate, revoke })
    })
  )
}
