// Effect requests of a device authorization, carried out by its binding in the step's
// transaction. `connect` is the connection itself: it writes the agent and executor rows and
// mints the credentials (answered to the poller once); it vetoes the step when the registration
// drifted.
import type { AssignmentScope } from "./events.ts"

export const deviceAuthorizationEffects = {
  /** Mirror the state (and the approval) on the device row. */
  recordState: "device.recordState",
  /** Make the connection the winning poll consumes. */
  connect: "device.connect"
} as const

/** The states the device row records. */
export type DeviceState = "pending" | "approved" | "consumed" | "denied" | "canceled" | "invalidated" | "expired"

export interface RecordStateParams {
  readonly state: DeviceState
  /** The deciding human, on approval or denial. */
  readonly approverPublicId?: string
  /** The consequence the approval froze. */
  readonly assignmentScope?: typeof AssignmentScope.Type
}

/** The whole device transaction lives 900 seconds. */
export const deviceLifeMillis = 900_000
