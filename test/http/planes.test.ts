// The cross-plane matrix (spec "What the service does": three credential planes; "Member and
// transport credentials"; "Platform plane"; "Platform: session"), over a real server: one
// credential of each kind against each plane's routes. Only the credential's own plane answers;
// every other route answers 401 unauthorized with the envelope — except the spec's special cases:
// a platform access token is no session (GET/DELETE /api/v1/session answer 404 not_found), a
// browser cookie authorizes safe /api/v1 reads only, and a human member token reads its member
// profile (kind human, no configuration). Then: revoked, expired and fenced answer the same 401.
import { ActorHost } from "@troupe/actors/ActorHost"
import { Credentials } from "@troupe/domain/accounts/Credentials"
import { sessionCookie } from "@troupe/http/web/Cookies"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Browser, bearer, type JsonResponse, request } from "../support/http.ts"
import { apiToken, createOwner, ownerCredentials } from "../support/people.ts"
import { startTestServer, type TestServer } from "../support/server.ts"
import { agentFields, decide, form, machineFields, poll, signedInBrowser, startDevice } from "./oauth/support-device.ts"

type Headers = Record<string, string>
type Owner = Awaited<ReturnType<typeof createOwner>>

/** Starts a device connection, approves it in the owner's browser and answers the winning poll. */
const connect = async (
  server: TestServer,
  browser: Browser,
  fields: Record<string, string>,
  scope?: "user_private" | "account_wide"
) => {
  const started = await startDevice(server, fields)
  const approved = await decide(browser, started.user_code, "approve", scope)
  if (approved.status !== 200) throw new Error(`approval failed: ${approved.status}`)
  const issued = await poll(server, started.device_code)
  if (issued.status !== 200) throw new Error(`poll failed: ${JSON.stringify(issued.body)}`)
  return issued.body as {
    access_token: string
    refresh_token: string
    executor_access_token?: string
    plane: string
  }
}

const personalToken = (server: TestServer, owner: Owner, plane: "platform" | "member", name: string) =>
  server.run(Effect.flatMap(Credentials, (credentials) => credentials.personalToken(owner, plane, name)))

const expectUnauthorized = (response: JsonResponse) => {
  expect(response.status).toBe(401)
  expect(response.body).toEqual({ error: { code: "unauthorized", message: expect.any(String) } })
}

const expectNotFound = (response: JsonResponse) => {
  expect(response.status).toBe(404)
  expect(response.body).toEqual({ error: { code: "not_found", message: expect.any(String) } })
}

