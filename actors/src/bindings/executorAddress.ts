// The executor address binding: revocation marks the address revoked and ends its runner
// credentials in its step, which fences its transport at once (authentication requires an active
// address).
import { executorAddressEffects } from "@troupe/machines/executorAddress/effects"
import { machines } from "@troupe/machines/registry"
import { revokeHolderLineages } from "@troupe/storage/repositories/Credentials"
import { findExecutorByPublicId, revokeExecutor } from "@troupe/storage/repositories/Executors"
import { Effect } from "effect"
import { defineActor } from "../Binding.ts"

export const executorAddressActor = defineActor({
  kind: "executorAddress",
  entry: machines.executorAddress,
  resourceType: "executor",
  stream: (actorId) => `executor:${actorId}`,
  rows: {
    [executorAddressEffects.recordRevoked]: (_params, step) =>
      Effect.gen(function* () {
        yield* revokeExecutor(step.actorId, step.now)
        const executor = yield* findExecutorByPublicId(step.actorId)
        if (executor) yield* revokeHolderLineages("runner", { executorId: executor.id }, step.now)
      })
  },
  jobs: {}
})
