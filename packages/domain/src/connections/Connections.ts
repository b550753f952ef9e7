// The connection a winning device poll makes (spec "Device connection rules"), run inside the
// device authorization's consuming step: agents are keyed by (account, agent_identifier) and
// reconnected, restored or created; machines are keyed by (account, manager, registration
// identifier), kind-blind, and re-paired in place or created; every reconnect ends the
// superseded lineage, so the previous device's credentials stop at once, and mints the new ones
// at the address's next epoch, which the address is told (with its new name) by a durable
// message in the same transaction: its own step advances its row. Any refusal (another steward,
// registration drift, an ineligible assignment agent) vetoes the step: nothing is written and no
// credential exists. The device authorization actor's consuming step runs these rules: its
// definition is made here, from the binding in actors/.
import { TransactionalActors, Veto } from "@troupe/actors/Binding"
import { defineDeviceAuthorization } from "@troupe/actors/bindings/deviceAuthorization"
import { executorAddressActor } from "@troupe/actors/bindings/executorAddress"
import { newPublicId } from "@troupe/storage/Ids"
import { onStepClient } from "@troupe/storage/Repositories"
import { type AccountRow, AccountsRepository, type UserRow } from "@troupe/storage/repositories/Accounts"
import { AgentsRepository } from "@troupe/storage/repositories/Agents"
import { CredentialsRepository } from "@troupe/storage/repositories/Credentials"
import type { DeviceAuthorizationRow } from "@troupe/storage/repositories/DeviceAuthorizations"
import { type AssignmentScope, type ExecutorRow, ExecutorsRepository } from "@troupe/storage/repositories/Executors"
import { NamedAgentsRepository } from "@troupe/storage/repositories/NamedAgents"
import { Effect } from "effect"
import { type IssuedLineage, issueLineage } from "../accounts/Credentials.ts"
import { allocateHandle } from "../accounts/HandleChanges.ts"
import { handleBase } from "../accounts/Handles.ts"
import { now } from "../kernel/Now.ts"
import type { DeviceRequest } from "./DeviceRequest.ts"

export interface ConnectionIssued {
  /** The approving human's platform lineage, for the application client. */
  readonly human: (IssuedLineage & { readonly user: UserRow }) | undefined
  readonly agent: (IssuedLineage & { readonly agentPublicId: string; readonly executorPublicId: string }) | undefined
  readonly runner: (IssuedLineage & { readonly executorPublicId: string }) | undefined
}

const veto = (reason: string) => Effect.fail(new Veto({ reason }))

/** Skips handles held by anyone and names recently released by someone (HandleChanges). */
const allocateAgentHandle = (accountId: bigint, displayName: string, at: Date) =>
  allocateHandle(accountId, handleBase(displayName), at)

/** The agent of branch A: reconnected when active, restored when removed, created when absent. */
const connectAgent = Effect.fnUntraced(function* (
  account: AccountRow,
  steward: UserRow,
  request: { readonly agentIdentifier: string; readonly agentDisplayName: string },
  at: Date
) {
  const agents = yield* AgentsRepository
  const existing = yield* agents.findAgentByIdentifier(account.id, request.agentIdentifier)
  if (existing && existing.steward_id !== steward.id) return yield* veto("the agent is stewarded by another human")
  if (existing && (yield* (yield* NamedAgentsRepository).findByUserId(existing.id))) {
    return yield* veto("the identifier belongs to a named agent definition")
  }
  if (existing) {
    return yield* agents.reconnectAgent(existing.id, request.agentDisplayName, steward.shutdown_generation, at)
  }
  return yield* agents.insertAgent({
    publicId: newPublicId(),
    accountId: account.id,
    agentIdentifier: request.agentIdentifier,
    displayName: request.agentDisplayName,
    handle: yield* allocateAgentHandle(account.id, request.agentDisplayName, at),
    stewardId: steward.id,
    stewardGeneration: steward.shutdown_generation,
    now: at
  })
})

/** What a human approved: a device authorization, or an application's authorization code. */
export interface ConnectionGrant {
  readonly clientId: string
  /** The registration; absent for the application's login mode (the human lineage alone). */
  readonly request: DeviceRequest | undefined
  readonly approvedBy: bigint | null
  readonly assignmentScope: AssignmentScope | null
}

export const deviceGrant = (device: DeviceAuthorizationRow): ConnectionGrant => ({
  clientId: device.client_id,
  request: device.request as unknown as DeviceRequest,
  approvedBy: device.approved_by,
  assignmentScope: device.assignment_scope
})

