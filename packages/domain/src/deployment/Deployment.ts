// Deployment administration's rules over the updater (supplement "Deployment administration"):
// without a configured updater the deployment reads as unsupported, checks and upgrades are
// updater_unavailable, and no upgrade id names anything (not_found). Who may ask is the
// caller's gate to keep (owner or admin); this service trusts it was kept.
import { Context, Effect, Layer } from "effect"
import { Absent } from "../kernel/Refusals.ts"
import { type Described, type LogWindow, logWindowBytes, type Receipt, type UpgradeCandidate } from "./Protocol.ts"
import { Updater } from "./Updater.ts"
import type { UpdaterRefused, UpdaterUnavailable } from "./UpdaterErrors.ts"

/** The Deployment resource (spec "Deployment"). */
export type DeploymentView = Described & { readonly supported: boolean }

const unsupported: DeploymentView = {
  supported: false,
  sources: [],
  installed: null,
  candidate: null,
  preflight: null,
  active_operation: null,
  last_operation: null
}

export interface UpgradeRequest {
  readonly idempotencyKey: string
  /** The human asking; null when the CLI asks the updater directly. */
  readonly actorPublicId: string | null
  readonly backup: boolean | undefined
  readonly candidate: UpgradeCandidate
}

type Failure = UpdaterUnavailable | UpdaterRefused

const absent = () => new Absent({ code: "not_found", message: "No such upgrade" })

export class Deployment extends Context.Service<
  Deployment,
  {
    readonly view: Effect.Effect<DeploymentView, Failure>
    readonly check: (tag: string, backup: boolean) => Effect.Effect<DeploymentView, Failure>
    readonly upgrade: (request: UpgradeRequest) => Effect.Effect<Receipt, Failure>
    readonly operation: (id: string) => Effect.Effect<Receipt, Failure | Absent>
    /** The log after `cursor` (from the start when null), at most one 64 KiB window. */
    readonly log: (id: string, cursor: string | null) => Effect.Effect<LogWindow, Failure | Absent>
  }
>()("@troupe/domain/deployment/Deployment") {
  static readonly layer = Layer.effect(
    Deployment,
    Effect.gen(function* () {
      const updater = yield* Updater
      const supported = (described: Described): DeploymentView => ({ supported: true, ...described })
      /** An upgrade id read: none exists without an updater. */
      const named = <A, E>(effect: Effect.Effect<A, E>) => (updater.configured ? effect : Effect.fail(absent()))
      return Deployment.of({
        view: updater.configured ? Effect.map(updater.call("describe", {}), supported) : Effect.succeed(unsupported),
        check: (tag, backup) => Effect.map(updater.call("check", { tag, backup }), supported),
        upgrade: (request) =>
          updater
            .call("upgrade", {
              idempotency_key: request.idempotencyKey,
              actor_public_id: request.actorPublicId,
              ...(request.backup === undefined ? {} : { backup: request.backup }),
              candidate: request.candidate
            })
            .pipe(Effect.map(({ operation }) => operation)),
        operation: (id) => named(updater.call("operation", { id }).pipe(Effect.map(({ operation }) => operation))),
        log: (id, cursor) => named(updater.call("log", { id, cursor, max_bytes: logWindowBytes }))
      })
    })
  )
}
