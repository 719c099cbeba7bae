/**
 * The egress services wired together: `DownstreamClient` on the pooled,
 * address-checked dispatcher (`SafeDispatcher`), the per-connection breakers
 * (`Breakers`) and the connection policy (`EgressPolicy`).
 *
 * **Details**
 *
 * The resolver and the circuit-breaker store stay requirements of `layer`
 * (`Resolver.layerSystem` and `CircuitBreaker.layerStoreMemory()` /
 * `layerStoreRedis()` in production, test doubles in tests); `layerMemory`
 * provides the system resolver and an in-memory store.
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
