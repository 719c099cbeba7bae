/**
 * Test support for the OAuth suite: keys generated with jose, a loopback
 * authorization server that serves RFC 8414 / OpenID metadata and a JWKS and
 * counts every hit, and token signing helpers.
 */
import { Effect, Layer } from "effect"
import { FetchHttpClient } from "effect/http"
import {
  type CryptoKey,
  exportJWK,
  generateKeyPair,
  importJWK,
  type JWK,
  type JWTHeaderParameters,
  type JWTPayload,
  SignJWT
} from "jose"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { OAuthLayer, type OAuthOptions } from "../../src/oauth/index.ts"

/** A fixed "now" for TestClock-driven tests: 2026-01-01T00:00:00Z. */
export const NOW_MS = Date.UTC(2026, 0, 1)
export const NOW = NOW_MS / 1000

export const RESOURCE = "https://janus.example.com/mcp"

/** A signing key: the private key imported for one algorithm, and its public JWK as published. */
export interface TestKey {
  readonly kid: string
  readonly alg: string
  readonly privateKey: CryptoKey
  readonly publicJwk: JWK
}

const pair = async (generateAlg: string, options?: Record<string, unknown>) => {
  const { privateKey, publicKey } = await generateKeyPair(generateAlg, { extractable: true, ...options })
  return { privateJwk: await exportJWK(privateKey), publicJwk: await exportJWK(publicKey) }
}

const keysFor = async (
  generateAlg: string,
  kid: string,
  algs: ReadonlyArray<string>,
  publishedAlg?: string
): Promise<Record<string, TestKey>> => {
  const { privateJwk, publicJwk } = await pair(generateAlg)
  const published: JWK = { ...publicJwk, kid, use: "sig", ...(publishedAlg ? { alg: publishedAlg } : {}) }
  const out: Record<string, TestKey> = {}
  for (const alg of algs) {
    out[alg] = { kid, alg, privateKey: (await importJWK(privateJwk, alg)) as CryptoKey, publicJwk: published }
  }
  return out
}

const RSA_ALGS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512"]

/** Keys published by the test authorization server. */
export const rsa = await keysFor("RS256", "rsa-1", RSA_ALGS)
export const ec256 = (await keysFor("ES256", "ec-256", ["ES256"], "ES256")).ES256!
export const ec384 = (await keysFor("ES384", "ec-384", ["ES384"], "ES384")).ES384!
export const ec521 = (await keysFor("ES512", "ec-521", ["ES512"], "ES512")).ES512!
export const ed = await keysFor("Ed25519", "ed-1", ["EdDSA", "Ed25519"])
/** An RSA key published with `alg: RS256`, so PS256 with it is a key/alg mismatch. */
export const rsaPinned = await keysFor("RS256", "rsa-pinned", ["RS256", "PS256"], "RS256")
/** Keys not published at first: a rotation key, and an attacker's key. */
export const rotated = (await keysFor("RS256", "rsa-2", ["RS256"])).RS256!
export const rotated3 = (await keysFor("ES256", "ec-3", ["ES256"], "ES256")).ES256!
export const attacker = (await keysFor("RS256", "rsa-evil", ["RS256"])).RS256!

export const publishedKeys: ReadonlyArray<JWK> = [
  rsa.RS256!.publicJwk,
  ec256.publicJwk,
  ec384.publicJwk,
  ec521.publicJwk,
  ed.EdDSA!.publicJwk,
  rsaPinned.RS256!.publicJwk
]

/** Every valid key/algorithm pair, for the per-algorithm cases. */
export const everyAlgorithm: ReadonlyArray<TestKey> = [
  ...RSA_ALGS.map((alg) => rsa[alg]!),
  ec256,
  ec384,
  ec521,
  ed.EdDSA!,
  ed.Ed25519!
]

/** A loopback authorization server. */
export interface AuthServer {
  /** Issuer identifier (origin plus optional path). */
  readonly issuer: string
  readonly origin: string
  readonly jwksUri: string
  /** Keys served at the JWKS URI. */
  keys: ReadonlyArray<unknown>
  /** Status forced on a path (e.g. 500 on `/jwks`); absent means normal. */
  readonly status: Map<string, number>
  /** Overrides the `issuer` named in the metadata documents. */
  metadataIssuer: string | undefined
  /** Fields added to (or, `undefined`, removed from) the metadata documents. */
  extraMetadata: Record<string, unknown>
  /** Hits per path. */
  readonly hits: Map<string, number>
  readonly count: (path: string) => number
  readonly jwksFetches: () => number
}

export interface AuthServerOptions {
  /** Path of the issuer identifier, e.g. `/tenant`. */
  readonly issuerPath?: string
  /** Which metadata the server answers: RFC 8414, OpenID only, or none. */
  readonly metadata?: "oauth" | "openid" | "none"
  readonly keys?: ReadonlyArray<unknown>
}

