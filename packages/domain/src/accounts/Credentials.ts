// Access and refresh credentials. A lineage (human, agent or runner) holds a refresh token and
// the access tokens it renews; only the newest refresh token works, and presenting a superseded
// one ends the lineage. Access tokens live 1209600 s and are never extended. Authority is
// re-judged on every use: revoked, expired or fenced (its address's epoch moved past the
// credential's, an agent or its steward no longer active) all answer Unauthenticated without
// saying which. A human's personal access tokens are named access credentials outside any
// lineage, listed and revoked one by one.

import { isUuid, newPublicId } from "@troupe/storage/Ids"
import { withRepositories } from "@troupe/storage/Repositories"
import { AccountsRepository, type UserRow } from "@troupe/storage/repositories/Accounts"
import * as Repo from "@troupe/storage/repositories/Credentials"
import { type ExecutorRow, ExecutorsRepository } from "@troupe/storage/repositories/Executors"
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { InvalidInput, Unauthenticated } from "../kernel/Errors.ts"
import { now } from "../kernel/Now.ts"
import { isPrintable, isPrintableText } from "../kernel/Text.ts"
import { accessTokenFormat, mintToken, parseToken, refreshTokenFormat, secretMatches } from "./OpaqueTokens.ts"

export const accessTokenLifeSeconds = 1_209_600

export type Plane = Repo.Plane

export class InvalidGrant extends Schema.TaggedError<InvalidGrant>()("InvalidGrant", {}) {}

export class NoSuchToken extends Schema.TaggedError<NoSuchToken>()("NoSuchToken", {}) {}

/** A personal access token as its holder sees it in a list: never its secret. */
export interface PersonalTokenView {
  readonly public_id: string
  readonly name: string
  readonly plane: "platform" | "member"
  readonly issued_at: Date
  readonly expires_at: Date
  readonly state: "active" | "revoked" | "expired"
}

const tokenNameMaxLength = 100

/** A personal token's name: trimmed, 1 to 100 printable characters. */
const tokenName = (name: string): Effect.Effect<string, InvalidInput> => {
  // Judged before trimming: trim() would drop a U+FEFF the rule refuses.
  const trimmed = isPrintable(name) ? name.trim() : ""
  return !isPrintableText(trimmed, 1, tokenNameMaxLength)
    ? Effect.fail(
        new InvalidInput({
          field: "name",
          message: `Name the token with 1 to ${tokenNameMaxLength} printable characters`
        })
      )
    : Effect.succeed(trimmed)
}

/** What a lineage issues: the access credentials it renews and its refresh token. */
export interface IssuedLineage {
  readonly lineagePublicId: string
  readonly refreshToken: string
  readonly accessToken: string
  /** The agent application's transport credential, in an agent lineage. */
  readonly executorAccessToken: string | undefined
  readonly plane: Plane
  readonly expiresIn: number
}

export interface LineageSpec {
  readonly holder: Repo.Holder
  readonly clientId: string
  /** The human (platform plane) or agent (member plane) the lineage speaks for. */
  readonly user: UserRow | undefined
  /**
   * The address whose epoch fences it (the runner's, or the agent's application address), with
   * the epoch its credentials carry: the one a connection tells the address, or a rotated
   * lineage's own.
   */
  readonly executor: { readonly id: bigint; readonly epoch: number } | undefined
}

/** An authenticated access credential and who it speaks for. */
export interface AccessGrant {
  readonly credential: Repo.CredentialRow
  readonly plane: Plane
  readonly user: UserRow | undefined
  /** An agent user's steward, active (read once here, so no command reads it again). */
  readonly steward: UserRow | undefined
  readonly executor: ExecutorRow | undefined
}

const planeOf = (holder: Repo.Holder): Plane =>
  holder === "human" ? "platform" : holder === "agent" ? "member" : "executor_transport"

