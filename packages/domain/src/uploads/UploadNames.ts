// An upload's filename (supplement "Uploads"): the client's name sanitized (directory parts and
// control characters removed, trimmed, at most 255 bytes of UTF-8, "upload" when nothing is
// left), then, for detected image, audio, video and PDF types, an extension the type allows (kept
// in any case when the name has one, else the last extension replaced, or one appended, by the
// type's first). Other types keep the sanitized name.
import type { UploadContentType } from "@troupe/storage/repositories/Uploads"

/** The extensions each detected media type allows; the first is the one given when none fits. */
export const allowedExtensions: Partial<Record<UploadContentType, ReadonlyArray<string>>> = {
  "image/png": ["png"],
  "image/jpeg": ["jpg", "jpeg", "jpe"],
  "image/gif": ["gif"],
  "image/webp": ["webp"],
  "application/pdf": ["pdf"],
  "audio/wav": ["wav"],
  "audio/mpeg": ["mp3"],
  "audio/ogg": ["ogg", "oga"],
  "audio/flac": ["flac"],
  "audio/mp4": ["m4a", "mp4a", "m4b"],
  "video/mp4": ["mp4", "m4v"],
  "video/webm": ["webm"]
}

export const maxFilenameBytes = 255
export const fallbackFilename = "upload"

// Cc (C0, DEL, C1) and the bidirectional controls, which can make a name read as another
// extension than the one it has (U+202E "evil\u202Egnp.exe").
const controls = /[\p{Cc}\p{Bidi_Control}]/gu

/** The longest prefix of `text` within `maxBytes` bytes of UTF-8, never splitting a character. */
const truncateBytes = (text: string, maxBytes: number) => {
  if (Buffer.byteLength(text, "utf8") <= maxBytes) return text
  let bytes = 0
  let end = 0
  for (const character of text) {
    const size = Buffer.byteLength(character, "utf8")
    if (bytes + size > maxBytes) break
    bytes += size
    end += character.length
  }
  return text.slice(0, end)
}

/** The client's filename as kept: last path segment, no controls, trimmed, ≤ 255 bytes, never empty. */
export const sanitizeFilename = (name: string | undefined): string => {
  const last = (name ?? "").split(/[/\\]/).pop() ?? ""
  const cleaned = truncateBytes(last.replace(controls, "").trim(), maxFilenameBytes).trim()
  return cleaned === "" || cleaned === "." || cleaned === ".." ? fallbackFilename : cleaned
}

/** Where the name's extension starts (its dot), or -1: a leading dot names a hidden file, not an extension. */
const extensionDot = (name: string) => {
  const dot = name.lastIndexOf(".")
  return dot > 0 ? dot : -1
}

/** `name` with an extension `contentType` allows (unchanged for types without a list). */
export const correctExtension = (name: string, contentType: UploadContentType): string => {
  const allowed = allowedExtensions[contentType]
  if (allowed === undefined) return name
  const dot = extensionDot(name)
  if (dot >= 0 && allowed.includes(name.slice(dot + 1).toLowerCase())) return name
  const extension = `.${allowed[0]!}`
  const stem = dot >= 0 ? name.slice(0, dot) : name
  return `${truncateBytes(stem, maxFilenameBytes - extension.length)}${extension}`
}

/** The filename an upload keeps: sanitized, then its extension corrected for its detected type. */
export const uploadFilename = (declared: string | undefined, contentType: UploadContentType) =>
  correctExtension(sanitizeFilename(declared), contentType)
