// Credentials.authenticate reads a credential with every row its judgement needs in one statement:
// a grant holds the same rows as read one by one, and each refusal (revoked lineage, inactive or
// fenced executor, an agent without an authorizing steward, an agent application whose agent lost
// authority) answers Unauthenticated on its own, the credential itself still live.
import { Credentials } from "@troupe/domain/accounts/Credentials"
import { accessTokenFormat, parseToken } from "@troupe/domain/accounts/OpaqueTokens"
import { AccountsRepository } from "@troupe/storage/repositories/Accounts"
import { CredentialsRepository } from "@troupe/storage/repositories/Credentials"
import { ExecutorsRepository } from "@troupe/storage/repositories/Executors"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Browser, bearer, request } from "../support/http.ts"
import { createOwner, ownerCredentials, personalToken } from "../support/people.ts"
import { startTestServer, type TestServer } from "../support/server.ts"
import { agentFields, decide, machineFields, poll, signedInBrowser, startDevice } from "./oauth/support-device.ts"

let server: TestServer
let browser: Browser
let owner: Awaited<ReturnType<typeof createOwner>>

beforeAll(async () => {
  server = await startTestServer()
  owner = await createOwner(server)
  browser = await signedInBrowser(server, ownerCredentials.email, ownerCredentials.password)
})
afterAll(() => server?.close())

const connect = async (fields: Record<string, string>) => {
  const started = await startDevice(server, fields)
  expect((await decide(browser, started.user_code, "approve", "user_private")).status).toBe(200)
  const issued = await poll(server, started.device_code)
  expect(issued.status).toBe(200)
  return issued.body as { access_token: string; executor_access_token?: string }
}

const authenticate = (token: string) =>
  server.run(
    Effect.match(
      Effect.flatMap(Credentials, (credentials) => credentials.authenticate(token)),
      { onFailure: (error) => error._tag, onSuccess: (grant) => grant }
    )
  )

const lookupOf = (token: string) => parseToken(accessTokenFormat, token)!.lookup

/** Runs a statement on the credential's rows; `$lookup` names the credential. */
const alter = (token: string, statement: (lookup: string) => string) =>
  server.run(Effect.flatMap(SqlClient, (sql) => sql.unsafe(statement(lookupOf(token)))))

/** The grant as the rows read one by one make it. */
const readOneByOne = (token: string) =>
  server.run(
    Effect.gen(function* () {
      const credential = (yield* (yield* CredentialsRepository).findCredentialByLookup(lookupOf(token)))!
      const accounts = yield* AccountsRepository
      const user = credential.user_id === null ? undefined : yield* accounts.findUserById(credential.user_id)
      const steward =
        user?.kind === "agent" && user.steward_id !== null ? yield* accounts.findUserById(user.steward_id) : undefined
      const executor =
        credential.executor_id === null
          ? undefined
          : yield* (yield* ExecutorsRepository).findExecutorById(credential.executor_id)
      return { credential, plane: credential.plane, user, steward, executor }
    })
  )

describe("Credentials.authenticate", () => {
  it("grants the same rows as read one by one, on every plane", async () => {
    const agent = await connect(agentFields("grant-agent"))
    const runner = await connect(machineFields("grant-runner"))
    const member = await personalToken(server, owner, "member")
    for (const token of [agent.access_token, agent.executor_access_token!, runner.access_token, member]) {
      const grant = await authenticate(token)
      expect(grant).not.toBe("Unauthenticated")
      expect(grant).toEqual(await readOneByOne(token))
    }
    const agentGrant = await authenticate(agent.access_token)
    expect(typeof agentGrant === "object" && agentGrant.steward?.id).toBe(owner.id)
  })

  it("refuses a credential of a revoked lineage, the credential itself unrevoked", async () => {
    const agent = await connect(agentFields("lineage-agent"))
    expect(await authenticate(agent.access_token)).not.toBe("Unauthenticated")
    await alter(
      agent.access_token,
      (lookup) => `UPDATE credential_lineages SET revoked_at = now()
        WHERE id = (SELECT lineage_id FROM credentials WHERE lookup = '${lookup}')`
    )
    expect(await authenticate(agent.access_token)).toBe("Unauthenticated")
    expect(await authenticate(agent.executor_access_token!)).toBe("Unauthenticated")
  })

  it("refuses a transport credential of a fenced or inactive executor", async () => {
    const fenced = await connect(machineFields("fenced-runner"))
    const inactive = await connect(machineFields("inactive-runner"))
    const executorOf = (lookup: string) => `(SELECT executor_id FROM credentials WHERE lookup = '${lookup}')`
    await alter(
      fenced.access_token,
      (lookup) => `UPDATE executors SET credential_epoch = credential_epoch + 1 WHERE id = ${executorOf(lookup)}`
    )
    await alter(
      inactive.access_token,
      (lookup) => `UPDATE executors SET status = 'revoked' WHERE id = ${executorOf(lookup)}`
    )
    expect(await authenticate(fenced.access_token)).toBe("Unauthenticated")
    expect(await authenticate(inactive.access_token)).toBe("Unauthenticated")
  })

  it("refuses an agent, and its application's transport credential, without an authorizing steward", async () => {
    const moved = await connect(agentFields("generation-agent"))
    const inactive = await connect(agentFields("inactive-agent"))
    const agentOf = (lookup: string) => `(SELECT user_id FROM credentials WHERE lookup = '${lookup}')`
    await alter(
      moved.access_token,
      (lookup) => `UPDATE users SET steward_generation = steward_generation + 1 WHERE id = ${agentOf(lookup)}`
    )
    await alter(inactive.access_token, (lookup) => `UPDATE users SET status = 'inactive' WHERE id = ${agentOf(lookup)}`)
    for (const agent of [moved, inactive]) {
      expect(await authenticate(agent.access_token)).toBe("Unauthenticated")
      expect(await authenticate(agent.executor_access_token!)).toBe("Unauthenticated")
    }
  })

  it("refuses every agent and agent application of a steward that shut them down, and no runner", async () => {
    const agent = await connect(agentFields("shutdown-agent"))
    const runner = await connect(machineFields("shutdown-runner"))
    const bump = (by: number) =>
      server.run(
        Effect.flatMap(
          SqlClient,
          (sql) => sql`UPDATE users SET shutdown_generation = shutdown_generation + ${by} WHERE id = ${owner.id}`
        )
      )
    await bump(1)
    try {
      expect(await authenticate(agent.access_token)).toBe("Unauthenticated")
      expect(await authenticate(agent.executor_access_token!)).toBe("Unauthenticated")
      expect(await authenticate(runner.access_token)).not.toBe("Unauthenticated")
    } finally {
      await bump(-1)
    }
    expect(await authenticate(agent.executor_access_token!)).not.toBe("Unauthenticated")
  })

  it("refuses an inactive human's personal token and the agents it stewards, and no runner", async () => {
    const agent = await connect(agentFields("inactive-steward-agent"))
    const runner = await connect(machineFields("inactive-steward-runner"))
    const member = await personalToken(server, owner, "member")
    const status = (to: string) =>
      server.run(Effect.flatMap(SqlClient, (sql) => sql`UPDATE users SET status = ${to} WHERE id = ${owner.id}`))
    await status("inactive")
    try {
      expect(await authenticate(member)).toBe("Unauthenticated")
      expect(await authenticate(agent.access_token)).toBe("Unauthenticated")
      expect(await authenticate(agent.executor_access_token!)).toBe("Unauthenticated")
      expect(await authenticate(runner.access_token)).not.toBe("Unauthenticated")
    } finally {
      await status("active")
    }
    expect(await authenticate(member)).not.toBe("Unauthenticated")
    expect(await authenticate(agent.executor_access_token!)).not.toBe("Unauthenticated")
  })
})