const insertToken = Effect.fnUntraced(function* (
  kind: "access" | "refresh",
  plane: Plane | null,
  lineage: Repo.LineageRow | null,
  owner: { readonly userId: bigint | null; readonly executorId: bigint | null; readonly epoch: number | null },
  at: Date,
  name: string | null = null
) {
  const minted = mintToken(kind === "access" ? accessTokenFormat : refreshTokenFormat)
  yield* (yield* Repo.CredentialsRepository).insertCredential({
    publicId: newPublicId(),
    kind,
    plane,
    lineageId: lineage?.id ?? null,
    userId: owner.userId,
    executorId: owner.executorId,
    epoch: owner.epoch,
    name,
    lookup: minted.lookup,
    salt: minted.salt,
    digest: minted.digest,
    issuedAt: at,
    expiresAt: kind === "access" ? new Date(at.getTime() + accessTokenLifeSeconds * 1000) : null
  })
  return minted.token
})

/** Mints a lineage's credentials: runs inside the caller's transaction. */
const mintLineageCredentials = Effect.fnUntraced(function* (lineage: Repo.LineageRow, spec: LineageSpec, at: Date) {
  const plane = planeOf(spec.holder)
  const epoch = spec.executor?.epoch ?? null
  const userId = spec.user?.id ?? null
  const executorId = spec.executor?.id ?? null
  const accessToken = yield* insertToken(
    "access",
    plane,
    lineage,
    { userId: plane === "executor_transport" ? null : userId, executorId, epoch },
    at
  )
  const executorAccessToken =
    spec.holder === "agent" && spec.executor
      ? yield* insertToken("access", "executor_transport", lineage, { userId: null, executorId, epoch }, at)
      : undefined
  const refreshToken = yield* insertToken("refresh", null, lineage, { userId, executorId, epoch }, at)
  return {
    lineagePublicId: lineage.public_id,
    refreshToken,
    accessToken,
    executorAccessToken,
    plane,
    expiresIn: accessTokenLifeSeconds
  } satisfies IssuedLineage
})

/** Starts a lineage and mints its first credentials (inside the caller's transaction). */
export const issueLineage = Effect.fnUntraced(function* (spec: LineageSpec) {
  const at = yield* now
  const lineage = yield* (yield* Repo.CredentialsRepository).insertLineage({
    publicId: newPublicId(),
    holder: spec.holder,
    clientId: spec.clientId,
    userId: spec.user?.id ?? null,
    executorId: spec.executor?.id ?? null,
    now: at
  })
  return yield* mintLineageCredentials(lineage, spec, at)
})

/** A credential of an epoch the address moved past (one ahead of its row is not: its step is due). */
const fenced = (executor: ExecutorRow, credential: Repo.CredentialRow) =>
  credential.epoch === null || credential.epoch < executor.credential_epoch

const live = (credential: Repo.CredentialRow, at: Date) =>
  credential.revoked_at === null &&
  credential.superseded_at === null &&
  (credential.expires_at === null || at.getTime() < credential.expires_at.getTime())

/**
 * An agent speaks only while it and its steward are active under the same shutdown generation:
 * whether `steward` (the agent's, as read) authorizes it.
 */
const authorizes = (agent: Repo.AgentStanding, steward: Repo.StewardStanding | undefined) =>
  agent.status === "active" &&
  steward !== undefined &&
  steward.kind === "human" &&
  steward.status === "active" &&
  agent.steward_generation === steward.shutdown_generation

const agentHasAuthority = Effect.fnUntraced(function* (agent: UserRow) {
  if (agent.status !== "active") return false
  const steward =
    agent.steward_id === null ? undefined : yield* (yield* AccountsRepository).findUserById(agent.steward_id)
  return authorizes(agent, steward)
})

/**
 * The judgement of a presented access credential at `at`, over the rows read with it: the grant,
 * or undefined (Unauthenticated, whichever the reason).
 */
