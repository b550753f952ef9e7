// Headless Chromium for browser tests: Debian's `chromium` driven by playwright-core, so nothing
// is downloaded at install or run time.
import { existsSync } from "node:fs"
import { chromium } from "playwright-core"

const executablePath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium"

export const launchChromium = () => {
  if (!existsSync(executablePath)) throw new Error(`Chromium is needed at ${executablePath} (apt-get install chromium)`)
  return chromium.launch({
    executablePath,
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
}
