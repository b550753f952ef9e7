// End to end: `troupe serve` with a bad environment prints one line naming the variable and the
// fix, exits 78 (EX_CONFIG), and shows no stack trace: bad values of every variable in the
// README's Configuration table, a busy port, a database that does not exist or does not
// answer, and a data directory that cannot be used.
import { randomBytes } from "node:crypto"
import { mkdtemp, rm, writeFile } from "node:fs/promises"
import { createServer, type Server } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { adminUrl, postgresReachable } from "../support/database.ts"
import { freePort } from "../support/processes.ts"
import { troupe } from "../support/troupe-process.ts"

const withPostgres = await postgresReachable()

let scratch: string
let busy: Server
let busyPort: number
let closedPort: number

/** `troupe serve` on the pinned Node with none of Troupe's variables but a free port, a data directory and `extra`. */
const serve = async (extra: Record<string, string>) =>
  troupe(["serve"], { PORT: String(await freePort()), TROUPE_DATA_DIR: join(scratch, "data"), ...extra })

const postgresAt = (database: string) => {
  const url = new URL(adminUrl)
  url.pathname = `/${database}`
  return url.toString()
}

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), "troupe-config-"))
  await writeFile(join(scratch, "a-file"), "")
  busyPort = await freePort()
  closedPort = await freePort()
  busy = createServer()
  await new Promise<void>((done) => busy.listen(busyPort, "127.0.0.1", done))
})
afterAll(async () => {
  await new Promise((done) => busy?.close(done))
  await rm(scratch, { recursive: true, force: true })
})

interface Case {
  readonly name: string
  readonly env: () => Record<string, string>
  readonly variable: string
  /** What the line must say besides naming the variable. */
  readonly says: RegExp
  readonly postgres?: boolean
}

const missingDatabase = `troupe_missing_${randomBytes(4).toString("hex")}`

const cases: ReadonlyArray<Case> = [
  { name: "PORT not a number", env: () => ({ PORT: "abc" }), variable: "PORT", says: /1 to 65535/ },
  {
    name: "PORT already in use",
    env: () => ({ PORT: String(busyPort) }),
    variable: "PORT",
    says: /already in use.*free port/
  },
  {
    name: "HOST not an address of this machine",
    env: () => ({ HOST: "192.0.2.1" }),
    variable: "HOST",
    says: /not an address of this machine/
  },
  {
    name: "DATABASE_URL not a URL (and its value never shown)",
    env: () => ({ DATABASE_URL: "not-a-url-s3cret" }),
    variable: "DATABASE_URL",
    says: /^(?!.*s3cret).*postgres:\/\/USER:PASSWORD@HOST:5432\/DATABASE/
  },
  {
    name: "DATABASE_URL naming a database that does not exist",
    env: () => ({ DATABASE_URL: postgresAt(missingDatabase) }),
    variable: "DATABASE_URL",
    says: new RegExp(`"${missingDatabase}" does not exist.*createdb .*${missingDatabase}`),
    postgres: true
  },
  {
    name: "DATABASE_URL where nothing answers",
    env: () => ({ DATABASE_URL: `postgres://postgres@127.0.0.1:${closedPort}/troupe` }),
    variable: "DATABASE_URL",
    says: /nothing answers at 127\.0\.0\.1:\d+/
  },
  {
    name: "TROUPE_DATA_DIR under a file",
    env: () => ({ TROUPE_DATA_DIR: join(scratch, "a-file", "data") }),
    variable: "TROUPE_DATA_DIR",
    says: /ENOTDIR.*directory this process can write/
  },
  {
    name: "OTEL_EXPORTER_OTLP_ENDPOINT not a URL",
    env: () => ({ OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" }),
    variable: "OTEL_EXPORTER_OTLP_ENDPOINT",
    says: /such as http:\/\/localhost:4318/
  },
  {
    name: "OTEL_EXPORTER_OTLP_HEADERS not name=value pairs (and its value never shown)",
    env: () => ({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_EXPORTER_OTLP_HEADERS: "s3cret" }),
    variable: "OTEL_EXPORTER_OTLP_HEADERS",
    says: /^(?!.*s3cret).*name=value/
  },
  {
    name: "OTEL_TRACES_SAMPLER not a sampler",
    env: () => ({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_TRACES_SAMPLER: "sometimes" }),
    variable: "OTEL_TRACES_SAMPLER",
    says: /parentbased_always_on \(the default\)/
  },
  {
    name: "OTEL_TRACES_SAMPLER_ARG not a ratio",
    env: () => ({
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318",
      OTEL_TRACES_SAMPLER: "traceidratio",
      OTEL_TRACES_SAMPLER_ARG: "10%"
    }),
    variable: "OTEL_TRACES_SAMPLER_ARG",
    says: /a number from 0 to 1/
  },
  {
    name: "TROUPE_TRUSTED_PROXIES with an entry that is no address",
    env: () => ({ TROUPE_TRUSTED_PROXIES: "10.0.0.0/8,proxy.internal" }),
    variable: "TROUPE_TRUSTED_PROXIES",
    says: /"proxy\.internal"/
  }
]

describe.concurrent("troupe serve with a bad environment", { timeout: 30_000 }, () => {
  it.each(cases.filter((testCase) => testCase.postgres !== true || withPostgres))(
    "$name: one line naming $variable, exit 78, no stack",
    async (testCase) => {
      const result = await serve(testCase.env())
      expect(result.code).toBe(78)
      const lines = result.stderr.split("\n").filter((line) => line !== "")
      expect(lines).toHaveLength(1)
      expect(lines[0]).toMatch(new RegExp(`^troupe: ${testCase.variable}\\b`))
      expect(lines[0]).toMatch(testCase.says)
      expect(result.stderr + result.stdout).not.toContain("    at ")
    }
  )

  it("a data directory held by a live process names TROUPE_DATA_DIR and the process", async () => {
    const dataDir = await mkdtemp(join(scratch, "held-"))
    await writeFile(join(dataDir, "pg.lock"), String(process.pid))
    const result = await serve({ TROUPE_DATA_DIR: dataDir })
    expect(result.code).toBe(78)
    expect(result.stderr).toBe(
      `troupe: TROUPE_DATA_DIR: the embedded database in ${join(dataDir, "pg")} is in use by process ${process.pid}; stop process ${process.pid} or set TROUPE_DATA_DIR to another directory\n`
    )
  })
})
