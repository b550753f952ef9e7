// A run world whose creator agent keeps its agent application's transport token (ask and
// approval rows land on that inbox), and a wait on a run's trace that re-reads it after each step
// its actor commits (never a sleep).
import { type StepNotice, stepChannel } from "@troupe/actors/ActorHost"
import { EventBus } from "@troupe/storage/EventBus"
import type { UserRow } from "@troupe/storage/repositories/Accounts"
import { Effect, Stream } from "effect"
import { agentFields, decide, machineFields, poll, startDevice } from "../http/oauth/support-device.ts"
import { bearer, request } from "./http.ts"
import { signedIn } from "./members.ts"
import { createOwner, ownerCredentials } from "./people.ts"
import type { RunWorld } from "./runs.ts"
import type { TestServer } from "./server.ts"

export interface AgentRunWorld extends RunWorld {
  /** The creator agent's application address: its transport token and public id. */
  readonly application: { readonly token: string; readonly publicId: string }
  /** The owner: the creator agent's steward. */
  readonly owner: UserRow
}

/** An owner stewarding one agent (the runs' creator) in a fresh workspace, runners on demand. */
export const agentRunWorld = async (server: TestServer, workspace = "runs"): Promise<AgentRunWorld> => {
  const ownerRow = await createOwner(server)
  const owner = await signedIn(server, ownerCredentials)
  const started = await startDevice(server, agentFields("run-agent"))
  await decide(owner, started.user_code, "approve")
  const issued = (await poll(server, started.device_code)).body
  const token = issued.access_token as string
  const application = issued.executor_access_token as string
  const profile = await request(server.baseUrl, "GET", "/agent_api/v1/profile", { headers: bearer(token) })
  const self = await request(server.baseUrl, "GET", "/agent_api/v1/executor", { headers: bearer(application) })
  const made = await request(server.baseUrl, "POST", "/agent_api/v1/workspaces", {
    headers: { ...bearer(token), "idempotency-key": `${workspace}-ws` },
    body: { workspace: { name: workspace } }
  })
  return {
    agent: { token, publicId: profile.body.member.public_id, handle: profile.body.member.handle },
    application: { token: application, publicId: self.body.executor.public_id },
    owner: ownerRow,
    workspaceId: made.body.workspace.public_id,
    runner: async (identifier, tools) => {
      const device = await startDevice(server, machineFields(identifier))
      await decide(owner, device.user_code, "approve", "account_wide")
      const transport = (await poll(server, device.device_code)).body.access_token as string
      await request(server.baseUrl, "PUT", "/agent_api/v1/executor/announcement", {
        headers: bearer(transport),
        body: { tools }
      })
      const runner = await request(server.baseUrl, "GET", "/agent_api/v1/executor", { headers: bearer(transport) })
      return { token: transport, publicId: runner.body.executor.public_id }
    }
  }
}

/**
 * Resolves with `check`'s first defined answer, asked now and again after every step the run's
 * actor commits; fails after 10 s.
 */
export const untilRun = <A>(server: TestServer, runId: string, check: () => Promise<A | undefined>) =>
  server.run(
    Effect.scoped(
      Effect.gen(function* () {
        const notices = yield* (yield* EventBus).subscribe(stepChannel)
        const first = yield* Effect.promise(check)
        if (first !== undefined) return first
        return yield* notices.pipe(
          Stream.map((text) => JSON.parse(text) as StepNotice),
          Stream.filter((notice) => notice.kind === "run" && notice.actorId === runId),
          Stream.mapEffect(() => Effect.promise(check)),
          Stream.filter((answer): answer is A => answer !== undefined),
          Stream.runHead,
          Effect.map((answer) => (answer._tag === "Some" ? answer.value : (undefined as never)))
        )
      })
    ).pipe(Effect.timeout("10 seconds"))
  )
