/**
 * Audit records (`kind: "auth"`) of requests refused before a caller was
 * admitted: unauthenticated (401/403), rate limited by the per-IP or
 * per-identity bucket (429), shed (503); and failed admin authentications.
 *
 * **Rules**
 *
 * - The presented credential is described, never kept: its kind (`none`,
 *   `client_token`, `admin_token`, `jwt`, `bearer`, or the scheme, e.g.
 *   `basic`) and a fingerprint, the first 16 hex digits of the SHA-256 of the
 *   credential: enough to tell one attacker's token from another's, not
 *   enough to give it back (a token is 32 random bytes; the fingerprint is a
 *   truncated one-way hash of it).
 * - A refused authentication says why in `reason`, one machine-readable word
 *   (`auth/RefusalReason.ts`: `expired`, `wrong_audience`, `unknown_token`,
 *   ...); a rate-limit refusal has none (its bucket says it).
 * - Counted exactly, sampled into rows so a flood cannot fill the log: every
 *   refusal adds one to `janus.audit.refusals` (by outcome and bucket). Rows
 *   are sampled per key = (client address, outcome, bucket, reason, surface) and
 *   window of `window` (60 s): the first refusal of a key in its window
 *   writes a row at once (`repeats: 1`); the others of the window are only
 *   counted, and when the window ends one summary row carries their number
 *   (`repeats: n`, the last credential seen). So a key writes at most two
 *   rows a minute, and the sum of `repeats` per `client_ip` is the exact
 *   number of refusals of that address: nothing is dropped, only folded.
 * - At most `maxKeys` (10,000) keys are tracked at once; refusals of further
 *   addresses share the key of the address `*` until windows end, so memory
 *   and rows stay bounded whatever the number of addresses. A sweeper writes
 *   the summaries of ended windows every 10 s, and all of them when the
 *   scope closes.
 * - Refusal rows never wait for durability: a refusal is not a call the
 *   client saw answered with a result, and waiting would let a flood tie up
 *   the writer.
 *
 * @since 0.1.0
 */
import { type AuditInput, AuditLog, type AuditOutcome } from "@janus/storage"
import { Clock, Context, Duration, Effect, Layer, Metric } from "effect"
import type { Headers } from "effect/http"
import { createHash } from "node:crypto"
import type { Caller } from "../mcp/Caller.ts"
import { CurrentRequestId, traceIdOf } from "../observability/HttpObservability.ts"

/** Every refusal before admission, by outcome and bucket (exact; the rows are sampled). */
export const refusals = Metric.counter("janus.audit.refusals", {
  description: "Requests refused before a caller was admitted (unauthenticated, rate limited, shed), " +
    "counted exactly; their audit rows are sampled per address and minute",
  incremental: true
})

/** What a refused request presented: kind and fingerprint (see the rules). */
export interface Credential {
  readonly kind: string
  readonly fingerprint: string | null
}

const JWT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/

/** The credential in `Authorization`, described (never its value). */
export const describeCredential = (headers: Headers.Headers): Credential => {
  const header = headers["authorization"]
  if (header === undefined || header.trim() === "") return { kind: "none", fingerprint: null }
  const space = header.trim().indexOf(" ")
  const scheme = (space === -1 ? header.trim() : header.trim().slice(0, space)).toLowerCase()
  const value = space === -1 ? "" : header.trim().slice(space + 1).trim()
  const fingerprint = value === "" ? null : createHash("sha256").update(value).digest("hex").slice(0, 16)
  if (scheme !== "bearer") return { kind: /^[a-z0-9_-]{1,20}$/.test(scheme) ? scheme : "other", fingerprint }
  const kind = value.startsWith("jns_")
    ? "client_token"
    : value.startsWith("jna_")
    ? "admin_token"
    : JWT.test(value)
    ? "jwt"
    : "bearer"
  return { kind, fingerprint }
}

/** One refused request. */
export interface Refusal {
  readonly surface: "mcp" | "admin"
  readonly outcome: AuditOutcome
  readonly status: number
  readonly bucket: string | null
  /** Why authentication refused it (`RefusalReason`); null for a limiter's refusal. */
  readonly reason?: string | null | undefined
  readonly clientIp: string
  readonly headers: Headers.Headers
  /** The caller when authentication had succeeded (a per-identity limit). */
  readonly caller?: Caller | undefined
  readonly tool?: string | undefined
}

export interface AdmissionAuditOptions {
  /** Sampling window per key (default 60 seconds). */
  readonly window?: Duration.Input | undefined
  /** Keys tracked at once (default 10,000). */
  readonly maxKeys?: number | undefined
}