describe("the cross-plane matrix", () => {
  let server: TestServer
  const held = new Map<string, Headers>()

  type Credential =
    | "API session bearer"
    | "browser session cookie"
    | "member token"
    | "agent application transport token"
    | "runner transport token"
    | "human platform personal token"
    | "human member personal token"
    | "agent refresh token"
    | "browser session token as a bearer"
    | "API session token as a cookie"

  beforeAll(async () => {
    server = await startTestServer()
    const owner = await createOwner(server)
    const browser = await signedInBrowser(server, ownerCredentials.email, ownerCredentials.password)
    const agent = await connect(server, browser, agentFields("planes-agent"))
    const runner = await connect(server, browser, machineFields("planes-runner"), "user_private")
    if (!agent.executor_access_token) throw new Error("branch A issued no executor_access_token")
    const apiSession = await apiToken(server)
    const browserSession = browser.cookies.get(sessionCookie)
    if (!browserSession) throw new Error("the login page set no session cookie")
    held.set("API session bearer", bearer(apiSession))
    held.set("browser session token as a bearer", bearer(browserSession))
    held.set("API session token as a cookie", { cookie: `${sessionCookie}=${apiSession}` })
    held.set("browser session cookie", { cookie: browser.cookieHeader })
    held.set("member token", bearer(agent.access_token))
    held.set("agent application transport token", bearer(agent.executor_access_token))
    held.set("runner transport token", bearer(runner.access_token))
    held.set("human platform personal token", bearer(await personalToken(server, owner, "platform", "test")))
    held.set("human member personal token", bearer(await personalToken(server, owner, "member", "test")))
    held.set("agent refresh token", bearer(agent.refresh_token))
  })
  afterAll(() => server?.close())

  /** A credential that a route consumes (DELETE revokes the API session) is minted fresh. */
  const credentialFor = async (credential: Credential, consumes: boolean): Promise<Headers> =>
    consumes && credential === "API session bearer" ? bearer(await apiToken(server)) : held.get(credential)!

  type Expect = (response: JsonResponse) => void
  const ok =
    (check: (body: any) => void): Expect =>
    (response) => {
      expect(response.status).toBe(200)
      check(response.body)
    }
  const platformProfile = (credentialKind: "api_session" | "browser_session" | "access_token") =>
    ok((body) => {
      expect(body.member).toMatchObject({ kind: "human", role: "owner" })
      expect(Object.keys(body.member).sort()).toEqual(["display_name", "handle", "kind", "public_id", "role"])
      expect(body.credential_plane).toBe(credentialKind === "access_token" ? "platform" : null)
      expect(JSON.stringify(body)).not.toContain(ownerCredentials.email)
    })
  const session = (kind: "api" | "browser") => ok((body) => expect(body.session.kind).toBe(kind))
  const revoked = ok((body) => expect(body).toEqual({ revoked: true }))
  const agentProfile = ok((body) => {
    expect(body.member).toMatchObject({ kind: "agent", role: "member", display_name: "Agent planes-agent" })
    expect(body.credential.plane).toBe("member")
    expect(body.configuration).toMatchObject({ tool_definitions: [] })
  })
  const humanProfile = ok((body) => {
    expect(body.member).toMatchObject({ kind: "human", role: "owner", display_name: "Olive Owner" })
    expect(body.credential.plane).toBe("member")
    expect(body).not.toHaveProperty("configuration")
    expect(JSON.stringify(body)).not.toContain(ownerCredentials.email)
  })
  const executor = (kind: "agent_application" | "runner") =>
    ok((body) => expect(body.executor).toMatchObject({ kind, status: "active" }))
  const no: Expect = expectUnauthorized
  const notFound: Expect = expectNotFound

  const routes = [
    "GET /api/v1/profile",
    "GET /api/v1/session",
    "DELETE /api/v1/session",
    "GET /agent_api/v1/profile",
    "GET /agent_api/v1/executor"
  ] as const
  type Route = (typeof routes)[number]

  const matrix: Record<Credential, Record<Route, Expect>> = {
    "API session bearer": {
      "GET /api/v1/profile": platformProfile("api_session"),
      "GET /api/v1/session": session("api"),
      "DELETE /api/v1/session": revoked,
      "GET /agent_api/v1/profile": no,
      "GET /agent_api/v1/executor": no
    },
    "browser session cookie": {
      "GET /api/v1/profile": platformProfile("browser_session"),
      "GET /api/v1/session": session("browser"),
      "DELETE /api/v1/session": no,
      "GET /agent_api/v1/profile": no,
      "GET /agent_api/v1/executor": no
    },
    "member token": {
      "GET /api/v1/profile": no,
      "GET /api/v1/session": no,
      "DELETE /api/v1/session": no,
      "GET /agent_api/v1/profile": agentProfile,
      "GET /agent_api/v1/executor": no
    },
    "agent application transport token": {
      "GET /api/v1/profile": no,
      "GET /api/v1/session": no,
      "DELETE /api/v1/session": no,
      "GET /agent_api/v1/profile": no,
      "GET /agent_api/v1/executor": executor("agent_application")
    },
    "runner transport token": {
      "GET /api/v1/profile": no,
      "GET /api/v1/session": no,
      "DELETE /api/v1/session": no,
      "GET /agent_api/v1/profile": no,
      "GET /agent_api/v1/executor": executor("runner")
    },
    "human platform personal token": {
      "GET /api/v1/profile": platformProfile("access_token"),
      "GET /api/v1/session": notFound,
      "DELETE /api/v1/session": notFound,
      "GET /agent_api/v1/profile": no,
      "GET /agent_api/v1/executor": no
    },
    "human member personal token": {
      "GET /api/v1/profile": no,
      "GET /api/v1/session": no,
      "DELETE /api/v1/session": no,
      "GET /agent_api/v1/profile": humanProfile,
      "GET /agent_api/v1/executor": no
    },
    "agent refresh token": {
      "GET /api/v1/profile": no,
      "GET /api/v1/session": no,
      "DELETE /api/v1/session": no,
      "GET /agent_api/v1/profile": no,
      "GET /agent_api/v1/executor": no
    },
    // A session token counts only through the door of its own kind.
    "browser session token as a bearer": {
      "GET /api/v1/profile": no,
      "GET /api/v1/session": no,
      "DELETE /api/v1/session": no,
      "GET /agent_api/v1/profile": no,
      "GET /agent_api/v1/executor": no
    },
    "API session token as a cookie": {
      "GET /api/v1/profile": no,
      "GET /api/v1/session": no,
      "DELETE /api/v1/session": no,
      "GET /agent_api/v1/profile": no,
      "GET /agent_api/v1/executor": no
    }
  }

  const label = (expectation: Expect) =>
    expectation === no ? "401" : expectation === notFound ? "404" : expectation === revoked ? "200 revoked" : "200"

  for (const [credential, row] of Object.entries(matrix) as Array<[Credential, Record<Route, Expect>]>) {
    for (const route of routes) {
      const expectation = row[route]
      it(`${credential} on ${route} → ${label(expectation)}`, async () => {
        const [method, path] = route.split(" ") as [string, string]
        const headers = await credentialFor(credential, method === "DELETE")
        expectation(await request(server.baseUrl, method, path, { headers }))
      })
    }
  }

  it("a refused credential leaves the held one working: the cookie still reads after its refused DELETE", async () => {
    const cookie = held.get("browser session cookie")!
    expectUnauthorized(await request(server.baseUrl, "DELETE", "/api/v1/session", { headers: cookie }))
    session("browser")(await request(server.baseUrl, "GET", "/api/v1/session", { headers: cookie }))
  })

  it("a platform personal token on DELETE /api/v1/session revokes nothing: it still reads its profile", async () => {
    const token = held.get("human platform personal token")!
    expectNotFound(await request(server.baseUrl, "DELETE", "/api/v1/session", { headers: token }))
    platformProfile("access_token")(await request(server.baseUrl, "GET", "/api/v1/profile", { headers: token }))
  })
})

