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
export * from "./Breakers.ts"
export * from "./DownstreamClient.ts"
export * from "./Egress.ts"
export * from "./EgressConnection.ts"
export * from "./EgressPolicy.ts"
export * from "./Errors.ts"
export * from "./Exchange.ts"
export * from "./Resolver.ts"
export * from "./RetryPolicy.ts"
export * from "./SafeDispatcher.ts"
