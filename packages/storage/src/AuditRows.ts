/**
 * What an audit record holds, as the API sees it and as the table stores it,
 * and the hash that chains a record to the one before it.
 *
 * **Rules**
 *
 * - Three kinds of record: `call` (one per tools/call attempt), `admin` (one
 *   per configuration change, by any interface, and one per admin write the
 *   admin API refused: outcome `refused`, its method, path and why) and
 *   `auth` (a request refused before a caller was admitted: unauthenticated,
 *   or a limiter; and failed admin authentications). No argument or response body, no credential
 *   value: a presented credential is described by its kind and a fingerprint,
 *   and a changed secret or token hash only as `"changed"` (the caller of
 *   `record` makes the diff; see the gateway's `AdminAudit`).
 * - Values are cleaned so that no record can make a batch fail: text made
 *   `Storable` (U+0000 and lone surrogates become U+FFFD) and cut at 1,024
 *   characters (4,096 for `changes`, a JSON text); numbers finite integers.
 * - `hashOf` is SHA-256 over the record's chain, seq, previous hash and every
 *   stored field in a fixed order (`at` as epoch milliseconds, absent values
 *   as null): editing any field, moving a record to another seq or chain,
 *   or dropping one breaks the chain at that record. A field added after the
 *   chain began (`reason`, `path`) is hashed only when it is set, so every record
 *   written before it keeps its hash.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { hash } from "node:crypto"
import { toDate, toNumber } from "./internal/sql.ts"
import { storableText } from "./Storable.ts"

/** How an attempt ended (`unauthenticated`: refused before a caller was known). */
export const AuditOutcome = Schema.Literals([
  "ok",
  "error",
  "denied",
  /** The arguments did not fit the tool's input schema (or what HTTP can carry): the caller's mistake. */
  "invalid",
  "rate_limited",
  "shed",
  "breaker_open",
  "timeout",
  "unauthenticated",
  /** An authenticated admin write the admin API refused (4xx): nothing was changed. */
  "refused"
])
export type AuditOutcome = typeof AuditOutcome.Type

/** What a record is about. */
export const AuditKind = Schema.Literals(["call", "admin", "auth"])
export type AuditKind = typeof AuditKind.Type

const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))
const Text = Schema.NullOr(Schema.String)
const Version = Schema.NullOr(Schema.Int)

/** One audit record as written: no argument or response body, no credential, ever. */
export const AuditEntry = Schema.Struct({
  kind: AuditKind,
  /** Who: `token:<id>`, `oauth:<iss>#<sub>`, `admin:<id>`, `anonymous`, or `ip:<address>` before authentication. */
  identity: Schema.String,
  /** The tool called (`call`), or `<connection>/<prompt or resource>` for the other methods; empty for the other kinds. */
  tool: Schema.String,
  /**
   * The MCP method of a `call`: `tools/call`, `resources/read`, `prompts/get`, `completion/complete`, ...; the
   * HTTP method of a refused admin write (`POST`, `PUT`, `PATCH`, `DELETE`); empty otherwise.
   */
  method: Schema.String,
  connection: Text,
  outcome: AuditOutcome,
  /** The downstream HTTP status, the JSON-RPC error code, or the HTTP status of a refusal. */
  status: Schema.NullOr(Schema.Int),
  durationMs: Count,
  bytesIn: Count,
  bytesOut: Count,
  redactions: Count,
  at: Schema.Date,
  requestId: Text,
  traceId: Text,
  /** The client or admin token's name, or the OAuth subject, as it was when the record was written. */
  callerName: Text,
  callerSubject: Text,
  callerClient: Text,
  /** The presented credential's kind (`none`, `client_token`, `admin_token`, `jwt`, `other`). */
  credentialKind: Text,
  /** First 16 hex digits of the credential's SHA-256: tells attempts apart, never gives the value back. */
  credentialFingerprint: Text,
  /** The limiter bucket that refused (`ip`, `identity`, `auth_failure`). */
  bucket: Text,
  /**
   * Why an authentication was refused (`auth`): `expired`, `wrong_audience`, `unknown_token`, ...; why an
   * admin write was refused (`refused`): `<error code>: <message>`, bounded.
   */
  reason: Text,
  clientIp: Text,
  /** How many refusals this record stands for (sampled refusals; 1 otherwise). */
  repeats: Count,
  /** The admin change: `create`, `update`, `delete`, `rotate`, `revoke`, `set`, `import`, `apply`, ... */
  action: Text,
  resourceKind: Text,
  resourceId: Text,
  resourceName: Text,
  versionBefore: Version,
  versionAfter: Version,
  /** The changed fields as JSON text: `{ "<field>": { "old": ..., "new": ... } }` or `"changed"` for secrets. */
  changes: Text,
  /** Where the change came from: `api`, `cli`, `studio`, `apply`. */
  interface: Text,
  /** The request path of a refused admin write (`/api/v1/connections/<id>`, no query); null otherwise. */
  path: Text
})
export type AuditEntry = typeof AuditEntry.Type

