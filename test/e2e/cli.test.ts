// End to end: the `troupe` command against a fresh database — migrate, the headless first boot
// (owner create) and user create — with its output and exit codes.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freshDatabase, type TestDatabase } from "../support/database.ts"
import { bearer, request } from "../support/http.ts"
import { startTestServer } from "../support/server.ts"
import { databaseEnv, troupe as troupeCommand } from "../support/troupe-process.ts"

const publicId = "[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"

let database: TestDatabase

beforeAll(async () => {
  database = await freshDatabase()
})

/** Runs node_modules/.bin/troupe (on the pinned Node 24) against the test database. */
const troupe = (args: ReadonlyArray<string>, extraEnv: Record<string, string> = {}) =>
  troupeCommand(args, { ...databaseEnv(database.config), ...extraEnv })

describe("the troupe command", { timeout: 60_000 }, () => {
  let afterMigrate = false
  afterAll(() => database?.drop())

  it("troupe migrate applies the migrations, exits 0, and is idempotent", async () => {
    const first = await troupe(["migrate"])
    expect(first).toMatchObject({ code: 0, stdout: "Migrations are up to date.\n" })
    const again = await troupe(["migrate"])
    expect(again).toMatchObject({ code: 0, stdout: "Migrations are up to date.\n" })
    afterMigrate = true
  })

  it("troupe user create before the owner exists fails non-zero and says to create the owner first", async () => {
    const result = await troupe([
      "user",
      "create",
      "--role",
      "admin",
      "--email",
      "ada@example.com",
      "--name",
      "Ada Admin",
      "--password",
      "admin password"
    ])
    expect(result.code).not.toBe(0)
    expect(result.stderr).toContain("Create the owner first")
    expect(result.stdout).toBe("")
  })

  it("troupe owner create without a password fails non-zero and asks for one", async () => {
    const result = await troupe(["owner", "create", "--email", "olive@example.com", "--name", "Olive Owner"])
    expect(result.code).not.toBe(0)
    expect(result.stderr).toContain("Give --password or set TROUPE_PASSWORD")
  })

  it("troupe owner create with invalid fields fails non-zero with the validation message", async () => {
    const result = await troupe([
      "owner",
      "create",
      "--email",
      "not-an-email",
      "--name",
      "Olive",
      "--password",
      "long enough"
    ])
    expect(result.code).not.toBe(0)
    expect(result.stderr).toContain("Enter a valid email address")
  })

  it("troupe owner create creates the owner and prints who it is, with the handle derived from the name", async () => {
    expect(afterMigrate).toBe(true)
    const result = await troupe([
      "owner",
      "create",
      "--email",
      "olive@example.com",
      "--name",
      "Olive Owner",
      "--password",
      "correct horse battery"
    ])
    expect(result.stderr).toBe("")
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(
      new RegExp(`^Created owner Olive Owner <olive@example\\.com> \\(@olive-owner, ${publicId}\\)\\n$`)
    )
  })

  it("a second troupe owner create fails non-zero with a clear message", async () => {
    const result = await troupe([
      "owner",
      "create",
      "--email",
      "mallory@example.com",
      "--name",
      "Mallory",
      "--password",
      "mallory password"
    ])
    expect(result.code).not.toBe(0)
    expect(result.stderr).toContain("This installation already has an owner.")
    expect(result.stdout).toBe("")
  })

  it("troupe user create --role admin creates an admin", async () => {
    const result = await troupe([
      "user",
      "create",
      "--role",
      "admin",
      "--email",
      "ada@example.com",
      "--name",
      "Ada Admin",
      "--password",
      "admin password"
    ])
    expect(result.stderr).toBe("")
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(
      new RegExp(`^Created admin Ada Admin <ada@example\\.com> \\(@ada-admin, ${publicId}\\)\\n$`)
    )
  })

  it("troupe user create reads TROUPE_PASSWORD, defaults to member, and refuses a taken email", async () => {
    const member = await troupe(
      ["user", "create", "--email", "mo@example.com", "--name", "Mo Member", "--handle", "mo"],
      {
        TROUPE_PASSWORD: "member password"
      }
    )
    expect(member.stderr).toBe("")
    expect(member.code).toBe(0)
    expect(member.stdout).toMatch(new RegExp(`^Created member Mo Member <mo@example\\.com> \\(@mo, ${publicId}\\)\\n$`))
    const taken = await troupe([
      "user",
      "create",
      "--email",
      "ADA@example.com",
      "--name",
      "Ada Again",
      "--password",
      "x".repeat(8)
    ])
    expect(taken.code).not.toBe(0)
    expect(taken.stderr).toContain("That email is already in use.")
  })

  it("troupe token create prints a personal token, once, that the server accepts on its plane", async () => {
    const minted = await troupe(["token", "create", "--user", "ADA@example.com", "--plane", "platform"])
    expect(minted.stderr).toBe("")
    expect(minted.code).toBe(0)
    const token = /^(sk-svc-api-v1-\S+)\n$/.exec(minted.stdout)![1]!
    const unknown = await troupe(["token", "create", "--user", "nobody@example.com"])
    expect(unknown).toMatchObject({ code: 1, stderr: "troupe: No active person with email nobody@example.com\n" })
    const server = await startTestServer({ database: { config: database.config, drop: async () => {} } })
    try {
      expect((await request(server.baseUrl, "GET", "/api/v1/profile", { headers: bearer(token) })).status).toBe(200)
      expect((await request(server.baseUrl, "GET", "/agent_api/v1/profile", { headers: bearer(token) })).status).toBe(
        401
      )
    } finally {
      await server.close()
    }
  })

  it("the people the CLI created sign in over the API with their roles", async () => {
    const server = await startTestServer({ database: { config: database.config, drop: async () => {} } })
    try {
      const people = [
        { email: "olive@example.com", password: "correct horse battery", role: "owner", handle: "olive-owner" },
        { email: "ada@example.com", password: "admin password", role: "admin", handle: "ada-admin" },
        { email: "mo@example.com", password: "member password", role: "member", handle: "mo" }
      ]
      for (const person of people) {
        const session = await request(server.baseUrl, "POST", "/api/v1/session", {
          body: { email: person.email, password: person.password }
        })
        expect(session.status).toBe(201)
        const profile = await request(server.baseUrl, "GET", "/api/v1/profile", { headers: bearer(session.body.token) })
        expect(profile.body.member).toMatchObject({ role: person.role, handle: person.handle })
      }
      const mallory = await request(server.baseUrl, "POST", "/api/v1/session", {
        body: { email: "mallory@example.com", password: "mallory password" }
      })
      expect(mallory.status).toBe(401)
    } finally {
      await server.close()
    }
  })
})
