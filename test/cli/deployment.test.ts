// `troupe updater --fake` as a child process on a temporary socket, a real server pointed at it
// (SERVICE_DEPLOYMENT_SOCKET), and `troupe deployment status|check|upgrade` driving the server as
// its owner (TROUPE_URL, TROUPE_TOKEN): the upgrade prints every phase as the stream brings it,
// also across the server going away mid-upgrade; with --socket they ask the updater directly.
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { bearer, request } from "../support/http.ts"
import { apiToken, createOwner } from "../support/people.ts"
import { within } from "../support/processes.ts"
import { startTestServer, type TestServer } from "../support/server.ts"
import { openTcpRelay } from "../support/tcp-relay.ts"
import { troupe } from "../support/troupe-process.ts"
import { walkedPhases } from "../support/updater.ts"

const launcher = resolve(import.meta.dirname, "../../packages/cli/bin/troupe.js")

interface UpdaterChild {
  readonly socket: string
  readonly stop: () => Promise<void>
}

/** `troupe updater --fake` with `args` on a socket in `directory`, once it says it listens. */
const startUpdater = async (directory: string, args: ReadonlyArray<string> = []): Promise<UpdaterChild> => {
  const socket = join(directory, `updater-${args.length}.sock`)
  const child: ChildProcess = spawn(process.execPath, [launcher, "updater", "--fake", "--socket", socket, ...args], {
    detached: true,
    stdio: ["ignore", "pipe", "pipe"]
  })
  const exited = new Promise<void>((done) => child.once("exit", () => done()))
  let output = ""
  await within(
    30_000,
    () => `the updater to listen; it said:\n${output}`,
    new Promise<void>((ready) => {
      const read = (chunk: Buffer) => {
        output += chunk
        if (output.includes("listening on")) ready()
      }
      child.stdout!.on("data", read)
      child.stderr!.on("data", read)
    })
  )
  return {
    socket,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, "SIGTERM")
      await exited
    }
  }
}

/** A server on the updater, and the environment that points the CLI at it as its owner. */
const serverOn = async (updater: UpdaterChild) => {
  const server = await startTestServer({ deploymentSocket: updater.socket })
  await createOwner(server)
  return { server, env: { TROUPE_URL: server.baseUrl, TROUPE_TOKEN: await apiToken(server) } }
}

let directory: string
let updater: UpdaterChild
let server: TestServer
let env: Record<string, string>

beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), "troupe-deployment-cli-"))
  updater = await startUpdater(directory)
  ;({ server, env } = await serverOn(updater))
})

afterAll(async () => {
  await server?.close()
  await updater?.stop()
  await rm(directory, { recursive: true, force: true })
})

