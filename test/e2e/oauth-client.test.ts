// The connector's device flow driven by a real OAuth client library (oauth4webapi): discovery
// from the RFC 8414 metadata, the RFC 8628 device authorization request with the branch fields
// as extra parameters, the owner approving in the /oauth/device pages, the library's device-code
// polling (authorization_pending, slow_down) until the tokens arrive, then the library's refresh
// grant: the rotated pair works and the superseded refresh token is refused. Waiting between
// polls moves the server's clock instead of sleeping.
import * as oauth from "oauth4webapi"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { agentFields, connector, decide, machineFields, signedInBrowser } from "../http/oauth/support-device.ts"
import { bearer, request } from "../support/http.ts"
import { createOwner, ownerCredentials } from "../support/people.ts"
import { startTestServer, type TestServer } from "../support/server.ts"

let server: TestServer
let owner: Awaited<ReturnType<typeof signedInBrowser>>
let as: oauth.AuthorizationServer
/** Every URL the library fetched: none may leave the server's host. */
const fetched: Array<string> = []

const client: oauth.Client = { client_id: connector, token_endpoint_auth_method: "none" }
const clientAuth = oauth.None()
const options = {
  [oauth.allowInsecureRequests]: true,
  [oauth.customFetch]: (url: string, init: oauth.CustomFetchOptions<string, unknown>) => {
    fetched.push(url)
    return fetch(url, init as RequestInit)
  }
}

beforeAll(async () => {
  server = await startTestServer()
  await createOwner(server)
  owner = await signedInBrowser(server, ownerCredentials.email, ownerCredentials.password)
  const issuer = new URL(server.baseUrl)
  as = await oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...options })
  )
})
afterAll(() => server?.close())

const get = (path: string, token: string) => request(server.baseUrl, "GET", path, { headers: bearer(token) })

const startDeviceAuthorization = async (fields: Record<string, string>) =>
  oauth.processDeviceAuthorizationResponse(
    as,
    client,
    await oauth.deviceAuthorizationRequest(as, client, clientAuth, fields, options)
  )

/** What a poll gave: the tokens, or the RFC 8628 error the library raised. */
const pollOnce = async (deviceCode: string) => {
  const response = await oauth.deviceCodeGrantRequest(as, client, clientAuth, deviceCode, options)
  try {
    return { tokens: await oauth.processDeviceCodeResponse(as, client, response) }
  } catch (error) {
    if (error instanceof oauth.ResponseBodyError) return { error: error.error, body: error.cause }
    throw error
  }
}

/**
 * RFC 8628 §3.5 polling: before each poll the client waits the interval; authorization_pending
 * keeps it, slow_down adds 5 seconds. `wait` stands in for the timer (it moves the server's
 * clock, and the human may act meanwhile).
 */
const pollUntilTokens = async (
  device: oauth.DeviceAuthorizationResponse,
  wait: (round: number, interval: number) => Promise<void>
) => {
  let interval = device.interval ?? 5
  const answers: Array<string> = []
  for (let round = 1; round <= 10; round++) {
    await wait(round, interval)
    const polled = await pollOnce(device.device_code)
    if (polled.tokens) return { tokens: polled.tokens, answers }
    answers.push(polled.error)
    if (polled.error === "slow_down") interval += 5
    else if (polled.error !== "authorization_pending") throw new Error(`polling ended with ${polled.error}`)
  }
  throw new Error(`no tokens after 10 polls: ${answers.join(", ")}`)
}

const passes = (seconds: number) => server.clock.advance(`${seconds} seconds`)

/** The library's refresh grant: the parsed response, or the error it raised. */
const refresh = async (refreshToken: string) => {
  const response = await oauth.refreshTokenGrantRequest(as, client, clientAuth, refreshToken, options)
  try {
    return { tokens: await oauth.processRefreshTokenResponse(as, client, response) }
  } catch (error) {
    if (error instanceof oauth.ResponseBodyError) return { error: error.error }
    throw error
  }
}

