/**
 * Test support for the admission suites: requests, an Admission built in the
 * test's scope, refusals and counters.
 */
import { assert } from "@effect/vitest"
import type { ConfigCache, TokenCache } from "@janus/storage"
import { Context, Effect, Layer, Metric, type Scope } from "effect"
import { Headers } from "effect/http"
import { randomBytes } from "node:crypto"
import { Admission, type AdmissionConfigError, type AdmissionOptions } from "../../src/auth/index.ts"
import type { Caller } from "../../src/mcp/Caller.ts"
import type { AdmissionRefused, AdmissionRequest } from "../../src/mcp/Guard.ts"

/** A name no other test uses. */
export const unique = (prefix: string): string => `${prefix}-${randomBytes(4).toString("hex")}`

/** An MCP request from `ip` carrying `token` as a bearer token. */
export const request = (options: {
  readonly token?: string | undefined
  readonly authorization?: string | undefined
  readonly ip?: string | undefined
  readonly headers?: Record<string, string> | undefined
  readonly url?: string | undefined
} = {}): AdmissionRequest => {
  const headers: Record<string, string> = { ...options.headers }
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`
  if (options.authorization !== undefined) headers.authorization = options.authorization
  return {
    method: "POST",
    url: options.url ?? "/mcp",
    headers: Headers.fromInput(headers),
    remoteAddress: options.ip ?? "203.0.113.7"
  }
}

/** An Admission with `options`, living as long as the current scope. */
export const admission = (
  options: AdmissionOptions = {}
): Effect.Effect<Admission["Service"], AdmissionConfigError, TokenCache | ConfigCache | Scope.Scope> =>
  Effect.map(Layer.build(Admission.layer(options)), (context) => Context.get(context, Admission))

/** The refusal of `effect`, which must fail. */
export const refusal = (effect: Effect.Effect<Caller, AdmissionRefused>) =>
  Effect.flatMap(Effect.result(effect), (result) => {
    if (result._tag === "Success") {
      return Effect.die(new Error(`expected a refusal, but admitted ${result.success.id}`))
    }
    return Effect.succeed(result.failure)
  })

/** How many of `n` admissions in a row succeed (all are attempted). */
export const admitted = <R>(n: number, admit: (i: number) => Effect.Effect<Caller, AdmissionRefused, R>) =>
  Effect.gen(function*() {
    let ok = 0
    for (let i = 0; i < n; i++) {
      const result = yield* Effect.result(admit(i))
      if (result._tag === "Success") ok++
    }
    return ok
  })

/** The current count of a counter. */
export const count = (metric: Metric.Metric<number, Metric.CounterState<number>>) =>
  Effect.map(Metric.value(metric), (state) => Number(state.count))

/** Asserts that nothing a client sees of `refusal` carries a stack trace, an internal error or `secrets`. */
export const assertClean = (refusal: AdmissionRefused, secrets: ReadonlyArray<string> = []) => {
  const visible = `${refusal.message}\n${JSON.stringify(refusal.headers ?? {})}`
  assert.notMatch(visible, /\n\s+at /, "no stack trace")
  assert.notMatch(visible, /Error:|SqlError|StorageError|ECONNREFUSED/, "no internal error text")
  for (const secret of secrets) assert.notInclude(visible, secret)
}