describe("RFC 6750 §3: a 401 at the member and executor doors names the Bearer scheme", () => {
  const get = (path: string, headers: Record<string, string> = {}) => request(server.baseUrl, "GET", path, { headers })

  it("WWW-Authenticate: Bearer without a credential, with error=invalid_token for a refused one", async () => {
    const agent = await connect(agentFields("challenge-agent"))
    const challenge = 'Bearer realm="troupe"'
    const refused = `${challenge}, error="invalid_token"`
    for (const [path, headers, expected] of [
      ["/agent_api/v1/profile", {}, challenge],
      ["/agent_api/v1/executor", {}, challenge],
      ["/agent_api/v1/profile", { authorization: "Basic abc" }, challenge],
      ["/agent_api/v1/profile", bearer("sk-svc-api-v1-unknown"), refused],
      ["/agent_api/v1/profile", bearer(agent.executor_access_token!), refused],
      ["/agent_api/v1/executor", bearer(agent.access_token), refused],
      ["/agent_api/v1/executor", bearer("sk-svc-api-v1-unknown"), refused]
    ] as const) {
      const answer = await get(path, headers)
      expect([path, answer.status, answer.headers.get("www-authenticate")]).toEqual([path, 401, expected])
      expect(answer.body).toEqual({ error: { code: "unauthorized", message: expect.any(String) } })
    }
    expect((await get("/agent_api/v1/profile", bearer(agent.access_token))).headers.get("www-authenticate")).toBeNull()
  })
})

describe("RFC 6750 §3: a 401 at the platform doors names the Bearer scheme", () => {
  const get = (path: string, headers: Record<string, string> = {}) => request(server.baseUrl, "GET", path, { headers })

  it("WWW-Authenticate: Bearer without a credential, with error=invalid_token for a refused bearer", async () => {
    const agent = await connect(agentFields("platform-challenge-agent"))
    const member = await personalToken(server, owner, "member")
    const challenge = 'Bearer realm="troupe"'
    const refused = `${challenge}, error="invalid_token"`
    for (const [path, headers, expected] of [
      ["/api/v1/profile", {}, challenge],
      ["/api/v1/session", {}, challenge],
      ["/api/v1/profile", { authorization: "Basic abc" }, challenge],
      ["/api/v1/profile", { cookie: "troupe_session=unknown" }, challenge],
      ["/api/v1/profile", bearer("sk-svc-session-v1-unknown.unknown"), refused],
      ["/api/v1/profile", bearer("sk-svc-api-v1-unknown"), refused],
      ["/api/v1/profile", bearer(agent.access_token), refused],
      ["/api/v1/session", bearer(member), refused],
      ["/api/v1/admin/deployment/upgrades/00000000-0000-7000-8000-000000000000/stream", {}, challenge],
      ["/api/v1/admin/deployment/upgrades/00000000-0000-7000-8000-000000000000/stream", bearer(member), refused]
    ] as const) {
      const answer = await get(path, headers)
      expect([path, answer.status, answer.headers.get("www-authenticate")]).toEqual([path, 401, expected])
      expect(answer.body).toEqual({ error: { code: "unauthorized", message: expect.any(String) } })
    }
    const platform = await personalToken(server, owner, "platform")
    expect((await get("/api/v1/profile", bearer(platform))).headers.get("www-authenticate")).toBeNull()
  })
})
