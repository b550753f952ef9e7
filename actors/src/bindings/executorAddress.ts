// The executor address binding, the only writer of an executor row after its insertion: it
// mirrors the machine's epoch on the row (with a re-pair's new name), writes what an
// announcement serves (answering the row), and on revocation marks the address revoked and ends
// its runner credentials in the step, which fences its transport at once (authentication
// requires an active address at an epoch not behind the row's).
import { executorAddressEffects } from "@troupe/machines/executorAddress/effects"
import { machines } from "@troupe/machines/registry"
import { CredentialsRepository } from "@troupe/storage/repositories/Credentials"
import { ExecutorsRepository } from "@troupe/storage/repositories/Executors"
import { Effect } from "effect"
import { defineActor, Veto } from "../Binding.ts"

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
        }
      })
  },
  jobs: {}
})
