// Sessions: sign-in with email and password (API bearer or browser cookie), authentication of
// a presented session token, and revocation. Sessions live 30 days from issuance, never extended.

import { ActorHost } from "@troupe/actors/ActorHost"
import { apiSessionActor } from "@troupe/actors/bindings/apiSession"
import { sessionLifeMillis } from "@troupe/machines/apiSession/effects"
import { newPublicId } from "@troupe/storage/Ids"
import { AccountsRepository, type UserRow } from "@troupe/storage/repositories/Accounts"
import * as Repo from "@troupe/storage/repositories/Sessions"
import { Clock, Context, Effect, Layer } from "effect"
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

      // Every authenticated request runs this: one statement reads the session with its user (no
      // cache, so a revocation bites on the next request on every node), then plain checks.
      const live = (found: Authenticated | undefined, secret: string, at: number): found is Authenticated =>
        found !== undefined &&
        sessionSecretMatches(secret, found.session.salt, found.session.digest) &&
        found.session.state === "active" &&
        at < found.session.expires_at.getTime() &&
        found.user.kind === "human" &&
        found.user.status === "active"

      const authenticate = (token: string): Effect.Effect<Authenticated, Unauthenticated> => {
        const parsed = parseSessionToken(token)
        if (!parsed) return Effect.fail(new Unauthenticated())
        return rows.findSessionWithUser(parsed.lookup).pipe(
          Effect.orDie,
          Effect.flatMap((found) =>
            Effect.flatMap(Clock.currentTimeMillis, (at) =>
              live(found, parsed.secret, at) ? Effect.succeed(found) : Effect.fail(new Unauthenticated())
            )
          )
        )
      }

      const revoke = (sessionPublicId: string) =>
        sessions.send(sessionPublicId, { type: "session.revoke" }).pipe(Effect.asVoid, Effect.orDie)

      return Sessions.of({ signIn, authenticate, revoke })
    })
  )
}
