// The error envelope `{error: {code, message}}` and one error class per HTTP status, so every
// endpoint declares (and OpenAPI documents) exactly the failures it can answer. Codes come
// from the spec's Errors table; messages are for humans and not part of the contract.
import { Schema } from "effect"
import { HttpApiSchema } from "effect/http-api"

export const ErrorBody = Schema.Struct({
  code: Schema.String,
  message: Schema.String
})
export type ErrorBody = typeof ErrorBody.Type

const envelope = { error: ErrorBody }

export class BadRequest extends Schema.Error<BadRequest>("BadRequest")(envelope, { httpApiStatus: 400 }) {
  readonly _tag = "BadRequest" as const
}
export class Unauthorized extends Schema.Error<Unauthorized>("Unauthorized")(envelope, { httpApiStatus: 401 }) {
  readonly _tag = "Unauthorized" as const
}
export class Forbidden extends Schema.Error<Forbidden>("Forbidden")(envelope, { httpApiStatus: 403 }) {
  readonly _tag = "Forbidden" as const
}
export class NotFound extends Schema.Error<NotFound>("NotFound")(envelope, { httpApiStatus: 404 }) {
  readonly _tag = "NotFound" as const
}
export class Conflict extends Schema.Error<Conflict>("Conflict")(envelope, { httpApiStatus: 409 }) {
  readonly _tag = "Conflict" as const
}
export class ContentTooLarge extends Schema.Error<ContentTooLarge>("ContentTooLarge")(envelope, {
  httpApiStatus: 413
}) {
  readonly _tag = "ContentTooLarge" as const
}
export class Unprocessable extends Schema.Error<Unprocessable>("Unprocessable")(envelope, { httpApiStatus: 422 }) {
  readonly _tag = "Unprocessable" as const
}

/** 429 rate_limited with a Retry-After header in whole seconds. */
export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", {
  message: Schema.String,
  retryAfterSeconds: Schema.Int
}) {}

export const RateLimitedResponse = RateLimited.pipe(
  HttpApiSchema.encodeToWithHeaders(
    {
      body: Schema.Struct(envelope).pipe(HttpApiSchema.status(429)),
      headers: { "retry-after": Schema.FiniteFromString }
    },
    {
      encode: (e) => ({
        body: { error: { code: "rate_limited", message: e.message } },
        headers: { "retry-after": e.retryAfterSeconds }
      }),
      decode: ({ body, headers }) =>
        new RateLimited({ message: body.error.message, retryAfterSeconds: headers["retry-after"] })
    }
  )
)

/** Builders that read like the spec's table: `fail.notFound("...")`. */
export const errors = {
  badRequest: (code: string, message: string) => new BadRequest({ error: { code, message } }),
  parameterMissing: (message: string) => new BadRequest({ error: { code: "parameter_missing", message } }),
  parameterInvalid: (message: string) => new BadRequest({ error: { code: "parameter_invalid", message } }),
  unauthorized: (message = "Authentication is required") =>
    new Unauthorized({ error: { code: "unauthorized", message } }),
  invalidCredentials: () =>
    new Unauthorized({ error: { code: "invalid_credentials", message: "The email or password is not correct" } }),
  forbidden: (code: string, message: string) => new Forbidden({ error: { code, message } }),
  notFound: (message = "Not found", code = "not_found") => new NotFound({ error: { code, message } }),
  conflict: (code: string, message: string) => new Conflict({ error: { code, message } }),
  contentTooLarge: (message: string) => new ContentTooLarge({ error: { code: "content_too_large", message } }),
  unprocessable: (code: string, message: string) => new Unprocessable({ error: { code, message } }),
  rateLimited: (retryAfterSeconds: number, message = "Too many requests") =>
    new RateLimited({ message, retryAfterSeconds })
}
