// Uploads end to end through the real server (spec "Upload", "Member: uploads", supplement
// "Uploads"): the three doors and their credential rules, the multipart rules, detection from the
// bytes and the filename rules, creator-only descriptors and reads, bytes with Range, ETag and
// 304, thumbnails and previews rendered once and kept, and the daily reaper of unnamed uploads.
import { createHash } from "node:crypto"
import { readdir } from "node:fs/promises"
import { join } from "node:path"
import { Uploads } from "@troupe/domain/uploads/Uploads"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import sharp from "sharp"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { bearer, type JsonResponse, request } from "../../support/http.ts"
import type { ConnectedAgent } from "../../support/members.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { fileForm, multipartBody, newBoundary, type Part } from "../../support/uploads.ts"
import { agentFields, decide, machineFields, poll, startDevice } from "../oauth/support-device.ts"

let server: TestServer
let owner: Awaited<ReturnType<typeof twoStewards>>
let agent: ConnectedAgent
let other: ConnectedAgent
let transport: string
let runnerTransport: string

beforeAll(async () => {
  server = await startTestServer()
  owner = await twoStewards(server, { owner: ["uploader", "bystander"], member: [] })
  agent = owner.ownerAgents[0]!
  other = owner.ownerAgents[1]!
  const connected = async (fields: Record<string, string>, scope?: "user_private") => {
    const started = await startDevice(server, fields)
    await decide(owner.ownerBrowser, started.user_code, "approve", scope)
    return (await poll(server, started.device_code)).body
  }
  transport = (await connected(agentFields("executor-uploader"))).executor_access_token
  runnerTransport = (await connected(machineFields("upload-runner"), "user_private")).access_token
})
afterAll(() => server?.close())

const sha256 = (bytes: Uint8Array | string) => createHash("sha256").update(bytes).digest("hex")

const send = async (path: string, body: Buffer, contentType: string | undefined, headers: Record<string, string>) => {
  const response = await fetch(`${server.baseUrl}${path}`, {
    method: "POST",
    headers: { ...(contentType === undefined ? {} : { "content-type": contentType }), ...headers },
    body
  })
  const text = await response.text()
  return { status: response.status, headers: response.headers, body: text === "" ? undefined : JSON.parse(text), text }
}

/** Uploads one file at the member door as `token`. */
const upload = (data: string | Uint8Array, filename?: string, token = agent.token, contentType?: string) => {
  const form = fileForm(data, filename, contentType)
  return send("/agent_api/v1/uploads", form.body, form.contentType, bearer(token))
}

const uploaded = async (data: string | Uint8Array, filename?: string, token = agent.token) => {
  const response = await upload(data, filename, token)
  expect(response.status, response.text).toBe(201)
  return response.body.upload as { public_id: string; filename: string; content_type: string; byte_size: number }
}

const get = (path: string, token = agent.token, headers: Record<string, string> = {}) =>
  fetch(`${server.baseUrl}${path}`, { headers: { ...bearer(token), ...headers } })

const expectRefusal = (response: JsonResponse | { status: number; body: any }, status: number, code: string) =>
  expect({ status: response.status, body: response.body }).toEqual({
    status,
    body: { error: { code, message: expect.any(String) } }
  })

const count = (table: string) =>
  server.run(
    Effect.flatMap(SqlClient, (sql) => sql.unsafe<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).pipe(
      Effect.map((rows) => rows[0]!.n)
    )
  )

/** Every file under the blob store's directory `name` (blobs or tmp). */
const filesUnder = async (name: "blobs" | "tmp") => {
  const root = join(server.dataDir, name)
  const entries = await readdir(root, { recursive: true, withFileTypes: true })
  return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name))
}

const image = (width: number, height: number, format: "png" | "jpeg" | "webp") =>
  sharp({ create: { width, height, channels: 3, background: "#3a6" } })
    [format]()
    .toBuffer()

const animatedGif = async () => {
  const frame = (color: string) =>
    sharp({ create: { width: 40, height: 30, channels: 3, background: color } })
      .png()
      .toBuffer()
  return sharp([await frame("#ff0000"), await frame("#0000ff")], { join: { animated: true } })
    .gif()
    .toBuffer()
}

