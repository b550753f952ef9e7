// The memory-grep scenario: one anchor at the limits (a human's user/ memory holding 64
// documents of exactly 65,536 bytes of prose, scripts/bench/prose.ts, written through the Memory
// service), then `Memory.grep` (what the HTTP doors call, after making the reach once) for four
// patterns: a literal that is absent, a common word to limit 100, ignore_case to limit 500, and
// `(a|aa)+$` (exponential for a backtracking engine on the documents' run of "a"s). Beside it, a
// baseline of the least work any grep must do: the same SELECT of the anchor's documents (the
// repository's documentTexts) and one `String.prototype.includes` pass over the fetched text for
// a word that is not there. The two sides alternate in rounds like the actor scenario; `ratio`
// is grep p50 / baseline p50, so LOWER is better (1.0 = grep costs no more than fetching the
// bytes and looking at them once). Each pattern's answer is checked once before measuring.
import { Accounts } from "@troupe/domain/accounts/Accounts"
import { callerOfHuman } from "@troupe/domain/accounts/Caller"
import { Memory, type Reach } from "@troupe/domain/memory/Memory"
import { memoryLimits } from "@troupe/domain/memory/MemoryRules"
import { repositoriesLayer } from "@troupe/storage/Repositories"
import { MemoryRepository } from "@troupe/storage/repositories/Memory"
import { Effect, Layer } from "effect"
import { alternate, formatTable, type Sample, type Timing } from "./measure.ts"
import { absentWord, commonWord, prose, rareWord } from "./prose.ts"

interface GrepCase {
  readonly name: string
  readonly pattern: string
  readonly ignoreCase: boolean
  readonly limit: number
  /** The answer the documents are made to give: no match, or cut short at the limit. */
  readonly truncated: boolean
}

const cases: ReadonlyArray<GrepCase> = [
  { name: "rare literal, no match", pattern: absentWord, ignoreCase: false, limit: 100, truncated: false },
  { name: "common word, limit 100", pattern: commonWord, ignoreCase: false, limit: 100, truncated: true },
  { name: "ignore_case, limit 500", pattern: rareWord.toLowerCase(), ignoreCase: true, limit: 500, truncated: true },
  { name: "hostile, no match", pattern: "(a|aa)+$", ignoreCase: false, limit: 100, truncated: false }
]

export interface GrepFigures extends GrepCase {
  /** What one call answers (checked before measuring). */
  readonly matches: number
  readonly grep: Sample
  readonly baseline: Sample
  /** grep p50 / baseline p50: lower is better. */
  readonly ratio: number
}

const documents = memoryLimits.documentsPerAnchor
const documentBytes = memoryLimits.documentBytes

/** A human (the instance's owner) whose user/ memory is full: 64 documents of 64 KiB. */
const seedAnchor = Effect.gen(function* () {
  const accounts = yield* Accounts
  const memory = yield* Memory
  const owner = yield* accounts.createOwner({
    email: "bench@example.com",
    password: "bench-password",
    displayName: "Bench"
  })
  const reach = memory.profileReach(callerOfHuman(owner))
  for (let index = 0; index < documents; index++) {
    yield* memory.write(reach, {
      path: `user/notes/${String(index).padStart(2, "0")}`,
      content: prose(index + 1, documentBytes),
      expected_public_id: null,
      expected_lock_version: null
    })
  }
  const listed = yield* memory.list(reach)
  if (listed.length !== documents || listed.some((row) => row.bytesize !== documentBytes)) {
    return yield* Effect.die(new Error("the bench anchor is not at the limits"))
  }
  return reach
}).pipe(Effect.orDie)

const measureCase = (timing: Timing, reach: Reach, testCase: GrepCase) =>
  Effect.gen(function* () {
    const memory = yield* Memory
    const members = { pattern: testCase.pattern, ignore_case: testCase.ignoreCase, limit: testCase.limit }
    const grep = () => Effect.orDie(memory.grep(reach, members))
    const probe = yield* grep()
    if (probe.truncated !== testCase.truncated || probe.matches.length !== (probe.truncated ? testCase.limit : 0)) {
      return yield* Effect.die(
        new Error(`${testCase.pattern}: ${probe.matches.length} matches, not what the text gives`)
      )
    }
    const baselineStep = () =>
      Effect.flatMap(MemoryRepository, (memory) => memory.documentTexts([reach.anchors.user!], undefined)).pipe(
        Effect.orDie,
        Effect.flatMap((rows) =>
          rows.length === documents && rows.every((row) => !row.content.includes(absentWord))
            ? Effect.void
            : Effect.die(new Error("baseline: unexpected documents"))
        )
      )
    const { subject, baseline } = yield* alternate(
      timing,
      { actors: ["grep"], step: () => Effect.asVoid(grep()) },
      { actors: ["baseline"], step: baselineStep }
    )
    return {
      ...testCase,
      matches: probe.matches.length,
      grep: subject,
      baseline,
      ratio: subject.p50Ms / baseline.p50Ms
    } satisfies GrepFigures
  })

/** Seeds the anchor and measures every pattern; needs the migrated database's SqlClient. */
export const memoryGrep = (timing: Timing) =>
  Effect.gen(function* () {
    const reach = yield* seedAnchor
    return yield* Effect.forEach(cases, (testCase) => measureCase(timing, reach, testCase))
  }).pipe(Effect.provide(Layer.mergeAll(Accounts.layer, Memory.layer).pipe(Layer.provideMerge(repositoriesLayer))))

export const grepHeader =
  `Memory grep: one anchor at the limits (${documents} documents × ${documentBytes.toLocaleString("en")} bytes), ` +
  `one caller, same timing; baseline = the same SELECT + one String.includes pass over the text\n` +
  "ratio = grep p50 / baseline p50: LOWER is better (1.0 = no more than fetching the bytes and reading them once)"

const fixed = (value: number, digits: number) => value.toFixed(digits)

export const grepTable = (results: ReadonlyArray<GrepFigures>) =>
  formatTable(
    ["case", "pattern", "matches", "grep p50/p99 ms", "baseline p50/p99 ms", "ratio", "node CPU ms/call grep/baseline"],
    results.map((level) => [
      level.name,
      level.pattern,
      `${level.matches}${level.truncated ? "+" : ""}`,
      `${fixed(level.grep.p50Ms, 1)} / ${fixed(level.grep.p99Ms, 1)}`,
      `${fixed(level.baseline.p50Ms, 1)} / ${fixed(level.baseline.p99Ms, 1)}`,
      fixed(level.ratio, 2),
      `${fixed(level.grep.cpuMicrosPerStep / 1000, 1)} / ${fixed(level.baseline.cpuMicrosPerStep / 1000, 1)}`
    ])
  )
