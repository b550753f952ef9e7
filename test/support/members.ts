// Member credentials for member-plane tests, obtained through the real device flow: a human
// approves in the browser pages, the connector polls once.
import { Browser, csrfTokenIn, request } from "./http.ts"
import type { TestServer } from "./server.ts"

const connector = "svc-first-party-connector"
const deviceGrant = "urn:ietf:params:oauth:grant-type:device_code"

const formPost = (server: TestServer, path: string, fields: Record<string, string>) =>
  request(server.baseUrl, "POST", path, {
    raw: new URLSearchParams(fields).toString(),
    headers: { "content-type": "application/x-www-form-urlencoded" }
  })

/** A human signed in through the login page. */
export const signedIn = async (server: TestServer, credentials: { email: string; password: string }) => {
  const browser = new Browser(server.baseUrl)
  const page = await browser.get("/login")
  const done = await browser.post("/login", { ...credentials, csrf_token: csrfTokenIn(page.text) })
  if (done.status !== 303) throw new Error(`sign-in failed: ${done.status}`)
  return browser
}

export interface ConnectedAgent {
  /** The member access token. */
  readonly token: string
  readonly publicId: string
  readonly handle: string
}

/** Connects an agent program stewarded by the signed-in human; answers its member token. */
export const connectAgent = async (
  server: TestServer,
  steward: Browser,
  identifier: string
): Promise<ConnectedAgent> => {
  const started = await formPost(server, "/oauth/device_authorization", {
    client_id: connector,
    agent_identifier: identifier,
    agent_display_name: `Agent ${identifier}`,
    executor_display_name: `${identifier} app`
  })
  const userCode = started.body.user_code as string
  const page = await steward.get(`/oauth/device?user_code=${encodeURIComponent(userCode)}`)
  await steward.post("/oauth/device", { user_code: userCode, decision: "approve", csrf_token: csrfTokenIn(page.text) })
  const issued = await formPost(server, "/oauth/token", {
    grant_type: deviceGrant,
    device_code: started.body.device_code,
    client_id: connector
  })
  if (issued.status !== 200) throw new Error(`connecting ${identifier} failed: ${JSON.stringify(issued.body)}`)
  const token = issued.body.access_token as string
  const profile = await request(server.baseUrl, "GET", "/agent_api/v1/profile", {
    headers: { authorization: `Bearer ${token}` }
  })
  return { token, publicId: profile.body.member.public_id, handle: profile.body.member.handle }
}
