// An executor address (spec "States and transitions", rows "Executor address" and "Agent
// application address"):
//   active --connection by the same identifier, live match of same kind--> active, epoch advanced
//   active --agent removal (agent application)--> active, epoch advanced
//   active --explicit revocation--> revoked (transport fenced synchronously)
// The epoch that fences credentials lives on the address row, advanced in the same transaction
// that mints the new credentials; these steps narrate it on the address's own timeline.
import { assign, setup } from "xstate"
import type { ExecutorAddressContext, ExecutorAddressInput } from "./context.ts"
import { executorAddressEffects } from "./effects.ts"
import type { ExecutorAddressEvent } from "./events.ts"

export const executorAddressMachine = setup({
  types: {
    context: {} as ExecutorAddressContext,
    input: {} as ExecutorAddressInput,
    events: {} as ExecutorAddressEvent
  },
  actions: { [executorAddressEffects.recordRevoked]: () => {} }
}).createMachine({
  id: "executorAddress",
  context: ({ input }) => ({ kind: input.kind, epoch: input.epoch }),
  initial: "active",
  states: {
    active: {
      meta: { waitsOn: "its executor: work, a re-pair or a revocation" },
      on: {
        "executor.repaired": { actions: assign({ epoch: ({ event }) => event.epoch }) },
        "executor.agentRemoved": { actions: assign({ epoch: ({ event }) => event.epoch }) },
        "executor.revoke": { target: "revoked", actions: { type: executorAddressEffects.recordRevoked } }
      }
    },
    revoked: { type: "final" }
  }
})

export const executorAddressVersion = 1
