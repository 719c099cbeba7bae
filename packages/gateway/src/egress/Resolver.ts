/**
 * Name resolution for downstream connections.
 *
 * **Rules**
 *
 * - Only `SafeDispatcher`'s connect-time lookup calls the resolver, and only
 *   when the pool opens a new socket: a call on a warm pooled connection does
 *   no DNS lookup.
 * - Its answer is checked and then handed to the socket as is, so the address
 *   dialled is the address checked (no second resolution can differ).
 * - A service, so tests map names to refused addresses without touching DNS.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Schema } from "effect"
import * as Dns from "node:dns"
import * as Net from "node:net"

/** One address a name resolved to. */
export interface ResolvedAddress {
  readonly address: string
  readonly family: 4 | 6
}

/** The name could not be resolved; `code` is the resolver's (e.g. `ENOTFOUND`). */
export class ResolveError extends Schema.TaggedError<ResolveError>()("ResolveError", {
  hostname: Schema.String,
  code: Schema.String
}) {
  override get message(): string {
    return `${this.code}: could not resolve ${this.hostname}`
  }
}

export class Resolver extends Context.Service<Resolver, {
  readonly resolve: (hostname: string) => Effect.Effect<ReadonlyArray<ResolvedAddress>, ResolveError>
}>()("@janus/gateway/egress/Resolver") {
  /** The operating system's resolver (`getaddrinfo` through `dns.lookup`), answers in the order it gives them. */
  static readonly layerSystem: Layer.Layer<Resolver> = Layer.succeed(
    Resolver,
    Resolver.of({
      resolve: (hostname) =>
        Effect.callback<ReadonlyArray<ResolvedAddress>, ResolveError>((resume) => {
          Dns.lookup(hostname, { all: true, order: "verbatim" }, (error, addresses) => {
            if (error !== null) resume(Effect.fail(new ResolveError({ hostname, code: error.code ?? "EAI_FAIL" })))
            else resume(Effect.succeed(addresses as ReadonlyArray<ResolvedAddress>))
          })
        })
    })
  )

  /**
   * A fixed table from host name (matched case-insensitively, trailing dot
   * ignored) to addresses; other names fail with `ENOTFOUND`. `calls` counts
   * lookups per name, so tests can see that a warm connection does none.
   */
  static layerTest(
    table: Readonly<Record<string, string | ReadonlyArray<string>>>,
    calls?: Map<string, number>
  ): Layer.Layer<Resolver> {
    const entries = new Map<string, ReadonlyArray<ResolvedAddress>>()
    for (const [name, value] of Object.entries(table)) {
      const list = typeof value === "string" ? [value] : value
      entries.set(
        name.toLowerCase(),
        list.map((address) => ({ address, family: Net.isIP(address) === 6 ? 6 : 4 }))
      )
    }
    return Layer.succeed(
      Resolver,
      Resolver.of({
        resolve: (hostname) =>
          Effect.suspend(() => {
            const name = hostname.toLowerCase().replace(/\.$/, "")
            calls?.set(name, (calls.get(name) ?? 0) + 1)
            const found = entries.get(name)
            return found === undefined
              ? Effect.fail(new ResolveError({ hostname, code: "ENOTFOUND" }))
              : Effect.succeed(found)
          })
      })
    )
  }
}
