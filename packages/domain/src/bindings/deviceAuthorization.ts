// The device authorization binding: its steps mirror their state on the device row (with the
// approval), and the consuming step makes the connection, answering the credentials once.
import type { Binding } from "@troupe/actors/Binding"
import { deviceAuthorizationEffects } from "@troupe/machines/deviceAuthorization/effects"
import { machines } from "@troupe/machines/registry"
import * as Accounts from "@troupe/storage/repositories/Accounts"
import * as Devices from "@troupe/storage/repositories/DeviceAuthorizations"
import { Effect } from "effect"
import { consumeConnection, deviceGrant } from "../Connections.ts"

interface RecordState {
  readonly state: Devices.DeviceState
  readonly approverPublicId?: string
  readonly assignmentScope?: Devices.DeviceAuthorizationRow["assignment_scope"]
}

export const deviceAuthorizationBinding: Binding = {
  kind: "deviceAuthorization",
  entry: machines.deviceAuthorization,
  resourceType: "device_authorization",
  stream: (actorId) => `device_authorization:${actorId}`,
  rows: {
    [deviceAuthorizationEffects.recordState]: (params: RecordState, step) =>
      Effect.gen(function* () {
        const approver =
          params.approverPublicId === undefined
            ? undefined
            : yield* Accounts.findUserByPublicId(params.approverPublicId)
        yield* Devices.setDeviceState(
          step.actorId,
          params.state,
          approver === undefined
            ? undefined
            : { approvedBy: approver.id, assignmentScope: params.assignmentScope ?? null }
        )
      }),
    [deviceAuthorizationEffects.consume]: (_params, step) =>
      Effect.gen(function* () {
        const device = yield* Devices.findByPublicId(step.actorId)
        if (!device) return yield* Effect.die(new Error(`no device authorization row for ${step.actorId}`))
        return yield* consumeConnection(deviceGrant(device))
      })
  },
  jobs: {}
}
