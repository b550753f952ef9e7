// JSON values as requests carry them: telling objects from arrays and null, and the size the
// spec's limits measure (UTF-8 bytes of the whitespace-free serialization).

export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

export const canonicalBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value))
