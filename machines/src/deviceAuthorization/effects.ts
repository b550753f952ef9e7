// Effect requests of a device authorization. `consume` is the connection itself: it writes the
// agent and executor rows and mints the credentials (answered to the poller once); it vetoes the
// step when the registration drifted.
export const deviceAuthorizationEffects = {
  recordState: "device.recordState",
  consume: "device.consume"
} as const

/** The whole device transaction lives 900 seconds. */
export const deviceLifeMillis = 900_000
