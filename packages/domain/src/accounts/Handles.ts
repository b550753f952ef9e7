// Handles: `[a-z0-9][a-z0-9_-]{1,31}`, unique per account. A default is derived from a display
// name; a taken handle gets -2, -3, ... suffixes.

export const handlePattern = /^[a-z0-9][a-z0-9_-]{1,31}$/

export const isHandle = (value: string): boolean => handlePattern.test(value)

/** The base handle for a display name (always matches handlePattern). */
export const handleBase = (displayName: string): string => {
  const folded = displayName
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, "-")
    .replace(/-{2,}/g, "-")
    .replace(/^[^a-z0-9]+/, "")
    .replace(/[-_]+$/, "")
    .slice(0, 32)
  if (folded.length >= 2) return folded
  return folded.length === 1 ? `${folded}0` : "user"
}

/** The n-th candidate for a base (n = 1 is the base itself), kept within 32 characters. */
export const handleCandidate = (base: string, n: number): string => {
  if (n === 1) return base
  const suffix = `-${n}`
  return `${base.slice(0, 32 - suffix.length)}${suffix}`
}
