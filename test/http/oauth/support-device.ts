// Helpers for device-flow tests: start a connection, approve it as a signed-in human in the
// browser pages, poll the token endpoint.
import { Browser, csrfTokenIn, request } from "../../support/http.ts"
import type { TestServer } from "../../support/server.ts"

export const connector = "svc-first-party-connector"
export const deviceGrant = "urn:ietf:params:oauth:grant-type:device_code"

export const form = (server: TestServer, path: string, fields: Record<string, string>) =>
  request(server.baseUrl, "POST", path, {
    raw: new URLSearchParams(fields).toString(),
    headers: { "content-type": "application/x-www-form-urlencoded" }
  })

export const startDevice = async (server: TestServer, fields: Record<string, string>) => {
  const response = await form(server, "/oauth/device_authorization", { client_id: connector, ...fields })
  if (response.status !== 200) throw new Error(`device authorization failed: ${JSON.stringify(response.body)}`)
  return response.body as {
    device_code: string
    user_code: string
    verification_uri: string
    verification_uri_complete: string
    expires_in: number
    interval: number
  }
}

export const poll = (server: TestServer, deviceCode: string, clientId = connector) =>
  form(server, "/oauth/token", { grant_type: deviceGrant, device_code: deviceCode, client_id: clientId })

/** A human signed in through the login page. */
export const signedInBrowser = async (server: TestServer, email: string, password: string) => {
  const browser = new Browser(server.baseUrl)
  const page = await browser.get("/login")
  const signedIn = await browser.post("/login", { email, password, csrf_token: csrfTokenIn(page.text) })
  if (signedIn.status !== 303) throw new Error(`sign-in failed: ${signedIn.status}`)
  return browser
}

/** Opens the verification page for the code and submits the decision. */
export const decide = async (
  browser: Browser,
  userCode: string,
  decision: "approve" | "deny",
  assignmentScope?: "user_private" | "account_wide"
) => {
  const page = await browser.get(`/oauth/device?user_code=${encodeURIComponent(userCode)}`)
  if (page.status !== 200) return page
  return browser.post("/oauth/device", {
    user_code: userCode,
    decision,
    csrf_token: csrfTokenIn(page.text),
    ...(assignmentScope ? { assignment_scope: assignmentScope } : {})
  })
}

export const agentFields = (identifier: string) => ({
  agent_identifier: identifier,
  agent_display_name: `Agent ${identifier}`,
  executor_display_name: `${identifier} app`
})

export const machineFields = (identifier: string, extra: Record<string, string> = {}) => ({
  registration_identifier: identifier,
  runner_display_name: `Runner ${identifier}`,
  ...extra
})