const judgeAccess = (secret: string, presented: Repo.Presented, at: Date): AccessGrant | undefined => {
  const { credential, lineage } = presented
  if (credential.kind !== "access" || !secretMatches(secret, credential.salt, credential.digest)) return undefined
  if (!live(credential, at) || credential.plane === null) return undefined
  if (credential.lineage_id !== null && (lineage === null || lineage.revoked_at !== null)) return undefined
  const executor = presented.executor ?? undefined
  if (executor && (executor.status !== "active" || fenced(executor, credential))) return undefined
  const user = presented.user ?? undefined
  const steward =
    user?.kind === "agent" && presented.steward !== null && authorizes(user, presented.steward)
      ? presented.steward
      : undefined
  if (user) {
    const speaks = user.kind === "agent" ? steward !== undefined : user.kind === "human" && user.status === "active"
    if (!speaks) return undefined
  }
  if (
    credential.plane === "executor_transport" &&
    executor?.agent_id != null &&
    executor.kind === "agent_application" &&
    (presented.executorAgent === null ||
      !authorizes(presented.executorAgent, presented.executorAgentSteward ?? undefined))
  ) {
    return undefined
  }
  if (!user && !executor) return undefined
  return { credential, plane: credential.plane, user, steward, executor }
}

export class Credentials extends Context.Service<
  Credentials,
  {
    readonly authenticate: (token: string) => Effect.Effect<AccessGrant, Unauthenticated>
    /** Rotates the lineage of a refresh token; a superseded token ends its lineage. */
    readonly refresh: (
      refreshToken: string,
      clientId: string
    ) => Effect.Effect<IssuedLineage & { readonly holder: Repo.Holder }, InvalidGrant>
    /**
     * RFC 7009: a refresh token ends its lineage, an access token ends itself; unknown is fine. A
     * token of a lineage issued to another client is left alone (§2.1), answered like an unknown one.
     */
    readonly revoke: (token: string, clientId: string) => Effect.Effect<void>
    /** Mints a personal access token for a human, on the platform or member plane; answers it once. */
    readonly personalToken: (
      user: UserRow,
      plane: "platform" | "member",
      name: string
    ) => Effect.Effect<string, InvalidInput>
    /** A human's personal access tokens, newest first. */
    readonly personalTokens: (user: UserRow) => Effect.Effect<ReadonlyArray<PersonalTokenView>>
    /** Ends one of the human's personal access tokens at once (revoking an ended one changes nothing). */
    readonly revokePersonalToken: (user: UserRow, publicId: string) => Effect.Effect<void, NoSuchToken>
  }
