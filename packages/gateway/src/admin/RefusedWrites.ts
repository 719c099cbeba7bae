/**
 * The audit record of an admin write the admin API did not make: every
 * authenticated `POST`, `PUT`, `PATCH` or `DELETE` that ends in an error
 * leaves one `admin` row, whichever route (or no route) answered it.
 *
 * **Rules**
 *
 * - `AdminRouter` records it around every handler (the fallback's 404 and
 *   405 and the unmatched paths too), after authentication: no route can
 *   forget it, and a route never records its own refusals.
 * - The row: the actor (`admin:<token id>` and the token's name, or the OAuth
 *   subject and client; never the credential), interface, request id and
 *   client address as for a change; the HTTP method in `method`; the request
 *   path without its query in `path`; the HTTP status; outcome `refused` for
 *   a 4xx (a validation error, a conflict, a failed precondition, an unknown
 *   resource, a body that is unreadable, too large or not JSON; nothing was
 *   changed), `error` for a 5xx; and `reason`: `<error code>: <message>`.
 * - The reason and the path are bounded (`ClientText.recorded`, 512
 *   characters, with a marker saying how long they were) and made storable by
 *   the audit log (U+0000 and lone surrogates become U+FFFD), so a 100 KB
 *   field name or a NUL in a refused body still yields a row. The reason is
 *   the message the client was answered: the admin API builds no message from
 *   a secret value or a token (values under credential-like fields are never
 *   shown; anything shaped like a Janus token is masked again here), and the
 *   body itself is never recorded.
 * - A refusal before authentication (401, a 403 of authentication or origin,
 *   a 429) is an `auth` row instead (`calls/AdmissionAudit`): no actor is
 *   known.
 * - Reads (`GET`) that fail are not recorded: they change nothing.
 * - The admin API is the boundary recorded here. The CLI records no
 *   refusals: it writes to the database itself, run by someone who holds
 *   the database and the master key, so its refusals guard nothing that user
 *   could not do otherwise (its changes are audited, `cli/AuditedStorage`).
 *   A `JANUS_CONFIG_FILE` that does not validate is reported by `/readyz`
 *   and the log, as the operator's file, not as an admin write.
 * - The row is written like a change's (`AuditLog.record`, so with
 *   `AUDIT_DURABILITY=sync` the refusal is answered once it is recorded); no
 *   `admin` event goes with it: nothing changed.
 *
 * @since 0.1.0
 */
import type { AuditInput } from "@janus/storage"
import type * as Actor from "../audit/Actor.ts"
import * as ClientText from "../observability/ClientText.ts"
import type { ApiProblem } from "./Problem.ts"
import { maskTokens } from "./Problem.ts"

const WRITES: ReadonlySet<string> = new Set(["POST", "PUT", "PATCH", "DELETE"])

/** Whether a request with `method` is an admin write whose failure is recorded. */
export const isWrite = (method: string): boolean => WRITES.has(method.toUpperCase())

/** The request path as recorded: without the query, bounded. */
export const recordedPath = (url: string): string => ClientText.recorded(url.split("?")[0]!)

/** `<code>: <message>` of `problem`, tokens masked, bounded. */
export const reasonOf = (problem: Pick<ApiProblem, "code" | "message">): string =>
  ClientText.recorded(maskTokens(`${problem.code}: ${problem.message}`))

/** The audit row of the write `method url` made by `actor` and answered with `problem` (see the rules). */
export const inputOf = (
  problem: Pick<ApiProblem, "status" | "code" | "message">,
  method: string,
  url: string,
  actor: Actor.Actor
): AuditInput => ({
  kind: "admin",
  identity: actor.identity,
  outcome: problem.status >= 500 ? "error" : "refused",
  status: problem.status,
  method: method.toUpperCase(),
  path: recordedPath(url),
  reason: reasonOf(problem),
  callerName: actor.name,
  callerSubject: actor.subject,
  callerClient: actor.client,
  interface: actor.interface,
  requestId: actor.requestId,
  clientIp: actor.clientIp
})
