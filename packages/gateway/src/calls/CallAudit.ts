/**
 * Writes one audit record and one `calls` event per tools/call attempt (and
 * per `resources/read`, `prompts/get`, `completion/complete`, resource
 * subscription: the record's `method` says which).
 *
 * **Rules**
 *
 * - Every attempt is recorded exactly once, whatever its outcome: ok, error,
 *   denied, invalid, rate_limited, shed, breaker_open, timeout.
 * - Recording never blocks the call: the audit log and the event log both
 *   buffer in memory and flush in batches (see storage's `AuditLog` and
 *   `EventLog`).
 * - Argument and response bodies are never recorded, only their sizes.
 *
 * @since 0.1.0
 */
import { EventLog } from "@janus/storage"
import { Clock, Context, Effect, Layer } from "effect"
import type { CallRecord, Outcome } from "./CallRecord.ts"

export interface AuditEntry {
  readonly identity: string
  readonly tool: string
  readonly method: string
  readonly connection: string | null
  readonly outcome: Outcome
  readonly status: number | null
  readonly durationMs: number
  readonly bytesIn: number
  readonly bytesOut: number
  readonly redactions: number
  readonly at: Date
}

export class CallAudit extends Context.Service<CallAudit, {
  readonly record: (call: CallRecord, outcome: Outcome) => Effect.Effect<void>
}>()("@janus/gateway/calls/CallAudit") {
  /**
   * Audit records through `sink` (storage's audit log when wired), and a
   * `calls` event for Studio's live view.
   */
  static readonly layerWith = (
    sink: (entry: AuditEntry) => Effect.Effect<void>
  ): Layer.Layer<CallAudit, never, EventLog> =>
    Layer.effect(
      CallAudit,
      Effect.gen(function*() {
        const events = yield* EventLog
        return CallAudit.of({
          record: (call, outcome) =>
            Effect.flatMap(Clock.currentTimeMillis, (now) => {
              const entry: AuditEntry = {
                identity: call.identity,
                tool: call.tool,
                method: call.method,
                connection: call.connection,
                outcome,
                status: call.status,
                durationMs: now - call.startedAt,
                bytesIn: call.bytesIn,
                bytesOut: call.bytesOut,
                redactions: call.redactions,
                at: new Date(now)
              }
              return Effect.andThen(
                sink(entry),
                events.append({ topic: "calls", about: [call.tool], data: { ...entry, at: entry.at.toISOString() } })
              )
            })
        })
      })
    )
}
