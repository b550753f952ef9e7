// The content-addressed blob store on disk, under the data directory (TROUPE_DATA_DIR): the bytes
// of an upload at blobs/<first two hex digits>/<sha256>, its rendered representations beside them
// (<sha256>.<kind>). Bytes are streamed to a private temporary file (hashed, counted and bounded as
// they pass, never held whole in memory), fsynced, and renamed into place. Which blobs exist and
// who names them is the database's business (repositories/Uploads.ts); this module only moves files.
import { createHash, randomBytes } from "node:crypto"
import { type FileHandle, mkdir, open, readdir, rename, rm, stat } from "node:fs/promises"
import { join } from "node:path"
import type { Readable } from "node:stream"
import { Context, Data, Effect, Layer, type Scope } from "effect"

/** Bytes written to a temporary file, not yet in the store. */
export interface StagedBlob {
  readonly path: string
  /** Lower-case hex. */
  readonly sha256: string
  readonly byteSize: number
}

/** The source passed the bound; reading stopped there. */
export class BlobTooLarge extends Data.TaggedError("BlobTooLarge")<{ readonly maxBytes: number }> {}

/** The source failed before its end (a client gone, a body that could not be read). */
export class BlobSourceFailed extends Data.TaggedError("BlobSourceFailed")<{ readonly cause: unknown }> {}

export interface StageOptions {
  readonly maxBytes: number
  /** Sees every chunk as it passes (a content sniffer), in order. */
  readonly inspect?: ((chunk: Uint8Array) => void) | undefined
}

/** Bytes gathered into one write of the temporary file, and how many such writes may be under way. */
const writeBatchBytes = 256 * 1024
const writesInFlight = 4

/** Temporary files older than this are leftovers of a process that stopped mid-upload. */
const temporaryLifeMillis = 24 * 60 * 60 * 1000

const fsyncDirectory = async (path: string) => {
  const directory = await open(path, "r")
  try {
    await directory.sync()
  } finally {
    await directory.close()
  }
}

const isMissing = (error: unknown) => (error as { code?: string } | undefined)?.code === "ENOENT"

/** Writes `bytes` to a new temporary file, fsyncs it, and renames it to `target` (replacing what was there). */
const writeAtomically = async (temporary: string, target: string, bytes: Uint8Array) => {
  const file = await open(temporary, "wx", 0o600)
  try {
    await file.writeFile(bytes)
    await file.sync()
  } finally {
    await file.close()
  }
  try {
    await rename(temporary, target)
  } catch (error) {
    await rm(temporary, { force: true })
    throw error
  }
}

/**
 * Streams `source` into `file`, hashing and counting; fails with BlobTooLarge past `maxBytes`.
 * Chunks are gathered into batches written at their offsets while the next ones are read, a few
 * writes in flight at once (the thread pool runs them side by side).
 */
const fill = async (file: FileHandle, source: Readable, options: StageOptions, signal: AbortSignal) => {
  const hash = createHash("sha256")
  const abort = () => source.destroy()
  signal.addEventListener("abort", abort, { once: true })
  const writing = new Set<Promise<unknown>>()
  let batch: Array<Uint8Array> = []
  let batched = 0
  let byteSize = 0
  const flush = async () => {
    const length = batched
    // A short write (a full disk) fails the stage rather than leave a hole in the file.
    const write: Promise<unknown> = file.writev(batch, byteSize - batched).then(({ bytesWritten }) => {
      if (bytesWritten !== length) throw new Error(`wrote ${bytesWritten} of ${length} bytes`)
      writing.delete(write)
    })
    write.catch(() => {})
    writing.add(write)
    batch = []
    batched = 0
    if (writing.size >= writesInFlight) await Promise.race(writing)
  }
  try {
    for await (const chunk of source as AsyncIterable<Uint8Array>) {
      byteSize += chunk.byteLength
      if (byteSize > options.maxBytes) throw new BlobTooLarge({ maxBytes: options.maxBytes })
      hash.update(chunk)
      options.inspect?.(chunk)
      batch.push(chunk)
      batched += chunk.byteLength
      if (batched >= writeBatchBytes) await flush()
    }
    if (batched > 0) await flush()
    await Promise.all(writing)
  } catch (cause) {
    source.destroy()
    await Promise.allSettled(writing)
    throw cause instanceof BlobTooLarge ? cause : new BlobSourceFailed({ cause })
  } finally {
    signal.removeEventListener("abort", abort)
  }
  await file.sync()
  return { sha256: hash.digest("hex"), byteSize }
}

