// Rows of `device_authorizations`: one device connection transaction (device code digest, user
// code, the validated request, polling state and the approval).
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { isUuid } from "../Ids.ts"

export type DeviceState = "pending" | "approved" | "consumed" | "denied" | "canceled" | "invalidated" | "expired"

export interface DeviceAuthorizationRow {
  readonly id: bigint
  readonly public_id: string
  readonly client_id: string
  readonly branch: "agent" | "machine" | "combined"
  readonly request: Record<string, unknown>
  readonly device_lookup: string
  readonly device_salt: Uint8Array
  readonly device_digest: Uint8Array
  readonly user_code: string
  readonly state: DeviceState
  readonly interval_seconds: number
  readonly last_polled_at: Date | null
  readonly approved_by: bigint | null
  readonly assignment_scope: "agent_private" | "user_private" | "account_wide" | null
  readonly created_at: Date
  readonly expires_at: Date
}

export const insertDeviceAuthorization = Effect.fnUntraced(function* (row: {
  readonly publicId: string
  readonly clientId: string
  readonly branch: DeviceAuthorizationRow["branch"]
  readonly request: unknown
  readonly deviceLookup: string
  readonly deviceSalt: Uint8Array
  readonly deviceDigest: Uint8Array
  readonly userCode: string
  readonly now: Date
  readonly expiresAt: Date
}) {
  const sql = yield* SqlClient
  const rows = yield* sql<DeviceAuthorizationRow>`
    INSERT INTO device_authorizations (public_id, client_id, branch, request, device_lookup, device_salt,
                                       device_digest, user_code, created_at, expires_at)
    VALUES (${row.publicId}, ${row.clientId}, ${row.branch}, ${JSON.stringify(row.request)}::jsonb, ${row.deviceLookup},
            ${row.deviceSalt}, ${row.deviceDigest}, ${row.userCode}, ${row.now}, ${row.expiresAt})
    ON CONFLICT DO NOTHING
    RETURNING *`
  return rows[0]
})

export const findByDeviceLookup = Effect.fnUntraced(function* (lookup: string) {
  const sql = yield* SqlClient
  const rows = yield* sql<DeviceAuthorizationRow>`SELECT * FROM device_authorizations WHERE device_lookup = ${lookup}`
  return rows[0]
})

export const findLiveByUserCode = Effect.fnUntraced(function* (userCode: string) {
  const sql = yield* SqlClient
  const rows = yield* sql<DeviceAuthorizationRow>`
    SELECT * FROM device_authorizations WHERE user_code = ${userCode} AND state IN ('pending', 'approved')`
  return rows[0]
})

export const findByPublicId = Effect.fnUntraced(function* (publicId: string) {
  if (!isUuid(publicId)) return undefined
  const sql = yield* SqlClient
  const rows = yield* sql<DeviceAuthorizationRow>`SELECT * FROM device_authorizations WHERE public_id = ${publicId}`
  return rows[0]
})

export const setDeviceState = Effect.fnUntraced(function* (
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
export const recordPoll = Effect.fnUntraced(function* (
  publicId: string,
  polledAt: Date | undefined,
  intervalSeconds: number
) {
  const sql = yield* SqlClient
  yield* sql`
    UPDATE device_authorizations
    SET interval_seconds = ${intervalSeconds},
        last_polled_at = ${polledAt === undefined ? sql`last_polled_at` : sql`${polledAt}`}
    WHERE public_id = ${publicId}`
})
