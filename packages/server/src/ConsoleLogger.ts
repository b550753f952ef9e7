// The console logger of `troupe serve`: the lines of Effect's default logger (time, level, fiber,
// log spans, the message as console.log renders it, then the cause) with the annotations after the
// message as ` key=value` (JSON for a value that is not a plain word), gathered by Effect's batched
// logger and written to stdout (stderr under LogToStderr) once per window, not per line. A busy
// server logs a line per request: a write per line cost a fifth of the CPU of a static answer,
// and inspecting the annotations as an object another sixth. Lines still pending are written
// when the server stops.
import { formatWithOptions } from "node:util"
import { Cause, Effect, Logger, References } from "effect"

/** How long a line may wait before it is written. */
export const logWindowMillis = 50

/** A line for stderr (under LogToStderr); every other line is a plain string for stdout. */
class StderrLine {
  readonly text: string
  constructor(text: string) {
    this.text = text
  }
}

type Line = string | StderrLine

const twoDigits = (value: number) => value.toString().padStart(2, "0")

let clockSecond = Number.NaN
let clockPrefix = ""

const clockTime = (date: Date) => {
  const millis = date.getTime()
  const second = Math.floor(millis / 1000)
  if (second !== clockSecond) {
    clockSecond = second
    clockPrefix = `${twoDigits(date.getHours())}:${twoDigits(date.getMinutes())}:${twoDigits(date.getSeconds())}.`
  }
  const fraction = millis - second * 1000
  return `${clockPrefix}${fraction < 10 ? "00" : fraction < 100 ? "0" : ""}${fraction}`
}

const colorsFor = (stream: NodeJS.WriteStream) => stream.isTTY === true && stream.hasColors()

const plainWord = /^[\w./:@+-]+$/

const annotationValue = (value: unknown) => {
  if (typeof value === "string" && plainWord.test(value)) return value
  if (typeof value === "bigint") return value.toString()
  return JSON.stringify(value) ?? String(value)
}

const levelLabels = new Map<string, string>()

const levelLabel = (level: string) => {
  let label = levelLabels.get(level)
  if (label === undefined) {
    label = level.toUpperCase()
    levelLabels.set(level, label)
  }
  return label
}

// Runs for every line (a busy server logs one per request): no per-line arrays or entries.
const lineOf = Logger.make<unknown, Line>(({ cause, date, fiber, logLevel, message }) => {
  const toStderr = fiber.getRef(Logger.LogToStderr)
  let spans = ""
  for (const [label, startedAt] of fiber.getRef(References.CurrentLogSpans)) {
    spans += ` ${label.replace(/[\s="]/g, "_")}=${date.getTime() - startedAt}ms`
  }
  let annotated = ""
  const annotations = fiber.getRef(References.CurrentLogAnnotations)
  for (const key in annotations) annotated += ` ${key}=${annotationValue(annotations[key])}`
  const head = `[${clockTime(date)}] ${levelLabel(logLevel)} (#${fiber.id})${spans}:`
  const single = Array.isArray(message) ? (message.length === 1 ? message[0] : undefined) : message
  const text =
    typeof single === "string"
      ? `${head} ${single}`
      : formatWithOptions(
          { colors: colorsFor(toStderr ? process.stderr : process.stdout) },
          "%s",
          head,
          ...(Array.isArray(message) ? message : [message])
        )
  const shownCause = cause.reasons.length > 0 ? ` ${Cause.pretty(cause)}` : ""
  const line = `${text}${annotated}${shownCause}`
  return toStderr ? new StderrLine(line) : line
})

const write = (lines: ReadonlyArray<Line>) => {
  const out: Array<string> = []
  const err: Array<string> = []
  for (const line of lines) {
    if (typeof line === "string") out.push(line)
    else err.push(line.text)
  }
  if (out.length > 0) process.stdout.write(`${out.join("\n")}\n`)
  if (err.length > 0) process.stderr.write(`${err.join("\n")}\n`)
}

/** Replaces the default console logger (the tracer's logger stays) for the life of the layer. */
export const consoleLoggerLayer = Logger.layer([
  Logger.batched(lineOf, {
    window: `${logWindowMillis} millis`,
    flush: (lines) => Effect.sync(() => write(lines))
  }),
  Logger.tracerLogger
])
