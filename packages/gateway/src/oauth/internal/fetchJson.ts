/**
 * One bounded GET of a JSON document from an authorization server (metadata or
 * JWKS), with a timeout and a failure described in words, never with a body.
 *
 * @since 0.1.0
 */
import { Duration, Effect } from "effect"
import { HttpClient } from "effect/http"

/** The outcome of one fetch: the JSON, a 404-like miss, or a failure reason. */
export type FetchResult =
  | { readonly _tag: "Json"; readonly json: unknown }
  | { readonly _tag: "NotFound"; readonly status: number }

/** Largest document accepted, in bytes (JWKS and metadata are a few KiB). */
export const MAX_DOCUMENT_BYTES = 1024 * 1024

export const fetchJson = (
  url: string,
  timeout: Duration.Duration
): Effect.Effect<FetchResult, string, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const response = yield* client.get(url, { headers: { accept: "application/json" } }).pipe(
      Effect.mapError((error) => `request to ${url} failed (${error.reason._tag})`)
    )
    if (response.status === 404 || response.status === 410) {
      return { _tag: "NotFound", status: response.status } as const
    }
    if (response.status < 200 || response.status >= 300) {
      return yield* Effect.fail(`${url} answered HTTP ${response.status}`)
    }
    const text = yield* response.text.pipe(Effect.mapError(() => `reading ${url} failed`))
    if (text.length > MAX_DOCUMENT_BYTES) return yield* Effect.fail(`${url} answered a document over 1 MiB`)
    const json = yield* Effect.try({
      try: () => JSON.parse(text) as unknown,
      catch: () => `${url} did not answer JSON`
    })
    return { _tag: "Json", json } as const
  }).pipe(
    Effect.timeoutOrElse({
      duration: timeout,
      orElse: () => Effect.fail(`${url} did not answer within ${Duration.format(timeout)}`)
    })
  )
