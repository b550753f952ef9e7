// The README's "A first hour with curl" runs verbatim against a real server: its shell blocks,
// in order, in one bash, while a signed-in owner approves each connection (the agent's, then the
// runner's) when the walkthrough asks for it; then its runner block again, which finds the saved
// credential and asks for no approval. A change that makes the README lie fails here.
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtemp, readFile, rm, stat, symlink } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { decide, signedInBrowser } from "../http/oauth/support-device.ts"
import { createOwner, ownerCredentials } from "../support/people.ts"
import { within } from "../support/processes.ts"
import { startTestServer, type TestServer } from "../support/server.ts"

const root = resolve(import.meta.dirname, "../..")
const readme = join(root, "README.md")

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
let bash: ChildProcess | undefined
let again: ChildProcess | undefined

/** Whether any process of the group led by `pid` lives. */
const groupLives = (pid: number) => {
  try {
    process.kill(-pid, 0)
    return true
  } catch {
    return false
  }
}

/**
 * Stops what the walkthrough left running in the background (the runner it started): bash led
 * its own process group, which the runner, npx and its node share.
 */
const stopBackground = async (pid: number) => {
  if (!groupLives(pid)) return
  process.kill(-pid, "SIGTERM")
  for (let waited = 0; waited < 10_000 && groupLives(pid); waited += 100) {
    await new Promise((done) => setTimeout(done, 100))
  }
  if (groupLives(pid)) process.kill(-pid, "SIGKILL")
}

beforeAll(async () => {
  server = await startTestServer()
  await createOwner(server)
  workdir = await mkdtemp(join(tmpdir(), "troupe-readme-"))
  // The walkthrough runs in the checkout, where `npx troupe` finds the project's command.
  await symlink(join(root, "node_modules"), join(workdir, "node_modules"))
})

afterAll(async () => {
  if (bash?.pid !== undefined) await stopBackground(bash.pid)
  if (again?.pid !== undefined) await stopBackground(again.pid)
  await server?.close()
  if (workdir) await rm(workdir, { recursive: true, force: true })
})

/** The README's shell text run by bash against the test server, in the work directory; its output as it comes. */
const runBlocks = (script: string) => {
  const shell = spawn("bash", ["-euo", "pipefail", "-c", script], {
    cwd: workdir,
    env: { ...process.env, BASE: server.baseUrl },
    detached: true,
    stdio: ["ignore", "pipe", "pipe"]
  })
  const output = { stdout: "", stderr: "" }
  shell.stdout.on("data", (chunk) => {
    output.stdout += chunk
  })
  shell.stderr.on("data", (chunk) => {
    output.stderr += chunk
  })
  return { shell, output }
}

describe("README walkthrough", () => {
  it("runs verbatim: device flow, approval, profile, workspace, memory, store entry, inference, conversation, a runner's run", {
    timeout: 120_000
  }, async () => {
    const blocks = shellBlocks(await readFile(readme, "utf8"), "A first hour with curl")
    expect(blocks.length).toBeGreaterThanOrEqual(4)
    const { shell, output } = runBlocks(blocks.join("\n"))
    bash = shell
    // Each "Open <link> and approve" is approved once by the signed-in owner, as the page's form
    // submits it (a machine's "Only me" is chosen in advance); a refused approval ends the
    // walkthrough (it would wait for it forever).
    const approvals: Array<Promise<string>> = []
    shell.stdout.on("data", () => {
      const links = [...output.stdout.matchAll(/Open (\S+) and approve/g)]
      for (const link of links.slice(approvals.length)) {
        const userCode = new URL(link[1]!).searchParams.get("user_code")!
        approvals.push(
          signedInBrowser(server, ownerCredentials.email, ownerCredentials.password)
            .then((browser) => decide(browser, userCode, "approve", "user_private"))
            .then((answer) => (answer.status === 303 || answer.status === 200 ? "approved" : answer.text))
            .catch((error: unknown) => String(error))
            .then(async (outcome) => {
              if (outcome !== "approved") await stopBackground(shell.pid!)
              return outcome
            })
        )
      }
    })
    const code = await new Promise<number | null>((done) => shell.on("close", done))
    expect(await Promise.all(approvals)).toEqual(["approved", "approved"])
    const { stdout, stderr } = output
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

    const run = JSON.parse(await readFile(join(workdir, "run.json"), "utf8")).run
    const runner = JSON.parse(await readFile(join(workdir, "runners.json"), "utf8")).executors[0]
    expect(runner).toMatchObject({ kind: "runner", display_name: "Word counter", presence: "online" })
    expect(run).toMatchObject({
      status: "completed",
      default_runner: { executor_public_id: runner.public_id },
      tasks: [{ key: "count", status: "completed", claimed_by: { executor_public_id: runner.public_id } }]
    })
    expect(stdout).toMatch(/^running\n\["completed","completed"\]$/m)
    expect(stdout).toContain(`claimed ${run.public_id}/count word_count\n`)
    expect(stdout).toContain(`committed ${run.public_id}/count word_count: completed\n`)
    expect(stdout).toMatch(/^7$/m)
    expect(stdout).toMatch(/^flowchart TD\n {2}n0\[\["count"\]\]:::completed$/m)
    const credential = await stat(join(workdir, "runner.credential.json"))
    expect(credential.mode & 0o777).toBe(0o600)
  })

  it("its runner block, run again, finds the saved credential and asks for no approval", {
    timeout: 60_000
  }, async () => {
    await stopBackground(bash!.pid!)
    const block = shellBlocks(await readFile(readme, "utf8"), "A first hour with curl").find((text) =>
      text.includes("npx troupe runner")
    )!
    const { shell, output } = runBlocks(block)
    again = shell
    const code = await within(
      30_000,
      () => `the runner block to end; it printed:\n${output.stdout}${output.stderr}`,
      new Promise<number | null>((done) => shell.on("close", done))
    )
    const { stdout, stderr } = output
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" })
    expect(stdout).toMatch(/^connected with the credential saved in \S*runner\.credential\.json$/m)
    expect(stdout).not.toContain("and approve")
  })
})
