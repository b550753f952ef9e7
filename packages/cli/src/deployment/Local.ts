// `troupe deployment … --socket PATH`: the installation's own command line, asking the updater
// directly over its private socket as the host's operator, so an upgrade's actor_public_id is null
// (spec "Deployment"). Progress is the updater's log, read once a second until the receipt is terminal.
import type { Deployment } from "@troupe/contracts/platform/Deployment"
import { type LogWindow, logWindowBytes, type UpgradeCandidate } from "@troupe/domain/deployment/Protocol"
import { makeUpdater } from "@troupe/domain/deployment/Updater"
import type { UpdaterFailure } from "@troupe/domain/deployment/UpdaterErrors"
import { Console, Duration, Effect } from "effect"
import { OperatorError } from "../operators.ts"

/** The updater's failure as one line: its code and message. */
const failureLine = (failure: UpdaterFailure) =>
  new OperatorError(
    `${failure._tag === "UpdaterUnavailable" ? "updater_unavailable" : failure.code}: ${failure.message}`
  )

/** What `troupe deployment` asks, answered by the updater on `socket`. */
export const localDeployment = (socket: string) => {
  const updater = makeUpdater(socket)
  const ask = <A>(effect: Effect.Effect<A, UpdaterFailure>) => Effect.mapError(effect, failureLine)
  const deployment = <A extends Omit<Deployment, "supported">>(effect: Effect.Effect<A, UpdaterFailure>) =>
    ask(Effect.map(effect, (described): Deployment => ({ supported: true, ...described })))
  return {
    describe: deployment(updater.call("describe", {})),
    check: (tag: string, backup: boolean) => deployment(updater.call("check", { tag, backup })),
    upgrade: (idempotencyKey: string, backup: boolean, candidate: UpgradeCandidate) =>
      ask(
        updater
          .call("upgrade", { idempotency_key: idempotencyKey, actor_public_id: null, backup, candidate })
          .pipe(Effect.map(({ operation }) => operation))
      ),
    /** Prints each new log entry until the receipt is terminal; answers that receipt. */
    follow: (id: string) =>
      Effect.gen(function* () {
        let cursor: string | null = null
        while (true) {
          const window: LogWindow = yield* ask(updater.call("log", { id, cursor, max_bytes: logWindowBytes }))
          for (const entry of window.entries) yield* Console.log(`  ${entry.text}`)
          cursor = window.next_cursor
          if (window.operation.status !== "running" && window.entries.length === 0) return window.operation
          if (window.operation.status === "running") yield* Effect.sleep(Duration.seconds(1))
        }
      })
  }
}
