// The API session binding: its steps record revocation and expiry on the session row, which is
// what authentication reads; narrated items go to the session's own stream.
import { apiSessionEffects } from "@troupe/machines/apiSession/effects"
import { machines } from "@troupe/machines/registry"
import { setSessionState } from "@troupe/storage/repositories/Sessions"
import { defineActor } from "../Binding.ts"

export const apiSessionActor = defineActor({
  kind: "apiSession",
  entry: machines.apiSession,
  resourceType: "api_session",
  stream: (actorId) => `api_session:${actorId}`,
  rows: {
    [apiSessionEffects.recordRevoked]: (_params, step) => setSessionState(step.actorId, "revoked", step.now),
    [apiSessionEffects.recordExpired]: (_params, step) => setSessionState(step.actorId, "expired", step.now)
  },
  jobs: {}
})
