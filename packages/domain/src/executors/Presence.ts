// Presence of an executor (display only): online while an inbox subscription is open and it was
// heard from within 30 seconds; offline once contacted but not now; not_yet_seen before any contact.
// Discovery rows and the executor's own view show the same members.
export const presenceWindowMillis = 30_000

export const presenceOf = (
  marks: { readonly connected_at: Date | null; readonly last_seen_at: Date | null },
  at: Date
): "online" | "offline" | "not_yet_seen" => {
  if (marks.last_seen_at === null) return "not_yet_seen"
  const fresh = at.getTime() - marks.last_seen_at.getTime() <= presenceWindowMillis
  return marks.connected_at !== null && fresh ? "online" : "offline"
}

/** The presence members of an executor's answers (discovery rows and the executor's own view). */
export const presenceFields = (
  marks: { readonly connected_at: Date | null; readonly last_seen_at: Date | null },
  at: Date
) => ({
  presence: presenceOf(marks, at),
  last_seen_at: marks.last_seen_at,
  connected_at: marks.connected_at
})
