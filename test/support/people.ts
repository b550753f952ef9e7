// People for tests, created through the domain services of a running test server.
import { Accounts } from "@troupe/domain/accounts/Accounts"
import { Credentials } from "@troupe/domain/accounts/Credentials"
import type { UserRow } from "@troupe/storage/repositories/Accounts"
import { Effect } from "effect"
import { Browser, csrfTokenIn, request } from "./http.ts"
import type { TestServer } from "./server.ts"

export const ownerCredentials = { email: "owner@example.com", password: "correct horse battery" }

export const createOwner = (
  server: TestServer,
  overrides: Partial<{ email: string; password: string; displayName: string }> = {}
) =>
  server.run(
    Effect.flatMap(Accounts, (accounts) =>
      accounts.createOwner({
        email: overrides.email ?? ownerCredentials.email,
        password: overrides.password ?? ownerCredentials.password,
        displayName: overrides.displayName ?? "Olive Owner"
      })
    )
  )

export const createHuman = (
  server: TestServer,
  input: { email: string; password: string; displayName: string; role: "admin" | "member" }
) => server.run(Effect.flatMap(Accounts, (accounts) => accounts.createHuman(input)))

export const memberCredentials = { email: "member@example.com", password: "member password" }

/** A second human of the account, a member, who signs in with `memberCredentials`. */
export const createMember = (server: TestServer) =>
  createHuman(server, { ...memberCredentials, displayName: "Mo", role: "member" })

/** A personal token of a human, minted directly (the browser flow that mints it is tested elsewhere). */
export const personalToken = (
  server: TestServer,
  human: UserRow,
  plane: "platform" | "member" = "member",
  name = "tests"
) => server.run(Effect.flatMap(Credentials, (credentials) => credentials.personalToken(human, plane, name)))

/** Signs in over the API and answers the bearer token. */
export const apiToken = async (server: TestServer, credentials = ownerCredentials) => {
  const response = await request(server.baseUrl, "POST", "/api/v1/session", { body: credentials })
  if (response.status !== 201) throw new Error(`sign-in failed: ${response.status} ${JSON.stringify(response.body)}`)
  return response.body.token as string
}

/** Creates the owner (`ownerCredentials`) of a fresh installation on its /setup page, as a person would. */
export const setUpOwner = async (baseUrl: string) => {
  const browser = new Browser(baseUrl)
  const form = await browser.get("/setup")
  const done = await browser.post("/setup", {
    display_name: "Olive Owner",
    ...ownerCredentials,
    csrf_token: csrfTokenIn(form.text)
  })
  if (done.status !== 303) throw new Error(`setup failed: ${done.status} ${done.text}`)
}
