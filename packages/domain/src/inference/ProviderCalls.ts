// A stored call as a provider receives it: upload parts carry their bytes. Counting input never
// reads them (an upload part counts by its kind, not its bytes), so a count gets empty bytes; an
// attempt reads each named blob once and hands the bytes over.
import type { ProviderCall, ProviderMessage, ProviderPart } from "../models/Provider.ts"
import type { StoredCall } from "./StoredCall.ts"

const noBytes = new Uint8Array(0)

export type CallBody = Omit<ProviderCall, "modelRef" | "upstreamModel" | "attempt" | "earlierAttemptsOnModel">

/** The blobs a stored call's upload parts name (each once). */
export const namedBlobs = (stored: StoredCall): ReadonlyArray<string> => [
  ...new Set(
    stored.call.messages.flatMap((message) =>
      message.content.flatMap((part) => (part.type === "upload" ? [part.sha256] : []))
    )
  )
]

/** The call's messages with each upload part's bytes (`bytesOf` a blob; none when counting). */
export const providerCallOf = (
  stored: StoredCall,
  bytesOf: (sha256: string) => Uint8Array = () => noBytes
): CallBody => ({
  ...stored.call,
  messages: stored.call.messages.map(
    (message): ProviderMessage => ({
      ...message,
      content: message.content.map(
        (part): ProviderPart =>
          part.type === "text"
            ? part
            : { type: "upload", contentType: part.contentType, filename: part.filename, bytes: bytesOf(part.sha256) }
      )
    })
  )
})