>()("@troupe/domain/accounts/Credentials") {
  static readonly layer = Layer.effect(
    Credentials,
    Effect.gen(function* () {
      const sql = yield* SqlClient
      const accounts = yield* AccountsRepository
      const credentials = yield* Repo.CredentialsRepository
      const executors = yield* ExecutorsRepository
      /** Runs with the database; its failures are defects, the domain's own errors stay typed. */
      const db = yield* withRepositories(AccountsRepository, Repo.CredentialsRepository)

      const findPresented = (token: string, kind: "access" | "refresh") =>
        Effect.gen(function* () {
          const parsed = parseToken(kind === "access" ? accessTokenFormat : refreshTokenFormat, token)
          if (!parsed) return undefined
          const credential = yield* credentials.findCredentialByLookup(parsed.lookup)
          if (!credential || credential.kind !== kind) return undefined
          return secretMatches(parsed.secret, credential.salt, credential.digest) ? credential : undefined
        })

      /** One statement reads the credential with every row its judgement needs. */
      const authenticate = (token: string) =>
        db(
          Effect.gen(function* () {
            const parsed = parseToken(accessTokenFormat, token)
            const presented = parsed ? yield* credentials.findPresented(parsed.lookup) : undefined
            const grant = parsed && presented ? judgeAccess(parsed.secret, presented, yield* now) : undefined
            return grant ?? (yield* new Unauthenticated())
          })
        )

      /** Rotation writes commit even when refused: a reused token's lineage must stay ended. */
      const refresh = (refreshToken: string, clientId: string) =>
        db(
          Effect.gen(function* () {
            const at = yield* now
            const credential = yield* findPresented(refreshToken, "refresh")
            if (!credential || credential.lineage_id === null) return undefined
            const lineage = yield* credentials.findLineage(credential.lineage_id)
            if (!lineage || lineage.revoked_at !== null || lineage.client_id !== clientId) return undefined
            // Claiming the presented token first makes two concurrent rotations one winner and one reuse.
            if (!(yield* credentials.supersedeCredential(credential.id, at))) {
              yield* credentials.revokeLineage(lineage.id, at)
              return undefined
            }
            const user = lineage.user_id === null ? undefined : yield* accounts.findUserById(lineage.user_id)
            const executor =
              lineage.executor_id === null ? undefined : yield* executors.findExecutorById(lineage.executor_id)
            if (executor && (executor.status !== "active" || fenced(executor, credential))) {
              return undefined
            }
            if (user && !(user.kind === "agent" ? yield* agentHasAuthority(user) : user.status === "active")) {
              return undefined
            }
            yield* credentials.supersedeLineageCredentials(lineage.id, at)
            const issued = yield* mintLineageCredentials(
              lineage,
              {
                holder: lineage.holder,
                clientId,
                user,
                executor: executor && { id: executor.id, epoch: credential.epoch ?? executor.credential_epoch }
              },
              at
            )
            return { ...issued, holder: lineage.holder }
          }).pipe(sql.withTransaction)
        ).pipe(
          Effect.flatMap((issued) => (issued === undefined ? Effect.fail(new InvalidGrant()) : Effect.succeed(issued)))
        )

      /** Whether a credential was issued to `clientId`: its lineage's client (a personal token has none). */
      const issuedTo = (credential: Repo.CredentialRow, clientId: string) =>
        Effect.gen(function* () {
          if (credential.lineage_id === null) return true
          return (yield* credentials.findLineage(credential.lineage_id))?.client_id === clientId
        })

      const revoke = (token: string, clientId: string) =>
        db(
          Effect.gen(function* () {
            const at = yield* now
            const refresh = yield* findPresented(token, "refresh")
            if (refresh?.lineage_id != null) {
              if (yield* issuedTo(refresh, clientId)) yield* credentials.revokeLineage(refresh.lineage_id, at)
              return
            }
            const access = yield* findPresented(token, "access")
            if (access && (yield* issuedTo(access, clientId))) yield* credentials.revokeCredential(access.id, at)
          })
        )

      const personalToken = (user: UserRow, plane: "platform" | "member", name: string) =>
        db(
          Effect.gen(function* () {
            const named = yield* tokenName(name)
            const at = yield* now
            return yield* insertToken(
              "access",
              plane,
              null,
              { userId: user.id, executorId: null, epoch: null },
              at,
              named
            )
          })
        )

      const personalTokens = (user: UserRow) =>
        db(
          Effect.gen(function* () {
            const at = yield* now
            const rows = yield* credentials.listPersonalTokens(user.id)
            return rows.map(
              (row): PersonalTokenView => ({
                public_id: row.public_id,
                name: row.name ?? "",
                plane: row.plane === "member" ? "member" : "platform",
                issued_at: row.issued_at,
                expires_at: row.expires_at!,
                state: row.revoked_at !== null ? "revoked" : live(row, at) ? "active" : "expired"
              })
            )
          })
        )

      const revokePersonalToken = (user: UserRow, publicId: string) =>
        db(
          Effect.gen(function* () {
            const token = isUuid(publicId) ? yield* credentials.findPersonalToken(user.id, publicId) : undefined
            if (!token) return yield* new NoSuchToken()
            yield* credentials.revokeCredential(token.id, yield* now)
          })
        )

      return Credentials.of({ authenticate, refresh, revoke, personalToken, personalTokens, revokePersonalToken })
    })
  )
}
