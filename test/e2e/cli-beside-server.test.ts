// End to end: `troupe owner create`, `user create` and `token create` while `npm start` holds the
// embedded database (which one process only may open). The commands reach the server over its
// local channel, a 0600 Unix socket in a 0700 directory of the data directory; the tokens they
// print work against that server at once. A server killed with SIGKILL leaves its socket behind:
// the commands then open the database themselves, and the next start replaces the socket; a
// SIGTERM removes it.
import { existsSync } from "node:fs"
import { mkdtemp, readFile, rm, stat } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Browser, bearer, csrfTokenIn, request } from "../support/http.ts"
import { within } from "../support/processes.ts"
import { npmStart, type ServerChild, troupe } from "../support/troupe-process.ts"

const owner = { email: "olive@example.com", name: "Olive Owner", password: "correct horse battery" }
const member = { email: "mo@example.com", name: "Mo Member", password: "member password" }
const tokenLine = /^(sk-svc-api-v1-\S+)\n$/

let dataRoot: string
let dataDir: string
let server: ServerChild

const socketPath = () => join(dataDir, "control", "troupe.sock")
const run = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  troupe(args, { TROUPE_DATA_DIR: dataDir, ...env })
const status = async (path: string, token: string) =>
  (await request(server.baseUrl, "GET", path, { headers: bearer(token) })).status

/** `troupe token create`, expecting success; answers the printed token. */
const mintToken = async (email: string, plane: "platform" | "member", name: string) => {
  const result = await run(["token", "create", "--user", email, "--plane", plane, "--name", name])
  expect(result.stderr).toBe("")
  expect(result.code).toBe(0)
  return tokenLine.exec(result.stdout)![1]!
}

beforeAll(async () => {
  dataRoot = await mkdtemp(join(tmpdir(), "troupe-cli-"))
  dataDir = join(dataRoot, "data")
  server = await npmStart(dataDir)
})
afterAll(async () => {
  await server.stop()
  await rm(dataRoot, { recursive: true, force: true })
})

describe("troupe commands beside npm start on the embedded database", { timeout: 180_000 }, () => {
  const minted: Array<string> = []

  it("the server's local channel is a socket only its OS user can reach", async () => {
    expect((await stat(join(dataDir, "control"))).mode & 0o777).toBe(0o700)
    const socket = await stat(socketPath())
    expect(socket.isSocket()).toBe(true)
    expect(socket.mode & 0o777).toBe(0o600)
  })

  it("troupe owner create and user create work while the server holds the database", async () => {
    const created = await run(["owner", "create", "--email", owner.email, "--name", owner.name], {
      TROUPE_PASSWORD: owner.password
    })
    expect(created.stderr).toBe("")
    expect(created.code).toBe(0)
    expect(created.stdout).toMatch(/^Created owner Olive Owner <olive@example\.com> \(@olive-owner, [0-9a-f-]{36}\)\n$/)
    const user = await run(["user", "create", "--email", member.email, "--name", member.name], {
      TROUPE_PASSWORD: member.password
    })
    expect(user.code).toBe(0)
    expect(user.stdout).toMatch(/^Created member Mo Member <mo@example\.com> \(@mo-member, /)
    const session = await request(server.baseUrl, "POST", "/api/v1/session", {
      body: { email: member.email, password: member.password }
    })
    expect(session.status).toBe(201)
  })

  it("troupe token create mints tokens the running server accepts at once, listed on the owner's /tokens", async () => {
    const platform = await mintToken(owner.email, "platform", "ci pipeline")
    expect(await status("/api/v1/profile", platform)).toBe(200)
    expect(await status("/agent_api/v1/profile", platform)).toBe(401)
    const memberPlane = await mintToken(owner.email, "member", "agent tooling")
    expect(await status("/agent_api/v1/profile", memberPlane)).toBe(200)
    minted.push(platform, memberPlane)
    const browser = new Browser(server.baseUrl)
    const login = await browser.get("/login")
    await browser.post("/login", { email: owner.email, password: owner.password, csrf_token: csrfTokenIn(login.text) })
    const page = await browser.get("/tokens")
    expect(page.text).toContain("ci pipeline")
    expect(page.text).toContain("agent tooling")
  })

  it("refusals from the server are one line on stderr and a non-zero exit", async () => {
    const nobody = await run(["token", "create", "--user", "nobody@example.com"])
    expect(nobody).toMatchObject({
      code: 1,
      stdout: "",
      stderr: "troupe: No active person with email nobody@example.com\n"
    })
    const again = await run(["owner", "create", "--email", "other@example.com", "--name", "Other"], {
      TROUPE_PASSWORD: "other password"
    })
    expect(again).toMatchObject({ code: 1, stderr: "troupe: This installation already has an owner.\n" })
    const badName = await run(["token", "create", "--user", owner.email, "--name", " "])
    expect(badName.code).toBe(1)
    expect(badName.stderr).toContain("Name the token")
  })

  it("the server's output never shows a token or a password", () => {
    for (const secret of [...minted, owner.password, member.password]) expect(server.output()).not.toContain(secret)
  })

  it("after SIGKILL the commands open the database themselves, and the next start replaces the stale socket", async () => {
    // The server is the lock's holder; npm, its parent, reaps it before exiting.
    process.kill(Number(await readFile(join(dataDir, "pg.lock"), "utf8")), "SIGKILL")
    await within(15_000, "npm start to end with its killed server", server.closed)
    expect(existsSync(socketPath())).toBe(true)
    const offline = await mintToken(member.email, "platform", "while stopped")
    server = await npmStart(dataDir)
    expect(await status("/api/v1/profile", offline)).toBe(200)
    expect(await status("/api/v1/profile", await mintToken(member.email, "platform", "after restart"))).toBe(200)
    expect((await stat(socketPath())).mode & 0o777).toBe(0o600)
  })

  it("a server stopped with SIGTERM removes its socket", async () => {
    await server.stop()
    expect(existsSync(socketPath())).toBe(false)
    expect(existsSync(join(dataDir, "pg.lock"))).toBe(false)
  })
})
