// Multipart bodies for upload tests (and the hostile walk): exact bytes, so a test can send parts
// a browser never would (two file parts, a field of the file's name, a truncated body).
import { randomBytes } from "node:crypto"

export interface Part {
  readonly name: string
  /** A file part has a filename parameter (possibly empty); a field part has none. */
  readonly filename?: string | undefined
  /** Sent as is in Content-Disposition (RFC 7578 quoting is the test's business). */
  readonly rawDisposition?: string
  readonly contentType?: string
  readonly data: string | Uint8Array
}

export const newBoundary = () => `----troupe-test-${randomBytes(8).toString("hex")}`

/** The body of `parts` under `boundary`; `closed: false` leaves off the closing delimiter. */
export const multipartBody = (parts: ReadonlyArray<Part>, boundary: string, closed = true): Buffer => {
  const chunks: Array<Buffer> = []
  for (const part of parts) {
    const disposition =
      part.rawDisposition ??
      `form-data; name="${part.name}"${part.filename === undefined ? "" : `; filename="${part.filename}"`}`
    const head = [`--${boundary}`, `Content-Disposition: ${disposition}`]
    if (part.contentType !== undefined) head.push(`Content-Type: ${part.contentType}`)
    chunks.push(Buffer.from(`${head.join("\r\n")}\r\n\r\n`, "utf8"), Buffer.from(part.data), Buffer.from("\r\n"))
  }
  if (closed) chunks.push(Buffer.from(`--${boundary}--\r\n`))
  return Buffer.concat(chunks)
}

/** One file part named upload[file]: the body and its Content-Type. */
export const fileForm = (
  data: string | Uint8Array,
  filename = "file.bin",
  contentType = "application/octet-stream"
) => {
  const boundary = newBoundary()
  return {
    body: multipartBody([{ name: "upload[file]", filename, contentType, data }], boundary),
    contentType: `multipart/form-data; boundary=${boundary}`
  }
}

/** A 1×1 PNG (image/png by its bytes). */
export const onePixelPng = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
  "base64"
)
