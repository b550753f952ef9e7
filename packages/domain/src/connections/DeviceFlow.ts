// The device flow (RFC 8628 as the spec shapes it): a client starts a device authorization, a
// human approves or denies it in the browser by its user code, the client polls until the
// winning poll consumes it (credentials issued once), or cancels. The device authorization is
// an actor; this service turns codes into its events (with their instant: the machine judges
// expiry and poll pacing) and its outcomes into poll answers.
import { randomBytes } from "node:crypto"
import { ActorHost } from "@troupe/actors/ActorHost"
import {
  deviceAuthorizationEffects,
  deviceLifeMillis,
  pollIntervalSeconds
} from "@troupe/machines/deviceAuthorization/effects"
import { newPublicId } from "@troupe/storage/Ids"
import { AccountsRepository, type UserRow } from "@troupe/storage/repositories/Accounts"
import { AgentsRepository } from "@troupe/storage/repositories/Agents"
import * as Devices from "@troupe/storage/repositories/DeviceAuthorizations"
import { type AssignmentScope, ExecutorsRepository } from "@troupe/storage/repositories/Executors"
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { deviceCodeFormat, mintToken, parseToken, secretMatches } from "../accounts/OpaqueTokens.ts"
import { NotInitialized } from "../kernel/Errors.ts"
import { now } from "../kernel/Now.ts"
import { type ConnectionIssued, deviceAuthorizationActor } from "./Connections.ts"
import { type DeviceRequest, newUserCode, normalizeUserCode } from "./DeviceRequest.ts"

export type PollAnswer =
  | { readonly _tag: "Pending" }
  | { readonly _tag: "SlowDown"; readonly interval: number }
  | { readonly _tag: "Denied" }
  | { readonly _tag: "Expired" }
  | { readonly _tag: "InvalidGrant" }
  | { readonly _tag: "Issued"; readonly issued: ConnectionIssued; readonly branch: DeviceRequest["branch"] }

export type { AssignmentScope }

/** What the approval page shows before the human decides. */
export interface PendingConnection {
  readonly device: Devices.DeviceAuthorizationRow
  readonly request: DeviceRequest
  /** For a fresh standalone machine the human chooses user_private or account_wide. */
  readonly chooseScope: boolean
}

export class UnknownUserCode extends Schema.TaggedError<UnknownUserCode>()("UnknownUserCode", {}) {}

/**
 * The code was already decided by this same human, within its lifetime: approved (the program's
 * next poll picks up its credentials), connected (the program has them) or denied. Anyone else
 * gets UnknownUserCode, as for a code that does not exist.
 */
export class AlreadyDecided extends Schema.TaggedError<AlreadyDecided>()("AlreadyDecided", {
  decision: Schema.Literals(["approved", "connected", "denied"])
}) {}

/** The human may not authorize this connection (another human stewards the agent, ...). */
export class ApprovalRefused extends Schema.TaggedError<ApprovalRefused>()("ApprovalRefused", {
  reason: Schema.String
}) {}

export class DeviceFlow extends Context.Service<
  DeviceFlow,
  {
    readonly start: (
      request: DeviceRequest
    ) => Effect.Effect<
      { readonly deviceCode: string; readonly userCode: string; readonly expiresIn: number; readonly interval: number },
      NotInitialized
    >
    readonly poll: (deviceCode: string, clientId: string) => Effect.Effect<PollAnswer>
    /** Which side won: canceled (stop and forget) or consumed (keep polling, adopt credentials). */
    readonly cancel: (deviceCode: string, clientId: string) => Effect.Effect<"canceled" | "consumed">
    readonly pending: (
      userCode: string,
      human: UserRow
    ) => Effect.Effect<PendingConnection, UnknownUserCode | AlreadyDecided | ApprovalRefused>
    readonly approve: (
      userCode: string,
      human: UserRow,
      assignmentScope: AssignmentScope | undefined
    ) => Effect.Effect<void, UnknownUserCode | AlreadyDecided | ApprovalRefused>
    readonly deny: (userCode: string, human: UserRow) => Effect.Effect<void, UnknownUserCode | AlreadyDecided>
  }
