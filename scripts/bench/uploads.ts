// The upload scenario: `troupe serve` in its own process (PostgreSQL, a data directory of its
// own) ingesting a 50 MiB file at POST /agent_api/v1/uploads (multipart, streamed from one buffer
// by node:http in this process), against two baselines in the same run: writing the same bytes to a
// file in the same data directory with `fs` in this process (writeFile, then fsync, as the blob
// store fsyncs: the disk alone), and a bare node:http twin in its own process
// (scripts/bench/uploadTwin.ts) taking the same request and streaming its body to a file with fs,
// fsynced (the transport and the disk, none of Troupe's work). After a warm-up of each side, the
// sides alternate for BENCH_UPLOAD_ROUNDS rounds (default 5); each ratio is the median upload MB/s
// over the baseline's median (the goal, ≥ 0.8, is against fs). Then 20 uploads of 50 MiB at
// once, with the server process's resident set (VmRSS from /proc) sampled every 20 ms: its peak
// against its level before, which stays flat when no file is held in memory.
import { randomBytes } from "node:crypto"
import { mkdtemp, open, readFile, rm } from "node:fs/promises"
import { request } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import { Accounts } from "@troupe/domain/accounts/Accounts"
import { Credentials } from "@troupe/domain/accounts/Credentials"
import { migratedDatabase } from "@troupe/server/Server"
import { repositoriesLayer } from "@troupe/storage/Repositories"
import { Console, Effect, Layer, Redacted, References } from "effect"
import { benchDatabase } from "./database.ts"
import { awaitAnswer, cliScript, freePort, startProcess } from "./http.ts"
import { formatTable } from "./measure.ts"

const mebibyte = 1024 * 1024
const fileBytes = 50 * mebibyte
const concurrentUploads = 20
const rounds = Number(process.env.BENCH_UPLOAD_ROUNDS ?? 5)
const goal = 0.8

export interface UploadReport {
  readonly fileMiB: number
  readonly rounds: number
  /** Median MB/s (10^6 bytes) of the file written with fs (writeFile + fsync). */
  readonly fsMBps: number
  /** Median MB/s of the same request through the bare node:http twin writing the body with fs. */
  readonly twinMBps: number
  /** Median MB/s of the same bytes uploaded end to end (201 received). */
  readonly uploadMBps: number
  /** uploadMBps / fsMBps. */
  readonly ratio: number
  /** uploadMBps / twinMBps. */
  readonly twinRatio: number
  readonly goal: number
  readonly concurrent: {
    readonly uploads: number
    readonly seconds: number
    readonly rssBeforeMiB: number
    readonly rssPeakMiB: number
    readonly rssGrowthMiB: number
  }
}

const median = (values: ReadonlyArray<number>) =>
  [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)]!

const megabytesPerSecond = (bytes: number, millis: number) => bytes / 1e6 / (millis / 1000)

/** The resident set of a process in MiB (Linux /proc; NaN elsewhere). */
const residentMiB = (pid: number) =>
  readFile(`/proc/${pid}/status`, "utf8").then(
    (status) => Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1]) / 1024,
    () => Number.NaN
  )

