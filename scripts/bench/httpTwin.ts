// The HTTP scenario's bare twin (run as its own process by scripts/bench/http.ts): a plain
// `node:http` server answering the two measured routes with the real server's bytes.
// GET /.well-known/oauth-authorization-server writes the status, headers and body the bench
// read from Troupe (BENCH_TWIN_ANSWERS), with a fresh x-request-id per request as Troupe does.
// GET /api/v1/profile does the credential lookup the platform door does for an API session
// bearer (parse the token, SELECT the session by its lookup id, compare the salted digest, check
// state and expiry, SELECT the user row, check kind and status) through an @effect/sql-pg pool
// of the server's size and options, then writes the profile body under Troupe's headers.
import { randomUUID } from "node:crypto"
import { createServer, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from "node:http"
import { PgClient } from "@effect/sql-pg"
import { parseSessionToken, sessionSecretMatches } from "@troupe/domain/accounts/SessionTokens"
import { Effect, ManagedRuntime, Redacted } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/** One route's answer as Troupe wrote it; the twin replays it. */
export interface Answer {
  readonly status: number
  /** Header names and values in Troupe's order, without date, connection and keep-alive. */
  readonly headers: ReadonlyArray<readonly [string, string]>
  readonly body: string
}

export interface TwinAnswers {
  readonly static: Answer
  readonly profile: Answer
}

interface SessionRow {
  readonly user_id: bigint
  readonly kind: "api" | "browser"
  readonly salt: Uint8Array
  readonly digest: Uint8Array
  readonly expires_at: Date
  readonly state: string
}

interface UserRow {
  readonly public_id: string
  readonly kind: string
  readonly status: string
  readonly role: string
  readonly handle: string
  readonly display_name: string
}

const answers: TwinAnswers = JSON.parse(process.env.BENCH_TWIN_ANSWERS!)
const staticBody = Buffer.from(answers.static.body)

/** The answer's headers in its order, with a fresh request id and the body's length. */
const headersOf = (answer: Answer, body: string | Buffer): OutgoingHttpHeaders => {
  const headers: OutgoingHttpHeaders = {}
  for (const [name, value] of answer.headers) {
    headers[name] = name === "x-request-id" ? randomUUID() : name === "content-length" ? Buffer.byteLength(body) : value
  }
  return headers
}

// The same client options as the server's pool (packages/storage/src/Database.ts).
const runtime = ManagedRuntime.make(
  PgClient.layer({
    url: Redacted.make(process.env.DATABASE_URL!),
    maxConnections: Number(process.env.DATABASE_POOL_SIZE),
    idleTimeout: "60 seconds",
    applicationName: "troupe-bench-twin"
  })
)
const sql = await runtime.runPromise(Effect.service(SqlClient))

const profileOf = async (authorization: string | undefined) => {
  const parsed = authorization?.startsWith("Bearer ") ? parseSessionToken(authorization.slice(7)) : undefined
  if (!parsed) return undefined
  const [session] = await Effect.runPromise(sql<SessionRow>`SELECT * FROM sessions WHERE lookup = ${parsed.lookup}`)
  if (!session || !sessionSecretMatches(parsed.secret, session.salt, session.digest)) return undefined
  if (session.state !== "active" || Date.now() >= session.expires_at.getTime() || session.kind !== "api") {
    return undefined
  }
  const [user] = await Effect.runPromise(sql<UserRow>`SELECT * FROM users WHERE id = ${session.user_id}`)
  if (user?.kind !== "human" || user.status !== "active") return undefined
  return JSON.stringify({
    member: {
      public_id: user.public_id,
      kind: "human",
      role: user.role,
      handle: user.handle,
      display_name: user.display_name
    },
    credential_plane: null
  })
}

/** Refusals carry no body (the load generators count them as errors). */
const empty: OutgoingHttpHeaders = { "content-length": 0 }

const send = (response: ServerResponse, status: number, headers: OutgoingHttpHeaders, body: string | Buffer) => {
  response.writeHead(status, headers)
  response.end(body)
}

const answer = (request: IncomingMessage, response: ServerResponse) => {
  if (request.url === "/.well-known/oauth-authorization-server") {
    return send(response, answers.static.status, headersOf(answers.static, staticBody), staticBody)
  }
  if (request.url === "/api/v1/profile") {
    return profileOf(request.headers.authorization).then(
      (body) =>
        body === undefined
          ? send(response, 401, empty, "")
          : send(response, answers.profile.status, headersOf(answers.profile, body), body),
      () => send(response, 500, empty, "")
    )
  }
  send(response, 404, empty, "")
}

const server = createServer(answer).listen(Number(process.env.PORT), "127.0.0.1")
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    server.close()
    server.closeAllConnections()
    void runtime.dispose().finally(() => process.exit(0))
  })
}