/** A minimal PCM WAV header with a few samples. */
const wav = () => {
  const samples = Buffer.alloc(8)
  const header = Buffer.alloc(44)
  header.write("RIFF", 0, "latin1")
  header.writeUInt32LE(36 + samples.length, 4)
  header.write("WAVEfmt ", 8, "latin1")
  header.writeUInt32LE(16, 16)
  header.writeUInt16LE(1, 20)
  header.writeUInt16LE(1, 22)
  header.writeUInt32LE(8000, 24)
  header.writeUInt32LE(16000, 28)
  header.writeUInt16LE(2, 32)
  header.writeUInt16LE(16, 34)
  header.write("data", 36, "latin1")
  header.writeUInt32LE(samples.length, 40)
  return Buffer.concat([header, samples])
}

const pdf = Buffer.from("%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n")

describe("doors and credentials", () => {
  it("the member door answers 201 with the descriptor, and the creator reads it back", async () => {
    const response = await upload("hello, world\n", "greeting.txt")
    expect(response.status).toBe(201)
    expect(response.headers.get("cache-control")).toBe("no-store")
    const descriptor = response.body.upload
    expect(descriptor).toEqual({
      public_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      filename: "greeting.txt",
      content_type: "text/plain",
      byte_size: 13,
      created_at: expect.any(String)
    })
    const shown = await request(server.baseUrl, "GET", `/agent_api/v1/uploads/${descriptor.public_id}`, {
      headers: bearer(agent.token)
    })
    expect(shown.status).toBe(200)
    expect(shown.body).toEqual({ upload: descriptor })
  })

  it("a repeat is a second upload (no idempotency), sharing one blob", async () => {
    const first = await uploaded("the same bytes", "a.txt")
    const second = await uploaded("the same bytes", "a.txt")
    expect(second.public_id).not.toBe(first.public_id)
    const digest = sha256("the same bytes")
    const blobs = (await filesUnder("blobs")).filter((path) => path.endsWith(digest))
    expect(blobs).toEqual([join(server.dataDir, "blobs", digest.slice(0, 2), digest)])
  })

  it("the descriptor is the creator's alone: another agent, the steward, an unknown id answer 404", async () => {
    const { public_id } = await uploaded("private", "p.txt")
    for (const token of [other.token, owner.ownerToken]) {
      const shown = await request(server.baseUrl, "GET", `/agent_api/v1/uploads/${public_id}`, {
        headers: bearer(token)
      })
      expectRefusal(shown, 404, "not_found")
    }
    for (const id of ["0190a4c5-0000-7000-8000-000000000000", "not-a-uuid"]) {
      expectRefusal(
        await request(server.baseUrl, "GET", `/agent_api/v1/uploads/${id}`, { headers: bearer(agent.token) }),
        404,
        "not_found"
      )
    }
    for (const read of ["bytes", "thumbnail", "preview"]) {
      const response = await get(`/agent_api/v1/uploads/${public_id}/${read}`, other.token)
      expect(response.status).toBe(404)
      expect(await response.json()).toEqual({ error: { code: "not_found", message: expect.any(String) } })
    }
  })

  it("a transport credential at the member door, or no credential, is 401", async () => {
    for (const headers of [bearer(transport), bearer(runnerTransport), {}]) {
      const form = fileForm("x")
      expectRefusal(await send("/agent_api/v1/uploads", form.body, form.contentType, headers), 401, "unauthorized")
    }
    expectRefusal(
      await request(server.baseUrl, "GET", "/agent_api/v1/uploads/0190a4c5-0000-7000-8000-000000000000", {
        headers: bearer(transport)
      }),
      401,
      "unauthorized"
    )
  })

  it("the executor door takes a transport credential; a member one is 401", async () => {
    const form = fileForm("result,1\n", "result.csv")
    const made = await send("/agent_api/v1/executor/uploads", form.body, form.contentType, bearer(runnerTransport))
    expect(made.status).toBe(201)
    expect(made.body.upload).toMatchObject({ filename: "result.csv", content_type: "text/plain", byte_size: 9 })
    const byApplication = await send("/agent_api/v1/executor/uploads", form.body, form.contentType, bearer(transport))
    expect(byApplication.status).toBe(201)
    for (const token of [agent.token, owner.ownerToken]) {
      expectRefusal(
        await send("/agent_api/v1/executor/uploads", form.body, form.contentType, bearer(token)),
        401,
        "unauthorized"
      )
    }
    // An executor's uploads have no member reader.
    const id = made.body.upload.public_id
    for (const token of [agent.token, owner.ownerToken]) {
      expect((await get(`/agent_api/v1/uploads/${id}`, token)).status).toBe(404)
      expect((await get(`/agent_api/v1/uploads/${id}/bytes`, token)).status).toBe(404)
    }
  })

  it("the browser door takes the signed-in cookie from the same origin; the human reads it at the member door", async () => {
    const form = fileForm("from the browser", "note.txt")
    const cookie = { cookie: owner.ownerBrowser.cookieHeader }
    const byOrigin = await send("/uploads", form.body, form.contentType, { ...cookie, origin: server.baseUrl })
    expect(byOrigin.status, byOrigin.text).toBe(201)
    expect(byOrigin.body.upload).toMatchObject({ filename: "note.txt", content_type: "text/plain" })
    const byFetchMetadata = await send("/uploads", form.body, form.contentType, {
      ...cookie,
      "sec-fetch-site": "same-origin"
    })
    expect(byFetchMetadata.status).toBe(201)
    const shown = await get(`/agent_api/v1/uploads/${byOrigin.body.upload.public_id}`, owner.ownerToken)
    expect(shown.status).toBe(200)
    expect((await get(`/agent_api/v1/uploads/${byOrigin.body.upload.public_id}`, agent.token)).status).toBe(404)

    for (const headers of [
      {},
      { origin: "https://evil.example" },
      { "sec-fetch-site": "cross-site", origin: "https://evil.example" },
      { "sec-fetch-site": "same-site" }
    ] as Array<Record<string, string>>) {
      expectRefusal(
        await send("/uploads", form.body, form.contentType, { ...cookie, ...headers }),
        403,
        "not_authorized"
      )
    }
    for (const headers of [{ origin: server.baseUrl }, { ...bearer(agent.token), origin: server.baseUrl }]) {
      expectRefusal(await send("/uploads", form.body, form.contentType, headers), 401, "unauthorized")
    }
  })
})

