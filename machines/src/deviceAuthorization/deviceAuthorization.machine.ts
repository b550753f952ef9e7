// A device authorization (spec "States and transitions", rows "Device authorization"; SUPPLEMENT
// "Device authorization lifecycle"):
//   pending --human approves--> approved --winning poll--> consumed (credentials issued once)
//   pending --human denies--> denied
//   pending|approved --cancellation call--> canceled
//   pending|approved --poll finds registration drift--> invalidated
//   pending|approved --900 seconds--> expired (a durable timer)
import { assign, raise, setup } from "xstate"
import type { DeviceAuthorizationContext, DeviceAuthorizationInput } from "./context.ts"
import {
  type DeviceState,
  deviceLifeMillis,
  deviceAuthorizationEffects as effects,
  type RecordStateParams
} from "./effects.ts"
import type { DeviceAuthorizationEvent } from "./events.ts"

const record = (state: DeviceState) => ({ type: effects.recordState, params: { state } })

/** While not yet ended: the client may cancel, a poll may find drift, and the clock runs out. */
const ending = {
  "device.cancel": { target: "canceled", actions: record("canceled") },
  "device.invalidate": { target: "invalidated", actions: ["rememberReason" as const, record("invalidated")] },
  "device.expire": { target: "expired", actions: record("expired") }
}

export const deviceAuthorizationMachine = setup({
  types: {
    context: {} as DeviceAuthorizationContext,
    input: {} as DeviceAuthorizationInput,
    events: {} as DeviceAuthorizationEvent
  },
  actions: {
    [effects.recordState]: (_, _params: RecordStateParams) => {},
    [effects.connect]: () => {},
    rememberReason: assign(({ event }) => (event.type === "device.invalidate" ? { reason: event.reason } : {}))
  }
}).createMachine({
  id: "deviceAuthorization",
  context: ({ input }) => ({
    branch: input.branch,
    clientId: input.clientId,
    approverPublicId: null,
    assignmentScope: null,
    reason: null
  }),
  entry: raise({ type: "device.expire" }, { id: "expiry", delay: deviceLifeMillis }),
  initial: "pending",
  states: {
    pending: {
      meta: { waitsOn: "a human approving in the browser" },
      on: {
        ...ending,
        "device.approve": {
          target: "approved",
          actions: [
            assign({
              approverPublicId: ({ event }) => event.approverPublicId,
              assignmentScope: ({ event }) => event.assignmentScope
            }),
            {
              type: effects.recordState,
              params: ({ event }) => ({
                state: "approved",
                approverPublicId: event.approverPublicId,
                assignmentScope: event.assignmentScope
              })
            }
          ]
        },
        "device.deny": {
          target: "denied",
          actions: [
            assign({ approverPublicId: ({ event }) => event.approverPublicId }),
            {
              type: effects.recordState,
              params: ({ event }) => ({ state: "denied", approverPublicId: event.approverPublicId })
            }
          ]
        }
      }
    },
    approved: {
      meta: { waitsOn: "the client's next poll" },
      on: {
        ...ending,
        "device.consume": { target: "consumed", actions: [{ type: effects.connect }, record("consumed")] }
      }
    },
    consumed: { type: "final" },
    denied: { type: "final" },
    canceled: { type: "final" },
    invalidated: { type: "final" },
    expired: { type: "final" }
  }
})

export const deviceAuthorizationVersion = 1
