// The client's network address for per-IP budgets: the socket peer, or the forwarded client when
// the request came through a trusted proxy (see TROUPE_TRUSTED_PROXIES).
import { Effect, Option } from "effect"
import { HttpServerRequest } from "effect/http"

export const clientAddress = Effect.map(HttpServerRequest.HttpServerRequest, (request) =>
  Option.getOrElse(request.remoteAddress, () => "unknown")
)
