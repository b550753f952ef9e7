// The upload scenario's twin (scripts/bench/uploads.ts): a bare node:http server that writes each
// POST body, as it arrives, to a file under BENCH_TWIN_DIR (fs.createWriteStream, fsynced before
// it closes), then answers 201: the transport and the disk write of an upload, with none of
// Troupe's work (no multipart parsing, hashing, detection or row). GET answers 200 (readiness).
import { randomUUID } from "node:crypto"
import { createWriteStream } from "node:fs"
import { rm } from "node:fs/promises"
import { createServer } from "node:http"
import { join } from "node:path"
import { pipeline } from "node:stream/promises"

const directory = process.env.BENCH_TWIN_DIR!

createServer((request, response) => {
  if (request.method !== "POST") return void response.end("ready")
  const path = join(directory, randomUUID())
  pipeline(request, createWriteStream(path, { flush: true, mode: 0o600 }))
    .then(() => rm(path))
    .then(
      () => response.writeHead(201).end(),
      () => response.writeHead(500).end()
    )
}).listen(Number(process.env.PORT), "127.0.0.1")
