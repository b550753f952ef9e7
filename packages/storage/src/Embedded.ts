// The embedded database: PGlite persisted under the data directory, served by pglite-socket on a
// Unix socket in a private directory (mode 0700, so no other OS user can connect: PGlite asks no
// password) so the same wire client (@effect/sql-pg) talks to it as to PostgreSQL. PGlite runs
// one session, so its clients must use a pool of one connection.
import { mkdir, mkdtemp, open, readFile, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { PGlite } from "@electric-sql/pglite"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import { Effect, type Scope } from "effect"

export class EmbeddedDatabaseError extends Error {
  override readonly name: string = "EmbeddedDatabaseError"
}

/** Another live process holds the data directory. */
export class EmbeddedDatabaseInUse extends EmbeddedDatabaseError {
  override readonly name = "EmbeddedDatabaseInUse"
  readonly holder: number
  constructor(dataDir: string, holder: number) {
    super(`the embedded database in ${dataDir} is in use by process ${holder}`)
    this.holder = holder
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/**
 * PGlite does not guard its directory, and two processes writing one corrupt it: hold a lock
 * file naming our pid while open. A lock left by a dead process is taken over.
 */
const lockDataDir = (dataDir: string) =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: async () => {
        const path = `${dataDir}.lock`
        await mkdir(dirname(path), { recursive: true })
        for (;;) {
          try {
            const handle = await open(path, "wx")
            await handle.writeFile(String(process.pid))
            await handle.close()
            return path
          } catch (error) {
            if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
            const holder = Number((await readFile(path, "utf8").catch(() => "")).trim())
            if (Number.isInteger(holder) && holder > 0 && alive(holder)) {
              throw new EmbeddedDatabaseInUse(dataDir, holder)
            }
            await rm(path, { force: true })
          }
        }
      },
      catch: (cause) =>
        cause instanceof EmbeddedDatabaseError
          ? cause
          : new EmbeddedDatabaseError(`could not lock the embedded database in ${dataDir}`, { cause })
    }),
    (path) => Effect.promise(() => rm(path, { force: true }))
  )

/**
 * The socket's directory: made by mkdtemp, so it is new, 0700 and short enough for a socket
 * path wherever the data directory lives.
 */
const privateSocketDir = Effect.acquireRelease(
  Effect.promise(() => mkdtemp(join(tmpdir(), "troupe-pg-"))),
  (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
)

/** Opens (or creates) the embedded database under `dataDir` and returns its socket's path. */
export const startEmbedded = (dataDir: string): Effect.Effect<string, EmbeddedDatabaseError, Scope.Scope> =>
  Effect.gen(function* () {
    yield* lockDataDir(dataDir)
    const path = join(yield* privateSocketDir, ".s.PGSQL.5432")
    yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => {
          await mkdir(dataDir, { recursive: true })
          const db = await PGlite.create(dataDir)
          const server = new PGLiteSocketServer({ db, path })
          await server.start()
          return { db, server }
        },
        catch: (cause) => new EmbeddedDatabaseError(`could not open the embedded database in ${dataDir}`, { cause })
      }),
      ({ db, server }) => Effect.promise(() => server.stop().then(() => db.close()))
    )
    return path
  })
