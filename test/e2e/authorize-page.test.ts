// The application consent page (/oauth/authorize) in headless Chromium: a signed-out human is sent
// to sign in and back; approving sends the browser on to the application's loopback callback (a
// listener here) with the code and state, which exchanges with the PKCE verifier. The page's own
// Content-Security-Policy must let that form submission end at the callback.
import { createHash, randomBytes } from "node:crypto"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { expect, it } from "vitest"
import { form } from "../http/oauth/support-device.ts"
import { serverBesideChromium } from "../support/browser-pages.ts"
import { createOwner, ownerCredentials } from "../support/people.ts"

const file = serverBesideChromium(createOwner)

/** The application's callback listener: the first URL it is sent to. */
const applicationCallback = async () => {
  let arrived: (url: URL) => void = () => {}
  const landed = new Promise<URL>((resolve) => {
    arrived = resolve
  })
  const listener = createServer((req, res) => {
    arrived(new URL(req.url ?? "/", "http://127.0.0.1"))
    res.writeHead(200, { "content-type": "text/plain" }).end("signed in")
  })
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve))
  const { port } = listener.address() as AddressInfo
  return {
    uri: `http://127.0.0.1:${port}/auth/callback`,
    landed,
    close: () => new Promise((resolve) => listener.close(resolve))
  }
}

it("approving sends the browser to the application's callback with a code that exchanges with the verifier", async () => {
  const callback = await applicationCallback()
  const verifier = randomBytes(32).toString("base64url")
  const query = new URLSearchParams({
    client_id: "svc-application",
    response_type: "code",
    redirect_uri: callback.uri,
    state: "state-xyz",
    code_challenge: createHash("sha256").update(verifier).digest("base64url"),
    code_challenge_method: "S256",
    connection_mode: "login"
  })
  const { page } = await file.openPage()
  await page.goto(`${file.server.baseUrl}/oauth/authorize?${query}`)
  expect(new URL(page.url()).pathname).toBe("/login")
  await page.fill("#email", ownerCredentials.email)
  await page.fill("#password", ownerCredentials.password)
  await Promise.all([page.waitForURL((url) => url.pathname === "/oauth/authorize"), page.click("button[type=submit]")])
  await page.click("#approve")
  const landed = await callback.landed
  expect(landed.pathname).toBe("/auth/callback")
  expect(landed.searchParams.get("state")).toBe("state-xyz")
  await page.waitForURL((url) => url.pathname === "/auth/callback")
  expect(await page.textContent("body")).toBe("signed in")
  const exchanged = await form(file.server, "/oauth/token", {
    grant_type: "authorization_code",
    client_id: "svc-application",
    code: landed.searchParams.get("code") ?? "",
    redirect_uri: callback.uri,
    code_verifier: verifier
  })
  expect(exchanged.status).toBe(200)
  await page.context().close()
  await callback.close()
})
