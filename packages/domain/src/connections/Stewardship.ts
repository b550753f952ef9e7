// What a human stewards: their agents and the machines they connected, and the two ends a human
// may put to them. Removing an agent fences its member and application credentials at once (the
// agent loses authority and its lineages end) and tells its application address, by a durable
// message in the same transaction, to advance its epoch (the address's own step writes it);
// revoking a machine is one step of its address, which fences its transport and ends its runner
// credentials (a revoked address refuses it again). Restoring an agent is a new connection: old
// credentials never come back.
import { ActorHost } from "@troupe/actors/ActorHost"
import { executorAddressActor } from "@troupe/actors/bindings/executorAddress"
import type { UserRow } from "@troupe/storage/repositories/Accounts"
import * as Agents from "@troupe/storage/repositories/Agents"
import * as Credentials from "@troupe/storage/repositories/Credentials"
import * as Executors from "@troupe/storage/repositories/Executors"
import * as NamedAgents from "@troupe/storage/repositories/NamedAgents"
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { now } from "../kernel/Now.ts"

export type StewardedAgent = Agents.AgentRow & {
  readonly application_public_id: string | null
  readonly application_epoch: number | null
}

export class NotStewarded extends Schema.TaggedError<NotStewarded>()("NotStewarded", {}) {}

export class Stewardship extends Context.Service<
  Stewardship,
  {
    readonly agents: (human: UserRow) => Effect.Effect<ReadonlyArray<StewardedAgent>>
    readonly machines: (human: UserRow) => Effect.Effect<ReadonlyArray<Executors.ExecutorRow>>
    readonly removeAgent: (human: UserRow, agentPublicId: string) => Effect.Effect<void, NotStewarded>
    readonly revokeMachine: (human: UserRow, executorPublicId: string) => Effect.Effect<void, NotStewarded>
  }
>()("@troupe/domain/connections/Stewardship") {
  static readonly layer = Layer.effect(
    Stewardship,
    Effect.gen(function* () {
      const sql = yield* SqlClient
      const addresses = (yield* ActorHost).ref(executorAddressActor)
      const db = <A, E>(effect: Effect.Effect<A, E, SqlClient>) => effect.pipe(Effect.provideService(SqlClient, sql))

      const removeAgent = (human: UserRow, agentPublicId: string) =>
        db(
          Effect.gen(function* () {
            const agent = yield* Agents.findAgentByPublicId(agentPublicId)
            if (!agent || agent.steward_id !== human.id) return yield* new NotStewarded()
            if (agent.status !== "active") return
            const at = yield* now
            yield* Effect.gen(function* () {
              yield* Agents.setAgentStatus(agent.id, "removed", at)
              yield* NamedAgents.removeInstanceDefinitions(agent.id, at)
              yield* Credentials.revokeHolderLineages("agent", { userId: agent.id }, at)
              const live = yield* Executors.findLiveAgentApplication(agent.id)
              if (!live) return
              const epoch = yield* Executors.nextEpoch(live.id)
              yield* addresses.tell(live.public_id, { type: "executor.agentRemoved", epoch }).pipe(Effect.orDie)
            }).pipe(sql.withTransaction)
          }).pipe(Effect.catchTag("SqlError", Effect.die))
        )

      const revokeMachine = (human: UserRow, executorPublicId: string) =>
        db(
          Effect.gen(function* () {
            const executor = yield* Executors.findExecutorByPublicId(executorPublicId)
            if (!executor || executor.manager_id !== human.id || executor.kind === "agent_application") {
              return yield* new NotStewarded()
            }
            yield* addresses.send(executor.public_id, { type: "executor.revoke" }).pipe(Effect.orDie)
          }).pipe(Effect.catchTag("SqlError", Effect.die))
        )

      return Stewardship.of({
        agents: (human) => db(Agents.listStewardedAgents(human.id)).pipe(Effect.orDie),
        machines: (human) => db(Executors.listManagedMachines(human.id)).pipe(Effect.orDie),
        removeAgent,
        revokeMachine
      })
    })
  )
}
