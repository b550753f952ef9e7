// The grep scenario's documents: deterministic Markdown-like notes (headings, wrapped and
// unwrapped paragraphs, bullets, dates and version numbers, one line of a long run of "a"s)
// of exactly `bytes` UTF-8 bytes. The text never contains `absentWord`, and no line ends in "a"
// (so `(a|aa)+$` matches nothing after trying every line, the run of "a"s included).

export const absentWord = "zanzibar"

/** The common word (about 1 word in 14) and a capitalized one (1 in 1,000, ~10 lines a document). */
export const commonWord = "the"
export const rareWord = "Release"

// Function words weighted by repetition, then content words; none ends in "a" but the article.
const functionWords = [
  ..."the the the the the the of of of and and and to to to in in is is a a that for it with on as was be by this".split(
    " "
  )
]
const contentWords = (
  "agent actor memory note document workspace profile deploy rollback migration schemas index query " +
  "transaction snapshot journal outbox stream event handler request response token session cookie owner member " +
  "steward handle conversation speaker anchor limit pattern match line path scope skill description content " +
  "budget latency throughput replicas primary backup restore archive tombstone override provider tool service " +
  "layer fiber scope runtime machine state transition timer job supervisor mailbox reply error retry timeout " +
  "queue worker batch cache hit miss eviction lease lock fence version counter clock deadline window round " +
  "review decision summary meeting customer report metric alert incident postmortem follow-up owner plan " +
  "estimate risk scope change ticket branch commit merge build test fixture benchmark profile trace log " +
  "quickly carefully later today tomorrow yesterday usually rarely again still already never always often " +
  "small large slow fast stable flaky green red new old open closed pending blocked ready done next previous"
).split(" ")
const sentenceEnds = [".", ".", ".", ".", "?", "!", ":"]

/** A small seeded generator (mulberry32), so every run writes the same bytes. */
const random = (seed: number) => {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

export const prose = (seed: number, bytes: number): string => {
  const next = random(seed)
  const pick = <A>(items: ReadonlyArray<A>) => items[Math.floor(next() * items.length)]!
  const word = () => {
    const roll = next()
    if (roll < 1 / 1000) return rareWord
    if (roll < 0.4) return pick(functionWords)
    if (roll < 0.42) return String(Math.floor(next() * 10000))
    if (roll < 0.43) return `2026-${1 + Math.floor(next() * 12)}-${1 + Math.floor(next() * 28)}`
    if (roll < 0.44) return `v${Math.floor(next() * 5)}.${Math.floor(next() * 20)}.${Math.floor(next() * 9)}`
    return pick(contentWords)
  }
  const sentence = () => {
    const words = Array.from({ length: 5 + Math.floor(next() * 14) }, word)
    words[0] = words[0]!.charAt(0).toUpperCase() + words[0]!.slice(1)
    return `${words.join(" ")}${pick(sentenceEnds)}`
  }
  /** Words wrapped at `width`; a line never ends in "a" (the word moves to the next line). */
  const wrap = (text: string, width: number) => {
    const lines: Array<string> = []
    let line: Array<string> = []
    let length = 0
    for (const token of text.split(" ")) {
      if (length > 0 && length + 1 + token.length > width) {
        let keep = line.length
        while (keep > 1 && line[keep - 1]!.endsWith("a")) keep--
        const carried = line.splice(keep)
        lines.push(line.join(" "))
        line = carried
        length = carried.join(" ").length
      }
      length += (length > 0 ? 1 : 0) + token.length
      line.push(token)
    }
    if (line.length > 0) lines.push(line.join(" "))
    return lines
  }
  const paragraph = () => Array.from({ length: 2 + Math.floor(next() * 6) }, sentence).join(" ")

  const lines: Array<string> = [`# Notes ${seed}: ${pick(contentWords)} and ${pick(contentWords)}`, ""]
  let section = 0
  let total = 0
  while (total < bytes) {
    const roll = next()
    const block =
      roll < 0.08
        ? ["", `## ${pick(contentWords)} ${++section}`, ""]
        : roll < 0.3
          ? Array.from({ length: 2 + Math.floor(next() * 5) }, () => `- ${sentence()}`)
          : roll < 0.45
            ? [paragraph(), ""]
            : [...wrap(paragraph(), 72 + Math.floor(next() * 30)), ""]
    lines.push(...block)
    total += block.reduce((sum, line) => sum + line.length + 1, 0)
  }
  lines.splice(Math.floor(lines.length / 2), 0, `fixture: ${"a".repeat(64)}b`)

  // Whole lines up to the size, then one last line filling it exactly (ASCII, ending in ".").
  let text = ""
  for (const line of lines) {
    if (text.length + line.length + 1 > bytes - 2) break
    text += `${line}\n`
  }
  const fill = bytes - text.length - 2
  return `${text}${lines.join(" ").slice(0, fill).padEnd(fill, " ")}.\n`
}
