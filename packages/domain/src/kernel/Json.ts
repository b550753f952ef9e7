// JSON values as requests carry them: telling objects from arrays and null.

export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)
