/**
 * The gateway's `McpGuard`: the steps of the tools/call hot path around the
 * catalog call, in SPEC.md's order, and the audit of every attempt.
 *
 * **Rules**
 *
 * - Concurrency permit: at most `MCP_MAX_CONCURRENT_CALLS` calls run at once
 *   on this instance; the excess is refused at once (never queued: a queue
 *   behind a slow downstream is what turned bursts into OOMs) with a
 *   JSON-RPC error, reason `shed`, and audited as `shed`.
 * - Fair permits: one identity (`Caller.id`) holds at most
 *   `max(1, ceil(MCP_MAX_CONCURRENT_CALLS x IDENTITY_PERMIT_SHARE))` of them
 *   (half the cap; 100 of the default 200); its excess is shed the same way,
 *   so at least the other half of the cap is always left to the other callers
 *   and one caller behind a slow downstream cannot shed everyone else. The
 *   anonymous caller (no authentication configured) is one identity for
 *   everybody, so the share does not apply to it: the cap alone does.
 * - Every attempt, refused or not, is audited exactly once with its outcome
 *   (`CallAudit`), including calls the client cancelled. Arguments that do
 *   not fit the tool and unknown tools are `invalid`: the caller's mistake.
 * - `admit` (per-IP limiter, authentication, per-identity limiter) and the
 *   authorization of the tool are `Admission`'s; a request `admit` refuses is
 *   counted and (sampled) audited by `AdmissionAudit` (`kind: "auth"`); authorization runs before
 *   the permit, inside the audited region, so a refusal is audited `denied`.
 *   A tools/call that is a later message of a JSON-RPC batch first takes its
 *   own limiter tokens (`admitted`), inside the audited region too: a refusal
 *   there is audited `rate_limited`.
 * - Open streams: one identity holds at most `MCP_MAX_STREAMS_PER_CALLER`
 *   long-lived streams at once on this instance (`holdStream`, see
 *   `http/StreamPermits.ts`): the 2025-era GET stream (standalone or resumed
 *   with `Last-Event-ID`), the legacy `/sse` stream and the 2026-07-28
 *   `subscriptions/listen` stream, on `/mcp` and every `/servers/{name}/mcp`
 *   alike (one count per `Caller.id`). One more is refused before anything is
 *   opened: 429 with `Retry-After`, a message with the cap and the count, and
 *   an `auth` audit row (`rate_limited`, bucket `streams`), sampled like the
 *   other refusals. A tools/call's own response stream is not counted: it
 *   lasts as long as its call, which holds a concurrency permit, and its
 *   side effects have started by the time it becomes a stream, so refusing
 *   it then would be worse than the stream. The anonymous caller is one
 *   identity for everybody (loopback development), so the cap does not
 *   apply to it.
 *
 * @since 0.1.0
 */
import { Cause, Clock, Effect, Exit, Layer } from "effect"
import { Admission } from "../auth/index.ts"
import { JanusConfig } from "../config/JanusConfig.ts"
import * as StreamPermits from "../http/StreamPermits.ts"
import { ErrorCode } from "../jsonrpc/ErrorCode.ts"
import type * as Caller from "../mcp/Caller.ts"
import { AdmissionRefused, type AdmissionRequest, McpGuard } from "../mcp/Guard.ts"
import { ToolCallRefused } from "../mcp/ToolCatalog.ts"
import { AdmissionAudit } from "./AdmissionAudit.ts"
import { CallAudit } from "./CallAudit.ts"
import * as CallOutcome from "./CallOutcome.ts"
import * as CallRecord from "./CallRecord.ts"

/**
 * The part of the concurrency cap one identity may hold. Half: a lone caller
 * still gets half the instance (at the default cap, 100 calls: the identity
 * tier's default burst, so the share never cuts a burst the rate limit
 * admits), and whatever one identity does, the other half stays free for
 * everyone else. A share that adapts to the active identities would have to
 * take back permits already held (calls are never queued or preempted), so the
 * reserve has to be fixed up front.
 */
export const IDENTITY_PERMIT_SHARE = 0.5

/** Permits one identity may hold under a cap of `max` (at least one). */
export const identityPermits = (max: number): number => Math.max(1, Math.ceil(max * IDENTITY_PERMIT_SHARE))

const bucketOf = (cause: Cause.Cause<unknown>): string | null => {
  const error = Cause.findErrorOption(cause)
  if (error._tag === "None") return null
  const e = error.value as { readonly _tag?: unknown; readonly bucket?: unknown }
  return e._tag === "ToolCallRefused" && typeof e.bucket === "string" ? e.bucket : null
}

/** The bytes of a result as JSON (when the catalog did not measure the answer itself). */
const sizeOf = (value: unknown): number => {
  try {
    return Buffer.byteLength(JSON.stringify(value) ?? "")
  } catch {
    return 0
  }
}

