// The Idempotent middleware: digests the canonical request (method, path and query, body with
// sorted keys), runs the endpoint once per (caller, path, key): a key is reserved within the
// collection it was sent to (one workspace's inference requests, say), not across them. It
// replays the acceptance verbatim with Idempotency-Replayed: true (or, on endpoints annotated
// ReplaysStanding, runs the handler again to answer the resource as it stands, at 200).
// Failures are not kept, so a corrected retry may reuse the key.
import { createHash } from "node:crypto"
import { errors } from "@troupe/contracts/Errors"
import {
  CallerIdentity,
  IdempotencyKeyMaxBytes,
  IdempotencyScope,
  Idempotent,
  ReplayedAcceptance,
  ReplaysStanding
} from "@troupe/contracts/Idempotency"
import { Idempotency, type StoredResponse } from "@troupe/domain/kernel/Idempotency"
import { isObject } from "@troupe/domain/kernel/Json"
import { Context, Effect, Layer } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"

/** Members sorted, as JSON.stringify meets each object (no recursion of ours; the depth is bounded). */
const sortedMembers = (_name: string, value: unknown) =>
  isObject(value)
    ? Object.fromEntries(
        Object.keys(value)
          .sort()
          .map((key) => [key, value[key]])
      )
    : value

const canonicalBody = (text: string) => {
  try {
    return JSON.stringify(JSON.parse(text), sortedMembers)
  } catch {
    return text
  }
}

const stored = (response: HttpServerResponse.HttpServerResponse): StoredResponse => {
  const body = response.body
  return {
    status: response.status,
    headers: { ...response.headers },
    body:
      body._tag === "Uint8Array" ? new TextDecoder().decode(body.body) : body._tag === "Raw" ? String(body.body) : ""
  }
}

const replay = (response: StoredResponse, replayed: boolean) =>
  HttpServerResponse.text(response.body, {
    status: response.status,
    headers: { ...response.headers, "idempotency-replayed": replayed ? "true" : "false" }
  })

export const IdempotentLive = Layer.effect(
  Idempotent,
  Effect.gen(function* () {
    const store = yield* Idempotency
    return (httpEffect, { endpoint }) =>
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const key = request.headers["idempotency-key"]
        if (key === undefined || key.trim() === "") {
          return yield* errors.badRequest("idempotency_key_required", "Send an Idempotency-Key header")
        }
        const maxBytes = Context.get(endpoint.annotations, IdempotencyKeyMaxBytes)
        // Node hands header values over as latin1 text: one character per byte on the wire.
        if (Buffer.byteLength(key, "latin1") > maxBytes) {
          return yield* errors.parameterInvalid(`Idempotency-Key must be 1 to ${maxBytes} bytes`)
        }
        const caller = yield* CallerIdentity
        const body = yield* Effect.orDie(request.text)
        const digest = createHash("sha256")
          .update(`${request.method}\n${request.url}\n${canonicalBody(body)}`)
          .digest()
        const result = yield* store
          .run(
            {
              caller: caller.key,
              route:
                Context.get(endpoint.annotations, IdempotencyScope) ?? `${request.method} ${request.url.split("?")[0]}`,
              key
            },
            digest,
            Effect.map(httpEffect, stored)
          )
          .pipe(
            Effect.catchTags({
              IdempotencyMismatch: () =>
                Effect.fail(
                  errors.conflict(
                    "idempotency_envelope_mismatch",
                    "This Idempotency-Key was used with a different request"
                  )
                ),
              IdempotencyInProgress: () =>
                Effect.fail(errors.rateLimited(1, "The first request with this key is still running"))
            })
          )
        if (result.replayed && Context.get(endpoint.annotations, ReplaysStanding)) {
          const standing = yield* Effect.provideService(httpEffect, ReplayedAcceptance, { body: result.response.body })
          return HttpServerResponse.setHeader(
            HttpServerResponse.setStatus(standing, 200),
            "idempotency-replayed",
            "true"
          )
        }
        return replay(result.response, result.replayed)
      })
  })
)
