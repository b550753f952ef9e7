// Restoring a persisted snapshot: its envelope decoded (status, state value, context), migrated
// from the version that wrote it to the machine's own (the registry's per-version migrations),
// then resolved against the machine. A newer version, or a gap in the migrations, is refused.
import { migrateSnapshot, PersistedSnapshot, SnapshotVersionError } from "@troupe/machines/registry"
import type * as Repo from "@troupe/storage/repositories/Actors"
import { Effect, Result, Schema } from "effect"
import type { AnyMachineSnapshot } from "xstate"
import type { Binding } from "./Binding.ts"

const decodePersisted = Schema.decodeUnknownResult(PersistedSnapshot)

/** The row's snapshot as the machine's own, or why it cannot be. */
export const restoreSnapshot = (binding: Binding, row: Repo.SnapshotRow): AnyMachineSnapshot | SnapshotVersionError => {
  const persisted = decodePersisted(row.snapshot)
  if (Result.isFailure(persisted)) {
    return new SnapshotVersionError({
      message: `${row.kind} ${row.actor_id}: unreadable snapshot: ${persisted.failure.message}`
    })
  }
  const migrated = migrateSnapshot(binding.entry, persisted.success, row.version)
  if (migrated instanceof SnapshotVersionError) return migrated
  return binding.entry.machine.resolveState({
    value: migrated.value,
    context: migrated.context,
    status: migrated.status
  })
}

/** The same as an effect: a snapshot this server cannot restore fails. */
export const restore = (binding: Binding, row: Repo.SnapshotRow) =>
  Effect.suspend(() => {
    const restored = restoreSnapshot(binding, row)
    return restored instanceof SnapshotVersionError ? Effect.fail(restored) : Effect.succeed(restored)
  })