describe("revoked, expired and fenced credentials", () => {
  let server: TestServer
  let owner: Owner
  let browser: Browser

  beforeAll(async () => {
    server = await startTestServer()
    owner = await createOwner(server)
    browser = await signedInBrowser(server, ownerCredentials.email, ownerCredentials.password)
  })
  afterAll(() => server?.close())

  const get = (path: string, token: string) => request(server.baseUrl, "GET", path, { headers: bearer(token) })
  const bodyOf = async (path: string, token: string) => {
    const response = await get(path, token)
    expectUnauthorized(response)
    return response.body
  }

  it("answer 401 unauthorized without saying which (the same body for all three, and as for a forged token)", async () => {
    // Fenced: reconnecting the same agent identifier and re-pairing the same machine advance the epoch.
    const fencedAgent = await connect(server, browser, agentFields("fenced-agent"))
    await connect(server, browser, agentFields("fenced-agent"))
    const fencedRunner = await connect(server, browser, machineFields("fenced-runner"), "user_private")
    await connect(server, browser, machineFields("fenced-runner"), "user_private")

    // Revoked: the agent lineage through /oauth/revoke; the runner address by explicit revocation;
    // a personal token through the domain service.
    const revokedAgent = await connect(server, browser, agentFields("revoked-agent"))
    expect(
      (
        await form(server, "/oauth/revoke", {
          client_id: "svc-first-party-connector",
          token: revokedAgent.refresh_token
        })
      ).status
    ).toBe(200)
    const revokedRunner = await connect(server, browser, machineFields("revoked-runner"), "user_private")
    const address = (await get("/agent_api/v1/executor", revokedRunner.access_token)).body.executor.public_id as string
    const revocation = await server.run(
      Effect.flatMap(ActorHost, (host) => host.send("executorAddress", address, { type: "executor.revoke" }))
    )
    expect(revocation).toMatchObject({ _tag: "Accepted", state: "revoked" })
    const revokedMemberPersonal = await personalToken(server, owner, "member", "revoked")
    const revokedPlatformPersonal = await personalToken(server, owner, "platform", "revoked")
    await server.run(
      Effect.flatMap(Credentials, (credentials) =>
        Effect.andThen(
          credentials.revoke(revokedMemberPersonal, "svc-first-party-connector"),
          credentials.revoke(revokedPlatformPersonal, "svc-first-party-connector")
        )
      )
    )

    // Expired: live now, past their 1209600 seconds later.
    const expiringAgent = await connect(server, browser, agentFields("expiring-agent"))
    const expiringRunner = await connect(server, browser, machineFields("expiring-runner"), "user_private")
    const expiringMemberPersonal = await personalToken(server, owner, "member", "expiring")
    const expiringPlatformPersonal = await personalToken(server, owner, "platform", "expiring")
    const revokedSession = await apiToken(server)
    const deleted = await request(server.baseUrl, "DELETE", "/api/v1/session", { headers: bearer(revokedSession) })
    expect(deleted.status).toBe(200)
    const expiringSession = await apiToken(server)
    const forged = `sk-svc-api-v1-${"A".repeat(43)}`

    const member = [
      await bodyOf("/agent_api/v1/profile", fencedAgent.access_token),
      await bodyOf("/agent_api/v1/profile", revokedAgent.access_token),
      await bodyOf("/agent_api/v1/profile", revokedMemberPersonal),
      await bodyOf("/agent_api/v1/profile", forged)
    ]
    const transport = [
      await bodyOf("/agent_api/v1/executor", fencedAgent.executor_access_token!),
      await bodyOf("/agent_api/v1/executor", fencedRunner.access_token),
      await bodyOf("/agent_api/v1/executor", revokedAgent.executor_access_token!),
      await bodyOf("/agent_api/v1/executor", revokedRunner.access_token),
      await bodyOf("/agent_api/v1/executor", forged)
    ]
    const platform = [
      await bodyOf("/api/v1/profile", revokedPlatformPersonal),
      await bodyOf("/api/v1/profile", revokedSession),
      await bodyOf("/api/v1/session", revokedSession),
      await bodyOf("/api/v1/profile", forged)
    ]

    expect((await get("/agent_api/v1/profile", expiringAgent.access_token)).status).toBe(200)
    expect((await get("/agent_api/v1/executor", expiringAgent.executor_access_token!)).status).toBe(200)
    expect((await get("/agent_api/v1/executor", expiringRunner.access_token)).status).toBe(200)
    expect((await get("/agent_api/v1/profile", expiringMemberPersonal)).status).toBe(200)
    expect((await get("/api/v1/profile", expiringPlatformPersonal)).status).toBe(200)
    expect((await get("/api/v1/profile", expiringSession)).status).toBe(200)
    server.clock.advance("1209600 seconds")
    member.push(
      await bodyOf("/agent_api/v1/profile", expiringAgent.access_token),
      await bodyOf("/agent_api/v1/profile", expiringMemberPersonal)
    )
    transport.push(
      await bodyOf("/agent_api/v1/executor", expiringAgent.executor_access_token!),
      await bodyOf("/agent_api/v1/executor", expiringRunner.access_token)
    )
    platform.push(await bodyOf("/api/v1/profile", expiringPlatformPersonal))
    // The API session lives 30 days: 1209600 + 1382400 seconds.
    expect((await get("/api/v1/session", expiringSession)).status).toBe(200)
    server.clock.advance("1382400 seconds")
    platform.push(await bodyOf("/api/v1/session", expiringSession), await bodyOf("/api/v1/profile", expiringSession))

    for (const bodies of [member, transport, platform]) {
      for (const body of bodies) expect(body).toEqual(bodies[0])
    }
  })
})