// Each test starts several CLI processes: slow on a loaded machine, so a longer bound.
describe("troupe deployment", { timeout: 60_000 }, () => {
  it("troupe deployment status, check and upgrade drive the reference updater through the server", async () => {
    const status = await troupe(["deployment", "status"], env)
    expect(status.code, status.stderr).toBe(0)
    expect(status.stdout).toContain("installed: 2512150000")
    expect(status.stdout).toContain("candidate: none checked")

    const check = await troupe(["deployment", "check"], env)
    expect(check.code, check.stderr).toBe(0)
    expect(check.stdout).toMatch(/candidate: 2601010000/)
    expect(check.stdout).toMatch(/preflight: ready, backup true/)
    expect(check.stdout).toMatch(/passed\s+disk_space/)

    const upgrade = await troupe(["deployment", "upgrade"], env)
    expect(upgrade.code, upgrade.stderr).toBe(0)
    expect(upgrade.stdout).toContain("Upgrading 2512150000 -> 2601010000")
    const phases = [...upgrade.stdout.matchAll(/^ {2}(\w+): done$/gm)].map((match) => match[1])
    expect(phases).toEqual(walkedPhases)
    expect(upgrade.stdout).toMatch(/2512150000 -> 2601010000, completed \(succeeded\)/)

    const after = await troupe(["deployment", "status"], env)
    expect(after.stdout).toContain("installed: 2601010000")
  })

  it("with --socket the command line asks the updater directly: no token, and the receipt's actor is null", async () => {
    const upgrade = await troupe(["deployment", "upgrade", "--socket", updater.socket], {})
    expect(upgrade.code, upgrade.stderr).toBe(0)
    expect([...upgrade.stdout.matchAll(/^ {2}(\w+): done$/gm)].map((match) => match[1])).toHaveLength(9)
    expect(upgrade.stdout).toMatch(/completed \(succeeded\)/)
    const id = /\(upgrade ([0-9a-f-]{36})\)/.exec(upgrade.stdout)![1]!
    const receipt = await request(server.baseUrl, "GET", `/api/v1/admin/deployment/upgrades/${id}`, {
      headers: bearer(env.TROUPE_TOKEN!)
    })
    expect(receipt.body.upgrade).toMatchObject({ id, actor_public_id: null, status: "succeeded" })
    const gone = await troupe(["deployment", "status", "--socket", join(directory, "absent.sock")], {})
    expect(gone.code).toBe(1)
    expect(gone.stderr.trim()).toMatch(/^troupe: updater_unavailable: /)
  })

  it("the upgrade's following waits out a server that goes away mid-upgrade and prints every phase once", async () => {
    const slow = await startUpdater(directory, ["--phase-ms", "500"])
    const { server: other, env: otherEnv } = await serverOn(slow)
    const relay = await openTcpRelay()
    relay.point(Number(new URL(other.baseUrl).port))
    const receipt = async () =>
      (await request(other.baseUrl, "GET", "/api/v1/admin/deployment", { headers: bearer(otherEnv.TROUPE_TOKEN!) }))
        .body.deployment.active_operation
    try {
      const upgrading = troupe(["deployment", "upgrade"], { ...otherEnv, TROUPE_URL: relay.baseUrl })
      await vi.waitFor(async () => expect(await receipt()).not.toBeNull(), { timeout: 20_000, interval: 50 })
      relay.point(undefined)
      await vi.waitFor(
        async () => expect(["migrating", "activating", "resuming"]).toContain((await receipt())?.phase),
        {
          timeout: 20_000,
          interval: 50
        }
      )
      relay.point(Number(new URL(other.baseUrl).port))
      const upgrade = await upgrading
      expect(upgrade.code, upgrade.stderr).toBe(0)
      expect(upgrade.stdout).toMatch(/cannot reach .*; waiting for it\)\n(.|\n)*is back\)/)
      expect([...upgrade.stdout.matchAll(/^ {2}(\w+): done$/gm)].map((match) => match[1])).toEqual([
        "preparing",
        "draining",
        "stopping",
        "backing_up",
        "migrating",
        "activating",
        "resuming",
        "verifying",
        "completed"
      ])
    } finally {
      await relay.close()
      await other.close()
      await slow.stop()
    }
  })

  it("a refused request is one line and exit code 1", async () => {
    const malformed = await troupe(["deployment", "check", "--tag", "2613010000"], env)
    expect(malformed.code).toBe(1)
    expect(malformed.stderr).toMatch(/--tag must be latest or a release tag/)
    const unavailable = await troupe(["deployment", "check", "--tag", "2601020000"], env)
    expect(unavailable.code).toBe(1)
    expect(unavailable.stderr.trim()).toMatch(/^troupe: 503 release_unavailable: /)
  })

  it("an upgrade that fails (troupe updater --fail-at migrating) prints its phases to the failure and exits 1", async () => {
    const failing = await startUpdater(directory, ["--fail-at", "migrating", "--phase-ms", "50"])
    const { server: other, env: otherEnv } = await serverOn(failing)
    try {
      const upgrade = await troupe(["deployment", "upgrade", "--no-backup"], otherEnv)
      expect(upgrade.code).toBe(1)
      expect([...upgrade.stdout.matchAll(/^ {2}(\w+): /gm)].map((match) => match[1])).toEqual([
        "preparing",
        "draining",
        "stopping",
        "backing_up",
        "migrating"
      ])
      expect(upgrade.stdout).toMatch(/migrating \(failed\) migrating_failed: /)
      expect(upgrade.stderr.trim()).toBe("troupe: The upgrade ended failed")
      const again = await troupe(["deployment", "upgrade", "--no-backup"], otherEnv)
      expect(again.code).toBe(1)
      expect(again.stderr.trim()).toMatch(/^troupe: 409 recovery_required: /)
    } finally {
      await other.close()
      await failing.stop()
    }
  })
})
