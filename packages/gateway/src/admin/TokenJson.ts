/**
 * The JSON representation of client and admin tokens: what `/api/v1/client-tokens`
 * and `/api/v1/admin-tokens` return, and what `janus token … --json` prints.
 *
 * **Rules**
 *
 * - Never a hash or a plaintext: the one response that carries a plaintext adds
 *   it as `token` to this representation itself (the `POST` that created it, and
 *   `janus token create`).
 * - Dates are ISO-8601 strings, or `null` when unset.
 * - `active` is computed at the time given: not revoked and, for a client token,
 *   not expired.
 *
 * @since 0.1.0
 */
import type { AdminToken, ClientToken } from "@janus/storage"
import type { JsonObject } from "./JsonBody.ts"

const iso = (date: Date | null): string | null => date === null ? null : date.toISOString()

/** The JSON representation of a client token at `now`. */
export const presentClientToken = (t: ClientToken, now: Date): JsonObject => ({
  id: t.id,
  name: t.name,
  prefix: t.prefix,
  allowedTools: t.allowedTools,
  allowedVirtualServers: t.allowedVirtualServers,
  expiresAt: iso(t.expiresAt),
  revokedAt: iso(t.revokedAt),
  lastUsedAt: iso(t.lastUsedAt),
  createdAt: t.createdAt.toISOString(),
  active: t.isActiveAt(now)
})

/** The JSON representation of an admin token. */
export const presentAdminToken = (t: AdminToken): JsonObject => ({
  id: t.id,
  name: t.name,
  prefix: t.prefix,
  revokedAt: iso(t.revokedAt),
  lastUsedAt: iso(t.lastUsedAt),
  createdAt: t.createdAt.toISOString(),
  active: t.revokedAt === null
})
