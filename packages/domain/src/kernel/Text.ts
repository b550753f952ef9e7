// What printable text is: the one rule behind every key, path, name, identifier and "one
// printable line" the spec asks to be printable, and how such text is measured (code points).

/**
 * Characters printable text never holds: controls (Cc: C0, DEL, C1, so TAB, CR and LF too),
 * format characters (Cf: bidi embeddings, overrides and isolates such as U+202E and U+2066..9,
 * U+200B..U+200F, U+2060..U+2064, U+FEFF, the TAG characters), and line and paragraph separators
 * (Zl, Zp). Lone surrogates are refused by isWellFormed. Unassigned and private-use code points
 * pass, so the rule does not move with the Unicode version of the engine.
 */
const unprintableCharacter = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u

/** Text that renders as one line and holds nothing invisible that changes how it reads. */
export const isPrintable = (text: string): boolean => text.isWellFormed() && !unprintableCharacter.test(text)

/** Length in Unicode code points, not UTF-16 code units. */
export const codePointLength = (text: string): number => {
  let length = 0
  for (const _ of text) length++
  return length
}

/** A string of printable text, `min` to `max` code points long. */
export const isPrintableText = (value: unknown, min: number, max: number): value is string => {
  if (typeof value !== "string" || !isPrintable(value)) return false
  const length = codePointLength(value)
  return length >= min && length <= max
}
