// What a human stewards: their agents and the machines they connected, and the two ends a human
// may put to them. Removing an agent fences its member and application credentials at once (the
// agent loses authority and its lineages end) and tells, by durable messages in the same
// transaction, its application address to advance its epoch (the address's own step writes it)
// and every live run it created to stop by force (its work ends asynchronously); revoking a
// machine is one step of its address, which fences its transport, ends its runner credentials and
// tells the runs holding its unclaimed rows (actors/src/bindings/executorAddress.ts). Restoring an
// agent is a new connection: old credentials never come back.
import { ActorHost } from "@troupe/actors/ActorHost"
import { executorAddressActor } from "@troupe/actors/bindings/executorAddress"
import type { UserRow } from "@troupe/storage/repositories/Accounts"
import { type AgentRow, AgentsRepository } from "@troupe/storage/repositories/Agents"
import { CredentialsRepository } from "@troupe/storage/repositories/Credentials"
import { type ExecutorRow, ExecutorsRepository } from "@troupe/storage/repositories/Executors"
import { NamedAgentsRepository } from "@troupe/storage/repositories/NamedAgents"
import { RunsRepository } from "@troupe/storage/repositories/Runs"
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { now } from "../kernel/Now.ts"
import { RunDefinition } from "../runs/Runs.ts"

export type StewardedAgent = AgentRow & {
  readonly application_public_id: string | null
  readonly application_epoch: number | null
}

export class NotStewarded extends Schema.TaggedError<NotStewarded>()("NotStewarded", {}) {}

export class Stewardship extends Context.Service<
  Stewardship,
  {
    readonly agents: (human: UserRow) => Effect.Effect<ReadonlyArray<StewardedAgent>>
    readonly machines: (human: UserRow) => Effect.Effect<ReadonlyArray<ExecutorRow>>
    readonly removeAgent: (human: UserRow, agentPublicId: string) => Effect.Effect<void, NotStewarded>
    readonly revokeMachine: (human: UserRow, executorPublicId: string) => Effect.Effect<void, NotStewarded>
  }
>()("@troupe/domain/connections/Stewardship") {
  static readonly layer = Layer.effect(
    Stewardship,
    Effect.gen(function* () {
      const sql = yield* SqlClient
      const agents = yield* AgentsRepository
      const credentials = yield* CredentialsRepository
      const executors = yield* ExecutorsRepository
      const named = yield* NamedAgentsRepository
      const runs = yield* RunsRepository
      const host = yield* ActorHost
      const addresses = host.ref(executorAddressActor)
      const runActors = host.ref(yield* RunDefinition)

      const removeAgent = (human: UserRow, agentPublicId: string) =>
        Effect.gen(function* () {
          const agent = yield* agents.findAgentByPublicId(agentPublicId)
          if (!agent || agent.steward_id !== human.id) return yield* new NotStewarded()
          if (agent.status !== "active") return
          const at = yield* now
          yield* Effect.gen(function* () {
            yield* agents.setAgentStatus(agent.id, "removed", at)
            yield* named.removeInstanceDefinitions(agent.id, at)
            yield* credentials.revokeHolderLineages("agent", { userId: agent.id }, at)
            for (const run of yield* runs.liveRunsOfCreator(agent.id)) {
              yield* runActors.tell(run, { type: "run.stop", force: true, at: at.getTime() }).pipe(Effect.orDie)
            }
            const live = yield* executors.findLiveAgentApplication(agent.id)
            if (!live) return
            const epoch = yield* executors.nextEpoch(live.id)
            yield* addresses.tell(live.public_id, { type: "executor.agentRemoved", epoch }).pipe(Effect.orDie)
          }).pipe(sql.withTransaction)
        }).pipe(Effect.catchTag("SqlError", Effect.die))

      const revokeMachine = (human: UserRow, executorPublicId: string) =>
        Effect.gen(function* () {
          const executor = yield* executors.findExecutorByPublicId(executorPublicId)
          if (!executor || executor.manager_id !== human.id || executor.kind === "agent_application") {
            return yield* new NotStewarded()
          }
          yield* addresses.send(executor.public_id, { type: "executor.revoke" }).pipe(Effect.orDie)
        }).pipe(Effect.catchTag("SqlError", Effect.die))

      return Stewardship.of({
        agents: (human) => Effect.orDie(agents.listStewardedAgents(human.id)),
        machines: (human) => Effect.orDie(executors.listManagedMachines(human.id)),
        removeAgent,
        revokeMachine
      })
    })
  )
}
