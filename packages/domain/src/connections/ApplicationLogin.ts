// The application client's login (spec "Application login"): GET /oauth/authorize validates a
// PKCE S256 request, a signed-in human approves it, and a five-minute, single-use code bound to
// the client, callback, challenge and consequence is exchanged at the token endpoint for the
// human lineage (login mode) or the human lineage plus the application's agent and optional
// runner (connect mode, the default). Presented again, a used code ends the lineages it issued
// (RFC 6749 §4.1.2).
import { createHash, timingSafeEqual } from "node:crypto"
import { ActorHost } from "@troupe/actors/ActorHost"
import { TransactionalActors } from "@troupe/actors/Binding"
import { withRepositories } from "@troupe/storage/Repositories"
import { AccountsRepository, type UserRow } from "@troupe/storage/repositories/Accounts"
import { AgentsRepository } from "@troupe/storage/repositories/Agents"
import { AuthorizationCodesRepository } from "@troupe/storage/repositories/AuthorizationCodes"
import { CredentialsRepository } from "@troupe/storage/repositories/Credentials"
import { ExecutorsRepository } from "@troupe/storage/repositories/Executors"
import { HandleReservationsRepository } from "@troupe/storage/repositories/HandleReservations"
import { NamedAgentsRepository } from "@troupe/storage/repositories/NamedAgents"
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { mintToken, parseToken, secretMatches, type TokenFormat } from "../accounts/OpaqueTokens.ts"
import { now } from "../kernel/Now.ts"
import { type ConnectionIssued, consumeConnection } from "./Connections.ts"
import { applicationClientId, type DeviceRequest, parseDeviceAuthorizationRequest } from "./DeviceRequest.ts"
import { type RedirectPolicy, redirectAllowed } from "./RedirectPolicy.ts"

export const codeLifeMillis = 5 * 60 * 1000
const codeFormat: TokenFormat = { prefix: "ac-svc-v1-", separator: "" }

/** A validated authorize request: what the consent page shows and the code will carry. */
export interface AuthorizeRequest {
  readonly redirectUri: string
  readonly state: string
  readonly codeChallenge: string
  readonly mode: "connect" | "login"
  readonly registration: DeviceRequest | undefined
}

export type AuthorizeValidation =
  /** Nothing can be sent back to the client (unknown client or callback): show an error page. */
  | { readonly _tag: "Unredirectable"; readonly description: string }
  /** Tell the client at its validated callback. */
  | {
      readonly _tag: "RedirectError"
      readonly redirectUri: string
      readonly state: string | undefined
      readonly error: string
      readonly description: string
    }
  | { readonly _tag: "Valid"; readonly request: AuthorizeRequest }

export class CodeRefused extends Schema.TaggedError<CodeRefused>()("CodeRefused", { reason: Schema.String }) {}
export class InvalidCode extends Schema.TaggedError<InvalidCode>()("InvalidCode", { reason: Schema.String }) {}

const registrationFields = [
  "agent_identifier",
  "agent_display_name",
  "executor_display_name",
  "registration_identifier",
  "runner_display_name",
  "executor_kind"
]

/** The authorize parameters read; unrecognized ones are ignored (RFC 6749 §3.1). */
const authorizeParameters = [
  "client_id",
  "redirect_uri",
  "response_type",
  "state",
  "code_challenge",
  "code_challenge_method",
  "scope",
  "connection_mode",
  ...registrationFields
]

/** RFC 6749 §3.1: a recognized parameter given more than once is invalid_request. */
const repeated = (query: URLSearchParams, name: string) => query.getAll(name).length > 1

