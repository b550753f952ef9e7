// The storage contract: the same suite against PostgreSQL (LISTEN/NOTIFY bus) and the embedded
// database (in-process bus). Migrations, ids, transactions, the repositories and the event bus
// must behave the same on both.
import { readdirSync } from "node:fs"
import { assert, layer } from "@effect/vitest"
import { migratedDatabase } from "@troupe/server/Server"
import type { DatabaseConfig } from "@troupe/storage/Database"
import { EventBus } from "@troupe/storage/EventBus"
import { isUuid, newPublicId } from "@troupe/storage/Ids"
import { migrate } from "@troupe/storage/Migrations"
import { NodeLifetime } from "@troupe/storage/NodeLifetime"
import { repositoriesLayer } from "@troupe/storage/Repositories"
import { AccountsRepository, type UserRole } from "@troupe/storage/repositories/Accounts"
import * as Messages from "@troupe/storage/repositories/ActorMessages"
import * as Actors from "@troupe/storage/repositories/Actors"
import { IdempotencyReceiptsRepository } from "@troupe/storage/repositories/IdempotencyReceipts"
import { InstallationSecretsRepository } from "@troupe/storage/repositories/InstallationSecrets"
import { RateLimitWindowsRepository } from "@troupe/storage/repositories/RateLimitWindows"
import { RowDecodeError } from "@troupe/storage/repositories/Rows"
import { SessionsRepository } from "@troupe/storage/repositories/Sessions"
import { StoreEntriesRepository } from "@troupe/storage/repositories/StoreEntries"
import { WorkspacesRepository } from "@troupe/storage/repositories/Workspaces"
import { Cause, Effect, Exit, Fiber, Layer, Stream } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { describe } from "vitest"
import { freshEmbedded, freshPostgres, postgresReachable, type TestDatabase } from "../support/database.ts"

const databaseLayer = (fresh: () => Promise<TestDatabase>) =>
  Layer.unwrap(
    Effect.acquireRelease(Effect.promise(fresh), (database) => Effect.promise(database.drop)).pipe(
      Effect.map((database: { readonly config: DatabaseConfig }) =>
        Layer.mergeAll(NodeLifetime.layer(database.config), repositoriesLayer).pipe(
          Layer.provideMerge(migratedDatabase(database.config))
        )
      )
    )
  )

const at = (iso: string) => new Date(iso)

const migrationFiles = readdirSync(new URL("../../packages/storage/migrations/", import.meta.url))
  .filter((file) => file.endsWith(".sql"))
  .sort()

