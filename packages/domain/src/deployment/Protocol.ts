// The updater protocol (supplement "Deployment administration"): one JSON line request
// {id, op, args} per connection to the installation's socket, one JSON line answer
// {id, ok: true, result} or {id, ok: false, error: {code, message}}. Schemas of the lines and of
// what each op answers; both ends (the service's client and the reference updater) use them.
import { Schema } from "effect"

export const Image = Schema.Struct({ name: Schema.String, reference: Schema.String })

export const Release = Schema.Struct({ release: Schema.String, images: Schema.Array(Image) })
export type Release = typeof Release.Type

export const Candidate = Schema.Struct({
  ...Release.fields,
  checked_at: Schema.String,
  source_revision: Schema.optionalKey(Schema.String),
  source_url: Schema.optionalKey(Schema.String)
})
export type Candidate = typeof Candidate.Type

export const PreflightCheck = Schema.Struct({
  name: Schema.String,
  status: Schema.Literals(["passed", "blocked", "warning"]),
  message: Schema.String,
  next_step: Schema.optionalKey(Schema.String),
  available_bytes: Schema.optionalKey(Schema.Number),
  required_bytes: Schema.optionalKey(Schema.Number)
})

export const Preflight = Schema.Struct({
  checked_at: Schema.String,
  ready: Schema.Boolean,
  backup: Schema.Boolean,
  checks: Schema.Array(PreflightCheck)
})
export type Preflight = typeof Preflight.Type

/** The phases an upgrade walks (spec "States and transitions", Upgrade receipt). */
export const phases = [
  "accepted",
  "preparing",
  "draining",
  "stopping",
  "backing_up",
  "migrating",
  "activating",
  "resuming",
  "verifying",
  "completed"
] as const
export type Phase = (typeof phases)[number]

export const receiptStatuses = ["running", "succeeded", "failed", "interrupted"] as const
export type ReceiptStatus = (typeof receiptStatuses)[number]

/** An upgrade receipt (spec "Deployment"). */
export const Receipt = Schema.Struct({
  id: Schema.String,
  idempotency_key: Schema.String,
  actor_public_id: Schema.NullOr(Schema.String),
  target: Release,
  previous: Schema.optionalKey(Release),
  phase: Schema.Literals(phases),
  status: Schema.Literals(receiptStatuses),
  accepted_at: Schema.String,
  updated_at: Schema.String,
  completed_at: Schema.optionalKey(Schema.String),
  error: Schema.optionalKey(Schema.Struct({ code: Schema.String, message: Schema.String })),
  recovery: Schema.optionalKey(Schema.String),
  log_cursor: Schema.optionalKey(Schema.String),
  backup: Schema.Boolean,
  database_backup: Schema.NullOr(
    Schema.Struct({ created_at: Schema.String, size_bytes: Schema.Number, available: Schema.Boolean })
  )
})
export type Receipt = typeof Receipt.Type

/** What `describe` and `check` answer: the deployment without `supported`. */
export const Described = Schema.Struct({
  sources: Schema.Array(Image),
  installed: Schema.NullOr(Release),
  candidate: Schema.NullOr(Candidate),
  preflight: Schema.NullOr(Preflight),
  active_operation: Schema.NullOr(Receipt),
  last_operation: Schema.NullOr(Receipt)
})
export type Described = typeof Described.Type

export const LogEntry = Schema.Struct({ cursor: Schema.String, text: Schema.String })

/** What `log` answers: entries after the cursor (up to max_bytes of text), and the receipt. */
export const LogWindow = Schema.Struct({
  entries: Schema.Array(LogEntry),
  next_cursor: Schema.String,
  operation: Receipt
})
export type LogWindow = typeof LogWindow.Type

/** The candidate an upgrade names, as the check answered it (checked_at may be left out). */
export const UpgradeCandidate = Schema.Struct({ ...Candidate.fields, checked_at: Schema.optionalKey(Schema.String) })
export type UpgradeCandidate = typeof UpgradeCandidate.Type

export const UpgradeArgs = Schema.Struct({
  idempotency_key: Schema.String,
  actor_public_id: Schema.NullOr(Schema.String),
  backup: Schema.optionalKey(Schema.Boolean),
  candidate: UpgradeCandidate
})
export type UpgradeArgs = typeof UpgradeArgs.Type

export const CheckArgs = Schema.Struct({ tag: Schema.String, backup: Schema.Boolean })
export const OperationArgs = Schema.Struct({ id: Schema.String })
export const LogArgs = Schema.Struct({ id: Schema.String, cursor: Schema.NullOr(Schema.String), max_bytes: Schema.Int })
export type LogArgs = typeof LogArgs.Type

/** Each op: its arguments and what it answers. */
export const operations = {
  describe: { args: Schema.Struct({}), result: Described },
  check: { args: CheckArgs, result: Described },
  upgrade: { args: UpgradeArgs, result: Schema.Struct({ operation: Receipt }) },
  operation: { args: OperationArgs, result: Schema.Struct({ operation: Receipt }) },
  log: { args: LogArgs, result: LogWindow }
} as const
export type Op = keyof typeof operations
export type ArgsOf<O extends Op> = (typeof operations)[O]["args"]["Type"]
export type ResultOf<O extends Op> = (typeof operations)[O]["result"]["Type"]

export const RequestLine = Schema.Struct({
  id: Schema.String,
  op: Schema.Literals(["describe", "check", "upgrade", "operation", "log"]),
  args: Schema.Unknown
})
export type RequestLine = typeof RequestLine.Type

export const ProtocolError = Schema.Struct({ code: Schema.String, message: Schema.String })

export const AnswerLine = Schema.Union([
  Schema.Struct({ id: Schema.String, ok: Schema.Literal(true), result: Schema.Unknown }),
  Schema.Struct({ id: Schema.String, ok: Schema.Literal(false), error: ProtocolError })
])
export type AnswerLine = typeof AnswerLine.Type

/** The updater's refusal codes the service passes through (supplement). */
export const refusalCodes = [
  "upgrade_in_progress",
  "recovery_required",
  "candidate_changed",
  "preflight_failed",
  "idempotency_conflict",
  "release_unavailable",
  "not_found",
  "invalid_request"
] as const
export type RefusalCode = (typeof refusalCodes)[number]

/** The longest answer line read from the socket (a log window is at most 64 KiB of text). */
export const maxAnswerBytes = 1024 * 1024
/** The log window's bound (spec "Limits", Deployment). */
export const logWindowBytes = 64 * 1024
