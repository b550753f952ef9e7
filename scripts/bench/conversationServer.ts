// The conversation scenarios' server: `troupe serve` in its own process on a fresh PostgreSQL
// database (default pool and log level, a data directory of its own, its log to a file), the
// owner and a member personal token made through the domain services before it starts, and a
// workspace made through its door; plus a keep-alive JSON client for its member doors
// (Idempotency-Key on every POST, as the doors require).
import { mkdtemp, rm } from "node:fs/promises"
import { Agent, request } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Accounts } from "@troupe/domain/accounts/Accounts"
import { Credentials } from "@troupe/domain/accounts/Credentials"
import { migratedDatabase } from "@troupe/server/Server"
import type { DatabaseConfig } from "@troupe/storage/Database"
import { repositoriesLayer } from "@troupe/storage/Repositories"
import { Effect, Layer, Redacted, References } from "effect"
import { benchDatabase } from "./database.ts"
import { awaitAnswer, cliScript, freePort, startProcess } from "./http.ts"

export interface Answer {
  readonly status: number
  readonly body: any
}

export interface ServedTroupe {
  readonly database: DatabaseConfig
  readonly databaseUrl: string
  readonly baseUrl: string
  readonly token: string
  readonly workspaceId: string
  /** The server process (its CPU time is read from /proc). */
  readonly pid: number
  /** One request to a member door (`/agent_api/v1` + path), answered with its parsed body. */
  readonly call: (method: string, path: string, body?: unknown) => Effect.Effect<Answer>
  /** The member doors' path of the workspace's conversations. */
  readonly conversations: string
}

/** The owner and a member personal token, made through the domain services on the bench database. */
const memberToken = (config: DatabaseConfig, name: string) =>
  Effect.gen(function* () {
    const owner = yield* (yield* Accounts).createOwner({
      email: `${name}-bench@example.com`,
      password: `${name}-bench-password`,
      displayName: `${name} bench`
    })
    return yield* (yield* Credentials).personalToken(owner, "member", `${name} bench`)
  }).pipe(
    Effect.orDie,
    Effect.provide(
      Layer.mergeAll(Accounts.layer, Credentials.layer).pipe(
        Layer.provide(repositoriesLayer),
        Layer.provideMerge(migratedDatabase(config)),
        Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Warn"))
      )
    )
  )

/** A JSON client over keep-alive sockets (node:http: little client CPU beside the server's). */
const jsonClient = (baseUrl: string, token: string) => {
  const agent = new Agent({ keepAlive: true, maxSockets: 64 })
  let keys = 0
  const call = (method: string, path: string, body?: unknown) =>
    Effect.promise(
      () =>
        new Promise<Answer>((done, fail) => {
          const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body))
          const req = request(new URL(`/agent_api/v1${path}`, baseUrl), {
            method,
            agent,
            headers: {
              authorization: `Bearer ${token}`,
              ...(method === "POST" ? { "idempotency-key": `bench-${process.pid}-${++keys}` } : {}),
              ...(payload ? { "content-type": "application/json", "content-length": String(payload.length) } : {})
            }
          })
          req.on("response", (response) => {
            const chunks: Array<Buffer> = []
            response.on("data", (chunk: Buffer) => chunks.push(chunk))
            response.on("end", () => {
              const text = Buffer.concat(chunks).toString()
              done({ status: response.statusCode!, body: text.length > 0 ? JSON.parse(text) : null })
            })
          })
          req.on("error", fail)
          req.end(payload)
        })
    )
  return { call, close: Effect.sync(() => agent.destroy()) }
}

/** Fails the run with the answer unless it has `status`. */
export const expectStatus = (answer: Answer, status: number, what: string) =>
  answer.status === status
    ? Effect.succeed(answer.body)
    : Effect.die(new Error(`${what} answered ${answer.status}: ${JSON.stringify(answer.body)}`))

/** The served instance for scenario `name`, stopped (and its database dropped) when the scope closes. */
export const servedTroupe = (name: string) =>
  Effect.gen(function* () {
    const database = yield* benchDatabase
    if (database.config._tag !== "postgres") return undefined
    const token = yield* memberToken(database.config, name)
    const dir = yield* Effect.acquireRelease(
      Effect.promise(() => mkdtemp(join(tmpdir(), `troupe-${name}-bench-`))),
      (path) => Effect.promise(() => rm(path, { recursive: true, force: true }))
    )
    const port = yield* Effect.promise(freePort)
    const baseUrl = `http://127.0.0.1:${port}`
    const log = join(dir, "troupe.log")
    const server = yield* startProcess(
      [cliScript, "serve"],
      {
        DATABASE_URL: Redacted.value(database.config.url),
        HOST: "127.0.0.1",
        PORT: String(port),
        TROUPE_DATA_DIR: join(dir, "data")
      },
      log
    )
    yield* awaitAnswer(`${baseUrl}/ready`, log)
    const client = yield* Effect.acquireRelease(Effect.succeed(jsonClient(baseUrl, token)), (client) => client.close)
    const created = yield* client.call("POST", "/workspaces", { workspace: { name: `${name} bench` } })
    const workspaceId = (yield* expectStatus(created, 201, "POST /workspaces")).workspace.public_id as string
    return {
      database: database.config,
      databaseUrl: Redacted.value(database.config.url),
      baseUrl,
      token,
      workspaceId,
      pid: server.pid!,
      call: client.call,
      conversations: `/workspaces/${workspaceId}/conversations`
    } satisfies ServedTroupe
  })

/** A new conversation of the served workspace; answers its public id. */
export const newConversation = (served: ServedTroupe) =>
  Effect.flatMap(served.call("POST", served.conversations, { conversation: {} }), (answer) =>
    Effect.map(expectStatus(answer, 201, "POST conversations"), (body) => body.conversation.public_id as string)
  )
