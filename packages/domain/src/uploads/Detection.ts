// An upload's content type, from its bytes only (supplement "Uploads"): the signatures `file-type`
// recognizes, narrowed to the media the service names (image/png|jpeg|gif|webp, application/pdf,
// audio/wav|mpeg|ogg|flac|mp4, video/mp4|webm); else text/plain for at least one byte of UTF-8
// without NUL or C0 controls (tab, LF, CR and FF allowed); else application/octet-stream. The
// text rule is judged while the bytes stream past (TextSniffer), the signatures on the stored file.
import { isUtf8 } from "node:buffer"
import type { UploadContentType } from "@troupe/storage/repositories/Uploads"
import { fileTypeFromFile } from "file-type"

/** file-type's answers for the media the service names, in the service's words. */
const mediaTypes: Readonly<Record<string, UploadContentType>> = {
  "image/png": "image/png",
  "image/apng": "image/png",
  "image/jpeg": "image/jpeg",
  "image/gif": "image/gif",
  "image/webp": "image/webp",
  "application/pdf": "application/pdf",
  "audio/wav": "audio/wav",
  "audio/mpeg": "audio/mpeg",
  "audio/ogg": "audio/ogg",
  // Opus in an Ogg container (voice notes): the OggS signature all the same.
  "audio/ogg; codecs=opus": "audio/ogg",
  "audio/flac": "audio/flac",
  "audio/mp4": "audio/mp4",
  "audio/x-m4a": "audio/mp4",
  "video/mp4": "video/mp4",
  "video/x-m4v": "video/mp4",
  "video/webm": "video/webm"
}

/** C0 bytes text may hold: tab, LF, FF, CR. */
const allowedControls = new Set([0x09, 0x0a, 0x0c, 0x0d])
/** The bytes text may not hold (searched one by one with the native indexOf: faster than a loop in JS). */
const controlBytes = Array.from({ length: 0x20 }, (_, byte) => byte).filter((byte) => !allowedControls.has(byte))

/** How many bytes the UTF-8 sequence led by `byte` has (0 for a byte that leads none). */
const sequenceLength = (byte: number) => (byte < 0x80 ? 1 : byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 0)

/** Judges the text rule over bytes seen chunk by chunk, holding back at most a split character. */
export class TextSniffer {
  private text = true
  private seen = 0
  private carry: Uint8Array | undefined

  push(chunk: Uint8Array) {
    if (!this.text || chunk.byteLength === 0) return
    this.seen += chunk.byteLength
    const bytes = this.carry === undefined ? chunk : Buffer.concat([this.carry, chunk])
    // A character split by the chunk's end waits for the next chunk.
    let start = bytes.length - 1
    while (start > 0 && start > bytes.length - 4 && (bytes[start]! & 0xc0) === 0x80) start--
    const complete = start >= 0 && bytes.length - start < sequenceLength(bytes[start]!) ? start : bytes.length
    this.carry = complete < bytes.length ? Uint8Array.from(bytes.subarray(complete)) : undefined
    const whole = bytes.subarray(0, complete)
    if (!isUtf8(whole)) {
      this.text = false
      return
    }
    const view = Buffer.from(whole.buffer, whole.byteOffset, whole.byteLength)
    if (controlBytes.some((byte) => view.indexOf(byte) !== -1)) this.text = false
  }

  /** Whether every byte seen (at least one) is UTF-8 text by the rule. */
  get isText() {
    return this.text && this.seen > 0 && this.carry === undefined
  }
}

/** The content type of the file at `path`, whose bytes `sniffer` has seen. */
export const detectContentType = async (path: string, sniffer: TextSniffer): Promise<UploadContentType> => {
  const signature = await fileTypeFromFile(path)
  const media = signature === undefined ? undefined : mediaTypes[signature.mime]
  if (media !== undefined) return media
  return sniffer.isText ? "text/plain" : "application/octet-stream"
}
