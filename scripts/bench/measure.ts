// The load driver: `concurrency` fibers, one per actor, each issuing steps back to back for a
// fixed time; answers every step's latency, the elapsed time and this process's CPU time
// (user + system, which includes the kernel's share of socket writes), summarized as a Sample;
// and the alternation of a measured side with its baseline that every scenario uses.
import { performance } from "node:perf_hooks"
import { Effect } from "effect"

export interface Round {
  readonly latencies: ReadonlyArray<number>
  readonly seconds: number
  readonly cpuMicros: number
}

export interface Sample {
  readonly steps: number
  readonly seconds: number
  readonly perSecond: number
  readonly p50Ms: number
  readonly p99Ms: number
  /** CPU time of this process per step, in µs: the client side's cost of one step. */
  readonly cpuMicrosPerStep: number
}

/** Runs `step(actor)` for every actor concurrently, each actor's steps one after another. */
export const drive = <E, R>(
  actors: ReadonlyArray<string>,
  step: (actor: string) => Effect.Effect<void, E, R>,
  millis: number
) =>
  Effect.gen(function* () {
    const latencies: Array<number> = []
    const cpu = process.cpuUsage()
    const started = performance.now()
    const deadline = started + millis
    yield* Effect.forEach(
      actors,
      (actor) =>
        Effect.whileLoop({
          while: () => performance.now() < deadline,
          body: () => {
            const t0 = performance.now()
            return Effect.map(step(actor), () => latencies.push(performance.now() - t0))
          },
          step: () => {}
        }),
      { concurrency: "unbounded", discard: true }
    )
    const seconds = (performance.now() - started) / 1000
    const used = process.cpuUsage(cpu)
    return { latencies, seconds, cpuMicros: used.user + used.system } satisfies Round
  })

const percentile = (sorted: Float64Array, p: number) =>
  sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!

/** Steps over time and latency percentiles of several rounds taken together. */
export const summarize = (rounds: ReadonlyArray<Round>): Sample => {
  const sorted = Float64Array.from(rounds.flatMap((round) => round.latencies)).sort()
  const seconds = rounds.reduce((total, round) => total + round.seconds, 0)
  return {
    steps: sorted.length,
    seconds,
    perSecond: sorted.length / seconds,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    cpuMicrosPerStep: rounds.reduce((total, round) => total + round.cpuMicros, 0) / sorted.length
  }
}

export interface Timing {
  readonly warmupMillis: number
  readonly roundMillis: number
  readonly measureMillis: number
}

/** One side of a comparison: its actors (one fiber each) and one step of an actor. */
export interface Side<E, R> {
  readonly actors: ReadonlyArray<string>
  readonly step: (actor: string) => Effect.Effect<void, E, R>
}

/**
 * Warms every side up, then alternates them in short rounds until each has run `measureMillis`,
 * so all see the same state of the machine (disk flushes, other load) and their ratios hold.
 * Answers one sample per side, in order.
 */
export const alternateSides = <E, R>(timing: Timing, sides: ReadonlyArray<Side<E, R>>) =>
  Effect.gen(function* () {
    for (const side of sides) yield* drive(side.actors, side.step, timing.warmupMillis)
    const rounds = sides.map((): Array<Round> => [])
    for (let round = 0; round < timing.measureMillis / timing.roundMillis; round++) {
      for (const [index, side] of sides.entries())
        rounds[index]!.push(yield* drive(side.actors, side.step, timing.roundMillis))
    }
    return rounds.map(summarize)
  })

/** A measured side beside its baseline (`alternateSides` of the two). */
export const alternate = <E1, R1, E2, R2>(timing: Timing, subject: Side<E1, R1>, baseline: Side<E2, R2>) =>
  Effect.map(alternateSides<E1 | E2, R1 | R2>(timing, [baseline, subject]), ([baselineSample, subjectSample]) => ({
    subject: subjectSample!,
    baseline: baselineSample!
  }))

/** Rows of cells as right-aligned columns under their header. */
export const formatTable = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>) => {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)))
  return [header, ...rows].map((row) => row.map((cell, column) => cell.padStart(widths[column]!)).join("  ")).join("\n")
}
