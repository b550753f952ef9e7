// Headless Chromium for browser tests, driven by playwright-core: the system's Chromium when there is
// one, else the build shipped inside the @sparticuz/chromium npm package. Nothing is downloaded.
import { execFile } from "node:child_process"
import { accessSync, constants, existsSync } from "node:fs"
import { mkdtemp, readFile, rename, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { delimiter, join } from "node:path"
import { promisify } from "node:util"
import { chromium } from "playwright-core"

const isExecutable = (path: string) => {
  try {
    accessSync(path, constants.X_OK)
    return true
  } catch {
    return false
  }
}

/** CHROMIUM_PATH when set, else /usr/bin/chromium, else `chromium` or `chromium-browser` on PATH. */
const systemChromium = (): string | undefined => {
  const configured = process.env.CHROMIUM_PATH
  if (configured !== undefined) {
    if (!isExecutable(configured)) throw new Error(`CHROMIUM_PATH=${configured} is not an executable file`)
    return configured
  }
  const dirs = (process.env.PATH ?? "").split(delimiter).filter((dir) => dir !== "")
  const onPath = ["chromium", "chromium-browser"].flatMap((name) => dirs.map((dir) => join(dir, name)))
  return ["/usr/bin/chromium", ...onPath].find(isExecutable)
}

const execFileAsync = promisify(execFile)

/**
 * Unpacks the package's brotli-compressed build (binary and SwiftShader libraries) once per package
 * version: the package's own `executablePath()` unpacks into the temp directory it is given, here a
 * private one that is then renamed into place, so runs started at the same time never see half.
 */
const packagedChromium = async () => {
  const entry = import.meta.resolve("@sparticuz/chromium")
  const { version } = JSON.parse(await readFile(new URL("../package.json", entry), "utf8")) as { version: string }
  const dir = join(tmpdir(), `troupe-chromium-${version}`)
  const executable = join(dir, "chromium")
  if (existsSync(executable)) return executable
  const staging = await mkdtemp(`${dir}.partial-`)
  const unpack = "const { default: packaged } = await import(process.argv[1]); await packaged.executablePath()"
  try {
    await execFileAsync(process.execPath, ["--input-type=module", "-e", unpack, entry], {
      env: { ...process.env, TMPDIR: staging }
    })
    await rename(staging, dir).catch((error: NodeJS.ErrnoException) => {
      if (!existsSync(executable)) throw error
    })
  } finally {
    await rm(staging, { recursive: true, force: true })
  }
  return executable
}

export const launchChromium = async () =>
  chromium.launch({
    executablePath: systemChromium() ?? (await packagedChromium()),
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync"
    ]
  })
