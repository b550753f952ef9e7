// The members of a member-plane body: its canonical wrapped form `{name: {...}}`, or the same
// members at top level (SUPPLEMENT "General shapes").

/** The members of a body in its canonical wrapped form `{name: {...}}`, or at top level. */
export const unwrap = (body: unknown, name: string): Record<string, unknown> => {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return {}
  const wrapped = (body as Record<string, unknown>)[name]
  return typeof wrapped === "object" && wrapped !== null && !Array.isArray(wrapped)
    ? (wrapped as Record<string, unknown>)
    : (body as Record<string, unknown>)
}
