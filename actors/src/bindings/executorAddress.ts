// The executor address binding: revocation marks the address revoked in its step, which fences
// its transport credentials at once (authentication requires an active address).
import { executorAddressEffects } from "@troupe/machines/executorAddress/executorAddress.machine"
import { machines } from "@troupe/machines/registry"
import { revokeExecutor } from "@troupe/storage/repositories/Executors"
import type { Binding } from "../Binding.ts"

export const executorAddressBinding: Binding = {
  kind: "executorAddress",
  entry: machines.executorAddress,
  resourceType: "executor",
  stream: (actorId) => `executor:${actorId}`,
  rows: {
    [executorAddressEffects.recordRevoked]: (_params, step) => revokeExecutor(step.actorId, step.now)
  },
  jobs: {}
}
