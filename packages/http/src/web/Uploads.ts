// The browser upload door, POST /uploads (spec "Member: uploads", supplement "Uploads"): the
// member door's multipart ingest for the signed-in human, answered in the API envelope. The
// cookie rides on any request a browser makes, so it counts only from the same origin: an Origin
// equal to the host, or Sec-Fetch-Site: same-origin; else 403 not_authorized. No live browser
// session is 401 unauthorized. The human is the creator, and reads the upload at the member door.
import { type ErrorCode, RateLimited, statusOfCode } from "@troupe/contracts/Errors"
import { UploadResponse } from "@troupe/contracts/member/Uploads"
import { Effect, Schema } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { envelope } from "../conventions/ErrorEnvelope.ts"
import { uploadAtDoor } from "../conventions/UploadIngest.ts"
import { signedInHuman } from "./Session.ts"

export const browserUploadPath = "/uploads"

/** The request comes from a page of this origin (RFC 6454 Origin, or Fetch metadata). */
const sameOrigin = (request: HttpServerRequest.HttpServerRequest) => {
  if (request.headers["sec-fetch-site"] === "same-origin") return true
  const origin = request.headers.origin
  if (origin === undefined) return false
  return URL.parse(origin)?.host === request.headers.host
}

const encodeAnswer = Schema.encodeSync(UploadResponse)

/** A refusal of the ingest, in the API envelope (this route is no HttpApi endpoint). */
const refusal = (error: RateLimited | { readonly error: { readonly code: string; readonly message: string } }) =>
  error instanceof RateLimited
    ? envelope(429, "rate_limited", error.message, { "retry-after": String(error.retryAfterSeconds) })
    : envelope(statusOfCode[error.error.code as ErrorCode] ?? 400, error.error.code, error.error.message)

export const BrowserUpload = HttpRouter.add(
  "POST",
  browserUploadPath,
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const human = yield* signedInHuman
    if (!human) return envelope(401, "unauthorized", "Sign in first")
    if (!sameOrigin(request)) return envelope(403, "not_authorized", "Upload from a page of this site")
    const answer = yield* uploadAtDoor({ kind: "member", userId: human.id }, `user:${human.id}`)
    return HttpServerResponse.jsonUnsafe(encodeAnswer(answer), {
      status: 201,
      headers: { "cache-control": "no-store" }
    })
  }).pipe(Effect.catch((error) => Effect.succeed(refusal(error))))
)
