// The executor address binding, the only writer of an executor row after its insertion: it
// mirrors the machine's epoch on the row (with a re-pair's new name), writes what an
// announcement serves (answering the row), and on revocation marks the address revoked and ends
// its runner credentials in the step, which fences its transport at once (authentication
// requires an active address at an epoch not behind the row's), and tells every live run holding
// an unclaimed row it could take `executor.revoked` by a durable message in the same step.
import { executorAddressEffects } from "@troupe/machines/executorAddress/effects"
import { machines } from "@troupe/machines/registry"
import type { RunEvent } from "@troupe/machines/run/events"
import { CredentialsRepository } from "@troupe/storage/repositories/Credentials"
import { ExecutorsRepository } from "@troupe/storage/repositories/Executors"
import { RunsRepository } from "@troupe/storage/repositories/Runs"
import { Effect } from "effect"
import { defineActor, TransactionalActors, Veto } from "../Binding.ts"

/**
 * Tells each live run holding a row the executor could take that it is revoked: its unclaimed
 * rows fail executor_revoked, pool rows drop it, claimed rows settle by their own deadline. The
 * run kind is addressed by name (its definition is assembled by the domain, after this one).
 */
const tellRuns = (executor: { readonly id: bigint; readonly public_id: string }, at: Date) =>
  Effect.gen(function* () {
    const runs = yield* RunsRepository.make
    const actors = yield* TransactionalActors
    const revoked: RunEvent = { type: "executor.revoked", executorId: executor.public_id, at: at.getTime() }
    for (const run of yield* runs.runsWithRowsFor(executor.id)) {
      yield* actors.reply({ kind: "run", actorId: run }, revoked)
    }
  })

export const executorAddressActor = defineActor({
  kind: "executorAddress",
  entry: machines.executorAddress,
  resourceType: "executor",
  stream: (actorId) => `executor:${actorId}`,
  rows: {
    [executorAddressEffects.recordEpoch]: (params, step) =>
      Effect.flatMap(ExecutorsRepository.make, (executors) =>
        executors.recordEpoch(step.actorId, params.epoch, params.displayName, step.now)
      ),
    [executorAddressEffects.recordAnnouncement]: (params, step) =>
      Effect.gen(function* () {
        const executors = yield* ExecutorsRepository.make
        const row = yield* executors.replaceAnnouncement(step.actorId, params.announcement, step.now)
        return row ?? (yield* new Veto({ reason: "the address is revoked" }))
      }),
    [executorAddressEffects.recordRevoked]: (_params, step) =>
      Effect.gen(function* () {
        const executors = yield* ExecutorsRepository.make
        yield* executors.revokeExecutor(step.actorId, step.now)
        const executor = yield* executors.findExecutorByPublicId(step.actorId)
        if (executor) {
          const credentials = yield* CredentialsRepository.make
          yield* credentials.revokeHolderLineages("runner", { executorId: executor.id }, step.now)
          yield* tellRuns(executor, step.now)
        }
      })
  },
  jobs: {}
})
