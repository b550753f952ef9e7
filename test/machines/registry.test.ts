// The machine registry's conventions: every machine folder has the same four files (and, for a
// large subject, a rules/ folder of the pure rules its transitions call), every effect
// request is an action of its machine and never shares a name with an event, and snapshots
// migrate one version at a time (a newer version, or a gap, is refused).
import { readdir } from "node:fs/promises"
import {
  type MachineEntry,
  machines,
  migrateSnapshot,
  type PersistedSnapshot,
  SnapshotVersionError
} from "@troupe/machines/registry"
import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import { setup } from "xstate"

const machinesDir = new URL("../../machines/src/", import.meta.url)

describe("machine registry", () => {
  it("every machine folder has its machine, events.ts, context.ts and effects.ts, and is registered", async () => {
    const folders = (await readdir(machinesDir, { withFileTypes: true })).filter((entry) => entry.isDirectory())
    expect(folders.map((folder) => folder.name).sort()).toEqual(Object.keys(machines).sort())
    for (const folder of folders) {
      // A large subject's pure rules, which its transitions call, live apart in rules/.
      const files = (await readdir(new URL(`${folder.name}/`, machinesDir))).filter((name) => name !== "rules")
      expect(files.sort(), folder.name).toEqual(
        ["context.ts", "effects.ts", "events.ts", `${folder.name}.machine.ts`].sort()
      )
    }
  })

  it("effect requests are actions of their machine and never share a name with an event", () => {
    for (const [name, entry] of Object.entries(machines) as Array<[string, MachineEntry]>) {
      const effects = Object.values(entry.effects)
      const events = entry.machine.events
      expect(
        effects.filter((effect) => events.includes(effect)),
        name
      ).toEqual([])
      expect(Object.keys(entry.machine.implementations.actions), name).toEqual(expect.arrayContaining(effects))
    }
  })
})

describe("snapshot migrations", () => {
  const V1Context = Schema.Struct({ count: Schema.Number })
  const machine = setup({ types: { context: {} as { total: number; tag: string } } }).createMachine({
    id: "tally",
    context: { total: 0, tag: "" },
    initial: "open",
    states: { open: {} }
  })
  const entry: MachineEntry = {
    machine,
    version: 3,
    input: Schema.Struct({}),
    events: Schema.Struct({ type: Schema.Literal("tally.add") }),
    effects: {},
    migrations: {
      2: (snapshot) => ({
        ...snapshot,
        value: snapshot.value === "counting" ? "open" : snapshot.value,
        context: { total: Schema.decodeUnknownSync(V1Context)(snapshot.context).count }
      }),
      3: (snapshot) => ({ ...snapshot, context: { ...Object(snapshot.context), tag: "migrated" } })
    }
  }
  const v1: PersistedSnapshot = { status: "active", value: "counting", context: { count: 4 } }

  it("applies each migration from the snapshot's version up to the machine's", () => {
    expect(migrateSnapshot(entry, v1, 1)).toEqual({
      status: "active",
      value: "open",
      context: { total: 4, tag: "migrated" }
    })
    expect(migrateSnapshot(entry, { status: "active", value: "open", context: { total: 1, tag: "x" } }, 3)).toEqual({
      status: "active",
      value: "open",
      context: { total: 1, tag: "x" }
    })
  })

  it("refuses a snapshot newer than the machine, and a version no migration reaches", () => {
    expect(migrateSnapshot(entry, v1, 4)).toBeInstanceOf(SnapshotVersionError)
    const gap = migrateSnapshot({ ...entry, version: 4 }, v1, 1)
    expect(gap).toBeInstanceOf(SnapshotVersionError)
    expect(gap instanceof SnapshotVersionError && gap.message).toContain("no migration from version 3 to 4")
  })
})