describe("the multipart body", () => {
  const post = (parts: ReadonlyArray<Part>, options: { closed?: boolean } = {}) => {
    const boundary = newBoundary()
    return send(
      "/agent_api/v1/uploads",
      multipartBody(parts, boundary, options.closed ?? true),
      `multipart/form-data; boundary=${boundary}`,
      bearer(agent.token)
    )
  }
  const file = (data: string, name = "upload[file]"): Part => ({ name, filename: "f.txt", data })

  it("no upload[file] part is 400 parameter_missing", async () => {
    expectRefusal(await post([]), 400, "parameter_missing")
    expectRefusal(await post([file("x", "other")]), 400, "parameter_missing")
    expectRefusal(await post([{ name: "comment", data: "hello" }]), 400, "parameter_missing")
    const json = await request(server.baseUrl, "POST", "/agent_api/v1/uploads", {
      body: { upload: { file: "x" } },
      headers: bearer(agent.token)
    })
    expectRefusal(json, 400, "parameter_missing")
    expectRefusal(
      await send("/agent_api/v1/uploads", Buffer.from("raw"), undefined, bearer(agent.token)),
      400,
      "parameter_missing"
    )
  })

  it("a non-file part of that name, or two, is 400 parameter_invalid; other parts are ignored", async () => {
    const before = await count("uploads")
    expectRefusal(await post([{ name: "upload[file]", data: "not a file" }]), 400, "parameter_invalid")
    expectRefusal(await post([file("one"), file("two")]), 400, "parameter_invalid")
    expectRefusal(await post([file("one"), { name: "upload[file]", data: "field" }]), 400, "parameter_invalid")
    expectRefusal(await post([file("one")], { closed: false }), 400, "parameter_invalid")
    expectRefusal(
      await send("/agent_api/v1/uploads", Buffer.from("x"), "multipart/form-data", bearer(agent.token)),
      400,
      "parameter_invalid"
    )
    expect(await count("uploads")).toBe(before)
    const mixed = await post([{ name: "comment", data: "ignored" }, file("kept"), file("skipped", "other")])
    expect(mixed.status).toBe(201)
    expect(mixed.body.upload.byte_size).toBe(4)
  })

  it("a part without a filename but of type application/octet-stream is a file", async () => {
    const response = await post([{ name: "upload[file]", contentType: "application/octet-stream", data: "abc" }])
    expect(response.status).toBe(201)
    expect(response.body.upload.filename).toBe("upload")
  })

  it("an empty file is an upload of 0 bytes", async () => {
    const descriptor = await uploaded("", "empty.txt")
    expect(descriptor).toMatchObject({ byte_size: 0, content_type: "application/octet-stream", filename: "empty.txt" })
    const bytes = await get(`/agent_api/v1/uploads/${descriptor.public_id}/bytes`)
    expect(bytes.status).toBe(200)
    expect(bytes.headers.get("content-length")).toBe("0")
    expect((await bytes.arrayBuffer()).byteLength).toBe(0)
  })

  it("a compressed body is 415 and stores nothing", async () => {
    const before = await count("uploads")
    const form = fileForm("x")
    const response = await send("/agent_api/v1/uploads", form.body, form.contentType, {
      ...bearer(agent.token),
      "content-encoding": "gzip"
    })
    expectRefusal(response, 415, "unsupported_media_type")
    expect(await count("uploads")).toBe(before)
  })
})

