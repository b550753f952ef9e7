// The request target as routes see it: it must percent-decode to UTF-8 without U+0000 (else 400,
// never a rewrite), and a path segment that is a UUID is spelled in lower case, so one resource
// has one path: routing, handlers and Idempotency-Key envelopes all see the same spelling.
import type { RequestRefused } from "./Refusal.ts"
import { targetProblem } from "./StrictText.ts"

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** Printable ASCII with no `%` and no capital A-F: nothing to decode, refuse or lower-case. */
const alreadyCanonical = /^[\x21-\x24\x26-\x40\x47-\x7e]*$/

const canonicalSegment = (segment: string) => {
  const decoded = decodeURIComponent(segment)
  return uuid.test(decoded) ? decoded.toLowerCase() : segment
}

/** The canonical spelling of a target (path and query), or why it cannot be read. */
export const canonicalTarget = (target: string): string | RequestRefused => {
  if (alreadyCanonical.test(target)) return target
  const problem = targetProblem(target)
  if (problem !== undefined) return problem
  const query = target.indexOf("?")
  const path = query < 0 ? target : target.slice(0, query)
  return path.split("/").map(canonicalSegment).join("/") + (query < 0 ? "" : target.slice(query))
}
