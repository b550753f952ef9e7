// The reference runner (`troupe runner --config FILE`) as a child process against a real server:
// it prints a device code a person approves, announces its configured tools, subscribes to its
// inbox, keeps its credential beside the configuration (mode 0600) so a restart connects without
// a new code; and it answers a run's tool calls (claim, run the command, commit), stopping a
// command at its timeout. Revoked, it says once that it connects again and prints a new code.
import { mkdtemp, rm, stat } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fixedBearer } from "@troupe/client/Bearer"
import { makeTroupeClient } from "@troupe/client/Client"
import { makeRunsClient } from "@troupe/client/Runs"
import { Effect, Redacted } from "effect"
import { FetchHttpClient } from "effect/http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  node,
  shout,
  startRunner as startRunnerProcess,
  writeConfig as writeRunnerConfig
} from "../cli/support-runner.ts"
import { agentFields, decide, poll, signedInBrowser, startDevice } from "../http/oauth/support-device.ts"
import { bearer, csrfTokenIn, request } from "../support/http.ts"
import { createOwner, ownerCredentials } from "../support/people.ts"
import { startTestServer, type TestServer } from "../support/server.ts"

let server: TestServer
let owner: Awaited<ReturnType<typeof signedInBrowser>>
let agentToken: string
let directory: string

beforeAll(async () => {
  server = await startTestServer()
  await createOwner(server)
  owner = await signedInBrowser(server, ownerCredentials.email, ownerCredentials.password)
  const started = await startDevice(server, agentFields("runner-user"))
  await decide(owner, started.user_code, "approve")
  agentToken = (await poll(server, started.device_code)).body.access_token
  directory = await mkdtemp(join(tmpdir(), "troupe-runner-"))
})
afterAll(async () => {
  await server?.close()
  if (directory) await rm(directory, { recursive: true, force: true })
})

const writeConfig = (name: string, tools: ReadonlyArray<Record<string, unknown>>) =>
  writeRunnerConfig(directory, name, tools)
const startRunner = (configPath: string) => startRunnerProcess(configPath, server.baseUrl)

const discovered = async (publicId: string) =>
  (await request(server.baseUrl, "GET", `/agent_api/v1/executors/${publicId}`, { headers: bearer(agentToken) })).body
    .executor

/** Starts a runner and approves its device code for everyone; answers it once it serves. */
const connectedRunner = async (configPath: string) => {
  const runner = startRunner(configPath)
  const [, userCode] = await runner.line(/enter the code (\S+)/)
  await decide(owner, userCode!, "approve", "account_wide")
  const [, publicId] = await runner.line(/^serving .* \(([0-9a-f-]{36})\)$/)
  await runner.line(/^inbox: subscribed$/)
  return { runner, publicId: publicId! }
}

describe("troupe runner", { timeout: 60_000 }, () => {
  it("connects through the device flow, announces its tools, is online; a restart reuses its credential", async () => {
    const configPath = await writeConfig("first", [
      { name: "shout", command: shout, timeout_ms: 5000, description: "Upper-cases text" },
      { name: "date", command: "date -u" }
    ])
    const { runner, publicId } = await connectedRunner(configPath)
    const executor = await discovered(publicId)
    expect(executor).toMatchObject({ kind: "runner", display_name: "Runner first", presence: "online" })
    expect(executor.served_tools).toEqual([
      expect.objectContaining({
        name: "shout",
        timeout_ms: 5000,
        description: "Upper-cases text",
        effect_profile: {
          kind: "write",
          destructive: false,
          effect_scope: "open",
          idempotency: "none",
          reconciliation: "none"
        }
      }),
      expect.objectContaining({ name: "date" })
    ])
    const credential = await stat(join(directory, "first.credential.json"))
    expect(credential.mode & 0o777).toBe(0o600)
    expect(await runner.stop()).toBe(0)
    expect(runner.output().trimEnd().split("\n").at(-1)).toBe("stopped; no calls were in flight")

    const again = startRunner(configPath)
    const [, samePublicId] = await again.line(/^serving .* \(([0-9a-f-]{36})\)$/)
    expect(samePublicId).toBe(publicId)
    expect(again.lines.buffered((line: string) => /enter the code/.test(line))).toEqual([])
    await again.line(/^inbox: subscribed$/)
    expect(await again.stop()).toBe(0)
  })
})