describe("detection from the bytes and the filename", () => {
  const cases: ReadonlyArray<{
    name: string
    data: () => Promise<Uint8Array | string> | Uint8Array | string
    filename: string | undefined
    disposition?: string
    declared?: string
    type: string
    kept: string
  }> = [
    {
      name: "PNG named .jpeg",
      data: () => image(20, 10, "png"),
      filename: "cat.jpeg",
      type: "image/png",
      kept: "cat.png"
    },
    {
      name: "JPEG keeps an allowed extension in any case",
      data: () => image(20, 10, "jpeg"),
      filename: "photo.JPE",
      type: "image/jpeg",
      kept: "photo.JPE"
    },
    {
      name: "JPEG without an extension",
      data: () => image(20, 10, "jpeg"),
      filename: "photo",
      type: "image/jpeg",
      kept: "photo.jpg"
    },
    {
      name: "WebP with the last of several extensions replaced",
      data: () => image(20, 10, "webp"),
      filename: "a.tar.gz",
      type: "image/webp",
      kept: "a.tar.webp"
    },
    { name: "GIF", data: animatedGif, filename: ".hidden", type: "image/gif", kept: ".hidden.gif" },
    {
      name: "PDF with directory parts",
      data: () => pdf,
      filename: "../../etc/report.txt",
      type: "application/pdf",
      kept: "report.pdf"
    },
    {
      name: "WAV with Windows directory parts",
      data: wav,
      filename: "C:\\Users\\me\\take 1.WAV",
      type: "audio/wav",
      kept: "take 1.WAV"
    },
    {
      name: "Ogg Opus (file-type's audio/ogg; codecs=opus) is audio/ogg, its extension corrected",
      data: () =>
        Buffer.concat([Buffer.from("OggS"), Buffer.alloc(24), Buffer.from("OpusHead"), Buffer.from([1, 2, 0, 0])]),
      filename: "voice note.opus",
      type: "audio/ogg",
      kept: "voice note.ogg"
    },
    {
      name: "text keeps its name",
      data: () => "# Notes\n\tindented\r\n\f",
      filename: "notes.md",
      type: "text/plain",
      kept: "notes.md"
    },
    {
      name: "UTF-8 text",
      data: () => "naïve café — 日本語 🎉\n",
      filename: "utf8.txt",
      type: "text/plain",
      kept: "utf8.txt"
    },
    {
      name: "the declared type is ignored",
      data: () => "plain words",
      filename: "fake.png",
      declared: "image/png",
      type: "text/plain",
      kept: "fake.png"
    },
    {
      name: "text with NUL",
      data: () => "a\u0000b",
      filename: "nul.txt",
      type: "application/octet-stream",
      kept: "nul.txt"
    },
    {
      name: "text with a C0 control",
      data: () => "bell\u0007",
      filename: "bell.txt",
      type: "application/octet-stream",
      kept: "bell.txt"
    },
    {
      name: "invalid UTF-8",
      data: () => Buffer.from([0x68, 0x69, 0xff, 0xfe]),
      filename: "bad.txt",
      type: "application/octet-stream",
      kept: "bad.txt"
    },
    {
      name: "a truncated UTF-8 character at the end",
      data: () => Buffer.from([0x61, 0xe2, 0x82]),
      filename: "cut.txt",
      type: "application/octet-stream",
      kept: "cut.txt"
    },
    {
      name: "gzip is not a named medium",
      data: () => Buffer.from([0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
      filename: "x.gz",
      type: "application/octet-stream",
      kept: "x.gz"
    },
    {
      name: "control and bidi characters removed, trimmed (RFC 5987 filename*)",
      data: () => "x",
      filename: undefined,
      disposition: `form-data; name="upload[file]"; filename*=UTF-8''%20%20a%01b%7F%C2%85%E2%80%AEgnp.txt%09%20`,
      type: "text/plain",
      kept: "abgnp.txt"
    },
    { name: "a blank name", data: () => "x", filename: "   ", type: "text/plain", kept: "upload" },
    { name: "a directory only", data: () => "x", filename: "dir/", type: "text/plain", kept: "upload" },
    { name: "a dot-dot name", data: () => "x", filename: "..", type: "text/plain", kept: "upload" },
    {
      name: "an image with an empty name",
      data: () => image(4, 4, "png"),
      filename: "",
      type: "image/png",
      kept: "upload.png"
    }
  ]
  for (const testCase of cases) {
    it(testCase.name, async () => {
      const data = await testCase.data()
      const boundary = newBoundary()
      const part: Part = {
        name: "upload[file]",
        filename: testCase.filename,
        contentType: testCase.declared ?? "application/octet-stream",
        data,
        ...(testCase.disposition === undefined ? {} : { rawDisposition: testCase.disposition })
      }
      const response = await send(
        "/agent_api/v1/uploads",
        multipartBody([part], boundary),
        `multipart/form-data; boundary=${boundary}`,
        bearer(agent.token)
      )
      expect(response.status, response.text).toBe(201)
      expect(response.body.upload).toMatchObject({
        content_type: testCase.type,
        filename: testCase.kept,
        byte_size: Buffer.from(data).length
      })
    })
  }

  it("a name over 255 bytes is cut at a character boundary, its corrected extension kept", async () => {
    const long = `${"é".repeat(200)}.txt`
    const text = await uploaded("x", long)
    expect(Buffer.byteLength(text.filename)).toBeLessThanOrEqual(255)
    expect(text.filename).toBe("é".repeat(127))
    const png = await uploaded(await image(4, 4, "png"), long)
    expect(Buffer.byteLength(png.filename)).toBeLessThanOrEqual(255)
    expect(png.filename).toBe(`${"é".repeat(125)}.png`)
  })
})

describe("bytes", () => {
  const data = Buffer.from("0123456789abcdefghij")
  let id: string
  let etag: string
  beforeAll(async () => {
    id = (await uploaded(data, "digits and letters.txt")).public_id
    etag = `"bytes-${sha256(data)}"`
  })
  const bytes = (headers: Record<string, string> = {}) => get(`/agent_api/v1/uploads/${id}/bytes`, agent.token, headers)

  it("answers the whole file as an attachment with a strong ETag and private caching", async () => {
    const response = await bytes()
    expect(response.status).toBe(200)
    expect(Object.fromEntries(response.headers)).toMatchObject({
      "content-type": "text/plain",
      "content-length": "20",
      "content-disposition": 'attachment; filename="digits and letters.txt"',
      etag,
      "cache-control": "private, max-age=31556952",
      "accept-ranges": "bytes"
    })
    expect(Buffer.from(await response.arrayBuffer())).toEqual(data)
  })

  it("names a non-ASCII file in filename*", async () => {
    const named = await uploaded("x", "résumé.txt")
    const response = await get(`/agent_api/v1/uploads/${named.public_id}/bytes`)
    expect(response.headers.get("content-disposition")).toBe(
      "attachment; filename=\"r?sum?.txt\"; filename*=UTF-8''r%C3%A9sum%C3%A9.txt"
    )
  })

  const ranges: ReadonlyArray<readonly [string, number, string | undefined, string]> = [
    ["bytes=0-9", 206, "bytes 0-9/20", "0123456789"],
    ["bytes=5-", 206, "bytes 5-19/20", "56789abcdefghij"],
    ["bytes=-4", 206, "bytes 16-19/20", "ghij"],
    ["bytes=-40", 206, "bytes 0-19/20", data.toString()],
    ["bytes=18-100", 206, "bytes 18-19/20", "ij"],
    ["bytes=19-19", 206, "bytes 19-19/20", "j"],
    ["bytes=0-1,3-4", 200, undefined, data.toString()],
    ["bytes=abc", 200, undefined, data.toString()],
    ["bytes=9-5", 200, undefined, data.toString()],
    ["items=0-4", 200, undefined, data.toString()]
  ]
  for (const [range, status, contentRange, body] of ranges) {
    it(`Range ${range} answers ${status}`, async () => {
      const response = await bytes({ range })
      expect(response.status).toBe(status)
      expect(response.headers.get("content-range") ?? undefined).toBe(contentRange)
      expect(response.headers.get("content-length")).toBe(String(Buffer.byteLength(body)))
      expect(response.headers.get("etag")).toBe(etag)
      expect(await response.text()).toBe(body)
    })
  }

  it("a start past the end is 416 with Content-Range: bytes */size", async () => {
    for (const range of ["bytes=20-", "bytes=25-30", "bytes=-0"]) {
      const response = await bytes({ range })
      expect(response.status).toBe(416)
      expect(response.headers.get("content-range")).toBe("bytes */20")
      expect(await response.json()).toEqual({ error: { code: "range_not_satisfiable", message: expect.any(String) } })
    }
  })

  it("If-None-Match naming the ETag (or *) answers 304 with no body, on a Range read too", async () => {
    for (const headers of [
      { "if-none-match": etag },
      { "if-none-match": `"other", ${etag}` },
      { "if-none-match": `W/${etag}` },
      { "if-none-match": "*" },
      { "if-none-match": etag, range: "bytes=0-3" }
    ] as Array<Record<string, string>>) {
      const response = await bytes(headers)
      expect(response.status).toBe(304)
      expect(response.headers.get("etag")).toBe(etag)
      expect(response.headers.get("cache-control")).toBe("private, max-age=31556952")
      expect(await response.text()).toBe("")
    }
    const stale = await bytes({ "if-none-match": '"bytes-0000"' })
    expect(stale.status).toBe(200)
  })
})

describe("thumbnail and preview", () => {
  const read = (id: string, kind: "thumbnail" | "preview", headers: Record<string, string> = {}) =>
    get(`/agent_api/v1/uploads/${id}/${kind}`, agent.token, headers)
  const dimensions = async (response: Response) => {
    const metadata = await sharp(Buffer.from(await response.arrayBuffer())).metadata()
    return [metadata.format, metadata.width, metadata.height]
  }

  it("bounds the longest edge at 256 and 1600 px, never enlarging; JPEG stays JPEG", async () => {
    const jpeg = await uploaded(await image(3000, 2000, "jpeg"), "wide.jpg")
    const thumbnail = await read(jpeg.public_id, "thumbnail")
    expect(thumbnail.status).toBe(200)
    expect(thumbnail.headers.get("content-type")).toBe("image/jpeg")
    expect(thumbnail.headers.get("etag")).toBe(`"thumbnail-${sha256(await image(3000, 2000, "jpeg"))}"`)
    expect(thumbnail.headers.get("cache-control")).toBe("private, max-age=31556952")
    expect(thumbnail.headers.get("content-disposition")).toBeNull()
    expect(await dimensions(thumbnail)).toEqual(["jpeg", 256, 171])
    expect(await dimensions(await read(jpeg.public_id, "preview"))).toEqual(["jpeg", 1600, 1067])

    const tall = await uploaded(await image(600, 800, "png"), "tall.png")
    const small = await read(tall.public_id, "thumbnail")
    expect(small.headers.get("content-type")).toBe("image/png")
    expect(await dimensions(small)).toEqual(["png", 192, 256])
    expect(await dimensions(await read(tall.public_id, "preview"))).toEqual(["png", 600, 800])

    const strip = await uploaded(await image(2000, 3, "png"), "strip.png")
    expect(await dimensions(await read(strip.public_id, "thumbnail"))).toEqual(["png", 256, 1])
  })

  it("GIF answers its first frame as PNG; WebP as PNG", async () => {
    const gif = await uploaded(await animatedGif(), "anim.gif")
    const first = await read(gif.public_id, "thumbnail")
    expect(first.headers.get("content-type")).toBe("image/png")
    const { data, info } = await sharp(Buffer.from(await first.arrayBuffer()))
      .raw()
      .toBuffer({ resolveWithObject: true })
    expect([info.width, info.height]).toEqual([40, 30])
    expect([...data.subarray(0, 3)]).toEqual([255, 0, 0])
    const webp = await uploaded(await image(300, 300, "webp"), "square.webp")
    expect(await dimensions(await read(webp.public_id, "preview"))).toEqual(["png", 300, 300])
  })

  it("is rendered on the first read and kept; Range is ignored; If-None-Match answers 304", async () => {
    const png = await uploaded(await image(500, 500, "png"), "kept.png")
    const before = await count("upload_representations")
    const first = await read(png.public_id, "thumbnail", { range: "bytes=0-3" })
    expect(first.status).toBe(200)
    const bytes = Buffer.from(await first.arrayBuffer())
    expect(await count("upload_representations")).toBe(before + 1)
    const again = await read(png.public_id, "thumbnail")
    expect(Buffer.from(await again.arrayBuffer())).toEqual(bytes)
    expect(await count("upload_representations")).toBe(before + 1)
    const digest = sha256(await image(500, 500, "png"))
    expect(await filesUnder("blobs")).toContain(
      join(server.dataDir, "blobs", digest.slice(0, 2), `${digest}.thumbnail`)
    )
    const cached = await read(png.public_id, "thumbnail", { "if-none-match": `"thumbnail-${digest}"` })
    expect(cached.status).toBe(304)
    expect(await cached.text()).toBe("")
  })

  it("other types, and bytes that cannot be rendered, are 404 representation_unavailable", async () => {
    const broken = Buffer.concat([(await image(10, 10, "png")).subarray(0, 40), Buffer.alloc(30, 7)])
    for (const [data, filename] of [
      [pdf, "doc.pdf"],
      ["text", "t.txt"],
      [wav(), "s.wav"],
      [broken, "broken.png"]
    ] as const) {
      const made = await uploaded(data, filename)
      for (const kind of ["thumbnail", "preview"] as const) {
        const response = await read(made.public_id, kind)
        expect(response.status).toBe(404)
        expect(await response.json()).toEqual({
          error: { code: "representation_unavailable", message: expect.any(String) }
        })
      }
    }
  })
})

describe("the reaper", () => {
  const reap = () => server.run(Effect.flatMap(Uploads, (uploads) => uploads.reap))

  it("deletes uploads no row names a day after their creation, and a blob once no upload shares it", async () => {
    // Reap what earlier tests left, so the counts below are this test's.
    server.clock.advance("25 hours")
    await reap()
    const bytes = "reaped bytes"
    const digest = sha256(bytes)
    const blob = join(server.dataDir, "blobs", digest.slice(0, 2), digest)
    const early = await uploaded(bytes, "early.txt")
    const named = await uploaded("named bytes", "named.txt")
    await server.run(
      Effect.flatMap(
        SqlClient,
        (sql) => sql`
          INSERT INTO upload_namings (upload_id, holder_kind, holder_id)
          SELECT id, 'test', 1 FROM uploads WHERE public_id = ${named.public_id}`
      )
    )
    server.clock.advance("20 hours")
    const late = await uploaded(bytes, "late.txt")
    expect(await reap()).toEqual({ uploads: 0, blobs: 0 })

    server.clock.advance("5 hours")
    expect(await reap()).toEqual({ uploads: 1, blobs: 0 })
    expect((await get(`/agent_api/v1/uploads/${early.public_id}`)).status).toBe(404)
    expect(await (await get(`/agent_api/v1/uploads/${late.public_id}/bytes`)).text()).toBe(bytes)
    expect(await filesUnder("blobs")).toContain(blob)

    server.clock.advance("20 hours")
    expect(await reap()).toEqual({ uploads: 1, blobs: 1 })
    expect((await get(`/agent_api/v1/uploads/${late.public_id}/bytes`)).status).toBe(404)
    expect(await filesUnder("blobs")).not.toContain(blob)
    // A named upload lives while its naming row does.
    expect((await get(`/agent_api/v1/uploads/${named.public_id}`)).status).toBe(200)
  })

  it("takes a reaped image's representations with its blob", async () => {
    server.clock.advance("25 hours")
    await reap()
    const png = await uploaded(await image(300, 200, "png"), "gone.png")
    expect((await get(`/agent_api/v1/uploads/${png.public_id}/thumbnail`)).status).toBe(200)
    server.clock.advance("25 hours")
    expect(await reap()).toEqual({ uploads: 1, blobs: 1 })
    const digest = sha256(await image(300, 200, "png"))
    expect((await filesUnder("blobs")).filter((path) => path.includes(digest))).toEqual([])
    expect(await count(`upload_representations WHERE sha256 = '${digest}'`)).toBe(0)
  })
})