export const validateAuthorize = (query: URLSearchParams, policy: RedirectPolicy): AuthorizeValidation => {
  if (repeated(query, "client_id") || query.get("client_id") !== applicationClientId) {
    return { _tag: "Unredirectable", description: "Unknown or repeated client_id" }
  }
  const redirectUri = query.get("redirect_uri") ?? ""
  if (repeated(query, "redirect_uri") || !redirectAllowed(policy, redirectUri)) {
    return { _tag: "Unredirectable", description: "The redirect_uri is not an allowed callback, or is repeated" }
  }
  const state = repeated(query, "state") ? undefined : (query.get("state") ?? undefined)
  const refuse = (error: string, description: string): AuthorizeValidation => ({
    _tag: "RedirectError",
    redirectUri,
    state,
    error,
    description
  })
  const twice = authorizeParameters.find((name) => repeated(query, name))
  if (twice) return refuse("invalid_request", `${twice} is repeated`)
  if (query.get("response_type") !== "code") return refuse("unsupported_response_type", "response_type must be code")
  if (!state) return refuse("invalid_request", "state is required")
  const challenge = query.get("code_challenge") ?? ""
  if (query.get("code_challenge_method") !== "S256" || !/^[A-Za-z0-9_-]{43}$/.test(challenge)) {
    return refuse("invalid_request", "PKCE with code_challenge_method S256 is required")
  }
  const scope = query.get("scope")
  if (scope !== null && scope !== "" && scope !== "application")
    return refuse("invalid_scope", "scope may only be application")
  const mode = query.get("connection_mode") ?? "connect"
  if (mode !== "connect" && mode !== "login") return refuse("invalid_request", "connection_mode is connect or login")
  const fields = new URLSearchParams({ client_id: applicationClientId })
  for (const name of registrationFields) {
    const value = query.get(name)
    if (value !== null && value !== "") fields.set(name, value)
  }
  if (mode === "login" && !fields.has("agent_identifier") && !fields.has("registration_identifier")) {
    return { _tag: "Valid", request: { redirectUri, state, codeChallenge: challenge, mode, registration: undefined } }
  }
  const parsed = parseDeviceAuthorizationRequest("application/x-www-form-urlencoded", fields.toString())
  if (parsed._tag === "Invalid") return refuse("invalid_request", parsed.description)
  return {
    _tag: "Valid",
    request: { redirectUri, state, codeChallenge: challenge, mode, registration: parsed.request }
  }
}

const s256 = (verifier: string) => createHash("sha256").update(verifier).digest("base64url")

/** RFC 7636 §4.1: a verifier is 43 to 128 unreserved characters; any other never matches. */
const wellFormedVerifier = (verifier: string) => /^[A-Za-z0-9._~-]{43,128}$/.test(verifier)

export class ApplicationLogin extends Context.Service<
  ApplicationLogin,
  {
    /** The human approves: answers the code for the callback. */
    readonly issueCode: (request: AuthorizeRequest, human: UserRow) => Effect.Effect<string, CodeRefused>
    readonly exchange: (input: {
      readonly code: string
      readonly clientId: string
      readonly redirectUri: string
      readonly codeVerifier: string
    }) => Effect.Effect<ConnectionIssued, InvalidCode>
  }
