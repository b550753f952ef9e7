// The benchmark's subject: a counter whose one event assigns its context and emits one item, so
// each step writes exactly a snapshot, a journal row and an outbox item (no row handlers, jobs
// or timers).

import { defineActor } from "@troupe/actors/Binding"
import { Schema } from "effect"
import { assign, emit, setup } from "xstate"

export const benchKind = "bench_counter"
export const countEvent = { type: "bench.count" } as const

export const benchMachine = setup({
  types: {
    context: {} as { count: number },
    events: {} as { type: "bench.count" }
  }
}).createMachine({
  id: "benchCounter",
  context: { count: 0 },
  initial: "counting",
  states: {
    counting: {
      on: {
        "bench.count": {
          actions: [
            assign({ count: ({ context }) => context.count + 1 }),
            emit(({ context }) => ({ type: "bench.counted", count: context.count }))
          ]
        }
      }
    }
  }
})

export const benchBinding = defineActor({
  kind: benchKind,
  entry: {
    machine: benchMachine,
    version: 1,
    input: Schema.Struct({}),
    events: Schema.Struct({ type: Schema.Literal("bench.count") }),
    effects: {},
    migrations: {}
  },
  resourceType: "bench_counter",
  stream: (actorId) => `bench_counter:${actorId}`,
  rows: {},
  jobs: {}
})
