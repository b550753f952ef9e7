// A device authorization (spec "States and transitions", rows "Device authorization"; SUPPLEMENT
// "Device authorization lifecycle"):
//   pending --human approves--> approved --winning poll--> consumed (credentials issued once)
//   pending --human denies--> denied
//   pending|approved --cancellation call--> canceled
//   pending|approved --poll finds registration drift--> invalidated
//   pending|approved --900 seconds--> expired (a durable timer)
//   pending|approved --approval, denial or poll at or after the expiry instant--> expired (the
//     timer may not have fired yet: the event's instant decides)
//   pending --poll--> pending (paced: one sooner than the interval slows the client down)
import { assign, raise, setup } from "xstate"
import type { DeviceAuthorizationContext, DeviceAuthorizationInput } from "./context.ts"
import {
  type DeviceState,
  deviceLifeMillis,
  deviceAuthorizationEffects as effects,
  pollIntervalCeilingSeconds,
  pollIntervalSeconds,
  pollJitterMillis,
  type RecordPollParams,
  type RecordStateParams
} from "./effects.ts"
import type { DeviceAuthorizationEvent } from "./events.ts"

const record = (state: DeviceState) => ({ type: effects.recordState, params: { state } })

/** An approval, denial or poll that arrives once the authorization lapsed expires it instead. */
const lapse = { guard: "lapsed" as const, target: "expired", actions: record("expired") }

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
    [effects.recordPoll]: (_, _params: RecordPollParams) => {},
    rememberReason: assign(({ event }) => (event.type === "device.invalidate" ? { reason: event.reason } : {}))
  },
  guards: {
    lapsed: ({ context, event }) => context.expiresAt !== null && "at" in event && event.at >= context.expiresAt,
    tooSoon: ({ context, event }) =>
      context.lastPolledAt !== null &&
      "at" in event &&
      event.at - context.lastPolledAt < context.intervalSeconds * 1000 - pollJitterMillis
  }
}).createMachine({
  id: "deviceAuthorization",
  context: ({ input }) => ({
    branch: input.branch,
    clientId: input.clientId,
    approverPublicId: null,
    assignmentScope: null,
    reason: null,
    expiresAt: input.expiresAt,
    lastPolledAt: null,
    intervalSeconds: pollIntervalSeconds
  }),
  entry: raise({ type: "device.expire" }, { id: "expiry", delay: deviceLifeMillis }),
  initial: "pending",
  states: {
    pending: {
      meta: { waitsOn: "a human approving in the browser" },
      on: {
        ...ending,
        "device.consume": [
          lapse,
          {
            guard: "tooSoon",
            actions: [
              assign({
                intervalSeconds: ({ context }) => Math.min(context.intervalSeconds + 5, pollIntervalCeilingSeconds)
              }),
              {
                type: effects.recordPoll,
                params: ({ context }) => ({ intervalSeconds: context.intervalSeconds, slowDown: true })
              }
            ]
          },
          {
            actions: [
              assign({ lastPolledAt: ({ event }) => event.at }),
              {
                type: effects.recordPoll,
                params: ({ context }) => ({
                  polledAt: context.lastPolledAt!,
                  intervalSeconds: context.intervalSeconds,
                  slowDown: false
                })
              }
            ]
          }
        ],
        "device.approve": [
          lapse,
          {
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
          }
        ],
        "device.deny": [
          lapse,
          {
            target: "denied",
            actions: [
              assign({ approverPublicId: ({ event }) => event.approverPublicId }),
              {
                type: effects.recordState,
                params: ({ event }) => ({ state: "denied", approverPublicId: event.approverPublicId })
              }
            ]
          }
        ]
      }
    },
    approved: {
      meta: { waitsOn: "the client's next poll" },
      on: {
        ...ending,
        "device.consume": [lapse, { target: "consumed", actions: [{ type: effects.connect }, record("consumed")] }]
      }
    },
    consumed: { type: "final" },
    denied: { type: "final" },
    canceled: { type: "final" },
    invalidated: { type: "final" },
    expired: { type: "final" }
  }
})

export const deviceAuthorizationVersion = 2

/** Version 1 did not know its expiry instant (its timer alone ends it) nor its poll pacing. */
export const deviceAuthorizationMigrations = {
  2: <S extends { readonly context: unknown }>(snapshot: S) => ({
    ...snapshot,
    context: {
      ...(snapshot.context as object),
      expiresAt: null,
      lastPolledAt: null,
      intervalSeconds: pollIntervalSeconds
    }
  })
}
