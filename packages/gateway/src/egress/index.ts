/**
 * Egress: the downstream side of the `tools/call` hot path.
 *
 * `DownstreamClient.call(connection, request)` makes one egress-checked,
 * pooled HTTP call with the secret injected, a total timeout, bounded
 * retries for idempotent requests, a per-connection circuit breaker,
 * cancellation and a response size limit. See each module for its rules.
 *
 * @since 0.1.0
 */
import { Layer } from "effect"
import { CircuitBreaker } from "effect/persistence"
import { Breakers } from "./Breakers.ts"
import { DownstreamClient, type DownstreamClientOptions } from "./DownstreamClient.ts"
import { EgressPolicy } from "./EgressPolicy.ts"
import type { InvalidEgressConfig } from "./Errors.ts"
import { Resolver } from "./Resolver.ts"
import { SafeDispatcher, type SafeDispatcherOptions } from "./SafeDispatcher.ts"

export * from "./Breakers.ts"
export * from "./DownstreamClient.ts"
export * from "./EgressConnection.ts"
export * from "./EgressPolicy.ts"
export * from "./Errors.ts"
export * from "./Exchange.ts"
export * from "./Resolver.ts"
export * from "./RetryPolicy.ts"
export * from "./SafeDispatcher.ts"

/** Everything `layer` takes. */
export interface EgressOptions extends DownstreamClientOptions, SafeDispatcherOptions {
  /** Extra CIDRs refused for every connection. */
  readonly refuse?: ReadonlyArray<string> | undefined
}

/**
 * `DownstreamClient` (and `EgressPolicy`) wired together. The resolver and
 * the circuit-breaker store stay requirements: `Resolver.layerSystem` and
 * `CircuitBreaker.layerStoreMemory()` / `layerStoreRedis()` in production,
 * test doubles in tests.
 */
export const layer = (
  options: EgressOptions = {}
): Layer.Layer<
  DownstreamClient | EgressPolicy,
  InvalidEgressConfig,
  Resolver | CircuitBreaker.CircuitBreakerStore
> => {
  const policy = EgressPolicy.layer({ refuse: options.refuse })
  return DownstreamClient.layer(options).pipe(
    Layer.provide(Layer.mergeAll(SafeDispatcher.layer(options), Breakers.layer)),
    Layer.provideMerge(policy)
  )
}

/** `layer` with the system resolver and an in-memory breaker store (one replica, no Redis). */
export const layerMemory = (
  options: EgressOptions = {}
): Layer.Layer<DownstreamClient | EgressPolicy, InvalidEgressConfig> =>
  layer(options).pipe(Layer.provide(Layer.mergeAll(Resolver.layerSystem, CircuitBreaker.layerStoreMemory())))