>()("@troupe/domain/connections/DeviceFlow") {
  static readonly layer = Layer.effect(
    DeviceFlow,
    Effect.gen(function* () {
      const sql = yield* SqlClient
      const accounts = yield* AccountsRepository
      const agents = yield* AgentsRepository
      const rows = yield* Devices.DeviceAuthorizationsRepository
      const executors = yield* ExecutorsRepository
      const devices = (yield* ActorHost).ref(deviceAuthorizationActor)

      const start = (request: DeviceRequest) =>
        Effect.gen(function* () {
          if (!(yield* accounts.currentAccount)) return yield* new NotInitialized()
          const at = yield* now
          const code = mintToken(deviceCodeFormat)
          for (;;) {
            const userCode = newUserCode((n) => randomBytes(n))
            const publicId = newPublicId()
            const inserted = yield* Effect.gen(function* () {
              const row = yield* rows.insertDeviceAuthorization({
                publicId,
                clientId: request.clientId,
                branch: request.branch,
                request,
                deviceLookup: code.lookup,
                deviceSalt: code.salt,
                deviceDigest: code.digest,
                userCode,
                now: at,
                expiresAt: new Date(at.getTime() + deviceLifeMillis)
              })
              if (row)
                yield* devices
                  .create(publicId, {
                    branch: request.branch,
                    clientId: request.clientId,
                    expiresAt: row.expires_at.getTime()
                  })
                  .pipe(Effect.orDie)
              return row
            }).pipe(sql.withTransaction)
            if (inserted) {
              return {
                deviceCode: code.token,
                userCode,
                expiresIn: deviceLifeMillis / 1000,
                interval: pollIntervalSeconds
              }
            }
          }
        }).pipe(Effect.catchTag("SqlError", Effect.die))

      const findDevice = (deviceCode: string, clientId: string) =>
        Effect.gen(function* () {
          const parsed = parseToken(deviceCodeFormat, deviceCode)
          if (!parsed) return undefined
          const device = yield* rows.findByDeviceLookup(parsed.lookup)
          if (!device || device.client_id !== clientId) return undefined
          return secretMatches(parsed.secret, device.device_salt, device.device_digest) ? device : undefined
        })

      const answerFor = (state: Devices.DeviceState): PollAnswer =>
        state === "consumed"
          ? { _tag: "InvalidGrant" }
          : state === "expired"
            ? { _tag: "Expired" }
            : state === "pending" || state === "approved"
              ? { _tag: "Pending" }
              : { _tag: "Denied" }

      const poll = (deviceCode: string, clientId: string) =>
        Effect.gen(function* () {
          const device = yield* findDevice(deviceCode, clientId)
          if (!device) return { _tag: "InvalidGrant" } as PollAnswer
          if (device.state !== "pending" && device.state !== "approved") return answerFor(device.state)
          // The poll is a step: the machine judges expiry (by the poll's instant), approval and pacing.
          const at = yield* now
          const outcome = yield* devices.send(device.public_id, { type: "device.consume", at: at.getTime() })
          if (outcome._tag === "Vetoed") {
            // The veto rolled the consuming step back; the refusal is the next step (a lost one
            // is made again by the next poll, which is vetoed the same way).
            yield* devices.send(device.public_id, {
              type: "device.invalidate",
              reason: outcome.reason
            })
            return { _tag: "Denied" } as PollAnswer
          }
          if (outcome._tag === "Rejected") return answerFor(outcome.state as Devices.DeviceState)
          if (outcome.state === "expired") return { _tag: "Expired" } as PollAnswer
          if (outcome.state === "consumed") {
            const issued = outcome.replies[deviceAuthorizationEffects.connect]
            if (!issued) return yield* Effect.die(new Error("the consuming step made no connection"))
            return { _tag: "Issued", issued, branch: device.branch } as PollAnswer
          }
          const pace = outcome.replies[deviceAuthorizationEffects.recordPoll]
          return (
            pace?.slowDown ? { _tag: "SlowDown", interval: pace.intervalSeconds } : { _tag: "Pending" }
          ) as PollAnswer
        }).pipe(Effect.orDie)

      const cancel = (deviceCode: string, clientId: string) =>
        Effect.gen(function* () {
          const device = yield* findDevice(deviceCode, clientId)
          if (!device) return "canceled" as const
          const outcome = yield* devices.send(device.public_id, { type: "device.cancel" })
          return outcome._tag === "Rejected" && outcome.state === "consumed"
            ? ("consumed" as const)
            : ("canceled" as const)
        }).pipe(Effect.orDie)

      /** Who may approve: the existing steward of the agent, and of an assignment agent. */
      const judge = (device: Devices.DeviceAuthorizationRow, human: UserRow) =>
        Effect.gen(function* () {
          const request = device.request as unknown as DeviceRequest
          const account = yield* accounts.currentAccount
          if (!account) return yield* new ApprovalRefused({ reason: "The installation is not set up" })
          if (request.branch === "agent" || request.branch === "combined") {
            const agent = yield* agents.findAgentByIdentifier(account.id, request.agentIdentifier)
            if (agent && agent.steward_id !== human.id) {
              return yield* new ApprovalRefused({
                reason: "Another person stewards this agent; only they can connect it"
              })
            }
          }
          if (request.branch === "machine" && request.assignmentAgentPublicId !== undefined) {
            const agent = yield* agents.findAgentByPublicId(request.assignmentAgentPublicId)
            if (
              !agent ||
              agent.account_id !== account.id ||
              agent.status !== "active" ||
              agent.steward_id !== human.id
            ) {
              return yield* new ApprovalRefused({ reason: "The runner's agent is not an active agent you steward" })
            }
          }
          const fresh =
            request.branch === "machine" &&
            request.assignmentAgentPublicId === undefined &&
            !(yield* executors.findLiveRegistration(account.id, human.id, request.registrationIdentifier))
          return { device, request, chooseScope: fresh } satisfies PendingConnection
        })

      /** The pending authorization; one this human already decided says so; else the code is unknown. */
      const pendingByCode = (userCode: string, human: UserRow) =>
        Effect.gen(function* () {
          const code = normalizeUserCode(userCode)
          if (code === undefined) return yield* new UnknownUserCode()
          const device = yield* rows.findLiveByUserCode(code)
          const at = yield* now
          if (device?.state === "pending" && at.getTime() < device.expires_at.getTime()) return device
          const decided = yield* rows.findDecidedByUserCode(code, human.id)
          if (decided !== undefined && at.getTime() < decided.expires_at.getTime()) {
            return yield* new AlreadyDecided({
              decision: decided.state === "denied" ? "denied" : decided.state === "consumed" ? "connected" : "approved"
            })
          }
          return yield* new UnknownUserCode()
        })

      const pending = (userCode: string, human: UserRow) =>
        Effect.flatMap(pendingByCode(userCode, human), (device) => judge(device, human)).pipe(
          Effect.catchTag("SqlError", Effect.die)
        )

      const approve = (userCode: string, human: UserRow, assignmentScope: AssignmentScope | undefined) =>
        Effect.gen(function* () {
          const judged = yield* judge(yield* pendingByCode(userCode, human), human)
          const request = judged.request
          let scope: AssignmentScope
          if (judged.chooseScope) {
            if (assignmentScope !== "user_private" && assignmentScope !== "account_wide") {
              return yield* new ApprovalRefused({ reason: "Choose who may use this machine" })
            }
            scope = assignmentScope
          } else if (request.branch === "machine") {
            const account = (yield* accounts.currentAccount)!
            const live = yield* executors.findLiveRegistration(account.id, human.id, request.registrationIdentifier)
            scope =
              request.assignmentAgentPublicId !== undefined
                ? "agent_private"
                : (live?.assignment_scope ?? "user_private")
          } else {
            scope = "agent_private"
          }
          const outcome = yield* devices
            .send(judged.device.public_id, {
              type: "device.approve",
              approverPublicId: human.public_id,
              assignmentScope: scope,
              at: (yield* now).getTime()
            })
            .pipe(Effect.orDie)
          if (outcome._tag !== "Accepted" || outcome.state !== "approved") return yield* new UnknownUserCode()
        }).pipe(Effect.catchTag("SqlError", Effect.die))

      const deny = (userCode: string, human: UserRow) =>
        Effect.gen(function* () {
          const device = yield* pendingByCode(userCode, human)
          const outcome = yield* devices
            .send(device.public_id, {
              type: "device.deny",
              approverPublicId: human.public_id,
              at: (yield* now).getTime()
            })
            .pipe(Effect.orDie)
          if (outcome._tag !== "Accepted" || outcome.state !== "denied") return yield* new UnknownUserCode()
        }).pipe(Effect.catchTag("SqlError", Effect.die))

      return DeviceFlow.of({ start, poll, cancel, pending, approve, deny })
    })
  )
}