describe("troupe runner answering runs", { timeout: 60_000 }, () => {
  const clients = () =>
    Effect.runPromise(
      Effect.all({
        api: makeTroupeClient({ baseUrl: server.baseUrl, token: Redacted.make(agentToken) }),
        runs: makeRunsClient({ baseUrl: server.baseUrl, bearer: fixedBearer(Redacted.make(agentToken)) })
      }).pipe(Effect.provide(FetchHttpClient.layer))
    )

  it("claims each tool call, runs its command with the input on stdin, commits stdout; a command past its timeout fails", async () => {
    const configPath = await writeConfig("worker", [
      { name: "shout", command: shout, timeout_ms: 10_000 },
      { name: "stall", command: "sleep 30", timeout_ms: 1000 }
    ])
    const { runner, publicId } = await connectedRunner(configPath)
    const { api, runs } = await clients()
    const { workspace } = await Effect.runPromise(
      api.workspaces.create({ headers: { "idempotency-key": "runner-ws" }, payload: { name: "Runner work" } })
    )
    const route = { kind: "runner", runner_executor_public_id: publicId } as const
    const created = await Effect.runPromise(
      runs.create(
        workspace.public_id,
        {
          approval_mode: "bypass",
          steps: [{ tool: { key: "loud", name: "shout", input: { text: "hello runner" }, route } }]
        },
        "runner-run-1"
      )
    )
    expect(created).toMatchObject({ replayed: false, run: { status: "pending" } })
    const runId = created.run.public_id
    // Appended while pending: runs after the first step, the runner stops it at its timeout.
    const appended = await Effect.runPromise(
      runs.append(
        workspace.public_id,
        runId,
        { steps: [{ tool: { key: "slow", name: "stall", route } }] },
        "runner-run-2"
      )
    )
    expect(appended.receipt).toMatchObject({ accepted_task_keys: ["slow"], revision: 2 })
    await Effect.runPromise(runs.start(workspace.public_id, runId))

    await runner.line(new RegExp(`^claimed ${runId}/loud shout$`))
    await runner.line(new RegExp(`^committed ${runId}/loud shout: completed$`))
    const { task } = await Effect.runPromise(runs.task(workspace.public_id, runId, "loud"))
    expect(task).toMatchObject({ status: "completed", output: "HELLO RUNNER" })
    expect(task.claimed_by).toEqual({ executor_public_id: publicId })

    await runner.line(new RegExp(`^claimed ${runId}/slow stall$`))
    await runner.line(new RegExp(`^committed ${runId}/slow stall: failed$`))
    const slow = await Effect.runPromise(runs.task(workspace.public_id, runId, "slow"))
    expect(slow.task).toMatchObject({ status: "failed", error: { key: "tool_failed" } })
    expect(slow.task.output).toBe("The tool did not finish within 1000 ms and was stopped.")
    expect(await runner.stop()).toBe(0)
  })

  it("commits a stdout over the server's 1 MB bound cut to fit it as JSON (escapes counted), not refused", async () => {
    // 1.2 MB of quotes: each is two bytes as JSON, so the first megabyte alone would be refused.
    const quotes = node("process.stdout.write('\"'.repeat(1200000))")
    const configPath = await writeConfig("big", [{ name: "quotes", command: quotes, timeout_ms: 10_000 }])
    const { runner, publicId } = await connectedRunner(configPath)
    const { api, runs } = await clients()
    const { workspace } = await Effect.runPromise(
      api.workspaces.create({ headers: { "idempotency-key": "runner-big-ws" }, payload: { name: "Big output" } })
    )
    const route = { kind: "runner", runner_executor_public_id: publicId } as const
    const created = await Effect.runPromise(
      runs.create(
        workspace.public_id,
        { approval_mode: "bypass", steps: [{ tool: { key: "many", name: "quotes", route } }] },
        "runner-big-run"
      )
    )
    const runId = created.run.public_id
    await Effect.runPromise(runs.start(workspace.public_id, runId))
    await runner.line(new RegExp(`^committed ${runId}/many quotes: completed$`))
    const { task } = await Effect.runPromise(runs.task(workspace.public_id, runId, "many"))
    expect(task.status).toBe("completed")
    const output = task.output as string
    expect(output).toMatch(/^"+$/)
    expect(Buffer.byteLength(JSON.stringify(output))).toBeLessThanOrEqual(1_000_000)
    expect(output.length).toBeGreaterThan(490_000)
    expect(runner.output()).not.toMatch(/refused/)
    expect(await runner.stop()).toBe(0)
  })
})

describe("troupe runner revoked", { timeout: 60_000 }, () => {
  it("says once that the server refused its credential, and connects afresh with a new code", async () => {
    const { runner, publicId } = await connectedRunner(
      await writeConfig("revoked", [{ name: "shout", command: shout }])
    )
    const page = await owner.get("/runners")
    expect((await owner.post(`/runners/${publicId}/revoke`, { csrf_token: csrfTokenIn(page.text) })).status).toBe(303)
    await runner.line(/enter the code \S+/)
    expect(
      runner
        .output()
        .split("\n")
        .filter((line) => /connecting again/.test(line))
    ).toEqual(["The server refused the runner's credential (revoked or re-paired); connecting again."])
    expect(await runner.stop()).toBe(0)
  })
})

describe("troupe runner refused a connection", { timeout: 60_000 }, () => {
  it("ends with the server's words, not [object Object], when the installation has no owner yet", async () => {
    const fresh = await startTestServer()
    try {
      const configPath = await writeConfig("ownerless", [{ name: "shout", command: shout }])
      const runner = startRunnerProcess(configPath, fresh.baseUrl)
      expect(await runner.exited).toBe(1)
      expect(runner.output()).toContain(
        `troupe: The server refused: initialization_required: This installation has no owner yet; set it up first (${fresh.baseUrl}/setup)`
      )
    } finally {
      await fresh.close()
    }
  })
})
