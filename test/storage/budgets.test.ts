// The budgets repository on both adapters (PostgreSQL and the embedded database): numeric totals
// exact at 18 digits each side of the point, entries numbered under the row's lock, a debit within
// headroom refused past it or on a revoked budget, a settlement's overdraw, the configure-once unit.
import { assert, layer } from "@effect/vitest"
import { migratedDatabase } from "@troupe/server/Server"
import type { DatabaseConfig } from "@troupe/storage/Database"
import { newPublicId } from "@troupe/storage/Ids"
import { NodeLifetime } from "@troupe/storage/NodeLifetime"
import { repositoriesLayer } from "@troupe/storage/Repositories"
import { AccountsRepository } from "@troupe/storage/repositories/Accounts"
import { BudgetsRepository, type EntryWrite } from "@troupe/storage/repositories/Budgets"
import { Effect, Layer } from "effect"
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

const now = new Date("2030-01-01T00:00:00Z")

/** A fresh user with a budget of `amount` (entry 1) over [2030-01-01, open-ended). */
const budgetOf = (handle: string, amount: string) =>
  Effect.gen(function* () {
    const accounts = yield* AccountsRepository
    const budgets = yield* BudgetsRepository
    const account =
      (yield* accounts.currentAccount) ?? (yield* accounts.insertAccount({ publicId: newPublicId(), now }))
    const user = yield* accounts.insertUser({
      publicId: newPublicId(),
      accountId: account.id,
      kind: "human",
      role: "member",
      email: `${handle}@example.com`,
      passwordDigest: "digest",
      displayName: handle,
      handle,
      now
    })
    const id = yield* budgets.insertBudget({
      publicId: newPublicId(),
      userId: user.id,
      costUnit: "USD",
      startsAt: now,
      expiresAt: null,
      now
    })
    yield* budgets.write(entry(id, "credit", amount, "open"))
    return { budgets, id, userId: user.id }
  })

const entry = (
  budgetId: bigint,
  kind: "credit" | "debit",
  amount: string,
  operationKey: string,
  withinHeadroom = kind === "debit"
): EntryWrite => ({ budgetId, kind, amount, reason: "tests", operationKey, withinHeadroom, now })

const suite = (name: string, fresh: () => Promise<TestDatabase>) =>
  layer(databaseLayer(fresh), { excludeTestServices: true, timeout: "60 seconds" })(name, (it) => {
    it.effect("the cost unit is configured once", () =>
      Effect.gen(function* () {
        const accounts = yield* AccountsRepository
        if ((yield* accounts.currentAccount) === undefined)
          yield* accounts.insertAccount({ publicId: newPublicId(), now })
        const budgets = yield* BudgetsRepository
        assert.isNull(yield* budgets.costUnit)
        assert.strictEqual(yield* budgets.configureCostUnit("USD"), "USD")
        assert.strictEqual(yield* budgets.configureCostUnit("EUR"), "USD")
      })
    )

    it.effect("totals are exact at 18 digits; entries are numbered; headroom and revocation refuse debits", () =>
      Effect.gen(function* () {
        const { budgets, id, userId } = yield* budgetOf("exact", "999999999999999999.999999999999999999")
        const credit = yield* budgets.write(entry(id, "credit", "0.000000000000000001", "c"))
        assert.strictEqual(credit?.sequence, 2)
        assert.strictEqual((yield* budgets.budgetById(id)).credited_amount, "1000000000000000000.000000000000000000")
        assert.isUndefined(yield* budgets.write(entry(id, "debit", "1000000000000000000.000000000000000001", "d1")))
        const debit = yield* budgets.write(entry(id, "debit", "1000000000000000000", "d2"))
        assert.strictEqual(debit?.sequence, 3)
        // A settlement may overdraw.
        assert.strictEqual((yield* budgets.write(entry(id, "debit", "0.1", "usage:x", false)))?.sequence, 4)
        assert.strictEqual((yield* budgets.budgetById(id)).debited_amount, "1000000000000000000.1")
        assert.strictEqual((yield* budgets.usable(userId, now))?.id, id)
        assert.isTrue(yield* budgets.revokeBudget(id, "done", "revoke-1", now))
        assert.isFalse(yield* budgets.revokeBudget(id, "again", "revoke-2", now))
        assert.isUndefined(yield* budgets.write(entry(id, "debit", "0.1", "usage:y", false)))
        assert.strictEqual((yield* budgets.write(entry(id, "credit", "1", "late")))?.sequence, 5)
        assert.isUndefined(yield* budgets.usable(userId, now))
        assert.deepStrictEqual(
          (yield* budgets.entries(id)).map((row) => [row.sequence, row.kind, row.operation_key]),
          [
            [1, "credit", "open"],
            [2, "credit", "c"],
            [3, "debit", "d2"],
            [4, "debit", "usage:x"],
            [5, "credit", "late"]
          ]
        )
      })
    )

    it.effect("concurrent debits within headroom never pass it", () =>
      Effect.gen(function* () {
        const { budgets, id } = yield* budgetOf("racing", "3")
        const written = yield* Effect.forEach(
          Array.from({ length: 8 }, (_, index) => index),
          (index) => budgets.write(entry(id, "debit", "1", `d${index}`)),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(written.filter((row) => row !== undefined).length, 3)
        assert.strictEqual((yield* budgets.budgetById(id)).debited_amount, "3")
      })
    )

    it.effect("overlap: unrevoked windows of the same user, half-open", () =>
      Effect.gen(function* () {
        const { budgets, userId } = yield* budgetOf("windows", "1")
        assert.isTrue(yield* budgets.hasOverlap(userId, new Date("2031-01-01T00:00:00Z"), null))
        assert.isFalse(yield* budgets.hasOverlap(userId, new Date("2029-01-01T00:00:00Z"), now))
        assert.isTrue(yield* budgets.hasOverlap(userId, new Date("2029-01-01T00:00:00Z"), new Date(now.getTime() + 1)))
      })
    )
  })

describe("budgets repository", () => {
  suite("embedded database (PGlite)", freshEmbedded)
})

if (await postgresReachable()) {
  describe("budgets repository", () => {
    suite("PostgreSQL", freshPostgres)
  })
}
