// The reference updater: a documented stand-in for an installation's real one (README,
// "Deployment administration"), answering the updater protocol's ops from memory. It offers one
// release, 2601010000, whose preflight is ready with one passed check; an upgrade walks the
// spec's phases one per 200 ms with one log entry each and ends succeeded, or failed at the
// phase given (after which upgrades answer recovery_required). It keeps the latest 20 receipts,
// honours each Idempotency-Key, and refuses a second upgrade while one runs. Nothing is installed.
import {
  type ArgsOf,
  type Candidate,
  type Described,
  type LogWindow,
  type Op,
  operations,
  type Phase,
  type Preflight,
  phases,
  type Receipt,
  type RefusalCode,
  type Release,
  type ResultOf
} from "@troupe/domain/deployment/Protocol"
import { Clock, Data, Duration, Effect, Schema } from "effect"
import { uuidv7 } from "uuidv7"

export const offeredRelease = "2601010000"
export const phaseSpacing = Duration.millis(200)
const keptReceipts = 20
const logRetentionBytes = 1024 * 1024

/** The phases an upgrade walks after acceptance. */
export const walkedPhases = phases.filter((phase) => phase !== "accepted")

export class UpdaterRefusal extends Data.TaggedError("UpdaterRefusal")<{
  readonly code: RefusalCode
  readonly message: string
}> {}

const refuse = (code: RefusalCode, message: string) => Effect.fail(new UpdaterRefusal({ code, message }))

const imagesOf = (release: string) => [{ name: "troupe", reference: `ghcr.io/example/troupe:${release}` }]
const installedAtStart: Release = { release: "2512150000", images: imagesOf("2512150000") }

interface Entry {
  readonly cursor: string
  readonly text: string
}

export interface ReferenceUpdaterOptions {
  /** The phase at which every upgrade fails; undefined: upgrades succeed. */
  readonly failAt?: Phase | undefined
  /** Time spent in each phase; default 200 ms. */
  readonly phaseSpacing?: Duration.Duration | undefined
}

const sameRelease = (a: { release: string; images: ReadonlyArray<{ name: string; reference: string }> }, b: Release) =>
  a.release === b.release && JSON.stringify(a.images) === JSON.stringify(b.images)

/**
 * The updater's state and ops: `answer` runs one op. An accepted upgrade's walk through its
 * phases is handed to `fork`, which runs it in a scope that outlives the request.
 */
