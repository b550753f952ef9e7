// The API session binding: its steps record revocation and expiry on the session row, which is
// what authentication reads; narrated items go to the session's own stream.
import { apiSessionEffects } from "@troupe/machines/apiSession/effects"
import { machines } from "@troupe/machines/registry"
import { SessionsRepository } from "@troupe/storage/repositories/Sessions"
import { Effect } from "effect"
import { defineActor } from "../Binding.ts"

const recordState = (sessionPublicId: string, state: "revoked" | "expired", at: Date) =>
  Effect.flatMap(SessionsRepository.make, (sessions) => sessions.setSessionState(sessionPublicId, state, at))

export const apiSessionActor = defineActor({
  kind: "apiSession",
  entry: machines.apiSession,
  resourceType: "api_session",
  stream: (actorId) => `api_session:${actorId}`,
  rows: {
    [apiSessionEffects.recordRevoked]: (_params, step) => recordState(step.actorId, "revoked", step.now),
    [apiSessionEffects.recordExpired]: (_params, step) => recordState(step.actorId, "expired", step.now)
  },
  jobs: {}
})
