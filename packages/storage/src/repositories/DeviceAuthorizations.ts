// Rows of `device_authorizations`: one device connection transaction (device code digest, user
// code, the validated request, polling state and the approval).
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { isUuid } from "../Ids.ts"
import * as Rows from "./Rows.ts"

export const DeviceState = Schema.Literals([
  "pending",
  "approved",
  "consumed",
  "denied",
  "canceled",
  "invalidated",
  "expired"
])
export type DeviceState = typeof DeviceState.Type

const Branch = Schema.Literals(["agent", "machine", "combined"])

export const DeviceAuthorizationRow = Schema.Struct({
  id: Schema.BigInt,
  public_id: Schema.String,
  client_id: Schema.String,
  branch: Branch,
  request: Schema.Record(Schema.String, Schema.Unknown),
  device_lookup: Schema.String,
  device_salt: Schema.Uint8Array,
  device_digest: Schema.Uint8Array,
  user_code: Schema.String,
  state: DeviceState,
  interval_seconds: Schema.Number,
  last_polled_at: Schema.NullOr(Schema.Date),
  approved_by: Schema.NullOr(Schema.BigInt),
  assignment_scope: Schema.NullOr(Schema.Literals(["agent_private", "user_private", "account_wide"])),
  created_at: Schema.Date,
  expires_at: Schema.Date
})
export type DeviceAuthorizationRow = typeof DeviceAuthorizationRow.Type

/** Answers undefined when a unique value (such as a live user code) is already taken. */
const insertDeviceAuthorization = Rows.maybe("DeviceAuthorizations.insertDeviceAuthorization", {
  Request: Schema.Struct({
    publicId: Schema.String,
    clientId: Schema.String,
    branch: Branch,
    request: Schema.Unknown,
    deviceLookup: Schema.String,
    deviceSalt: Schema.Uint8Array,
    deviceDigest: Schema.Uint8Array,
    userCode: Schema.String,
    now: Schema.Date,
    expiresAt: Schema.Date
  }),
  Result: DeviceAuthorizationRow,
  execute: (row, sql) => sql`
    INSERT INTO device_authorizations (public_id, client_id, branch, request, device_lookup, device_salt,
                                       device_digest, user_code, created_at, expires_at)
    VALUES (${row.publicId}, ${row.clientId}, ${row.branch}, ${JSON.stringify(row.request)}::jsonb, ${row.deviceLookup},
            ${row.deviceSalt}, ${row.deviceDigest}, ${row.userCode}, ${row.now}, ${row.expiresAt})
    ON CONFLICT DO NOTHING
    RETURNING *`
})

const byDeviceLookup = Rows.maybe("DeviceAuthorizations.findByDeviceLookup", {
  Request: Schema.Struct({ lookup: Schema.String }),
  Result: DeviceAuthorizationRow,
  execute: ({ lookup }, sql) => sql`SELECT * FROM device_authorizations WHERE device_lookup = ${lookup}`
})

const findByDeviceLookup = (lookup: string) => byDeviceLookup({ lookup })

const liveByUserCode = Rows.maybe("DeviceAuthorizations.findLiveByUserCode", {
  Request: Schema.Struct({ userCode: Schema.String }),
  Result: DeviceAuthorizationRow,
  execute: ({ userCode }, sql) => sql`
    SELECT * FROM device_authorizations WHERE user_code = ${userCode} AND state IN ('pending', 'approved')`
})

const findLiveByUserCode = (userCode: string) => liveByUserCode({ userCode })

/** The newest authorization with this user code that this human approved or denied. */
const decidedByUserCode = Rows.maybe("DeviceAuthorizations.findDecidedByUserCode", {
  Request: Schema.Struct({ userCode: Schema.String, decidedBy: Schema.BigInt }),
  Result: DeviceAuthorizationRow,
  execute: ({ userCode, decidedBy }, sql) => sql`
    SELECT * FROM device_authorizations
    WHERE user_code = ${userCode} AND approved_by = ${decidedBy} AND state IN ('approved', 'consumed', 'denied')
    ORDER BY created_at DESC, id DESC LIMIT 1`
})

const findDecidedByUserCode = (userCode: string, decidedBy: bigint) => decidedByUserCode({ userCode, decidedBy })

const byPublicId = Rows.maybe("DeviceAuthorizations.findByPublicId", {
  Request: Schema.Struct({ publicId: Schema.String }),
  Result: DeviceAuthorizationRow,
  execute: ({ publicId }, sql) => sql`SELECT * FROM device_authorizations WHERE public_id = ${publicId}`
})

const findByPublicId = Effect.fnUntraced(function* (publicId: string) {
  if (!isUuid(publicId)) return undefined
  return yield* byPublicId({ publicId })
})

const setDeviceState = Effect.fnUntraced(function* (
  publicId: string,
  state: DeviceState,
  approval?: { readonly approvedBy: bigint; readonly assignmentScope: DeviceAuthorizationRow["assignment_scope"] }
) {
  const sql = yield* SqlClient
  yield* sql`
    UPDATE device_authorizations
    SET state = ${state},
        approved_by = ${approval === undefined ? sql`approved_by` : sql`${approval.approvedBy}`},
        assignment_scope = ${approval === undefined ? sql`assignment_scope` : sql`${approval.assignmentScope}`}
    WHERE public_id = ${publicId}`
})

/** Mirrors a pending poll's pacing (the machine judged it): the accepted instant, the interval. */
const recordPoll = Effect.fnUntraced(function* (publicId: string, polledAt: Date | undefined, intervalSeconds: number) {
  const sql = yield* SqlClient
  yield* sql`
    UPDATE device_authorizations
    SET interval_seconds = ${intervalSeconds},
        last_polled_at = ${polledAt === undefined ? sql`last_polled_at` : sql`${polledAt}`}
    WHERE public_id = ${publicId}`
})

export class DeviceAuthorizationsRepository extends Context.Service<DeviceAuthorizationsRepository>()(
  "@troupe/storage/DeviceAuthorizationsRepository",
  {
    make: Effect.map(SqlClient, (sql) =>
      Rows.bind(sql, {
        insertDeviceAuthorization,
        findByDeviceLookup,
        findLiveByUserCode,
        findDecidedByUserCode,
        findByPublicId,
        setDeviceState,
        recordPoll
      })
    )
  }
) {
  static readonly layer = Layer.effect(DeviceAuthorizationsRepository, DeviceAuthorizationsRepository.make)
}