const contract = (name: string, fresh: () => Promise<TestDatabase>) =>
  layer(databaseLayer(fresh), { excludeTestServices: true, timeout: "60 seconds" })(name, (it) => {
    it.effect("migrations are applied once; a second run applies nothing", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient
        const applied = yield* sql<{ name: string }>`SELECT name FROM effect_sql_migrations ORDER BY migration_id`
        assert.deepStrictEqual(
          applied.map((row) => row.name),
          migrationFiles.map((file) => file.slice(5, -4))
        )
        assert.deepStrictEqual(yield* migrate, [])
      })
    )

    it.effect("internal ids are bigint; public ids are UUIDv7 strings that round-trip", () =>
      Effect.gen(function* () {
        const accounts = yield* AccountsRepository
        const publicId = newPublicId()
        assert.isTrue(isUuid(publicId))
        assert.strictEqual(publicId[14], "7")
        const account = yield* accounts.insertAccount({ publicId, now: at("2026-01-02T03:04:05.678Z") })
        assert.strictEqual(typeof account.id, "bigint")
        assert.strictEqual(account.public_id, publicId)
        assert.strictEqual(account.created_at.toISOString(), "2026-01-02T03:04:05.678Z")
        const again = yield* accounts.currentAccount
        assert.strictEqual(again?.id, account.id)
      })
    )

    it.effect("one account per installation", () =>
      Effect.gen(function* () {
        const accounts = yield* AccountsRepository
        const second = yield* Effect.exit(accounts.insertAccount({ publicId: newPublicId(), now: new Date() }))
        assert.isTrue(Exit.isFailure(second))
      })
    )

    it.effect("a repository call inside sql.withTransaction joins it: seen inside, rolled back with it", () =>
      Effect.gen(function* () {
        const accounts = yield* AccountsRepository
        const sql = yield* SqlClient
        const account = (yield* accounts.currentAccount)!
        const attempt = Effect.gen(function* () {
          yield* accounts.insertUser({
            publicId: newPublicId(),
            accountId: account.id,
            kind: "human",
            role: "member",
            email: "rolled-back@example.com",
            passwordDigest: "x",
            displayName: "Rolled Back",
            handle: "rolled-back",
            now: new Date()
          })
          const inside = yield* sql<{ n: number }>`
            SELECT count(*)::int AS n FROM users WHERE email = 'rolled-back@example.com'`
          assert.strictEqual(inside[0]!.n, 1)
          return yield* Effect.fail("boom" as const)
        }).pipe(sql.withTransaction)
        assert.deepStrictEqual(yield* Effect.flip(attempt), "boom")
        assert.isUndefined(yield* accounts.findHumanByEmail("rolled-back@example.com"))
      })
    )

    it.effect("users: emails are unique case-insensitively, handles per account, one owner", () =>
      Effect.gen(function* () {
        const accounts = yield* AccountsRepository
        const account = (yield* accounts.currentAccount)!
        const human = (email: string, handle: string, role: UserRole = "member") =>
          accounts.insertUser({
            publicId: newPublicId(),
            accountId: account.id,
            kind: "human",
            role,
            email,
            passwordDigest: "digest",
            displayName: handle,
            handle,
            now: new Date()
          })
        const ada = yield* human("Ada@Example.com", "ada", "owner")
        assert.strictEqual((yield* accounts.findHumanByEmail("ada@example.COM"))?.id, ada.id)
        assert.isTrue(Exit.isFailure(yield* Effect.exit(human("ada@example.com", "ada-2"))))
        assert.isTrue(Exit.isFailure(yield* Effect.exit(human("bob@example.com", "ada"))))
        assert.isTrue(Exit.isFailure(yield* Effect.exit(human("carol@example.com", "Carol!"))))
        assert.isTrue(Exit.isFailure(yield* Effect.exit(human("dan@example.com", "dan", "owner"))))
        const taken = yield* accounts.handlesLike(account.id, "ada")
        assert.isTrue(taken.has("ada"))
      })
    )

    it.effect("sessions: found by lookup with their user; their state is recorded once", () =>
      Effect.gen(function* () {
        const accounts = yield* AccountsRepository
        const sessions = yield* SessionsRepository
        const owner = (yield* accounts.findHumanByEmail("ada@example.com"))!
        const session = yield* sessions.insertSession({
          publicId: newPublicId(),
          userId: owner.id,
          kind: "api",
          lookup: "lookup-contract-1",
          salt: new Uint8Array([1, 2, 3]),
          digest: new Uint8Array([4, 5, 6]),
          issuedAt: at("2026-01-01T00:00:00Z"),
          expiresAt: at("2026-01-31T00:00:00Z")
        })
        const { session: found, user } = (yield* sessions.findSessionWithUser("lookup-contract-1"))!
        assert.deepStrictEqual(user, owner)
        assert.strictEqual(found.id, session.id)
        assert.deepStrictEqual([...found.salt], [1, 2, 3])
        assert.deepStrictEqual([...found.digest], [4, 5, 6])
        assert.strictEqual(found.state, "active")
        yield* sessions.setSessionState(session.public_id, "revoked", at("2026-01-02T00:00:00Z"))
        yield* sessions.setSessionState(session.public_id, "expired", at("2026-01-03T00:00:00Z"))
        const revoked = (yield* sessions.findSessionWithUser("lookup-contract-1"))!.session
        assert.strictEqual(revoked.state, "revoked")
        assert.strictEqual(revoked.revoked_at?.toISOString(), "2026-01-02T00:00:00.000Z")
        assert.isUndefined(yield* sessions.findSessionWithUser("absent"))
      })
    )

    it.effect("rate-limit windows count hits per window and drop older windows", () =>
      Effect.gen(function* () {
        const windows = yield* RateLimitWindowsRepository
        const sql = yield* SqlClient
        const first = at("2026-01-01T00:00:00Z")
        const second = at("2026-01-01T00:03:00Z")
        assert.strictEqual(yield* windows.hit("login", "192.0.2.1", first), 1)
        assert.strictEqual(yield* windows.hit("login", "192.0.2.1", first), 2)
        assert.strictEqual(yield* windows.hit("login", "192.0.2.2", first), 1)
        assert.strictEqual(yield* windows.hit("login", "192.0.2.1", second), 1)
        const rows = yield* sql<{ n: bigint }>`
          SELECT count(*) AS n FROM rate_limit_windows WHERE subject = '192.0.2.1'`
        assert.strictEqual(rows[0]!.n, 1n)
      })
    )

    it.effect("rate-limit windows count hits in order in one statement, none after one over its limit", () =>
      Effect.gen(function* () {
        const windows = yield* RateLimitWindowsRepository
        const first = at("2026-01-01T00:00:00Z")
        const second = at("2026-01-01T00:01:00Z")
        const both = (subject: string, windowStart: Date) =>
          windows.hitInOrder([
            { scope: "claims", subject, windowStart, limit: 2 },
            { scope: "claims.ip", subject: "192.0.2.9", windowStart, limit: 10 }
          ])
        assert.deepStrictEqual(yield* both("e-1", first), [1, 1])
        assert.deepStrictEqual(yield* both("e-1", first), [2, 2])
        assert.deepStrictEqual(yield* both("e-1", first), [3, null])
        assert.deepStrictEqual(yield* both("e-2", first), [1, 3])
        assert.deepStrictEqual(yield* both("e-1", second), [1, 1])
        assert.strictEqual(yield* windows.hit("claims", "e-1", second), 2)
      })
    )

    it.effect("idempotency receipts: claim, see the pending one, complete, replace after expiry", () =>
      Effect.gen(function* () {
        const receipts = yield* IdempotencyReceiptsRepository
        const key = { caller: "user:1", route: "POST /things", key: "k-1" }
        const now = at("2026-01-01T00:00:00Z")
        const expires = at("2026-01-02T00:00:00Z")
        const digest = new Uint8Array([9, 9])
        const claimed = yield* receipts.claim(key, digest, 1n, now, expires)
        assert.strictEqual(claimed._tag, "Claimed")
        const pending = yield* receipts.claim(key, new Uint8Array([1]), 1n, now, expires)
        assert.strictEqual(pending._tag, "Existing")
        if (pending._tag !== "Existing" || claimed._tag !== "Claimed") return
        assert.strictEqual(pending.receipt.state, "pending")
        assert.strictEqual(pending.receipt.lifetime_id, 1n)
        assert.deepStrictEqual([...pending.receipt.request_digest], [9, 9])
        yield* receipts.complete(claimed.claim, {
          status: 201,
          headers: { "content-type": "application/json" },
          body: "{}"
        })
        const completed = yield* receipts.claim(key, digest, 1n, now, expires)
        assert.strictEqual(completed._tag === "Existing" && completed.receipt.state, "completed")
        if (completed._tag === "Existing") {
          assert.strictEqual(completed.receipt.response_status, 201)
          assert.deepStrictEqual(completed.receipt.response_headers, { "content-type": "application/json" })
        }
        const afterExpiry = yield* receipts.claim(key, digest, 1n, expires, at("2026-01-03T00:00:00Z"))
        assert.strictEqual(afterExpiry._tag, "Claimed")
      })
    )

    it.effect("idempotency receipts: a take-over wins once, and the superseded claim writes nothing", () =>
      Effect.gen(function* () {
        const receipts = yield* IdempotencyReceiptsRepository
        const key = { caller: "user:1", route: "POST /things", key: "k-2" }
        const now = at("2026-01-01T00:00:00Z")
        const later = at("2026-01-01T00:00:01Z")
        const expires = at("2026-01-02T00:00:00Z")
        const first = yield* receipts.claim(key, new Uint8Array([1]), 1n, now, expires)
        const seen = yield* receipts.claim(key, new Uint8Array([1]), 2n, later, expires)
        if (first._tag !== "Claimed" || seen._tag !== "Existing") return assert.fail("claimed, then seen")
        const taken = yield* receipts.takeOver(seen.receipt, new Uint8Array([2]), 2n, later)
        assert.deepStrictEqual(taken, { id: first.claim.id, lifetime: 2n, at: later })
        assert.strictEqual(yield* receipts.takeOver(seen.receipt, new Uint8Array([3]), 3n, later), undefined)
        yield* receipts.complete(first.claim, { status: 201, headers: {}, body: "first" })
        yield* receipts.release(first.claim)
        const still = yield* receipts.claim(key, new Uint8Array([2]), 3n, later, expires)
        assert.strictEqual(still._tag === "Existing" && still.receipt.state, "pending")
        assert.strictEqual(still._tag === "Existing" && still.receipt.lifetime_id, 2n)
        yield* receipts.complete(taken!, { status: 201, headers: {}, body: "second" })
        const done = yield* receipts.claim(key, new Uint8Array([2]), 3n, later, expires)
        assert.strictEqual(done._tag === "Existing" && done.receipt.response_body, "second")
      })
    )

    it.effect("node lifetimes: the current one is live; an unknown one is over", () =>
      Effect.gen(function* () {
        const lifetimes = yield* NodeLifetime
        const current = yield* lifetimes.current
        assert.isFalse(yield* lifetimes.isOver(current))
        assert.isTrue(yield* lifetimes.isOver(current + 1000n))
      })
    )

    it.effect("installation secrets are made once", () =>
      Effect.gen(function* () {
        const secrets = yield* InstallationSecretsRepository
        const first = yield* secrets.getOrCreate("contract", new Uint8Array([1, 1]), new Date())
        const second = yield* secrets.getOrCreate("contract", new Uint8Array([2, 2]), new Date())
        assert.deepStrictEqual([...first], [1, 1])
        assert.deepStrictEqual([...second], [1, 1])
      })
    )

    it.effect("rows decode to bigint, Date, JSON and null as their schemas say", () =>
      Effect.gen(function* () {
        const accounts = yield* AccountsRepository
        const entries = yield* StoreEntriesRepository
        const workspaces = yield* WorkspacesRepository
        const owner = (yield* accounts.findHumanByEmail("ada@example.com"))!
        const created = yield* workspaces.insertWorkspace({
          publicId: newPublicId(),
          accountId: owner.account_id,
          ownerId: owner.id,
          createdBy: owner.id,
          dedicatedAgentId: null,
          name: "Decoded",
          accessMode: "private",
          metadata: { nested: { list: [1, "two", null] } },
          now: at("2026-02-01T00:00:00.123Z")
        })
        const messaging = [{ agent_public_id: newPublicId(), mode: "private", allowed_sender_public_ids: [] }] as const
        yield* workspaces.updateWorkspace(created.id, 0, { messaging }, at("2026-02-02T00:00:00Z"))
        const workspace = (yield* workspaces.findWorkspace(created.public_id))!
        assert.strictEqual(typeof workspace.id, "bigint")
        assert.strictEqual(workspace.owner_id, owner.id)
        assert.isNull(workspace.dedicated_agent_id)
        assert.isNull(workspace.archived_at)
        assert.strictEqual(workspace.created_at.toISOString(), "2026-02-01T00:00:00.123Z")
        assert.deepStrictEqual(workspace.metadata, { nested: { list: [1, "two", null] } })
        assert.deepStrictEqual(workspace.messaging, messaging)
        assert.strictEqual(workspace.lock_version, 1)

        const host = { kind: "workspace", id: workspace.id } as const
        const entry = yield* entries.insertEntry({
          publicId: newPublicId(),
          host,
          namespace: "ns",
          key: "k",
          valueJson: '{"z":1,"a":[true]}',
          now: at("2026-02-01T00:00:00Z")
        })
        assert.deepStrictEqual(Object.keys(entry!.value as object), ["z", "a"])
        assert.strictEqual(yield* entries.countEntries(host), 1)

        const actorId = newPublicId()
        const write = {
          kind: "contract",
          actorId,
          machine: "contract",
          version: 1,
          status: "active",
          stateValue: "idle",
          snapshot: { value: "idle", context: { n: 1 } },
          now: at("2026-02-01T00:00:00Z")
        } as const
        assert.isTrue(yield* Actors.insertSnapshot(write))
        const snapshot = (yield* Actors.findSnapshot("contract", actorId))!
        assert.strictEqual(snapshot.seq, 1n)
        assert.isNull(snapshot.quarantined_at)
        assert.deepStrictEqual(snapshot.snapshot, { value: "idle", context: { n: 1 } })
        const event = { type: "tick", by: 2, nested: { deep: [1] } }
        yield* Actors.appendJournal({
          kind: "contract",
          actorId,
          seq: 2n,
          event,
          fromState: null,
          toState: "idle",
          actions: ["count"],
          at: at("2026-02-01T00:00:01Z")
        })
        const [journal] = yield* Actors.readJournal("contract", actorId, 0n, 10)
        assert.deepStrictEqual(journal, {
          seq: 2n,
          event_type: "tick",
          event,
          from_state: null,
          to_state: "idle",
          actions: ["count"],
          at: at("2026-02-01T00:00:01Z")
        })
        yield* Actors.upsertTimer({
          kind: "contract",
          actorId,
          timerId: "t",
          event,
          dueAt: at("2026-02-03T00:00:00Z"),
          seq: 2n
        })
        const [timer] = yield* Actors.actorTimers("contract", actorId)
        assert.deepStrictEqual(timer!.event, event)
        assert.strictEqual(timer!.set_at_seq, 2n)
        assert.deepStrictEqual(yield* Actors.nextTimerDue, at("2026-02-03T00:00:00Z"))
        yield* Messages.insertMessage({
          from: undefined,
          toKind: "contract",
          toActorId: actorId,
          event,
          now: at("2026-02-01T00:00:02Z")
        })
        const [message] = yield* Messages.pendingMessagesTo("contract", actorId, 10)
        assert.deepStrictEqual(message!.event, event)
        assert.isNull(message!.from_seq)
        assert.isNull(message!.settled_at)
        const counts = yield* Actors.countByKind
        assert.deepStrictEqual(
          counts.find((row) => row.kind === "contract"),
          { kind: "contract", actors: 1n, active: 1n, quarantined: 0n }
        )
      })
    )

    it.effect("a row its schema refuses is a defect naming the query", () =>
      Effect.gen(function* () {
        const accounts = yield* AccountsRepository
        const sql = yield* SqlClient
        const workspaces = yield* WorkspacesRepository
        const owner = (yield* accounts.findHumanByEmail("ada@example.com"))!
        const workspace = yield* workspaces.insertWorkspace({
          publicId: newPublicId(),
          accountId: owner.account_id,
          ownerId: owner.id,
          createdBy: owner.id,
          dedicatedAgentId: null,
          name: "Malformed",
          accessMode: "private",
          metadata: {},
          now: new Date()
        })
        yield* sql`UPDATE workspaces SET messaging = '{"not": "a list"}'::jsonb WHERE id = ${workspace.id}`
        const exit = yield* Effect.exit(workspaces.findWorkspace(workspace.public_id))
        yield* sql`DELETE FROM workspaces WHERE id = ${workspace.id}`
        assert.isTrue(Exit.isFailure(exit))
        if (Exit.isSuccess(exit)) return
        const defect = exit.cause.reasons.find(Cause.isDieReason)?.defect
        assert.instanceOf(defect, RowDecodeError)
        assert.match((defect as RowDecodeError).message, /^Workspaces\.findWorkspace: .*messaging/s)
      })
    )

    it.effect("the event bus delivers what is published after subscribing, per channel", () =>
      Effect.scoped(
        Effect.gen(function* () {
          const bus = yield* EventBus
          const updates = yield* bus.subscribe("contract_updates")
          const others = yield* bus.subscribe("contract_other")
          const received = yield* updates.pipe(Stream.take(3), Stream.runCollect, Effect.forkChild)
          const unrelated = yield* others.pipe(Stream.take(1), Stream.runCollect, Effect.forkChild)
          yield* bus.publish("contract_updates", "one")
          yield* bus.publish("contract_updates", "two")
          yield* bus.publish("contract_other", "elsewhere")
          yield* bus.publish("contract_updates", "three")
          assert.deepStrictEqual([...(yield* Fiber.join(received))], ["one", "two", "three"])
          assert.deepStrictEqual([...(yield* Fiber.join(unrelated))], ["elsewhere"])
        })
      )
    )
  })

describe("storage contract", () => {
  contract("embedded database (PGlite)", freshEmbedded)
})

if (await postgresReachable()) {
  describe("storage contract", () => {
    contract("PostgreSQL", freshPostgres)
  })
}
