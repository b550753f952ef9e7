// `troupe updater --fake --socket PATH [--fail-at PHASE]`, the reference updater (a stand-in for
// an installation's real one), and `troupe deployment status|check|upgrade`, which drive the
// running server's deployment administration as an owner or admin (TROUPE_URL, TROUPE_TOKEN), or
// with `--socket PATH` the updater itself, as the host's operator (Local.ts).
import { resolve } from "node:path"
import { type Deployment, isReleaseTag, type UpgradeReceipt } from "@troupe/contracts/platform/Deployment"
import { phases } from "@troupe/domain/deployment/Protocol"
import { Console, Duration, Effect, Option } from "effect"
import { Command, Flag } from "effect/cli"
import { FetchHttpClient } from "effect/http"
import { uuidv7 } from "uuidv7"
import { call, OperatorError, operatorError } from "../operators.ts"
import { localDeployment } from "./Local.ts"
import { followUpgrade } from "./Progress.ts"
import { offeredRelease, walkedPhases } from "./ReferenceUpdater.ts"
import { serveReferenceUpdater } from "./UpdaterSocket.ts"

export const updater = Command.make(
  "updater",
  {
    fake: Flag.Boolean("fake").pipe(
      Flag.withDescription("Run the reference updater (the only one built in)"),
      Flag.withDefault(false)
    ),
    socket: Flag.String("socket").pipe(Flag.withDescription("The Unix socket to serve (SERVICE_DEPLOYMENT_SOCKET)")),
    failAt: Flag.Literals("fail-at", walkedPhases).pipe(
      Flag.withDescription("Fail every upgrade at this phase"),
      Flag.optional
    ),
    phaseMs: Flag.Int("phase-ms").pipe(Flag.withDescription("Time spent in each phase (default 200)"), Flag.optional)
  },
  ({ fake, socket, failAt, phaseMs }) =>
    Effect.gen(function* () {
      if (!fake) return yield* Effect.fail(new OperatorError("Only the reference updater is built in: pass --fake"))
      const path = resolve(socket)
      yield* serveReferenceUpdater(path, {
        failAt: Option.getOrUndefined(failAt),
        phaseSpacing: Option.getOrUndefined(Option.map(phaseMs, Duration.millis))
      })
      yield* Console.log(
        `Reference updater (a stand-in: nothing is installed) listening on ${path}; offers release ${offeredRelease}`
      )
      return yield* Effect.never
    }).pipe(Effect.scoped)
).pipe(Command.withDescription("Serve the reference updater on a Unix socket, for SERVICE_DEPLOYMENT_SOCKET"))

const releaseOf = (release: { readonly release: string } | null) => release?.release ?? "unknown"

const receiptLine = (receipt: UpgradeReceipt) =>
  `upgrade ${receipt.id}: ${releaseOf(receipt.previous ?? null)} -> ${receipt.target.release}, ${receipt.phase} (${receipt.status})${
    receipt.error ? ` ${receipt.error.code}: ${receipt.error.message}` : ""
  }`

const describeDeployment = (deployment: Deployment) =>
  deployment.supported
    ? [
        `installed: ${releaseOf(deployment.installed)}`,
        `candidate: ${deployment.candidate ? `${deployment.candidate.release} (checked ${deployment.candidate.checked_at})` : "none checked"}`,
        ...(deployment.preflight
          ? [
              `preflight: ${deployment.preflight.ready ? "ready" : "blocked"}, backup ${deployment.preflight.backup}`,
              ...deployment.preflight.checks.map((check) => `  ${check.status}  ${check.name}: ${check.message}`)
            ]
          : []),
        `active: ${deployment.active_operation ? receiptLine(deployment.active_operation) : "none"}`,
        `last: ${deployment.last_operation ? receiptLine(deployment.last_operation) : "none"}`
      ].join("\n")
    : "Deployment administration is not supported here (SERVICE_DEPLOYMENT_SOCKET is unset)."