export class BlobStore extends Context.Service<
  BlobStore,
  {
    /**
     * Streams `source` to a temporary file and fsyncs it (`source` is destroyed when it fails or
     * the effect is interrupted). The file is removed when the scope closes unless `keep` moved it
     * into the store first.
     */
    readonly stage: (
      source: Readable,
      options: StageOptions
    ) => Effect.Effect<StagedBlob, BlobTooLarge | BlobSourceFailed, Scope.Scope>
    /** Moves a staged file to its place in the store (the same bytes may already be there). */
    readonly keep: (staged: StagedBlob) => Effect.Effect<void>
    /** Where the blob with this digest lives. */
    readonly blobPath: (sha256: string) => string
    /** Where a representation of the blob lives. */
    readonly representationPath: (sha256: string, kind: string) => string
    /** Writes a representation's bytes to its place (fsynced, renamed in). */
    readonly writeRepresentation: (sha256: string, kind: string, bytes: Uint8Array) => Effect.Effect<void>
    /** Deletes the blob and the representations of these kinds; missing files are fine. */
    readonly remove: (sha256: string, kinds: ReadonlyArray<string>) => Effect.Effect<void>
    /** Deletes temporary files older than a day (leftovers of a stopped process); answers how many. */
    readonly sweepTemporary: (now: Date) => Effect.Effect<number>
  }
>()("@troupe/storage/BlobStore") {
  /** The store under `dataDir` (blobs/ and tmp/, created when missing). */
  static readonly layer = (dataDir: string) =>
    Layer.effect(
      BlobStore,
      Effect.gen(function* () {
        const blobs = join(dataDir, "blobs")
        const temporary = join(dataDir, "tmp")
        yield* Effect.promise(async () => {
          await mkdir(blobs, { recursive: true, mode: 0o700 })
          await mkdir(temporary, { recursive: true, mode: 0o700 })
        })
        const newTemporary = () => join(temporary, `${Date.now()}-${randomBytes(12).toString("hex")}`)
        const directoryOf = (sha256: string) => join(blobs, sha256.slice(0, 2))
        const blobPath = (sha256: string) => join(directoryOf(sha256), sha256)
        const representationPath = (sha256: string, kind: string) => `${blobPath(sha256)}.${kind}`

        const stage = (source: Readable, options: StageOptions) =>
          Effect.gen(function* () {
            const path = newTemporary()
            const file = yield* Effect.acquireRelease(
              Effect.promise(() => open(path, "wx", 0o600)),
              (handle) =>
                Effect.promise(async () => {
                  await handle.close()
                  await rm(path, { force: true })
                })
            )
            const written = yield* Effect.tryPromise({
              try: (signal) => fill(file, source, options, signal),
              catch: (error) =>
                error instanceof BlobTooLarge || error instanceof BlobSourceFailed
                  ? error
                  : new BlobSourceFailed({ cause: error })
            })
            return { path, ...written } satisfies StagedBlob
          })

        const keep = (staged: StagedBlob) =>
          Effect.promise(async () => {
            const directory = directoryOf(staged.sha256)
            await mkdir(directory, { recursive: true, mode: 0o700 })
            await rename(staged.path, blobPath(staged.sha256))
            await fsyncDirectory(directory)
          })

        const writeRepresentation = (sha256: string, kind: string, bytes: Uint8Array) =>
          Effect.promise(async () => {
            const directory = directoryOf(sha256)
            await mkdir(directory, { recursive: true, mode: 0o700 })
            await writeAtomically(newTemporary(), representationPath(sha256, kind), bytes)
            await fsyncDirectory(directory)
          })

        const remove = (sha256: string, kinds: ReadonlyArray<string>) =>
          Effect.promise(async () => {
            for (const path of [blobPath(sha256), ...kinds.map((kind) => representationPath(sha256, kind))]) {
              await rm(path, { force: true })
            }
          })

        const sweepTemporary = (now: Date) =>
          Effect.promise(async () => {
            let removed = 0
            for (const name of await readdir(temporary)) {
              const path = join(temporary, name)
              const info = await stat(path).catch((error) => (isMissing(error) ? undefined : Promise.reject(error)))
              if (info && now.getTime() - info.mtimeMs > temporaryLifeMillis) {
                await rm(path, { force: true })
                removed++
              }
            }
            return removed
          })

        return BlobStore.of({
          stage,
          keep,
          blobPath,
          representationPath,
          writeRepresentation,
          remove,
          sweepTemporary
        })
      })
    )
}