/** A stored audit record, with its place in its chain. */
export const AuditRecord = Schema.Struct({
  id: Schema.Number,
  ...AuditEntry.fields,
  chain: Text,
  seq: Schema.NullOr(Schema.Number),
  hash: Text
})
export type AuditRecord = typeof AuditRecord.Type

type Optional<T> = { readonly [K in keyof T]?: T[K] | undefined }

/** What `record` takes: `outcome` and `durationMs` (calls) at least; the rest defaults to null / 0 / now. */
export interface AuditInput extends Optional<Omit<AuditEntry, "identity" | "tool" | "outcome" | "durationMs">> {
  readonly identity: string
  readonly tool?: string | undefined
  /** Default `tools/call` for a `call`, empty for the other kinds. */
  readonly method?: string | undefined
  readonly outcome: AuditOutcome
  readonly durationMs?: number | undefined
}

/** A row of `audit_records` without its chain columns (which the writer adds when it flushes). */
export interface InsertRow {
  readonly kind: AuditKind
  readonly at: Date
  readonly identity: string
  readonly tool: string
  readonly method: string
  readonly connection: string | null
  readonly outcome: AuditOutcome
  readonly status: number | null
  readonly duration_ms: number
  readonly bytes_in: number
  readonly bytes_out: number
  readonly redactions: number
  readonly request_id: string | null
  readonly trace_id: string | null
  readonly caller_name: string | null
  readonly caller_subject: string | null
  readonly caller_client: string | null
  readonly credential_kind: string | null
  readonly credential_fingerprint: string | null
  readonly bucket: string | null
  readonly reason: string | null
  readonly client_ip: string | null
  readonly repeats: number
  readonly action: string | null
  readonly resource_kind: string | null
  readonly resource_id: string | null
  readonly resource_name: string | null
  readonly version_before: number | null
  readonly version_after: number | null
  readonly changes: string | null
  readonly interface: string | null
  readonly path: string | null
}

/** A row with its chain columns. */
export interface ChainedRow extends InsertRow {
  readonly chain: string
  readonly seq: number
  readonly prev_hash: string
  readonly hash: string
}

const INT4_MAX = 2_147_483_647
const outcomes: ReadonlySet<string> = new Set(AuditOutcome.literals)
const kinds: ReadonlySet<string> = new Set(AuditKind.literals)

/** Text as stored: `Storable` (see the rules); very long values are cut (they are names and ids, not bodies). */
export const text = (value: string, max = 1_024): string =>
  storableText(value.length > max ? value.slice(0, max) : value)
const textOrNull = (value: string | null | undefined, max?: number): string | null =>
  value === null || value === undefined ? null : text(String(value), max)
const count = (value: number | undefined, max: number, otherwise = 0): number =>
  value === undefined || !Number.isFinite(value) ? otherwise : Math.min(max, Math.max(0, Math.round(value)))
const int = (value: number | null | undefined): number | null =>
  value === null || value === undefined || !Number.isFinite(value)
    ? null
    : Math.max(-INT4_MAX, Math.min(INT4_MAX, Math.trunc(value)))

export const isOutcome = (value: string): value is AuditOutcome => outcomes.has(value)

export const toInsertRow = (input: AuditInput, at: Date): InsertRow => {
  const kind = input.kind !== undefined && kinds.has(input.kind) ? input.kind : "call"
  return {
    kind,
    at,
    identity: text(String(input.identity)),
    tool: text(String(input.tool ?? "")),
    method: text(String(input.method ?? (kind === "call" ? "tools/call" : ""))),
    connection: textOrNull(input.connection),
    outcome: outcomes.has(input.outcome) ? input.outcome : "error",
    status: int(input.status),
    duration_ms: count(input.durationMs, INT4_MAX),
    bytes_in: count(input.bytesIn, Number.MAX_SAFE_INTEGER),
    bytes_out: count(input.bytesOut, Number.MAX_SAFE_INTEGER),
    redactions: count(input.redactions, INT4_MAX),
    request_id: textOrNull(input.requestId),
    trace_id: textOrNull(input.traceId),
    caller_name: textOrNull(input.callerName),
    caller_subject: textOrNull(input.callerSubject),
    caller_client: textOrNull(input.callerClient),
    credential_kind: textOrNull(input.credentialKind),
    credential_fingerprint: textOrNull(input.credentialFingerprint),
    bucket: textOrNull(input.bucket),
    reason: textOrNull(input.reason),
    client_ip: textOrNull(input.clientIp),
    repeats: count(input.repeats, INT4_MAX, 1),
    action: textOrNull(input.action),
    resource_kind: textOrNull(input.resourceKind),
    resource_id: textOrNull(input.resourceId),
    resource_name: textOrNull(input.resourceName),
    version_before: int(input.versionBefore),
    version_after: int(input.versionAfter),
    changes: textOrNull(input.changes, 4_096),
    interface: textOrNull(input.interface),
    path: textOrNull(input.path)
  }
}

