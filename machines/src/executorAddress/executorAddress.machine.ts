// An executor address (spec "States and transitions", rows "Executor address" and "Agent
// application address"):
//   active --connection by the same identifier, live match of same kind--> active, epoch advanced
//   active --agent removal (agent application)--> active, epoch advanced
//   active --explicit revocation--> revoked (transport fenced synchronously)
//   active --announcement--> active, served tools, environment and documents replaced
// The context's epoch is the address's authority epoch; the row's credential_epoch mirrors it.
// A connection mints its credentials at the epoch it tells the address (in its own transaction,
// ending the superseded lineages there), so an epoch never moves back: a re-pair told an epoch
// below the address's is refused, and an agent removal one not above it (a reconnection told
// after a removal may name the removal's epoch, which is past every credential the removal ends).
import { assign, setup } from "xstate"
import type { ExecutorAddressContext, ExecutorAddressInput } from "./context.ts"
import { executorAddressEffects, type RecordAnnouncementParams, type RecordEpochParams } from "./effects.ts"
import type { ExecutorAddressEvent } from "./events.ts"

const toldEpoch = (event: ExecutorAddressEvent) => ("epoch" in event ? event.epoch : Number.NaN)

export const executorAddressMachine = setup({
  types: {
    context: {} as ExecutorAddressContext,
    input: {} as ExecutorAddressInput,
    events: {} as ExecutorAddressEvent
  },
  actions: {
    [executorAddressEffects.recordEpoch]: (_, _params: RecordEpochParams) => {},
    [executorAddressEffects.recordAnnouncement]: (_, _params: RecordAnnouncementParams) => {},
    [executorAddressEffects.recordRevoked]: () => {},
    /** The context takes the told epoch. */
    adoptEpoch: assign({ epoch: ({ event }) => toldEpoch(event) })
  },
  guards: {
    /** The told epoch is not below the address's. */
    notBehind: ({ context, event }) => toldEpoch(event) >= context.epoch,
    /** The told epoch is past the address's. */
    ahead: ({ context, event }) => toldEpoch(event) > context.epoch
  }
}).createMachine({
  id: "executorAddress",
  context: ({ input }) => ({ kind: input.kind, epoch: input.epoch }),
  initial: "active",
  states: {
    active: {
      meta: { waitsOn: "its executor: work, an announcement, a re-pair or a revocation" },
      on: {
        "executor.repaired": {
          guard: "notBehind",
          actions: [
            "adoptEpoch",
            {
              type: executorAddressEffects.recordEpoch,
              params: ({ event }) => ({ epoch: event.epoch, displayName: event.displayName })
            }
          ]
        },
        "executor.agentRemoved": {
          guard: "ahead",
          actions: [
            "adoptEpoch",
            { type: executorAddressEffects.recordEpoch, params: ({ event }) => ({ epoch: event.epoch }) }
          ]
        },
        "executor.announce": {
          actions: {
            type: executorAddressEffects.recordAnnouncement,
            params: ({ event }) => ({ announcement: event.announcement })
          }
        },
        "executor.revoke": { target: "revoked", actions: { type: executorAddressEffects.recordRevoked } }
      }
    },
    revoked: { type: "final" }
  }
})

export const executorAddressVersion = 1
