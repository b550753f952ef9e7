// The API session (spec "States and transitions", rows "API session"):
//   active --DELETE /api/v1/session--> revoked
//   active --30 days from issuance--> expired
// The expiry is a delayed event, which the runtime keeps as a durable timer row.
import { emit, raise, setup } from "xstate"
import type { ApiSessionContext, ApiSessionInput } from "./context.ts"
import { type ApiSessionEmitted, apiSessionEffects, sessionLifeMillis } from "./effects.ts"
import type { ApiSessionEvent } from "./events.ts"

export const apiSessionMachine = setup({
  types: {
    context: {} as ApiSessionContext,
    input: {} as ApiSessionInput,
    events: {} as ApiSessionEvent,
    emitted: {} as ApiSessionEmitted
  },
  actions: {
    [apiSessionEffects.recordRevoked]: () => {},
    [apiSessionEffects.recordExpired]: () => {}
  }
}).createMachine({
  id: "apiSession",
  context: ({ input }) => ({ kind: input.kind }),
  initial: "active",
  states: {
    active: {
      entry: raise({ type: "session.expire" }, { id: "expiry", delay: sessionLifeMillis }),
      on: {
        "session.revoke": {
          target: "revoked",
          actions: [{ type: apiSessionEffects.recordRevoked }, emit({ type: "session.revoked" })]
        },
        "session.expire": {
          target: "expired",
          actions: [{ type: apiSessionEffects.recordExpired }, emit({ type: "session.expired" })]
        }
      }
    },
    revoked: { type: "final" },
    expired: { type: "final" }
  }
})

export const apiSessionVersion = 1