const refreshed = async (refreshToken: string) => {
  const answer = await refresh(refreshToken)
  if (!answer.tokens) throw new Error(`refresh failed: ${answer.error}`)
  return answer.tokens
}

interface RunnerBundle {
  readonly access_token: string
  readonly token_type: string
  readonly expires_in: number
  readonly refresh_token: string
}

it("discovers the endpoints from the RFC 8414 metadata", () => {
  expect(as).toMatchObject({
    issuer: server.baseUrl,
    token_endpoint: `${server.baseUrl}/oauth/token`,
    device_authorization_endpoint: `${server.baseUrl}/oauth/device_authorization`,
    revocation_endpoint: `${server.baseUrl}/oauth/revoke`,
    code_challenge_methods_supported: ["S256"]
  })
  expect(as.grant_types_supported).toEqual(
    expect.arrayContaining(["urn:ietf:params:oauth:grant-type:device_code", "refresh_token"])
  )
})

describe("the device flow through oauth4webapi", () => {
  it("branch A: pending, slow_down for an early poll, approval, member + agent_application credentials; refresh rotates", async () => {
    const device = await startDeviceAuthorization(agentFields("library-agent"))
    expect(device).toMatchObject({ expires_in: 900, interval: 5 })
    expect(device.verification_uri_complete).toBe(
      `${server.baseUrl}/oauth/device?user_code=${encodeURIComponent(device.user_code)}`
    )
    const { tokens, answers } = await pollUntilTokens(device, async (round, interval) => {
      // Round 1 is the first poll (never throttled); round 2 fires early, as a jittery timer
      // might, and is told to slow down; the human approves while the client backs off.
      if (round === 3) {
        passes(interval)
        expect((await decide(owner, device.user_code, "approve")).status).toBe(200)
      }
    })
    expect(answers).toEqual(["authorization_pending", "slow_down"])
    expect(tokens).toMatchObject({ token_type: "bearer", expires_in: 1209600, plane: "member" })
    expect(tokens).not.toHaveProperty("scope")
    expect(tokens.access_token).toMatch(/^sk-svc-api-v1-/)
    expect(tokens.refresh_token).toMatch(/^rt-svc-api-v1-/)
    const transport = tokens.executor_access_token as string
    expect(transport).toMatch(/^sk-svc-api-v1-/)
    expect((await get("/agent_api/v1/profile", tokens.access_token)).status).toBe(200)
    expect((await get("/agent_api/v1/executor", transport)).body.executor).toMatchObject({
      kind: "agent_application",
      display_name: "library-agent app"
    })

    const rotated = await refreshed(tokens.refresh_token!)
    expect(rotated).toMatchObject({ token_type: "bearer", expires_in: 1209600, plane: "member" })
    expect(rotated.access_token).not.toBe(tokens.access_token)
    expect(rotated.refresh_token).not.toBe(tokens.refresh_token)
    expect((await get("/agent_api/v1/profile", rotated.access_token)).status).toBe(200)
    expect((await get("/agent_api/v1/profile", tokens.access_token)).status).toBe(401)

    expect(await refresh(tokens.refresh_token!)).toEqual({ error: "invalid_grant" })
    // Presenting a superseded refresh token ends the whole lineage.
    expect((await get("/agent_api/v1/profile", rotated.access_token)).status).toBe(401)
    expect(await refresh(rotated.refresh_token!)).toEqual({ error: "invalid_grant" })
  })

  it("branch B: a fresh runner, approved for the owner alone, gets a transport credential; refresh rotates", async () => {
    const device = await startDeviceAuthorization(machineFields("library-runner", { executor_kind: "runner" }))
    const { tokens, answers } = await pollUntilTokens(device, async (round, interval) => {
      if (round === 1) return
      passes(interval)
      if (round === 2) expect((await decide(owner, device.user_code, "approve", "user_private")).status).toBe(200)
    })
    expect(answers).toEqual(["authorization_pending"])
    expect(tokens).toMatchObject({ token_type: "bearer", expires_in: 1209600, plane: "executor_transport" })
    expect(tokens).not.toHaveProperty("executor_access_token")
    expect(tokens).not.toHaveProperty("scope")
    const executor = (await get("/agent_api/v1/executor", tokens.access_token)).body.executor
    expect(executor).toMatchObject({ kind: "runner", status: "active", display_name: "Runner library-runner" })
    expect((await get("/agent_api/v1/profile", tokens.access_token)).status).toBe(401)

    const rotated = await refreshed(tokens.refresh_token!)
    expect(rotated).toMatchObject({ token_type: "bearer", plane: "executor_transport" })
    const after = await get("/agent_api/v1/executor", rotated.access_token)
    expect(after.status).toBe(200)
    expect(after.body.executor.public_id).toBe(executor.public_id)
    expect((await get("/agent_api/v1/executor", tokens.access_token)).status).toBe(401)

    expect(await refresh(tokens.refresh_token!)).toEqual({ error: "invalid_grant" })
    expect((await get("/agent_api/v1/executor", rotated.access_token)).status).toBe(401)
  })

  it("branch A+B: the agent bundle plus a runner with its own lineage; both rotate independently", async () => {
    const device = await startDeviceAuthorization({
      ...agentFields("library-combined"),
      ...machineFields("library-combined-runner")
    })
    // The human approves before the first poll; the first poll picks the grant up at once.
    expect((await decide(owner, device.user_code, "approve")).status).toBe(200)
    const { tokens, answers } = await pollUntilTokens(device, async () => {})
    expect(answers).toEqual([])
    expect(tokens).toMatchObject({ token_type: "bearer", expires_in: 1209600, plane: "member" })
    expect(tokens).not.toHaveProperty("scope")
    const runner = tokens.runner as unknown as RunnerBundle
    expect(runner).toEqual({
      access_token: expect.stringMatching(/^sk-svc-api-v1-/),
      token_type: "Bearer",
      expires_in: 1209600,
      refresh_token: expect.stringMatching(/^rt-svc-api-v1-/)
    })
    expect(runner.refresh_token).not.toBe(tokens.refresh_token)
    expect((await get("/agent_api/v1/profile", tokens.access_token)).status).toBe(200)
    expect((await get("/agent_api/v1/executor", runner.access_token)).body.executor.kind).toBe("runner")

    const member = await refreshed(tokens.refresh_token!)
    expect(member).toMatchObject({ token_type: "bearer", plane: "member" })
    expect(member).not.toHaveProperty("runner")
    const rotatedRunner = await refreshed(runner.refresh_token)
    expect(rotatedRunner).toMatchObject({ token_type: "bearer", plane: "executor_transport" })
    expect((await get("/agent_api/v1/profile", member.access_token)).status).toBe(200)
    expect((await get("/agent_api/v1/executor", rotatedRunner.access_token)).body.executor.kind).toBe("runner")
    expect((await get("/agent_api/v1/profile", tokens.access_token)).status).toBe(401)
    expect((await get("/agent_api/v1/executor", runner.access_token)).status).toBe(401)

    // A superseded runner refresh token ends the runner lineage, not the agent's.
    expect(await refresh(runner.refresh_token)).toEqual({ error: "invalid_grant" })
    expect((await get("/agent_api/v1/executor", rotatedRunner.access_token)).status).toBe(401)
    expect((await get("/agent_api/v1/profile", member.access_token)).status).toBe(200)
    expect(await refresh(tokens.refresh_token!)).toEqual({ error: "invalid_grant" })
    expect((await get("/agent_api/v1/profile", member.access_token)).status).toBe(401)
  })
})

it("the library never fetched anything outside the server's host", () => {
  expect(fetched.length).toBeGreaterThan(0)
  expect(fetched.filter((url) => new URL(url).host !== new URL(server.baseUrl).host)).toEqual([])
})