interface Window {
  readonly started: number
  suppressed: number
  last: AuditInput
}

export class AdmissionAudit extends Context.Service<AdmissionAudit, {
  /** Counts `refusal` and, when sampled, records it (see the rules). Never fails, never waits for the database. */
  readonly refused: (refusal: Refusal) => Effect.Effect<void>
  /** Writes the summaries of every open window now (tests, shutdown). */
  readonly flushSummaries: Effect.Effect<void>
}>()("@janus/gateway/calls/AdmissionAudit") {
  static readonly layerWith = (options: AdmissionAuditOptions = {}): Layer.Layer<AdmissionAudit, never, AuditLog> =>
    Layer.effect(AdmissionAudit, Effect.suspend(() => make(options)))

  static readonly layer: Layer.Layer<AdmissionAudit, never, AuditLog> = AdmissionAudit.layerWith()
}

const make = Effect.fnUntraced(function*(options: AdmissionAuditOptions) {
  const log = yield* AuditLog
  const windowMs = Duration.toMillis(Duration.fromInputUnsafe(options.window ?? "60 seconds"))
  const maxKeys = Math.max(1, options.maxKeys ?? 10_000)
  const windows = new Map<string, Window>()
  // refusal rows are not calls answered to a client: they never wait for the commit (see the rules)
  const write = (entry: AuditInput) => Effect.forkDetach(log.record(entry), { startImmediately: true })

  const summary = (w: Window): AuditInput => ({ ...w.last, repeats: w.suppressed })

  /** Writes the summaries of windows ended at `now` (all when `now` is undefined). */
  const sweep = (now: number | undefined) =>
    Effect.suspend(() => {
      const due: Array<AuditInput> = []
      for (const [key, w] of windows) {
        if (now !== undefined && now - w.started < windowMs) continue
        windows.delete(key)
        if (w.suppressed > 0) due.push(summary(w))
      }
      return Effect.forEach(due, write, { discard: true })
    })

  const refused = (r: Refusal): Effect.Effect<void> =>
    Effect.withFiber((fiber) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const credential = describeCredential(r.headers)
        const caller = r.caller
        const entry: AuditInput = {
          kind: "auth",
          identity: caller?.id ?? `ip:${r.clientIp}`,
          tool: r.tool ?? "",
          outcome: r.outcome,
          status: r.status,
          at: new Date(now),
          requestId: Context.get(fiber.context, CurrentRequestId) ?? null,
          traceId: traceIdOf(fiber.context),
          callerName: caller?.name ?? null,
          callerSubject: caller?.kind === "oauth" ? caller.name ?? null : null,
          callerClient: caller?.clientId ?? null,
          credentialKind: credential.kind,
          credentialFingerprint: credential.fingerprint,
          bucket: r.bucket,
          reason: r.reason ?? null,
          clientIp: r.clientIp,
          action: r.surface,
          repeats: 1
        }
        const metered = Metric.update(
          Metric.withAttributes(refusals, { outcome: r.outcome, bucket: r.bucket ?? "none", surface: r.surface }),
          1
        )
        const writes: Array<AuditInput> = []
        // the window of `key` if it is still open; an ended one is closed with its summary
        const open = (key: string): Window | undefined => {
          const w = windows.get(key)
          if (w === undefined || now - w.started < windowMs) return w
          windows.delete(key)
          if (w.suppressed > 0) writes.push(summary(w))
          return undefined
        }
        const rest = `${r.outcome}\n${r.bucket ?? ""}\n${r.reason ?? ""}\n${r.surface}`
        let key = `${r.clientIp}\n${rest}`
        let w = open(key)
        let sample = entry
        if (w === undefined && windows.size >= maxKeys) {
          key = `*\n${rest}`
          sample = { ...entry, identity: "ip:*", clientIp: "*" }
          w = open(key)
        }
        if (w === undefined) {
          windows.set(key, { started: now, suppressed: 0, last: sample })
          writes.push(sample)
        } else {
          w.suppressed++
          w.last = sample
        }
        return Effect.andThen(metered, Effect.forEach(writes, write, { discard: true }))
      })
    )

  yield* Effect.addFinalizer(() => Effect.andThen(sweep(undefined), log.flush.pipe(Effect.ignore)))
  yield* Effect.gen(function*() {
    while (true) {
      yield* Effect.sleep("10 seconds")
      yield* sweep(yield* Clock.currentTimeMillis)
    }
  }).pipe(Effect.forkScoped)

  return AdmissionAudit.of({
    refused,
    flushSummaries: Effect.flatMap(sweep(undefined), () => Effect.ignore(log.flush))
  })
})
