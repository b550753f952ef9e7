// The README's "A first hour with curl" runs verbatim against a real server: its shell blocks,
// in order, in one bash, while a signed-in owner approves the connection when the walkthrough
// asks for it. A change that makes the README lie fails here.
import { spawn } from "node:child_process"
import { mkdtemp, readFile, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { decide, signedInBrowser } from "../http/oauth/support-device.ts"
import { createOwner, ownerCredentials } from "../support/people.ts"
import { startTestServer, type TestServer } from "../support/server.ts"

const readme = resolve(import.meta.dirname, "../../README.md")

/** The ```sh blocks of one README section, in order. */
const shellBlocks = (markdown: string, heading: string) => {
  const start = markdown.indexOf(`\n## ${heading}\n`)
  if (start < 0) throw new Error(`README has no section "${heading}"`)
  const end = markdown.indexOf("\n## ", start + 1)
  const section = markdown.slice(start, end < 0 ? undefined : end)
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]!)
}

let server: TestServer
let workdir: string

beforeAll(async () => {
  server = await startTestServer()
  await createOwner(server)
  workdir = await mkdtemp(join(tmpdir(), "troupe-readme-"))
})

afterAll(async () => {
  await server?.close()
  if (workdir) await rm(workdir, { recursive: true, force: true })
})

describe("README walkthrough", () => {
  it("runs verbatim: device flow, approval, profile, workspace, memory, store entry, inference, conversation", async () => {
    const blocks = shellBlocks(await readFile(readme, "utf8"), "A first hour with curl")
    expect(blocks.length).toBeGreaterThanOrEqual(4)
    const bash = spawn("bash", ["-euo", "pipefail", "-c", blocks.join("\n")], {
      cwd: workdir,
      env: { ...process.env, BASE: server.baseUrl },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    bash.stderr.on("data", (chunk) => {
      stderr += chunk
    })
    const approved = new Promise<void>((done, fail) => {
      bash.stdout.on("data", (chunk) => {
        const before = stdout
        stdout += chunk
        const link = /Open (\S+) and approve/.exec(stdout)
        if (link === null || /Open (\S+) and approve/.test(before)) return
        const userCode = new URL(link[1]!).searchParams.get("user_code")!
        signedInBrowser(server, ownerCredentials.email, ownerCredentials.password)
          .then((browser) => decide(browser, userCode, "approve"))
          .then((answer) => (answer.status === 303 || answer.status === 200 ? done() : fail(new Error(answer.text))))
          .catch(fail)
      })
    })
    const exit = new Promise<number | null>((done) => bash.on("close", done))
    await approved
    const code = await exit
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" })
    expect(stdout).toContain('"handle": "hello-agent"')
    expect(stdout).toContain('{"path":"workspace/notes","line_number":1,"text":"The build runs on Node 24."}')
    expect(stdout).toMatch(/"dark": true/)
    expect(stdout).toContain("echo: Hello, Troupe")
    expect(stdout).toContain('["pending",0]')
    expect(stdout).toContain("echo: Hello there")
    expect(stdout).toContain('[6,"turn_status"]')
    const tokens = JSON.parse(await readFile(join(workdir, "tokens.json"), "utf8"))
    expect(tokens).toMatchObject({ token_type: "Bearer", plane: "member" })
  })
})