export const makeReferenceUpdater = (options: ReferenceUpdaterOptions, fork: (walk: Effect.Effect<void>) => void) => {
  let installed = installedAtStart
  let candidate: Candidate | null = null
  let preflight: Preflight | null = null
  let receipts: Array<Receipt> = []
  const logs = new Map<string, Array<Entry>>()
  const byKey = new Map<string, string>()
  const now = Effect.map(Clock.currentTimeMillis, (millis) => new Date(millis).toISOString())

  const find = (id: string) => receipts.find((receipt) => receipt.id === id)
  const active = () => receipts.find((receipt) => receipt.status === "running") ?? null
  const replace = (next: Receipt) => {
    receipts = receipts.map((receipt) => (receipt.id === next.id ? next : receipt))
  }
  const keep = (receipt: Receipt) => {
    receipts = [...receipts, receipt]
    while (receipts.length > keptReceipts) {
      const dropped = receipts.shift()!
      logs.delete(dropped.id)
      byKey.delete(dropped.idempotency_key)
    }
  }
  const append = (id: string, text: string) => {
    const entries = logs.get(id) ?? []
    const cursor = String(Number(entries.at(-1)?.cursor ?? "0") + 1)
    entries.push({ cursor, text })
    while (entries.reduce((bytes, entry) => bytes + Buffer.byteLength(entry.text), 0) > logRetentionBytes) {
      entries.shift()
    }
    logs.set(id, entries)
    return cursor
  }
  const described = (): Described => ({
    sources: [{ name: "troupe", reference: "ghcr.io/example/troupe" }],
    installed,
    candidate,
    preflight,
    active_operation: active(),
    last_operation: receipts.at(-1) ?? null
  })

  const check = ({ tag, backup }: ArgsOf<"check">) =>
    Effect.gen(function* () {
      if (tag !== "latest" && tag !== offeredRelease) {
        return yield* refuse("release_unavailable", `Release ${tag} is not offered (only ${offeredRelease})`)
      }
      const checkedAt = yield* now
      candidate = { release: offeredRelease, images: imagesOf(offeredRelease), checked_at: checkedAt }
      preflight = {
        checked_at: checkedAt,
        ready: true,
        backup,
        checks: [{ name: "disk_space", status: "passed", message: "Enough free space for the images and a backup" }]
      }
      return described()
    })

  const upgrade = (args: ArgsOf<"upgrade">) =>
    Effect.gen(function* () {
      const replayed = byKey.get(args.idempotency_key)
      if (replayed !== undefined) {
        const receipt = find(replayed)!
        const same = sameRelease(args.candidate, receipt.target) && (args.backup ?? receipt.backup) === receipt.backup
        if (!same) return yield* refuse("idempotency_conflict", "This Idempotency-Key named another upgrade")
        return { operation: receipt }
      }
      if (active() !== null) return yield* refuse("upgrade_in_progress", "An upgrade is running")
      const last = receipts.at(-1)
      if (last?.status === "failed") {
        return yield* refuse("recovery_required", `Upgrade ${last.id} failed; recover the installation first`)
      }
      if (candidate === null || preflight === null) return yield* refuse("preflight_failed", "Check a release first")
      if (!preflight.ready) return yield* refuse("preflight_failed", "The last preflight is not ready")
      if (!sameRelease(args.candidate, candidate)) {
        return yield* refuse("candidate_changed", "The candidate is not the one last checked; check again")
      }
      if (args.backup !== undefined && args.backup !== preflight.backup) {
        return yield* refuse("preflight_failed", "backup must match the checked preflight's backup choice")
      }
      const acceptedAt = yield* now
      const receipt: Receipt = {
        id: uuidv7(),
        idempotency_key: args.idempotency_key,
        actor_public_id: args.actor_public_id,
        target: { release: candidate.release, images: candidate.images },
        previous: installed,
        phase: "accepted",
        status: "running",
        accepted_at: acceptedAt,
        updated_at: acceptedAt,
        backup: preflight.backup,
        database_backup: null
      }
      keep(receipt)
      byKey.set(args.idempotency_key, receipt.id)
      fork(walk(receipt.id))
      return { operation: receipt }
    })

  /** Moves an accepted upgrade through its phases, one per 200 ms, one log entry each. */
  const walk = (id: string) =>
    Effect.gen(function* () {
      for (const phase of walkedPhases) {
        yield* Effect.sleep(options.phaseSpacing ?? phaseSpacing)
        const receipt = find(id)
        if (receipt === undefined) return
        const at = yield* now
        if (phase === options.failAt) {
          const cursor = append(id, `${phase}: failed (the reference updater was told to fail here)`)
          replace({
            ...receipt,
            phase,
            status: "failed",
            updated_at: at,
            completed_at: at,
            error: { code: `${phase}_failed`, message: `The upgrade failed while ${phase}` },
            recovery: "Restore the previous release's images and database backup, then check again",
            log_cursor: cursor
          })
          return
        }
        const cursor = append(id, `${phase}: done`)
        const done = phase === "completed"
        replace({
          ...receipt,
          phase,
          status: done ? "succeeded" : "running",
          updated_at: at,
          ...(done ? { completed_at: at } : {}),
          ...(phase === "backing_up" && receipt.backup
            ? { database_backup: { created_at: at, size_bytes: 1048576, available: true } }
            : {}),
          log_cursor: cursor
        })
        if (done) installed = receipt.target
      }
    })

  const log = ({ id, cursor, max_bytes }: ArgsOf<"log">) =>
    Effect.gen(function* () {
      const receipt = find(id)
      if (receipt === undefined) return yield* refuse("not_found", "No such upgrade")
      if (cursor !== null && !/^(0|[1-9]\d{0,8})$/.test(cursor)) return yield* refuse("invalid_request", "Bad cursor")
      const after = Number(cursor ?? "0")
      const entries: Array<Entry> = []
      let bytes = 0
      for (const entry of logs.get(id) ?? []) {
        if (Number(entry.cursor) <= after) continue
        bytes += Buffer.byteLength(entry.text)
        if (bytes > max_bytes) break
        entries.push(entry)
      }
      return { entries, next_cursor: entries.at(-1)?.cursor ?? String(after), operation: receipt } satisfies LogWindow
    })

  const answer = <O extends Op>(op: O, args: unknown): Effect.Effect<ResultOf<O>, UpdaterRefusal> =>
    Effect.gen(function* () {
      const decoded = yield* Schema.decodeUnknownEffect(operations[op].args as Schema.Codec<unknown>)(args).pipe(
        Effect.mapError(() => new UpdaterRefusal({ code: "invalid_request", message: `Bad arguments for ${op}` }))
      )
      switch (op) {
        case "describe":
          return described() as ResultOf<O>
        case "check":
          return (yield* check(decoded as ArgsOf<"check">)) as ResultOf<O>
        case "upgrade":
          return (yield* upgrade(decoded as ArgsOf<"upgrade">)) as ResultOf<O>
        case "operation": {
          const receipt = find((decoded as ArgsOf<"operation">).id)
          if (receipt === undefined) return yield* refuse("not_found", "No such upgrade")
          return { operation: receipt } as ResultOf<O>
        }
        default:
          return (yield* log(decoded as ArgsOf<"log">)) as ResultOf<O>
      }
    })

  return { answer }
}

export type ReferenceUpdater = ReturnType<typeof makeReferenceUpdater>
