// POST /oauth/revoke (RFC 7009): a refresh token ends its lineage, an access token ends itself,
// when issued to the requesting client. Always 200 with an empty body, whatever the token was.
import { Credentials } from "@troupe/domain/accounts/Credentials"
import { Effect } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { limited } from "./Device.ts"
import { readOAuthParams } from "./Params.ts"
import { clientRefusal, knownClient, oauthError } from "./Responses.ts"

const revokeLimit = { scope: "oauth.revoke", limit: 60, windowSeconds: 60 }

export const RevokeRoute = HttpRouter.add(
  "POST",
  "/oauth/revoke",
  Effect.gen(function* () {
    const refused = yield* limited(revokeLimit)
    if (refused) return refused
    const read = yield* readOAuthParams
    if (read._tag === "Invalid") return oauthError("invalid_request", read.description)
    const { client_id: clientId, token } = read.params
    if (!knownClient(clientId)) return clientRefusal(clientId)
    if (!token) return oauthError("invalid_request", "token is required")
    const credentials = yield* Credentials
    yield* credentials.revoke(token, clientId)
    return HttpServerResponse.empty({ status: 200, headers: { "cache-control": "no-store" } })
  })
)