export const layer: Layer.Layer<McpGuard, never, JanusConfig | CallAudit | Admission | AdmissionAudit> = Layer.effect(
  McpGuard,
  Effect.gen(function*() {
    const config = yield* JanusConfig
    const audit = yield* CallAudit
    const admission = yield* Admission
    const refusals = yield* AdmissionAudit

    const admit = (request: AdmissionRequest) =>
      Effect.tapError(admission.admit(request), (refusal) =>
        refusals.refused({
          surface: "mcp",
          outcome: CallOutcome.ofAdmissionRefusal(refusal.status),
          status: refusal.status,
          bucket: refusal.bucket ?? null,
          reason: refusal.reason ?? null,
          clientIp: admission.clientAddress(request),
          headers: request.headers,
          caller: refusal.caller
        }))
    const max = config.MCP_MAX_CONCURRENT_CALLS
    const perIdentity = identityPermits(max)
    let active = 0
    /** Permits held per identity (anonymous callers are not counted: see the Rules). */
    const held = new Map<string, number>()

    const shed = (toolName: string) =>
      new ToolCallRefused({
        name: toolName,
        reason: "shed",
        detail: `the gateway is at its limit of ${max} concurrent calls (MCP_MAX_CONCURRENT_CALLS); retry shortly`,
        retryAfterMs: 1_000
      })
    const shedIdentity = (toolName: string) =>
      new ToolCallRefused({
        name: toolName,
        reason: "shed",
        detail: `this identity already holds ${perIdentity} concurrent calls, its share of the gateway's ` +
          `${max} (MCP_MAX_CONCURRENT_CALLS); retry when one of them has finished`,
        retryAfterMs: 1_000
      })

    const guardCall = <A, E, R>(
      caller: Caller.Caller,
      toolName: string,
      call: Effect.Effect<A, E, R>,
      admitted?: Effect.Effect<void, ToolCallRefused>,
      method?: string
    ) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const record = CallRecord.make(caller, toolName, now, method)
        // the permit: taken only after authorization, refused at once (never queued) past the cap
        const permitted = Effect.suspend(
          (): Effect.Effect<A, E | ToolCallRefused, Exclude<R, CallRecord.CurrentCall>> => {
            if (active >= max) return Effect.fail(shed(toolName))
            const counted = caller.kind !== undefined && caller.kind !== "anonymous"
            const mine = counted ? held.get(caller.id) ?? 0 : 0
            if (counted && mine >= perIdentity) return Effect.fail(shedIdentity(toolName))
            active++
            if (counted) held.set(caller.id, mine + 1)
            return call.pipe(
              Effect.provideService(CallRecord.CurrentCall, record),
              Effect.ensuring(Effect.sync(() => {
                active--
                if (!counted) return
                const left = (held.get(caller.id) ?? 1) - 1
                if (left === 0) held.delete(caller.id)
                else held.set(caller.id, left)
              }))
            )
          }
        )
        const authorized = admission.authorize(caller, toolName)
        return (admitted === undefined ? authorized : Effect.andThen(admitted, authorized)).pipe(
          Effect.andThen(permitted),
          Effect.onExit((exit) => {
            const outcome = CallOutcome.ofExit(exit)
            if (Exit.isFailure(exit) && record.status === null && outcome !== "error" && outcome !== "invalid") {
              record.status = ErrorCode.refused
            }
            if (Exit.isFailure(exit)) record.bucket = bucketOf(exit.cause)
            else if (record.bytesOut === 0) record.bytesOut = sizeOf(exit.value)
            // the calls metric (by outcome, tool and connection) is calls/Instrument.ts
            return audit.record(record, outcome)
          })
        ) as Effect.Effect<A, E | ToolCallRefused, R>
      })

    const streams = StreamPermits.make(config.MCP_MAX_STREAMS_PER_CALLER)
    const holdStream = (request: AdmissionRequest, caller: Caller.Caller) =>
      caller.kind === undefined || caller.kind === "anonymous" ? Effect.void : streams.hold(caller.id).pipe(
        Effect.mapError((reached) =>
          new AdmissionRefused({
            status: 429,
            message: `Too many open streams for this identity: it holds ${reached.held} of the ${reached.max} ` +
              `long-lived streams (GET /mcp, /sse, subscriptions/listen) one caller may hold open on this instance ` +
              `(MCP_MAX_STREAMS_PER_CALLER=${reached.max}); close one of them (or end an unused session with ` +
              `DELETE) before opening another`,
            headers: { "retry-after": String(StreamPermits.RETRY_AFTER_SECONDS) },
            retryAfterMs: StreamPermits.RETRY_AFTER_SECONDS * 1_000,
            bucket: "streams",
            caller
          })
        ),
        Effect.tapError(() =>
          refusals.refused({
            surface: "mcp",
            outcome: "rate_limited",
            status: 429,
            bucket: "streams",
            reason: null,
            clientIp: admission.clientAddress(request),
            headers: request.headers,
            caller
          })
        )
      )

    return McpGuard.of({
      admit,
      admitMessage: admission.admitMessage,
      guardCall,
      holdStream,
      openStreams: streams.held
    })
  })
)
