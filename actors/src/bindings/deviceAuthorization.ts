// The device authorization binding: its steps mirror their state on the device row (with the
// approval) and its pending polls' pacing (answering whether to slow down), and the consuming step
// makes the connection, answering the credentials once. The
// connection rules are the domain's (domain/Connections.ts): they are passed in, and the domain
// module that owns them makes the definition the runtime registers.
import { deviceAuthorizationEffects } from "@troupe/machines/deviceAuthorization/effects"
import { machines } from "@troupe/machines/registry"
import { AccountsRepository } from "@troupe/storage/repositories/Accounts"
import * as Devices from "@troupe/storage/repositories/DeviceAuthorizations"
import { Effect } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import { defineActor, type TransactionalActors, type Veto } from "../Binding.ts"

/** Makes the connection a device authorization consumes, inside its step's transaction. */
export type Connect<Issued> = (
  device: Devices.DeviceAuthorizationRow
) => Effect.Effect<Issued, Veto | SqlError, SqlClient | TransactionalActors>

export const defineDeviceAuthorization = <Issued>(connect: Connect<Issued>) =>
  defineActor({
    kind: "deviceAuthorization",
    entry: machines.deviceAuthorization,
    resourceType: "device_authorization",
    stream: (actorId) => `device_authorization:${actorId}`,
    rows: {
      [deviceAuthorizationEffects.recordState]: (params, step) =>
        Effect.gen(function* () {
          const accounts = yield* AccountsRepository.make
          const devices = yield* Devices.DeviceAuthorizationsRepository.make
          const approver =
            params.approverPublicId === undefined
              ? undefined
              : yield* accounts.findUserByPublicId(params.approverPublicId)
          yield* devices.setDeviceState(
            step.actorId,
            params.state,
            approver === undefined
              ? undefined
              : { approvedBy: approver.id, assignmentScope: params.assignmentScope ?? null }
          )
        }),
      [deviceAuthorizationEffects.recordPoll]: (params, step) =>
        Effect.gen(function* () {
          const devices = yield* Devices.DeviceAuthorizationsRepository.make
          const polledAt = params.polledAt === undefined ? undefined : new Date(params.polledAt)
          yield* devices.recordPoll(step.actorId, polledAt, params.intervalSeconds)
          return { slowDown: params.slowDown, intervalSeconds: params.intervalSeconds }
        }),
      [deviceAuthorizationEffects.connect]: (_params, step) =>
        Effect.gen(function* () {
          const devices = yield* Devices.DeviceAuthorizationsRepository.make
          const device = yield* devices.findByPublicId(step.actorId)
          if (!device) return yield* Effect.die(new Error(`no device authorization row for ${step.actorId}`))
          return yield* connect(device)
        })
    },
    jobs: {}
  })
