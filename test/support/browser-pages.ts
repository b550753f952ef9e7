// What the headless Chromium tests share: a test server with the people a file needs and one
// Chromium for the whole file, and pages that record every request they make and every error.
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, expect } from "vitest"
import { launchChromium } from "./chromium.ts"
import { startTestServer, type TestServer } from "./server.ts"

interface ServerBesideChromium {
  readonly server: TestServer
  readonly browser: Browser
  /**
   * A page in a fresh context that records its requests (websockets too) and page errors.
   * `finish` expects some request, none beyond the server's host and no error, then closes it.
   */
  readonly openPage: () => Promise<{ readonly page: Page; readonly finish: () => Promise<void> }>
}

/** Before the file's tests: a test server, `prepare`d (its people), and Chromium; both closed after. */
export const serverBesideChromium = (prepare: (server: TestServer) => Promise<unknown>): ServerBesideChromium => {
  let server: TestServer | undefined
  let browser: Browser | undefined
  beforeAll(async () => {
    server = await startTestServer()
    await prepare(server)
    browser = await launchChromium()
  })
  afterAll(async () => {
    await browser?.close()
    await server?.close()
  })
  const openPage = async () => {
    const context = await browser!.newContext()
    const page = await context.newPage()
    const requested: Array<string> = []
    page.on("request", (req) => requested.push(req.url()))
    page.on("websocket", (socket) => requested.push(socket.url()))
    const errors: Array<string> = []
    page.on("pageerror", (error) => errors.push(error.message))
    const finish = async () => {
      const host = new URL(server!.baseUrl).host
      expect(requested.length).toBeGreaterThan(0)
      expect(requested.filter((url) => new URL(url).host !== host)).toEqual([])
      expect(errors).toEqual([])
      await context.close()
    }
    return { page, finish }
  }
  return {
    get server() {
      return server!
    },
    get browser() {
      return browser!
    },
    openPage
  }
}
