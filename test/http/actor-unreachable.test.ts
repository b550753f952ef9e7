// A hand-off that ran out of patience (no node could step the actor while its shard moved) is not
// a 500: every door answers 503 not_ready with Retry-After, in its own shape.
import { ActorUnreachable } from "@troupe/actors/Errors"
import { answerFailure } from "@troupe/http/conventions/ErrorEnvelope"
import { doorOf } from "@troupe/http/conventions/Refusal"
import { Cause, Effect } from "effect"
import { describe, expect, it } from "vitest"

const answer = async (method: string, path: string) => {
  const cause = Cause.die(
    new ActorUnreachable({ kind: "inferenceRequest", actorId: "01900000-0000-7000-8000-000000000001" })
  )
  const response = await Effect.runPromise(answerFailure(doorOf(method, path), cause).pipe(Effect.orDie))
  const body =
    response.body._tag === "Uint8Array" ? JSON.parse(new TextDecoder().decode(response.body.body)) : undefined
  return { status: response.status, retryAfter: response.headers["retry-after"], body }
}

describe("an unreachable actor", () => {
  it("answers 503 not_ready with Retry-After on the member plane", async () => {
    expect(await answer("POST", "/agent_api/v1/workspaces/x/inference_requests")).toEqual({
      status: 503,
      retryAfter: "1",
      body: { error: { code: "not_ready", message: expect.any(String) } }
    })
  })

  it("answers the OAuth door in its own shape", async () => {
    const oauth = await answer("POST", "/oauth/token")
    expect(oauth.status).toBe(503)
    expect(oauth.body.error).toBe("not_ready")
  })
})
