/**
 * The database schema, as effect/sql `Migrator` migrations (one Postgres
 * dialect for PGlite and Postgres, no `pg_dump`).
 *
 * **Rules**
 *
 * - Migrations are append-only and numbered; applied ids are recorded in
 *   `janus_migrations`, so running them again is a no-op. All pending
 *   migrations run in one transaction under the migrator's table lock, so
 *   replicas starting together migrate once. Start-up reads the recorded id
 *   first and skips the migrator when the database is already current.
 * - `StorageHealth` compares the recorded ids with `latestId`: a replica whose
 *   code is newer than its database is not ready.
 * - Every table of the product is here: connections, endpoints, virtual
 *   servers (+ members), client and admin tokens (hashes only), secrets
 *   (ciphertext only), audit records, `broker_event`, and the 2025-revision
 *   MCP sessions (sessions, their streams and stored messages) shared across
 *   replicas.
 *
 * @since 0.1.0
 */
import { Effect, Layer } from "effect"
import * as Migrator from "effect/sql/Migrator"
import * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"

export const table = "janus_migrations"

const statements = (...ddl: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    for (const statement of ddl) yield* sql.unsafe(statement)
  })

const timestamps = `
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()`

export const migrations = {
  "0001_config": statements(
    `CREATE TABLE connections (
      id uuid PRIMARY KEY,
      name text NOT NULL CONSTRAINT connections_name_key UNIQUE,
      kind text NOT NULL CHECK (kind IN ('rest', 'mcp')),
      description text NOT NULL DEFAULT '',
      base_url text,
      url text,
      transport text CHECK (transport IN ('streamable-http', 'sse')),
      auth_scheme text NOT NULL DEFAULT 'none' CHECK (auth_scheme IN ('none', 'bearer', 'header', 'basic')),
      auth_header text,
      auth_username text,
      secret_ref text,
      timeout_ms integer NOT NULL DEFAULT 30000 CHECK (timeout_ms > 0),
      retry_policy jsonb,
      breaker_policy jsonb NOT NULL,
      egress_allow text[],
      version integer NOT NULL DEFAULT 1,
      ${timestamps},
      CHECK ((kind = 'rest' AND base_url IS NOT NULL AND retry_policy IS NOT NULL)
          OR (kind = 'mcp' AND url IS NOT NULL AND transport IS NOT NULL)),
      CHECK ((auth_scheme = 'none') = (secret_ref IS NULL))
    )`,
    `CREATE TABLE endpoints (
      id uuid PRIMARY KEY,
      connection_id uuid NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
      name text NOT NULL CONSTRAINT endpoints_name_key UNIQUE,
      description text NOT NULL DEFAULT '',
      method text NOT NULL CHECK (method IN ('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS')),
      path_template text NOT NULL,
      arguments jsonb NOT NULL DEFAULT '{}',
      input_schema jsonb NOT NULL,
      idempotent boolean NOT NULL DEFAULT false,
      version integer NOT NULL DEFAULT 1,
      ${timestamps}
    )`,
    `CREATE INDEX endpoints_connection_id_idx ON endpoints (connection_id)`,
    `CREATE TABLE virtual_servers (
      id uuid PRIMARY KEY,
      name text NOT NULL CONSTRAINT virtual_servers_name_key UNIQUE,
      description text NOT NULL DEFAULT '',
      version integer NOT NULL DEFAULT 1,
      ${timestamps}
    )`,
    // A member is an endpoint, or a tool (or '*') of an upstream MCP connection.
    // Deleting the endpoint or connection removes the membership.
    `CREATE TABLE virtual_server_members (
      virtual_server_id uuid NOT NULL REFERENCES virtual_servers (id) ON DELETE CASCADE,
      position integer NOT NULL,
      endpoint_id uuid REFERENCES endpoints (id) ON DELETE CASCADE,
      connection_id uuid REFERENCES connections (id) ON DELETE CASCADE,
      upstream_tool text,
      PRIMARY KEY (virtual_server_id, position),
      CHECK ((endpoint_id IS NOT NULL AND connection_id IS NULL AND upstream_tool IS NULL)
          OR (endpoint_id IS NULL AND connection_id IS NOT NULL AND upstream_tool IS NOT NULL))
    )`,
    `CREATE INDEX virtual_server_members_endpoint_id_idx ON virtual_server_members (endpoint_id)`,
    `CREATE INDEX virtual_server_members_connection_id_idx ON virtual_server_members (connection_id)`
  ),
  "0002_credentials": statements(
    `CREATE TABLE client_tokens (
      id uuid PRIMARY KEY,
      name text NOT NULL CONSTRAINT client_tokens_name_key UNIQUE,
      token_hash bytea NOT NULL CONSTRAINT client_tokens_token_hash_key UNIQUE,
      prefix text NOT NULL,
      allowed_tools text[],
      allowed_virtual_servers text[],
      expires_at timestamptz,
      revoked_at timestamptz,
      last_used_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now()
    )`,
    `CREATE TABLE admin_tokens (
      id uuid PRIMARY KEY,
      name text NOT NULL,
      token_hash bytea NOT NULL CONSTRAINT admin_tokens_token_hash_key UNIQUE,
      prefix text NOT NULL,
      revoked_at timestamptz,
      last_used_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now()
    )`,
    `CREATE TABLE secrets (
      id uuid PRIMARY KEY,
      name text NOT NULL CONSTRAINT secrets_name_key UNIQUE,
      ciphertext bytea NOT NULL,
      nonce bytea NOT NULL,
      key_id text NOT NULL,
      version integer NOT NULL DEFAULT 1,
      ${timestamps}
    )`
  ),
  "0003_audit_and_events": statements(
    `CREATE TABLE audit_records (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      at timestamptz NOT NULL DEFAULT now(),
      identity text NOT NULL,
      tool text NOT NULL,
      connection text,
      outcome text NOT NULL
        CHECK (outcome IN ('ok', 'error', 'denied', 'rate_limited', 'shed', 'breaker_open', 'timeout')),
      status integer,
      duration_ms integer NOT NULL CHECK (duration_ms >= 0),
      bytes_in bigint NOT NULL DEFAULT 0,
      bytes_out bigint NOT NULL DEFAULT 0,
      redactions integer NOT NULL DEFAULT 0
    )`,
    `CREATE INDEX audit_records_at_idx ON audit_records (at)`,
    `CREATE INDEX audit_records_tool_at_idx ON audit_records (tool, at)`,
    `CREATE INDEX audit_records_outcome_at_idx ON audit_records (outcome, at)`,
    `CREATE TABLE broker_event (
      seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      topic text NOT NULL,
      about text[] NOT NULL DEFAULT '{}',
      data jsonb NULL,
      at timestamptz NOT NULL DEFAULT now()
    )`,
    `CREATE INDEX broker_event_at_idx ON broker_event (at)`
  ),
  "0004_mcp_sessions": statements(
    `CREATE TABLE mcp_sessions (
      id text PRIMARY KEY,
      protocol_version text NOT NULL,
      client_info jsonb,
      capabilities jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      last_seen_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL
    )`,
    `CREATE INDEX mcp_sessions_expires_at_idx ON mcp_sessions (expires_at)`,
    `CREATE TABLE mcp_session_messages (
      session_id text NOT NULL REFERENCES mcp_sessions (id) ON DELETE CASCADE,
      stream_id text NOT NULL,
      event_seq bigint NOT NULL,
      payload jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (session_id, stream_id, event_seq)
    )`
  ),
  // Audit: request/trace ids and the indexes of the admin query (keyset on (at, id), filters).
  // MCP sessions: the owner, a row per stream (its seq counter, the "closed" marker, its age for
  // eviction) and message payloads kept as the exact JSON text that was sent.
  "0005_audit_query_and_session_streams": statements(
    `ALTER TABLE audit_records ADD COLUMN request_id text, ADD COLUMN trace_id text`,
    `CREATE INDEX audit_records_at_id_idx ON audit_records (at, id)`,
    `DROP INDEX audit_records_at_idx`,
    `CREATE INDEX audit_records_identity_at_idx ON audit_records (identity, at)`,
    `CREATE INDEX audit_records_connection_at_idx ON audit_records (connection, at)`,
    `ALTER TABLE mcp_sessions ADD COLUMN owner_id text NOT NULL DEFAULT ''`,
    `CREATE TABLE mcp_session_streams (
      session_id text NOT NULL REFERENCES mcp_sessions (id) ON DELETE CASCADE,
      stream_id text NOT NULL,
      ordinal bigint GENERATED ALWAYS AS IDENTITY,
      last_seq bigint NOT NULL DEFAULT 0,
      closed boolean NOT NULL DEFAULT false,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (session_id, stream_id)
    )`,
    `INSERT INTO mcp_session_streams (session_id, stream_id, last_seq)
      SELECT session_id, stream_id, max(event_seq) FROM mcp_session_messages GROUP BY session_id, stream_id`,
    `ALTER TABLE mcp_session_messages ALTER COLUMN payload TYPE text USING payload::text`,
    `ALTER TABLE mcp_session_messages ADD CONSTRAINT mcp_session_messages_stream_fkey
      FOREIGN KEY (session_id, stream_id) REFERENCES mcp_session_streams (session_id, stream_id) ON DELETE CASCADE`
  ),
  // The level a 2025-era client asked for with logging/setLevel (null: none asked; every message is relayed).
  // The prefix of an mcp connection's tool names (null: "<connection name>/"; "" none).
  // A virtual server may serve upstream tools under their bare names (where unique in the server).
  "0006_session_log_level_tool_names_upstream_oauth": statements(
    `ALTER TABLE mcp_sessions ADD COLUMN log_level text`,
    `ALTER TABLE connections ADD COLUMN tool_prefix text CHECK (tool_prefix IS NULL OR kind = 'mcp')`,
    `ALTER TABLE virtual_servers ADD COLUMN bare_names boolean NOT NULL DEFAULT false`,
    // OAuth client credentials for mcp connections: token URL, client id, scope, audience (the secret is secret_ref)
    `ALTER TABLE connections ADD COLUMN auth_oauth jsonb`,
    `ALTER TABLE connections DROP CONSTRAINT connections_auth_scheme_check`,
    `ALTER TABLE connections ADD CONSTRAINT connections_auth_scheme_check
      CHECK (auth_scheme IN ('none', 'bearer', 'header', 'basic', 'oauth-client-credentials')
        AND (auth_scheme <> 'oauth-client-credentials' OR (kind = 'mcp' AND auth_oauth IS NOT NULL)))`
  ),
  // `invalid`: a call whose arguments do not fit the tool's input schema (the caller's mistake, not an error).
  // A REST endpoint may declare the JSON Schema of its structured result (null: none).
  "0007_invalid_outcome_output_schema": statements(
    `ALTER TABLE audit_records DROP CONSTRAINT audit_records_outcome_check`,
    `ALTER TABLE audit_records ADD CONSTRAINT audit_records_outcome_check
      CHECK (outcome IN ('ok', 'error', 'denied', 'invalid', 'rate_limited', 'shed', 'breaker_open', 'timeout'))`,
    `ALTER TABLE endpoints ADD COLUMN output_schema jsonb`
  ),
  // How often an upstream's lists are fetched again while it offers no working change channel (null: rest).
  // stdio upstreams: the program ({ command, args, env, cwd } as JSON; env values are text or { secret }),
  // and no URL.
  "0008_upstream_poll_interval_stdio": statements(
    `ALTER TABLE connections ADD COLUMN poll_interval_ms integer
      CHECK (poll_interval_ms IS NULL OR (kind = 'mcp' AND poll_interval_ms BETWEEN 1000 AND 86400000))`,
    `UPDATE connections SET poll_interval_ms = 30000 WHERE kind = 'mcp'`,
    `ALTER TABLE connections ADD COLUMN stdio jsonb`,
    `ALTER TABLE connections DROP CONSTRAINT connections_transport_check`,
    `ALTER TABLE connections ADD CONSTRAINT connections_transport_check
      CHECK (transport IN ('streamable-http', 'sse', 'stdio'))`,
    `ALTER TABLE connections DROP CONSTRAINT connections_check`,
    `ALTER TABLE connections ADD CONSTRAINT connections_kind_fields_check
      CHECK ((kind = 'rest' AND base_url IS NOT NULL AND retry_policy IS NOT NULL)
          OR (kind = 'mcp' AND transport = 'stdio' AND stdio IS NOT NULL AND url IS NULL)
          OR (kind = 'mcp' AND transport IN ('streamable-http', 'sse') AND url IS NOT NULL AND stdio IS NULL))`
  ),
  // The MCP method an audit record is about: resources/read, prompts/get and completion/complete are audited
  // like tools/call (`tool` then names `<connection>/<prompt or resource>`).
  "0009_audit_method": statements(
    `ALTER TABLE audit_records ADD COLUMN method text NOT NULL DEFAULT 'tools/call'`
  ),
  // The audit trail (issue 18): three kinds of record (call, admin change, refused authentication), the
  // caller by name as it was then, the presented credential's kind and fingerprint (never its value),
  // which limiter bucket refused, how many refusals a sampled row stands for, the admin change (actor,
  // resource, versions, changed fields as JSON text), and the hash chain: one chain per writer (`chain`,
  // `seq`, `prev_hash`, `hash`), its head in `audit_chains` (updated in the same transaction as its rows,
  // so a truncated tail is seen) and where retention left it (`first_seq`, `first_prev_hash`).
  "0010_audit_trail": statements(
    `ALTER TABLE audit_records DROP CONSTRAINT audit_records_outcome_check`,
    `ALTER TABLE audit_records ADD CONSTRAINT audit_records_outcome_check
      CHECK (outcome IN ('ok', 'error', 'denied', 'invalid', 'rate_limited', 'shed', 'breaker_open', 'timeout',
        'unauthenticated'))`,
    `ALTER TABLE audit_records
      ADD COLUMN kind text NOT NULL DEFAULT 'call' CHECK (kind IN ('call', 'admin', 'auth')),
      ADD COLUMN caller_name text,
      ADD COLUMN caller_subject text,
      ADD COLUMN caller_client text,
      ADD COLUMN credential_kind text,
      ADD COLUMN credential_fingerprint text,
      ADD COLUMN bucket text,
      ADD COLUMN client_ip text,
      ADD COLUMN repeats integer NOT NULL DEFAULT 1,
      ADD COLUMN action text,
      ADD COLUMN resource_kind text,
      ADD COLUMN resource_id text,
      ADD COLUMN resource_name text,
      ADD COLUMN version_before integer,
      ADD COLUMN version_after integer,
      ADD COLUMN changes text,
      ADD COLUMN interface text,
      ADD COLUMN chain text,
      ADD COLUMN seq bigint,
      ADD COLUMN prev_hash text,
      ADD COLUMN hash text`,
    `CREATE UNIQUE INDEX audit_records_chain_seq_idx ON audit_records (chain, seq)`,
    `CREATE INDEX audit_records_kind_at_idx ON audit_records (kind, at)`,
    `CREATE INDEX audit_records_request_id_idx ON audit_records (request_id)`,
    `CREATE INDEX audit_records_trace_id_idx ON audit_records (trace_id)`,
    `CREATE TABLE audit_chains (
      chain text PRIMARY KEY,
      first_seq bigint NOT NULL DEFAULT 1,
      first_prev_hash text NOT NULL DEFAULT '',
      last_seq bigint NOT NULL,
      last_hash text NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  ),
  // Signed chain heads (issue 18, `AuditHeads`): an HMAC of each head under a key derived from the master key,
  // and that master key's id. NULL for heads written before this migration (verify reports them unsigned).
  "0011_audit_head_mac": statements(
    `ALTER TABLE audit_chains ADD COLUMN head_mac text, ADD COLUMN head_key_id text`
  ),
  // Why a refused authentication was refused (`expired`, `wrong_audience`, ...; null for other records and
  // for refusals written before it). Hashed only when set, so older records keep their hashes.
  "0012_audit_reason": statements(
    `ALTER TABLE audit_records ADD COLUMN reason text`
  ),
  // A refused admin write (validation, conflict, precondition, unknown resource, unreadable body) is an `admin`
  // record with outcome `refused`, the HTTP method in `method` and the request path in `path` (null for the
  // other records and for records written before it). Hashed only when set, so older records keep their hashes.
  "0013_audit_refused_admin_writes": statements(
    `ALTER TABLE audit_records DROP CONSTRAINT audit_records_outcome_check`,
    `ALTER TABLE audit_records ADD CONSTRAINT audit_records_outcome_check
      CHECK (outcome IN ('ok', 'error', 'denied', 'invalid', 'rate_limited', 'shed', 'breaker_open', 'timeout',
        'unauthenticated', 'refused'))`,
    `ALTER TABLE audit_records ADD COLUMN path text`
  )
} as const

/** The id of the newest migration this code knows. */
export const latestId: number = Math.max(...Object.keys(migrations).map((key) => Number(key.split("_")[0])))

const migrator = Migrator.make({})

/** Applies pending migrations; returns the ones it ran (none on a second run). */
export const run = migrator({ loader: Migrator.fromRecord(migrations), table })

/** The highest recorded migration id; 0 when none is (or the table does not exist yet). */
export const appliedId: Effect.Effect<number, SqlError, SqlClient.SqlClient> = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const exists = yield* sql<{ present: boolean }>`SELECT to_regclass(${table}) IS NOT NULL AS present`
  if (exists[0]?.present !== true) return 0
  const rows = yield* sql<{ id: number | bigint | null }>`SELECT max(migration_id) AS id FROM ${sql(table)}`
  return Number(rows[0]?.id ?? 0)
})

/**
 * Runs the migrations when the layer is built. A database already at `latestId` (every restart) is left
 * alone after two reads, without the migrator's transaction and table lock.
 */
export const layer: Layer.Layer<
  never,
  Migrator.MigrationError | SqlError,
  SqlClient.SqlClient
> = Layer.effectDiscard(
  Effect.flatMap(
    appliedId,
    (applied): Effect.Effect<unknown, Migrator.MigrationError | SqlError, SqlClient.SqlClient> =>
      applied >= latestId ? Effect.void : run
  )
)
