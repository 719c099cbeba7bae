/**
 * Who makes an admin change, and through which interface: set by each entry
 * point (the admin API per request, the CLI per command, an apply around its
 * writes) and read by `AdminChanges` when it records the change.
 *
 * **Rules**
 *
 * - The admin API's actor is its authenticated principal: an admin token
 *   (`admin:<id>`, its name) or an OAuth subject (`oauth:<iss>#<sub>`, the
 *   subject and client); the interface is `studio` when the request says it
 *   comes from Studio (`X-Janus-Client: studio`, which Studio sends), `api`
 *   otherwise. The CLI's actor is the operating-system user (`cli:<user>`).
 *   A change made with no actor (the demo seed at start) is `system`.
 * - Inside an apply (`Deferred`), changes are collected rather than written,
 *   and written by the applier once its transaction committed (none for a
 *   dry run or a failed apply): the apply's transaction holds the
 *   connection the audit writer would need (embedded mode has one), and a
 *   change rolled back is no change.
 *
 * @since 0.1.0
 */
import type { AuditInput } from "@janus/storage"
import { Context } from "effect"
import { userInfo } from "node:os"

export type Interface = "api" | "cli" | "studio" | "apply" | "system"

export interface Actor {
  readonly identity: string
  readonly name: string | null
  readonly subject: string | null
  readonly client: string | null
  readonly interface: Interface
  readonly requestId: string | null
  readonly clientIp: string | null
}

/** The actor of the changes the current fiber makes. */
export const CurrentActor = Context.Reference<Actor | undefined>("@janus/gateway/audit/CurrentActor", {
  defaultValue: () => undefined
})

/** Changes collected for later (an apply's, until it commits); absent: record at once. */
export const Deferred = Context.Reference<Array<AuditInput> | undefined>("@janus/gateway/audit/Deferred", {
  defaultValue: () => undefined
})

export const system: Actor = {
  identity: "system",
  name: null,
  subject: null,
  client: null,
  interface: "system",
  requestId: null,
  clientIp: null
}

/** The CLI's actor: the operating-system user running the command. */
export const cli = (): Actor => {
  let user = "unknown"
  try {
    user = userInfo().username
  } catch {
    // no passwd entry (some containers): the uid is all there is
    user = String(process.getuid?.() ?? "unknown")
  }
  return { ...system, identity: `cli:${user}`, name: user, interface: "cli" }
}
