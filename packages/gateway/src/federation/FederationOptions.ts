/**
 * The settings of the federation (`UpstreamPool.ts`): its timings, bounds and
 * per-connection overrides.
 *
 * @since 0.1.0
 */
import type { McpConnection } from "@janus/storage"
import type { Duration } from "effect"
import type { UpstreamAuthConfig } from "./UpstreamAuth.ts"

/** Settings an operator can give a connection besides (or instead of) the stored ones. */
export interface ConnectionOverrides {
  /** Replaces the stored `toolPrefix` (or `<connection name>/`) in front of every tool name (may be `""`). */
  readonly toolPrefix?: string | undefined
  /** Replaces the connection's stored auth. */
  readonly auth?: UpstreamAuthConfig | undefined
}

export interface FederationOptions {
  readonly clientInfo?: { readonly name: string; readonly version: string } | undefined
  /** Bound of connecting and of one complete `tools/list` (all pages). Default 5 s. */
  readonly listTimeout?: Duration.Input | undefined
  /** How long `list` waits for upstreams on their first connection attempt. Default 2 s. */
  readonly firstListWait?: Duration.Input | undefined
  /** Health probe interval of a healthy upstream. Default 30 s. */
  readonly probeInterval?: Duration.Input | undefined
  /** Reconnection backoff of an unhealthy upstream. Default 1 s doubling to 60 s. */
  readonly backoff?: { readonly initial?: Duration.Input; readonly max?: Duration.Input } | undefined
  /** Largest message accepted from an upstream. Default 16 MiB. */
  readonly maxMessageBytes?: number | undefined
  /** Tools accepted from one upstream. Default 5,000. */
  readonly maxTools?: number | undefined
  /** Per-connection settings beyond storage's columns. */
  readonly overrides?: ((connection: McpConnection) => ConnectionOverrides | undefined) | undefined
}
