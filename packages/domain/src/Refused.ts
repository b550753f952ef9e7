// The member plane's refusals: a status and code from the spec's Errors table and a message.
// Domain services fail with one Refused; the http layer answers it as the error envelope.
import { Effect, Schema } from "effect"

export class Refused extends Schema.TaggedError<Refused>()("Refused", {
  status: Schema.Number,
  code: Schema.String,
  message: Schema.String
}) {}

export const refuse = (status: number, code: string, message: string) =>
  Effect.fail(new Refused({ status, code, message }))