/** Starts a loopback authorization server for the test's scope. */
export const authServer = (options: AuthServerOptions = {}) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ server: AuthServer; close: () => Promise<void> }>((resolve) => {
        const state: { server?: AuthServer } = {}
        const http = createServer((req, res) => {
          const s = state.server!
          const path = (req.url ?? "/").split("?")[0]!
          s.hits.set(path, (s.hits.get(path) ?? 0) + 1)
          const forced = s.status.get(path)
          const send = (status: number, body?: unknown) => {
            res.writeHead(status, { "content-type": "application/json" })
            res.end(body === undefined ? "" : JSON.stringify(body))
          }
          if (forced !== undefined) return send(forced, { error: "forced" })
          const issuerPath = options.issuerPath ?? ""
          const metadata = {
            issuer: s.metadataIssuer ?? s.issuer,
            jwks_uri: s.jwksUri,
            token_endpoint: `${s.issuer}/token`,
            ...s.extraMetadata
          }
          const mode = options.metadata ?? "oauth"
          if (path === `/.well-known/oauth-authorization-server${issuerPath}` && mode === "oauth") {
            return send(200, metadata)
          }
          if (path === `/.well-known/openid-configuration${issuerPath}` && mode === "openid") return send(200, metadata)
          if (path === "/jwks") return send(200, { keys: s.keys })
          return send(404, { error: "not_found" })
        })
        http.listen(0, "127.0.0.1", () => {
          const port = (http.address() as AddressInfo).port
          const origin = `http://127.0.0.1:${port}`
          const hits = new Map<string, number>()
          state.server = {
            issuer: `${origin}${options.issuerPath ?? ""}`,
            origin,
            jwksUri: `${origin}/jwks`,
            keys: options.keys ?? publishedKeys,
            status: new Map(),
            metadataIssuer: undefined,
            extraMetadata: {},
            hits,
            count: (path) => hits.get(path) ?? 0,
            jwksFetches: () => hits.get("/jwks") ?? 0
          }
          resolve({
            server: state.server,
            close: () =>
              new Promise<void>((done) => {
                http.closeAllConnections()
                http.close(() => done())
              })
          })
        })
      })
    ),
    ({ close }) => Effect.promise(close)
  ).pipe(Effect.map(({ server }) => server))

/** Claims of a valid token for `server`, issued at `now` (seconds); `undefined` in `extra` removes a claim. */
export const claims = (server: AuthServer, now = NOW, extra: Record<string, unknown> = {}): JWTPayload => {
  const all: Record<string, unknown> = {
    iss: server.issuer,
    sub: "user-1",
    aud: RESOURCE,
    scope: "mcp:tools",
    client_id: "client-1",
    iat: now,
    exp: now + 300,
    jti: "jti-1",
    ...extra
  }
  return Object.fromEntries(Object.entries(all).filter(([, v]) => v !== undefined)) as JWTPayload
}

/** Signs `payload` with `key`; `header` overrides the protected header. */
export const sign = (key: TestKey, payload: JWTPayload, header: Partial<JWTHeaderParameters> = {}) =>
  Effect.promise(() =>
    new SignJWT(payload).setProtectedHeader({ alg: key.alg, kid: key.kid, typ: "at+jwt", ...header }).sign(
      key.privateKey
    )
  )

/** Unpadded base64url of a JSON value. */
export const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url")

/** The OAuth layer for `server` with a real (fetch) HttpClient. */
export const oauthLayer = (server: AuthServer, options: Partial<OAuthOptions> = {}) =>
  OAuthLayer({
    resource: RESOURCE,
    authorizationServers: [{ issuer: server.issuer, jwksUri: server.jwksUri }],
    ...options
  }).pipe(Layer.provide(FetchHttpClient.layer))

/** Waits in real time (outside the TestClock) until `predicate` holds, up to 5 s. */
export const eventually = (predicate: () => boolean) =>
  Effect.promise(async () => {
    const deadline = Date.now() + 5_000
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error("condition not reached within 5 s")
      await new Promise((r) => setTimeout(r, 5))
    }
  })

/** Lets in-flight real I/O settle (real time, not the TestClock). */
export const settle = (ms = 50) => Effect.promise(() => new Promise((r) => setTimeout(r, ms)))

/** Repeats `check` (real time between tries) until it answers true, up to 5 s. */
export const eventuallyEffect = <E, R>(check: Effect.Effect<boolean, E, R>): Effect.Effect<void, E, R> =>
  Effect.gen(function*() {
    const deadline = Date.now() + 5_000
    while (!(yield* check)) {
      if (Date.now() > deadline) return yield* Effect.die(new Error("condition not reached within 5 s"))
      yield* settle(5)
    }
  })
