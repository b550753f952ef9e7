// Effect requests of an executor address, carried out by its binding in the step's transaction.
export const executorAddressEffects = {
  /** Mark the address revoked and end its runner credentials: its transport stops with this commit. */
  recordRevoked: "executor.recordRevoked"
} as const
