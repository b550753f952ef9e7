// Pass one of the step compiler: reads the authored step tree as written into nodes (fans,
// sequences, leaves; each key authored or minted) and every fault at its path in the request's
// tree. A leaf's own members are CompilerVerbs.ts's; waits and references are Compiler.ts's.
import type { OnFailure } from "@troupe/machines/run/context"
import { isObject } from "../kernel/Json.ts"
import type { StepFaultCode } from "./CompilerRefusals.ts"
import {
  defaultOnFailure,
  given,
  isInteger,
  type Leaf,
  type LeafVerb,
  limits,
  membersOf,
  type ParseContext,
  type Ref,
  readLeaf,
  type StepReader
} from "./CompilerVerbs.ts"
import { rawGraphNames } from "./StepShell.ts"

/** A fault found, with the pre-order number of the step it belongs to (faults are listed in that order). */
export interface Fault {
  readonly code: StepFaultCode
  readonly path: string
  readonly order: number
}

export interface FanNode {
  readonly type: "fan"
  readonly order: number
  readonly path: string
  readonly top: number
  readonly members: ReadonlyArray<StepNode | SeqNode>
  /** A race's barrier (until any or k); null for an `all` fan. */
  readonly race: { readonly key: string; readonly until: number; readonly losers: "cancel" | "run_out" } | null
  readonly mirror: unknown
}

/** An array member of a fan: its steps run in sequence. */
export interface SeqNode {
  readonly type: "seq"
  readonly items: ReadonlyArray<StepNode>
  readonly mirror: unknown
}

/** A step as read; null when it has no single verb (its fault is already listed). */
export type StepNode = Leaf | FanNode | null

export interface Parsed {
  readonly top: ReadonlyArray<StepNode>
  /** The top-level steps mirrored for the receipt (a step without a verb as written). */
  readonly mirrors: ReadonlyArray<unknown>
  readonly faults: ReadonlyArray<Fault>
}

const verbs = ["tool", "model", "ask", "wait", "parallel"] as const
type Verb = (typeof verbs)[number]

const fanMembers: ReadonlySet<string> = new Set(["parallel", "until", "losers", "key"])
const onFailures: ReadonlySet<string> = new Set(["halt", "propagate", "absorb"])
const keyPattern = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/

/** A task key as authored (`[A-Za-z0-9][A-Za-z0-9_-]{0,63}`). */
export const isTaskKey = (value: unknown): value is string => typeof value === "string" && keyPattern.test(value)

const mirrorOf = (node: StepNode | SeqNode, written: unknown): unknown => (node === null ? written : node.mirror)

/**
 * Reads one envelope's step tree (a nonempty list; the caller says steps_required). Keys are
 * minted `s<revision>-<verb>-<n>`, n counting that verb over the whole envelope in written
 * pre-order (a fan before its members, nested members included, authored keys taking their number).
 */