const checkFlags = {
  tag: Flag.String("tag").pipe(Flag.withDescription("latest, or a release tag yyMMddHHmm"), Flag.withDefault("latest")),
  noBackup: Flag.Boolean("no-backup").pipe(
    Flag.withDescription("Upgrade without a database backup"),
    Flag.withDefault(false)
  )
}

const socketFlag = {
  socket: Flag.String("socket").pipe(
    Flag.withDescription(
      "Ask the updater on this Unix socket directly, as the host's operator (no server, no token; the receipt's actor is null)"
    ),
    Flag.optional
  )
}

/** The running server's deployment administration, as TROUPE_TOKEN's owner or admin. */
const serverDeployment = {
  describe: Effect.map(
    call((client) => client.deployment.show()),
    ({ deployment }) => deployment
  ),
  check: (tag: string, backup: boolean) =>
    Effect.map(
      call((client) => client.deployment.releaseCheck({ payload: { release_check: { tag, backup } } })),
      ({ deployment }) => deployment
    ),
  upgrade: (idempotencyKey: string, backup: boolean, candidate: NonNullable<Deployment["candidate"]>) =>
    Effect.map(
      call((client) =>
        client.deployment.upgrade({ headers: { "idempotency-key": idempotencyKey }, payload: { backup, candidate } })
      ),
      (accepted) => accepted.body.upgrade
    ),
  follow: (id: string) =>
    followUpgrade(id, process.env.TROUPE_TOKEN ?? "").pipe(
      Effect.provide(FetchHttpClient.layer),
      Effect.mapError(operatorError)
    )
}

const deploymentAt = (socket: Option.Option<string>) =>
  Option.match(socket, { onNone: () => serverDeployment, onSome: (path) => localDeployment(resolve(path)) })

const releaseCheck = (socket: Option.Option<string>, tag: string, noBackup: boolean) =>
  tag === "latest" || isReleaseTag(tag)
    ? deploymentAt(socket).check(tag, !noBackup)
    : Effect.fail(
        new OperatorError(`--tag must be latest or a release tag yyMMddHHmm naming a real minute, not ${tag}`)
      )

const status = Command.make("status", socketFlag, ({ socket }) =>
  Effect.gen(function* () {
    yield* Console.log(describeDeployment(yield* deploymentAt(socket).describe))
  })
).pipe(Command.withDescription("Show the installed release, the checked candidate and the upgrades"))

const check = Command.make("check", { ...checkFlags, ...socketFlag }, ({ tag, noBackup, socket }) =>
  Effect.gen(function* () {
    yield* Console.log(describeDeployment(yield* releaseCheck(socket, tag, noBackup)))
  })
).pipe(Command.withDescription("Check a release (default latest) and show the preflight"))

const upgrade = Command.make("upgrade", { ...checkFlags, ...socketFlag }, ({ tag, noBackup, socket }) =>
  Effect.gen(function* () {
    const deployment = yield* releaseCheck(socket, tag, noBackup)
    if (deployment.candidate === null || deployment.preflight?.ready !== true) {
      yield* Console.log(describeDeployment(deployment))
      return yield* Effect.fail(new OperatorError("The preflight is not ready; nothing was upgraded"))
    }
    const candidate = deployment.candidate
    const receipt = yield* deploymentAt(socket).upgrade(uuidv7(), !noBackup, candidate)
    yield* Console.log(`Upgrading ${releaseOf(deployment.installed)} -> ${candidate.release} (upgrade ${receipt.id})`)
    const done = yield* deploymentAt(socket).follow(receipt.id)
    yield* Console.log(receiptLine(done))
    if (done.status !== "succeeded") return yield* Effect.fail(new OperatorError(`The upgrade ended ${done.status}`))
  })
).pipe(Command.withDescription("Check a release, then upgrade to it and follow its phases"))

export const deployment = Command.make("deployment").pipe(
  Command.withSubcommands([status, check, upgrade]),
  Command.withDescription(
    `Deployment administration (TROUPE_URL, TROUPE_TOKEN, or --socket); phases: ${phases.join(", ")}`
  )
)