export const consumeConnection = (grant: ConnectionGrant) =>
  Effect.gen(function* () {
    const actors = yield* TransactionalActors
    const accounts = yield* AccountsRepository
    const agents = yield* AgentsRepository
    const credentials = yield* CredentialsRepository
    const executors = yield* ExecutorsRepository
    const at = yield* now
    const request = grant.request
    const account = yield* accounts.currentAccount
    const steward = grant.approvedBy === null ? undefined : yield* accounts.findUserById(grant.approvedBy)
    if (!account || !steward || steward.kind !== "human" || steward.status !== "active") {
      return yield* veto("the approving human is no longer active")
    }
    /** A new address's actor, at the epoch its row starts with. */
    const newAddress = (executor: ExecutorRow) =>
      Effect.as(
        actors.create(executorAddressActor, executor.public_id, {
          kind: executor.kind,
          epoch: executor.credential_epoch
        }),
        { id: executor.id, publicId: executor.public_id, epoch: executor.credential_epoch }
      )
    /** A live address re-paired: told its next epoch and name; the new credentials carry that epoch. */
    const repaired = (executor: ExecutorRow, displayName: string) =>
      Effect.gen(function* () {
        const epoch = yield* executors.nextEpoch(executor.id)
        yield* actors.tell(executorAddressActor, executor.public_id, { type: "executor.repaired", epoch, displayName })
        return { id: executor.id, publicId: executor.public_id, epoch }
      })

    let agentIssued: ConnectionIssued["agent"]
    let agent: UserRow | undefined
    if (request?.branch === "agent" || request?.branch === "combined") {
      agent = yield* connectAgent(account, steward, request, at)
      const live = yield* executors.findLiveAgentApplication(agent.id)
      const application = live
        ? yield* repaired(live, request.executorDisplayName)
        : yield* newAddress(
            yield* executors.insertExecutor({
              publicId: newPublicId(),
              accountId: account.id,
              kind: "agent_application",
              displayName: request.executorDisplayName,
              managerId: steward.id,
              registrationIdentifier: null,
              agentId: agent.id,
              assignmentScope: "agent_private",
              now: at
            })
          )
      yield* credentials.revokeHolderLineages("agent", { userId: agent.id }, at)
      const issued = yield* issueLineage({
        holder: "agent",
        clientId: grant.clientId,
        user: agent,
        executor: application
      })
      agentIssued = { ...issued, agentPublicId: agent.public_id, executorPublicId: application.publicId }
    }

    let runnerIssued: ConnectionIssued["runner"]
    if (request?.branch === "machine" || request?.branch === "combined") {
      const kind = request.executorKind
      let boundAgent = agent
      if (request.branch === "machine" && request.assignmentAgentPublicId !== undefined) {
        const candidate = yield* agents.findAgentByPublicId(request.assignmentAgentPublicId)
        if (
          !candidate ||
          candidate.account_id !== account.id ||
          candidate.status !== "active" ||
          candidate.steward_id !== steward.id
        ) {
          return yield* veto("the assignment agent is not an active paired agent of this steward")
        }
        boundAgent = candidate
      }
      const scope = boundAgent ? "agent_private" : grant.assignmentScope
      if (scope === null) return yield* veto("no assignment scope was chosen")
      const live = yield* executors.findLiveRegistration(account.id, steward.id, request.registrationIdentifier)
      let runner: { readonly id: bigint; readonly publicId: string; readonly epoch: number }
      if (live) {
        const drifted =
          live.kind !== kind || live.assignment_scope !== scope || (live.agent_id ?? null) !== (boundAgent?.id ?? null)
        if (drifted) return yield* veto("registration drift: the live address differs in kind, scope or agent")
        runner = yield* repaired(live, request.runnerDisplayName)
        yield* credentials.revokeHolderLineages("runner", { executorId: live.id }, at)
      } else {
        const inserted = yield* executors.insertExecutor({
          publicId: newPublicId(),
          accountId: account.id,
          kind,
          displayName: request.runnerDisplayName,
          managerId: steward.id,
          registrationIdentifier: request.registrationIdentifier,
          agentId: boundAgent?.id ?? null,
          assignmentScope: scope,
          now: at
        })
        runner = yield* newAddress(inserted)
      }
      const issued = yield* issueLineage({
        holder: "runner",
        clientId: grant.clientId,
        user: undefined,
        executor: runner
      })
      runnerIssued = { ...issued, executorPublicId: runner.publicId }
    }
    const human =
      grant.clientId === "svc-application"
        ? {
            ...(yield* issueLineage({
              holder: "human",
              clientId: grant.clientId,
              user: steward,
              executor: undefined
            })),
            user: steward
          }
        : undefined
    return { human, agent: agentIssued, runner: runnerIssued } satisfies ConnectionIssued
  })

/** The device authorization kind, whose winning poll's step makes the connection by these rules. */
export const deviceAuthorizationActor = defineDeviceAuthorization((device) =>
  onStepClient(consumeConnection(deviceGrant(device)))
)