>()("@troupe/domain/connections/ApplicationLogin") {
  static readonly layer = Layer.effect(
    ApplicationLogin,
    Effect.gen(function* () {
      const sql = yield* SqlClient
      const accounts = yield* AccountsRepository
      const agents = yield* AgentsRepository
      const codes = yield* AuthorizationCodesRepository
      const credentials = yield* CredentialsRepository
      /** The connection's rules read and write through these (as in a device authorization's step). */
      const db = yield* withRepositories(
        AccountsRepository,
        AgentsRepository,
        CredentialsRepository,
        ExecutorsRepository,
        HandleReservationsRepository,
        NamedAgentsRepository
      )
      // The exchange's own transaction is no actor's step: what it starts or tells joins it.
      const actors = (yield* ActorHost).transactional

      const issueCode = (request: AuthorizeRequest, human: UserRow) =>
        Effect.gen(function* () {
          const account = yield* accounts.currentAccount
          const registration = request.registration
          if (account && (registration?.branch === "agent" || registration?.branch === "combined")) {
            const agent = yield* agents.findAgentByIdentifier(account.id, registration.agentIdentifier)
            if (agent && agent.steward_id !== human.id) {
              return yield* new CodeRefused({ reason: "Another person stewards this application's agent" })
            }
            if (request.mode === "login" && agent?.status !== "active") {
              return yield* new CodeRefused({ reason: "This application is not connected to you yet" })
            }
          }
          const at = yield* now
          const minted = mintToken(codeFormat)
          yield* codes.insertCode({
            lookup: minted.lookup,
            salt: minted.salt,
            digest: minted.digest,
            clientId: applicationClientId,
            redirectUri: request.redirectUri,
            codeChallenge: request.codeChallenge,
            consequence: { mode: request.mode, registration: request.registration ?? null },
            approvedBy: human.id,
            now: at,
            expiresAt: new Date(at.getTime() + codeLifeMillis)
          })
          return minted.token
        }).pipe(Effect.catchTag("SqlError", Effect.die))

      const exchange = (input: {
        readonly code: string
        readonly clientId: string
        readonly redirectUri: string
        readonly codeVerifier: string
      }) =>
        Effect.gen(function* () {
          const parsed = parseToken(codeFormat, input.code)
          if (!parsed) return yield* new InvalidCode({ reason: "Unknown code" })
          const at = yield* now
          // The code is spent by this attempt whatever follows: single use. Presented again, it
          // ends what it issued (RFC 6749 §4.1.2); both commit even though the answer is a refusal.
          const found = yield* Effect.gen(function* () {
            const row = yield* codes.findCode(parsed.lookup)
            if (!row || !secretMatches(parsed.secret, row.salt, row.digest)) return undefined
            if (yield* codes.useCode(row.id, at)) return row
            yield* codes.markReplayed(row.id, at)
            for (const lineage of yield* codes.issuedLineages(row.id)) yield* credentials.revokeLineage(lineage, at)
            return "replayed" as const
          }).pipe(sql.withTransaction)
          if (found === "replayed") return yield* new InvalidCode({ reason: "The code was already used" })
          const row = found
          if (!row) return yield* new InvalidCode({ reason: "Unknown code" })
          if (at.getTime() >= row.expires_at.getTime()) return yield* new InvalidCode({ reason: "The code expired" })
          if (row.client_id !== input.clientId || row.redirect_uri !== input.redirectUri) {
            return yield* new InvalidCode({ reason: "The code was issued to another client or callback" })
          }
          const expected = Buffer.from(row.code_challenge)
          const actual = Buffer.from(s256(input.codeVerifier))
          if (
            !wellFormedVerifier(input.codeVerifier) ||
            expected.length !== actual.length ||
            !timingSafeEqual(expected, actual)
          ) {
            return yield* new InvalidCode({ reason: "The code verifier does not match" })
          }
          const consequence = row.consequence as { mode: "connect" | "login"; registration: DeviceRequest | null }
          // Issued under the code's lock, and recorded on it: a replay either comes first (and
          // this exchange issues nothing) or finds what to end.
          const issued = yield* Effect.gen(function* () {
            if ((yield* codes.lockCode(row.id))?.replayed_at !== null) {
              return yield* new InvalidCode({ reason: "The code was already used" })
            }
            const issued = yield* consumeConnection({
              clientId: row.client_id,
              request: consequence.mode === "login" ? undefined : (consequence.registration ?? undefined),
              approvedBy: row.approved_by,
              assignmentScope: "user_private"
            })
            const lineages = [issued.human, issued.agent, issued.runner].flatMap((lineage) =>
              lineage ? [lineage.lineagePublicId] : []
            )
            yield* codes.recordIssued(row.id, lineages)
            return issued
          }).pipe(
            sql.withTransaction,
            Effect.catchTag("Veto", (veto) => Effect.fail(new InvalidCode({ reason: veto.reason })))
          )
          return issued
        }).pipe(Effect.provideService(TransactionalActors, actors), db)

      return ApplicationLogin.of({ issueCode, exchange })
    })
  )
}
