// Effect requests of an executor address, carried out by its binding in the step's transaction.
import type { Announcement } from "./events.ts"

export const executorAddressEffects = {
  /** Mirror the context's epoch on the row (and a re-pair's display name): older credentials stop. */
  recordEpoch: "executor.recordEpoch",
  /** Replace the served tools, environment and documents on the row; answers the row. */
  recordAnnouncement: "executor.recordAnnouncement",
  /** Mark the address revoked and end its runner credentials: its transport stops with this commit. */
  recordRevoked: "executor.recordRevoked"
} as const

export interface RecordEpochParams {
  readonly epoch: number
  /** The name a re-pair gives the address; absent: it keeps its name. */
  readonly displayName?: string
}

export interface RecordAnnouncementParams {
  readonly announcement: Announcement
}
