// Upload bounds under load and faults (issue 10, "Must hold under load and faults"): a file of
// exactly 104,857,600 bytes is taken and one byte more is refused without writing a blob; a body
// declared over 110 MiB is refused before it is read; a client that drops mid-upload leaves no
// blob and no row; 20 concurrent uploads stream through without the server holding them in memory.

import { readdir } from "node:fs/promises"
import { request as httpRequest } from "node:http"
import { connect } from "node:net"
import { join } from "node:path"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import type { ConnectedAgent } from "../../support/members.ts"
import { eventually } from "../../support/processes.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { newBoundary } from "../../support/uploads.ts"

let server: TestServer
let agent: ConnectedAgent

beforeAll(async () => {
  server = await startTestServer()
  agent = (await twoStewards(server, { owner: ["bounded"], member: [] })).ownerAgents[0]!
})
afterAll(() => server?.close())

const fileBound = 104_857_600
const mebibyte = 1024 * 1024

const uploadCount = () =>
  server.run(
    Effect.flatMap(SqlClient, (sql) => sql<{ n: number }>`SELECT count(*)::int AS n FROM uploads`).pipe(
      Effect.map((rows) => rows[0]!.n)
    )
  )

const filesUnder = async (name: "blobs" | "tmp") =>
  (await readdir(join(server.dataDir, name), { recursive: true, withFileTypes: true })).filter((entry) =>
    entry.isFile()
  ).length

/** The head and tail of a multipart body around one upload[file] part of `size` bytes. */
const framing = (boundary: string) => ({
  head: Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="upload[file]"; filename="big.bin"\r\n` +
      "Content-Type: application/octet-stream\r\n\r\n"
  ),
  tail: Buffer.from(`\r\n--${boundary}--\r\n`)
})

/**
 * POSTs one file of `size` bytes (each byte `fill`) at the member door, streamed from a 1 MiB
 * buffer with backpressure (the client never holds the file); answers the status and body, even
 * when the server answers before the body is all sent.
 */
const streamUpload = (size: number, fill = 0x61) =>
  new Promise<{ status: number; body: any }>((done, fail) => {
    const boundary = newBoundary()
    const { head, tail } = framing(boundary)
    const block = Buffer.alloc(mebibyte, fill)
    const url = new URL("/agent_api/v1/uploads", server.baseUrl)
    const req = httpRequest(url, {
      method: "POST",
      headers: {
        authorization: `Bearer ${agent.token}`,
        "content-type": `multipart/form-data; boundary=${boundary}`,
        "content-length": String(head.length + size + tail.length)
      }
    })
    let answered = false
    req.on("response", (response) => {
      answered = true
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk))
      response.on("end", () =>
        done({ status: response.statusCode!, body: JSON.parse(Buffer.concat(chunks).toString()) })
      )
    })
    req.on("error", (error) => {
      if (!answered) fail(error)
    })
    let sent = 0
    const pump = () => {
      while (sent < size) {
        if (answered || req.destroyed) return
        const piece = block.subarray(0, Math.min(block.length, size - sent))
        sent += piece.length
        if (!req.write(piece)) return void req.once("drain", pump)
      }
      req.end(tail)
    }
    req.write(head)
    pump()
  })

it("takes a file of exactly 104,857,600 bytes", async () => {
  const answer = await streamUpload(fileBound)
  expect(answer.status).toBe(201)
  expect(answer.body.upload).toMatchObject({ byte_size: fileBound, content_type: "text/plain" })
})

it("refuses a file of 104,857,601 bytes with 413 and writes no blob", async () => {
  const uploads = await uploadCount()
  const blobs = await filesUnder("blobs")
  const answer = await streamUpload(fileBound + 1, 0x62)
  expect(answer).toEqual({ status: 413, body: { error: { code: "content_too_large", message: expect.any(String) } } })
  expect(await uploadCount()).toBe(uploads)
  expect(await filesUnder("blobs")).toBe(blobs)
  expect(await filesUnder("tmp")).toBe(0)
})

it("refuses a body declared over 110 MiB before reading it", async () => {
  const boundary = newBoundary()
  const { head } = framing(boundary)
  const answer = await new Promise<string>((done, fail) => {
    const socket = connect(Number(new URL(server.baseUrl).port), "127.0.0.1")
    const chunks: Array<Buffer> = []
    socket.on("data", (chunk) => chunks.push(chunk))
    socket.on("end", () => done(Buffer.concat(chunks).toString("latin1")))
    socket.on("error", fail)
    // Only the head of the body is ever sent: an answer can only come before it was read.
    socket.write(
      `POST /agent_api/v1/uploads HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${agent.token}\r\n` +
        `content-type: multipart/form-data; boundary=${boundary}\r\ncontent-length: ${110 * mebibyte + 1}\r\n\r\n`
    )
    socket.write(head)
  })
  expect(answer).toMatch(/^HTTP\/1\.1 413 /)
  expect(answer).toMatch(/\r\nconnection: close\r\n/i)
  expect(answer).toContain('"code":"content_too_large"')
  expect(await filesUnder("tmp")).toBe(0)
})

it("leaves no blob and no row when the client drops mid-upload", async () => {
  const uploads = await uploadCount()
  const blobs = await filesUnder("blobs")
  const boundary = newBoundary()
  const { head } = framing(boundary)
  const socket = connect(Number(new URL(server.baseUrl).port), "127.0.0.1")
  socket.on("error", () => {})
  await new Promise((done) => socket.once("connect", done))
  socket.write(
    `POST /agent_api/v1/uploads HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${agent.token}\r\n` +
      `content-type: multipart/form-data; boundary=${boundary}\r\ncontent-length: ${head.length + 20 * mebibyte}\r\n\r\n`
  )
  socket.write(head)
  socket.write(Buffer.alloc(4 * mebibyte, 0x63))
  await eventually("the upload to be staged", 10_000, async () => (await filesUnder("tmp")) === 1, 20)
  socket.destroy()
  await eventually("the staged file to be removed", 10_000, async () => (await filesUnder("tmp")) === 0, 20)
  expect(await uploadCount()).toBe(uploads)
  expect(await filesUnder("blobs")).toBe(blobs)
})

it("streams 20 concurrent uploads of 25 MiB without holding them in memory", async () => {
  const before = process.memoryUsage().rss
  let peak = before
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss)
  }, 10)
  const answers = await Promise.all(Array.from({ length: 20 }, (_, index) => streamUpload(25 * mebibyte, 0x41 + index)))
  clearInterval(sampler)
  expect(answers.map((answer) => answer.status)).toEqual(Array(20).fill(201))
  // 500 MiB went through this process (client and server); what it held at once stays far below.
  expect((peak - before) / mebibyte).toBeLessThan(200)
})
