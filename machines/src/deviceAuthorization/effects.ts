// Effect requests of a device authorization, carried out by its binding in the step's
// transaction. `connect` is the connection itself: it writes the agent and executor rows and
// mints the credentials (answered to the poller once); it vetoes the step when the registration
// drifted.
import type { AssignmentScope } from "./events.ts"

export const deviceAuthorizationEffects = {
  /** Mirror the state (and the approval) on the device row. */
  recordState: "device.recordState",
  /** Make the connection the winning poll consumes. */
  connect: "device.connect",
  /** Mirror a pending poll's pacing on the row; answers whether the client must slow down. */
  recordPoll: "device.recordPoll"
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

export interface RecordPollParams {
  /** The accepted poll's instant (epoch milliseconds); absent when the poll came too soon. */
  readonly polledAt?: number
  /** The interval the client must keep from now on, in seconds. */
  readonly intervalSeconds: number
  readonly slowDown: boolean
}

/** RFC 8628 pacing: polls start 5 s apart; one sooner (less 1 s of jitter) adds 5 s, up to 60. */
export const pollIntervalSeconds = 5
export const pollJitterMillis = 1000
export const pollIntervalCeilingSeconds = 60

/** The whole device transaction lives 900 seconds. */
export const deviceLifeMillis = 900_000