/** POSTs `bytes` as one upload[file] part, streamed by node:http; resolves with the status once answered. */
const upload = (baseUrl: string, token: string, bytes: Buffer) =>
  new Promise<number>((done, fail) => {
    const boundary = `bench-${randomBytes(8).toString("hex")}`
    const head = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="upload[file]"; filename="bench.bin"\r\n` +
        "Content-Type: application/octet-stream\r\n\r\n"
    )
    const tail = Buffer.from(`\r\n--${boundary}--\r\n`)
    const req = request(new URL("/agent_api/v1/uploads", baseUrl), {
      method: "POST",
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": `multipart/form-data; boundary=${boundary}`,
        "content-length": String(head.length + bytes.length + tail.length)
      }
    })
    req.on("response", (response) => {
      response.resume()
      response.on("end", () => done(response.statusCode!))
    })
    req.on("error", fail)
    req.write(head)
    req.write(bytes)
    req.end(tail)
  })

const twinScript = new URL("./uploadTwin.ts", import.meta.url).pathname

const timedUpload = (baseUrl: string, token: string, bytes: Buffer) =>
  Effect.promise(async () => {
    const started = performance.now()
    const status = await upload(baseUrl, token, bytes)
    if (status !== 201) throw new Error(`the upload answered ${status}`)
    return performance.now() - started
  })

const timedWrite = (directory: string, bytes: Buffer, round: number) =>
  Effect.promise(async () => {
    const path = join(directory, `fs-baseline-${round}`)
    const started = performance.now()
    const file = await open(path, "w", 0o600)
    await file.writeFile(bytes)
    await file.sync()
    await file.close()
    const millis = performance.now() - started
    await rm(path)
    return millis
  })

/** The owner and a member personal token, made through the domain services on the bench database. */
const memberToken = (config: Parameters<typeof migratedDatabase>[0]) =>
  Effect.gen(function* () {
    const accounts = yield* Accounts
    const owner = yield* accounts.createOwner({
      email: "upload-bench@example.com",
      password: "upload-bench-password",
      displayName: "Upload bench"
    })
    return yield* (yield* Credentials).personalToken(owner, "member", "upload bench")
  }).pipe(
    Effect.orDie,
    Effect.provide(
      Layer.mergeAll(Accounts.layer, Credentials.layer).pipe(
        Layer.provide(repositoriesLayer),
        Layer.provideMerge(migratedDatabase(config)),
        Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Warn"))
      )
    )
  )

/** Runs the scenario on its own fresh database; undefined (with a note) when PostgreSQL is absent. */
export const uploadScenario = Effect.gen(function* () {
  const database = yield* benchDatabase
  if (database.config._tag !== "postgres") {
    yield* Console.log("Uploads: skipped (it runs `troupe serve` on PostgreSQL, which did not answer)")
    return undefined
  }
  const token = yield* memberToken(database.config)
  const dir = yield* Effect.acquireRelease(
    Effect.promise(() => mkdtemp(join(tmpdir(), "troupe-upload-bench-"))),
    (path) => Effect.promise(() => rm(path, { recursive: true, force: true }))
  )
  const dataDir = join(dir, "data")
  const port = yield* Effect.promise(freePort)
  const baseUrl = `http://127.0.0.1:${port}`
  const log = join(dir, "troupe.log")
  const server = yield* startProcess(
    [cliScript, "serve"],
    {
      DATABASE_URL: Redacted.value(database.config.url),
      HOST: "127.0.0.1",
      PORT: String(port),
      TROUPE_DATA_DIR: dataDir
    },
    log
  )
  yield* awaitAnswer(`${baseUrl}/ready`, log)
  const twinPort = yield* Effect.promise(freePort)
  const twinUrl = `http://127.0.0.1:${twinPort}`
  const twinLog = join(dir, "twin.log")
  yield* startProcess([twinScript], { PORT: String(twinPort), BENCH_TWIN_DIR: dir }, twinLog)
  yield* awaitAnswer(twinUrl, twinLog)
  yield* Console.log(
    `Uploads: a ${fileBytes / mebibyte} MiB file through troupe serve vs writeFile + fsync of the same bytes ` +
      "and vs a bare node:http twin streaming the body to a file; " +
      `1 warm-up + ${rounds} alternating rounds; then ${concurrentUploads} at once`
  )
  const bytes = randomBytes(fileBytes)
  yield* timedWrite(dataDir, bytes, -1)
  yield* timedUpload(twinUrl, token, bytes)
  yield* timedUpload(baseUrl, token, bytes)
  const written: Array<number> = []
  const twinned: Array<number> = []
  const uploaded: Array<number> = []
  for (let round = 0; round < rounds; round++) {
    written.push(yield* timedWrite(dataDir, bytes, round))
    twinned.push(yield* timedUpload(twinUrl, token, bytes))
    uploaded.push(yield* timedUpload(baseUrl, token, bytes))
  }
  const fsMBps = megabytesPerSecond(fileBytes, median(written))
  const twinMBps = megabytesPerSecond(fileBytes, median(twinned))
  const uploadMBps = megabytesPerSecond(fileBytes, median(uploaded))

  const pid = server.pid!
  const rssBeforeMiB = yield* Effect.promise(() => residentMiB(pid))
  const concurrent = yield* Effect.promise(async () => {
    let peak = rssBeforeMiB
    const sampler = setInterval(() => {
      void residentMiB(pid).then((rss) => {
        peak = Math.max(peak, rss)
      })
    }, 20)
    const started = performance.now()
    const statuses = await Promise.all(
      Array.from({ length: concurrentUploads }, () => upload(baseUrl, token, bytes))
    ).finally(() => clearInterval(sampler))
    if (statuses.some((status) => status !== 201)) throw new Error(`concurrent uploads answered ${statuses.join(",")}`)
    return { seconds: (performance.now() - started) / 1000, peak }
  })
  return {
    fileMiB: fileBytes / mebibyte,
    rounds,
    fsMBps,
    twinMBps,
    uploadMBps,
    ratio: uploadMBps / fsMBps,
    twinRatio: uploadMBps / twinMBps,
    goal,
    concurrent: {
      uploads: concurrentUploads,
      seconds: concurrent.seconds,
      rssBeforeMiB,
      rssPeakMiB: concurrent.peak,
      rssGrowthMiB: concurrent.peak - rssBeforeMiB
    }
  } satisfies UploadReport
}).pipe(Effect.scoped)

const fixed = (value: number, digits: number) => value.toFixed(digits)

export const uploadTable = (report: UploadReport) =>
  [
    formatTable(
      ["file", "upload MB/s", "fs write+fsync MB/s", "ratio", "goal", "node:http twin MB/s", "ratio"],
      [
        [
          `${report.fileMiB} MiB`,
          fixed(report.uploadMBps, 0),
          fixed(report.fsMBps, 0),
          fixed(report.ratio, 2),
          `≥ ${report.goal}`,
          fixed(report.twinMBps, 0),
          fixed(report.twinRatio, 2)
        ]
      ]
    ),
    formatTable(
      ["concurrent uploads", "seconds", "server RSS before MiB", "peak MiB", "growth MiB"],
      [
        [
          `${report.concurrent.uploads} × ${report.fileMiB} MiB`,
          fixed(report.concurrent.seconds, 1),
          fixed(report.concurrent.rssBeforeMiB, 0),
          fixed(report.concurrent.rssPeakMiB, 0),
          fixed(report.concurrent.rssGrowthMiB, 0)
        ]
      ]
    )
  ].join("\n")