/** The stored fields in hash order (the chain columns excepted): every column a writer fills but the chain's. */
export const HASHED: ReadonlyArray<keyof InsertRow> = [
  "kind",
  "at",
  "identity",
  "tool",
  "method",
  "connection",
  "outcome",
  "status",
  "duration_ms",
  "bytes_in",
  "bytes_out",
  "redactions",
  "request_id",
  "trace_id",
  "caller_name",
  "caller_subject",
  "caller_client",
  "credential_kind",
  "credential_fingerprint",
  "bucket",
  "client_ip",
  "repeats",
  "action",
  "resource_kind",
  "resource_id",
  "resource_name",
  "version_before",
  "version_after",
  "changes",
  "interface",
  "reason",
  "path"
]

/** The fields of `HASHED` added after the chain began: hashed only when set (see the rules). */
const HASHED_WHEN_SET: ReadonlySet<keyof InsertRow> = new Set(["reason", "path"])

/** SHA-256 (hex) of the record `row` at `seq` of `chain` after `prevHash` (see the rules). */
export const hashOf = (chain: string, seq: number, prevHash: string, row: InsertRow): string => {
  const values: Array<unknown> = [chain, seq, prevHash]
  for (const field of HASHED) {
    const value = row[field]
    if (HASHED_WHEN_SET.has(field)) {
      if (value !== null && value !== undefined) values.push(field, value)
      continue
    }
    values.push(value instanceof Date ? value.getTime() : value ?? null)
  }
  return hash("sha256", JSON.stringify(values), "hex")
}

/** The columns every read selects. */
export const COLUMNS =
  `id, at, kind, identity, tool, method, connection, outcome, status, duration_ms, bytes_in, bytes_out,
  redactions, request_id, trace_id, caller_name, caller_subject, caller_client, credential_kind,
  credential_fingerprint, bucket, client_ip, repeats, action, resource_kind, resource_id, resource_name,
  version_before, version_after, changes, interface, reason, path, chain, seq, prev_hash, hash`

/** A row as the drivers return it (bigint columns as bigint, number or string). */
export type SelectRow = { readonly [K in keyof ChainedRow]: unknown } & {
  readonly id: unknown
  readonly at_key?: string
  readonly chain: string | null
  readonly prev_hash: string | null
  readonly hash: string | null
}

const numOrNull = (value: unknown): number | null => value === null || value === undefined ? null : toNumber(value)
const str = (value: unknown): string | null => value === null || value === undefined ? null : String(value)

/** The row as `InsertRow`, normalised the way the writer built it (for hashing). */
export const storedRow = (row: SelectRow): InsertRow => ({
  kind: row.kind as AuditKind,
  at: toDate(row.at),
  identity: String(row.identity),
  tool: String(row.tool),
  method: String(row.method),
  connection: str(row.connection),
  outcome: row.outcome as AuditOutcome,
  status: numOrNull(row.status),
  duration_ms: toNumber(row.duration_ms),
  bytes_in: toNumber(row.bytes_in),
  bytes_out: toNumber(row.bytes_out),
  redactions: toNumber(row.redactions),
  request_id: str(row.request_id),
  trace_id: str(row.trace_id),
  caller_name: str(row.caller_name),
  caller_subject: str(row.caller_subject),
  caller_client: str(row.caller_client),
  credential_kind: str(row.credential_kind),
  credential_fingerprint: str(row.credential_fingerprint),
  bucket: str(row.bucket),
  reason: str(row.reason),
  client_ip: str(row.client_ip),
  repeats: toNumber(row.repeats),
  action: str(row.action),
  resource_kind: str(row.resource_kind),
  resource_id: str(row.resource_id),
  resource_name: str(row.resource_name),
  version_before: numOrNull(row.version_before),
  version_after: numOrNull(row.version_after),
  changes: str(row.changes),
  interface: str(row.interface),
  path: str(row.path)
})

export const fromRow = (row: SelectRow): AuditRecord => {
  const r = storedRow(row)
  return {
    id: toNumber(row.id),
    kind: r.kind,
    at: r.at,
    identity: r.identity,
    tool: r.tool,
    method: r.method,
    connection: r.connection,
    outcome: r.outcome,
    status: r.status,
    durationMs: r.duration_ms,
    bytesIn: r.bytes_in,
    bytesOut: r.bytes_out,
    redactions: r.redactions,
    requestId: r.request_id,
    traceId: r.trace_id,
    callerName: r.caller_name,
    callerSubject: r.caller_subject,
    callerClient: r.caller_client,
    credentialKind: r.credential_kind,
    credentialFingerprint: r.credential_fingerprint,
    bucket: r.bucket,
    reason: r.reason,
    clientIp: r.client_ip,
    repeats: r.repeats,
    action: r.action,
    resourceKind: r.resource_kind,
    resourceId: r.resource_id,
    resourceName: r.resource_name,
    versionBefore: r.version_before,
    versionAfter: r.version_after,
    changes: r.changes,
    interface: r.interface,
    path: r.path,
    chain: row.chain,
    seq: numOrNull(row.seq),
    hash: row.hash
  }
}
