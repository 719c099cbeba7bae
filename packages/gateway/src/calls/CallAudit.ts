/**
 * Writes one audit record and one `calls` event per tools/call attempt (and
 * per `resources/read`, `prompts/get`, `completion/complete`, resource
 * subscription: the record's `method` says which).
 *
 * **Rules**
 *
 * - Every attempt is recorded exactly once, whatever its outcome: ok, error,
 *   denied, invalid, rate_limited, shed, breaker_open, timeout (refusals
 *   before a caller is admitted are `AdmissionAudit`'s).
 * - The record names the caller as it was then: the client token's name, or
 *   the OAuth subject and client; the request id of the HTTP request and the
 *   trace id of the call's span, so a record is found from a log line or a
 *   trace and back.
 * - With AUDIT_DURABILITY=sync (the default) `record` returns once the row is
 *   durable (storage's `AuditLog`: committed on Postgres, group commit;
 *   journaled on the embedded store), so the call is answered only after
 *   that; the `calls` event for Studio is written after the row.
 * - Argument and response bodies are never recorded, only their sizes.
 * - The name a client chose (tool, `<connection>/<uri>`) is recorded, in the
 *   row and in the event, cut to `ClientText.MAX_RECORDED` characters with a
 *   marker: the attempt is audited whatever the name, and a 12,000-character
 *   name is not repeated whole into every row and every Studio frame.
 *
 * @since 0.1.0
 */
import { type AuditInput, EventLog } from "@janus/storage"
import { Clock, Context, Effect, Layer } from "effect"
import * as ClientText from "../observability/ClientText.ts"
import { CurrentRequestId, traceIdOf } from "../observability/HttpObservability.ts"
import type { CallOutcome as Outcome } from "./CallOutcome.ts"
import type { CallRecord } from "./CallRecord.ts"

/** The audit input of `call` ended with `outcome` at `now`, in `context` (request id, span). */
export const entryOf = (
  call: CallRecord,
  outcome: Outcome,
  now: number,
  context: Context.Context<never>
): AuditInput => {
  const caller = call.caller
  return {
    kind: "call",
    identity: call.identity,
    tool: ClientText.recorded(call.tool),
    method: call.method,
    connection: call.connection,
    outcome,
    status: call.status,
    durationMs: now - call.startedAt,
    bytesIn: call.bytesIn,
    bytesOut: call.bytesOut,
    redactions: call.redactions,
    at: new Date(now),
    requestId: Context.get(context, CurrentRequestId) ?? null,
    traceId: traceIdOf(context),
    callerName: caller.name ?? null,
    callerSubject: caller.kind === "oauth" ? caller.name ?? null : null,
    callerClient: caller.clientId ?? null,
    credentialKind: caller.kind ?? "anonymous",
    bucket: call.bucket
  }
}

export class CallAudit extends Context.Service<CallAudit, {
  readonly record: (call: CallRecord, outcome: Outcome) => Effect.Effect<void>
}>()("@janus/gateway/calls/CallAudit") {
  /**
   * Audit records through `sink` (storage's audit log when wired), and a
   * `calls` event for Studio's live view.
   */
  static readonly layerWith = (
    sink: (entry: AuditInput) => Effect.Effect<void>
  ): Layer.Layer<CallAudit, never, EventLog> =>
    Layer.effect(
      CallAudit,
      Effect.gen(function*() {
        const events = yield* EventLog
        return CallAudit.of({
          record: (call, outcome) =>
            Effect.withFiber((fiber) =>
              Effect.flatMap(Clock.currentTimeMillis, (now) => {
                const entry = entryOf(call, outcome, now, fiber.context)
                return Effect.andThen(
                  sink(entry),
                  events.append({
                    topic: "calls",
                    about: [ClientText.recorded(call.tool)],
                    data: { ...entry, at: new Date(now).toISOString() }
                  })
                )
              })
            )
        })
      })
    )
}
