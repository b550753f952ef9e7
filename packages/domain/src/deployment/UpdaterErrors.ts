// What talking to the installation's updater can fail with, independent of any transport: the
// updater is not configured or not reached in time (updater_unavailable), or it refused with one
// of the protocol's codes, which the http layer answers at the spec's status.
import { Schema } from "effect"
import { refusalCodes } from "./Protocol.ts"

/** No updater answered: unset socket, connect failure, timeout, or an answer outside the protocol. */
export class UpdaterUnavailable extends Schema.TaggedError<UpdaterUnavailable>()("UpdaterUnavailable", {
  message: Schema.String
}) {}

/** The updater answered `{ok: false}` with a code the service passes through. */
export class UpdaterRefused extends Schema.TaggedError<UpdaterRefused>()("UpdaterRefused", {
  code: Schema.Literals(refusalCodes),
  message: Schema.String
}) {}

export type UpdaterFailure = UpdaterUnavailable | UpdaterRefused