export const parseSteps = (steps: ReadonlyArray<unknown>, context: ParseContext): Parsed => {
  const faults: Array<Fault> = []
  const counts = new Map<Verb, number>()
  let ordinal = 0
  let leaves = 0

  const mint = (verb: Verb) => {
    const n = (counts.get(verb) ?? 0) + 1
    counts.set(verb, n)
    return `s${context.revision}-${verb}-${n}`
  }

  const readerFor = (order: number): StepReader => {
    const fault = (code: StepFaultCode, path: string) => faults.push({ code, path, order })
    return {
      fault,
      refs: (value, path) => {
        if (!given(value)) return []
        if (!Array.isArray(value)) {
          fault("invalid_reference", path)
          return []
        }
        return value.flatMap((key, j): ReadonlyArray<Ref> => {
          if (typeof key === "string") return [{ key, path: `${path}[${j}]` }]
          fault("invalid_reference", `${path}[${j}]`)
          return []
        })
      },
      timeout: (value, path, max) => {
        if (!given(value)) return undefined
        if (isInteger(value) && value >= 1 && value <= max) return value
        fault("invalid_timeout_ms", path)
        return undefined
      }
    }
  }

  /** Members a step does not take: raw graph names are refused as such, others as unknown options. */
  const strayMembers = (
    reader: StepReader,
    object: Readonly<Record<string, unknown>>,
    allowed: ReadonlySet<string>,
    at: string
  ) => {
    for (const name of Object.keys(object)) {
      if (!allowed.has(name)) {
        reader.fault(rawGraphNames.has(name) ? "edge_authoring_refused" : "unknown_step_option", `${at}.${name}`)
      }
    }
  }

  const parseFan = (
    step: Readonly<Record<string, unknown>>,
    path: string,
    top: number,
    order: number,
    reader: StepReader
  ): FanNode => {
    const { fault } = reader
    strayMembers(reader, step, fanMembers, path)
    const minted = mint("parallel")
    const written = Array.isArray(step.parallel) ? step.parallel : []
    if (written.length === 0) fault("empty_parallel", `${path}.parallel`)
    if (written.length > limits.fanWidth) fault("too_wide_a_fan", `${path}.parallel`)
    const isRace = given(step.until) && step.until !== "all"
    let until = 0
    if (isRace) {
      if (step.until === "any") until = 1
      else if (isInteger(step.until) && step.until >= 1) until = step.until
      else fault("invalid_until", `${path}.until`)
      if (until > written.length && written.length > 0) fault("unsatisfiable_until", `${path}.until`)
    }
    const losers = step.losers ?? "cancel"
    if (losers !== "cancel" && losers !== "run_out") fault("invalid_losers", `${path}.losers`)
    let key = minted
    if (given(step.key)) {
      if (!isRace) fault("key_needs_a_race", `${path}.key`)
      else if (isTaskKey(step.key)) key = step.key
      else fault("key_invalid", `${path}.key`)
    }
    const members = written.map((member, j): StepNode | SeqNode => {
      const at = `${path}.parallel[${j}]`
      if (!Array.isArray(member)) return parseStep(member, at, top, false)
      if (member.length === 0) fault("empty_parallel", at)
      const items = member.map((item, k) => parseStep(item, `${at}[${k}]`, top, false))
      return { type: "seq", items, mirror: items.map((item, k) => mirrorOf(item, member[k])) }
    })
    const race = until === 0 ? null : ({ key, until, losers: losers === "run_out" ? "run_out" : "cancel" } as const)
    const mirror = {
      ...step,
      parallel: members.map((member, j) => mirrorOf(member, written[j])),
      ...(race === null ? {} : { key })
    }
    return { type: "fan", order, path, top, members, race, mirror }
  }

  const parseStep = (value: unknown, path: string, top: number, topLevel: boolean): StepNode => {
    const order = ordinal++
    const reader = readerFor(order)
    const { fault } = reader
    const named = isObject(value) ? verbs.filter((verb) => Object.hasOwn(value, verb)) : []
    const verb = named[0]
    if (!isObject(value) || named.length !== 1 || verb === undefined) {
      fault("step_verb_invalid", path)
      return null
    }
    const seed = context.firstIsSeed && topLevel && top === 0 && context.promptMechanism !== "raw"
    if (seed && verb !== "model") fault("seed_not_a_model_step", path)
    if (verb === "parallel") return parseFan(value, path, top, order, reader)

    strayMembers(reader, value, new Set([verb]), path)
    const body = value[verb]
    if (!isObject(body)) {
      fault("step_verb_invalid", path)
      return null
    }
    leaves++
    const verbPath = `${path}.${verb}`
    strayMembers(reader, body, membersOf[verb], verbPath)
    let key = mint(verb)
    if (given(body.key)) {
      if (isTaskKey(body.key)) key = body.key
      else fault("key_invalid", `${verbPath}.key`)
    }
    const after = reader.refs(body.after, `${verbPath}.after`)
    let onFailure: OnFailure = defaultOnFailure[verb as LeafVerb]
    if (given(body.on_failure)) {
      if (typeof body.on_failure === "string" && onFailures.has(body.on_failure)) {
        onFailure = body.on_failure as OnFailure
      } else fault("invalid_on_failure", `${verbPath}.on_failure`)
    }
    const mirror = { [verb]: { ...body, key } }
    const base = { type: "leaf", order, verbPath, top, topLevel, key, after, onFailure, mirror } as const
    return readLeaf(verb, body, base, reader, context, seed)
  }

  const top = steps.map((step, i) => parseStep(step, `steps[${i}]`, i, true))
  if (leaves > limits.leaves) faults.push({ code: "too_many_steps", path: "steps", order: -1 })
  return { top, mirrors: top.map((node, i) => mirrorOf(node, steps[i])), faults }
}
