// The reference updater (packages/cli/src/deployment) in this process, on a fresh socket path in
// a temporary directory, for a test server's SERVICE_DEPLOYMENT_SOCKET.
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { ReferenceUpdaterOptions } from "@troupe/cli/deployment/ReferenceUpdater"
import { serveReferenceUpdater } from "@troupe/cli/deployment/UpdaterSocket"
import { Effect, Exit, Scope } from "effect"

/** The phases an upgrade walks after acceptance, in order (spec "States and transitions", Upgrade receipt). */
export const walkedPhases = [
  "preparing",
  "draining",
  "stopping",
  "backing_up",
  "migrating",
  "activating",
  "resuming",
  "verifying",
  "completed"
]

export const startReferenceUpdater = async (options: ReferenceUpdaterOptions = {}) => {
  const dir = await mkdtemp(join(tmpdir(), "troupe-updater-"))
  const path = join(dir, "updater.sock")
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Scope.provide(serveReferenceUpdater(path, options), scope))
  return {
    path,
    close: async () => {
      await Effect.runPromise(Scope.close(scope, Exit.void))
      await rm(dir, { recursive: true, force: true })
    }
  }
}

export type ReferenceUpdaterProcess = Awaited<ReturnType<typeof startReferenceUpdater>>
