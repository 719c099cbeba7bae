/**
 * The failures of the storage package.
 *
 * **Rules**
 *
 * - Every error says what was wrong, with which value, and what is expected;
 *   `message` is built from the fields so callers (admin API, CLI) can show it
 *   as it is.
 * - No error ever carries a secret's plaintext, a token or a master key:
 *   secret errors name the secret and the key id only.
 * - Validation errors are raised before anything is written, and a write that
 *   fails leaves the database as it was (every multi-row write is one
 *   transaction).
 * - Unexpected database failures are `StorageError` (they wrap the `SqlError`);
 *   `StorageUnavailable` is what the health check reports.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

/** The kinds of stored resources, as named in errors and change signals. */
export const EntityKind = Schema.Literals([
  "connection",
  "endpoint",
  "virtual_server",
  "client_token",
  "admin_token",
  "secret"
])
export type EntityKind = typeof EntityKind.Type

/** A field of a write failed its shape check (type, range, pattern, required key). */
export class InvalidInput extends Schema.TaggedError<InvalidInput>()("InvalidInput", {
  entity: Schema.String,
  field: Schema.String,
  value: Schema.optional(Schema.String),
  expected: Schema.String
}) {
  override get message(): string {
    const got = this.value === undefined ? "" : ` (got ${this.value})`
    return `invalid ${this.entity} ${this.field}${got}: expected ${this.expected}`
  }
}

/** A tool (endpoint) name does not match `^[A-Za-z0-9_./-]{1,64}$`. */
export class InvalidToolName extends Schema.TaggedError<InvalidToolName>()("InvalidToolName", {
  value: Schema.String,
  expected: Schema.String
}) {
  override get message(): string {
    return `invalid tool name ${JSON.stringify(this.value)}: expected ${this.expected}`
  }
}

/** A URL that is not an absolute http(s) URL. */
export class InvalidUrl extends Schema.TaggedError<InvalidUrl>()("InvalidUrl", {
  entity: Schema.String,
  field: Schema.String,
  value: Schema.String,
  expected: Schema.String
}) {
  override get message(): string {
    return `invalid ${this.entity} ${this.field} ${JSON.stringify(this.value)}: expected ${this.expected}`
  }
}

/** An endpoint's input (or output) schema is not a JSON Schema object of type "object", or does not compile. */
export class InvalidInputSchema extends Schema.TaggedError<InvalidInputSchema>()("InvalidInputSchema", {
  tool: Schema.String,
  reason: Schema.String,
  /** Which schema of the endpoint; absent means `inputSchema`. */
  field: Schema.optional(Schema.Literals(["inputSchema", "outputSchema"]))
}) {
  override get message(): string {
    return `invalid ${this.field ?? "inputSchema"} for tool ${JSON.stringify(this.tool)}: ${this.reason}; ` +
      `expected a JSON Schema object with "type": "object"`
  }
}

/** A `{param}` of a path template that the argument map does not declare as a path argument. */
export class UndeclaredPathParam extends Schema.TaggedError<UndeclaredPathParam>()("UndeclaredPathParam", {
  tool: Schema.String,
  param: Schema.String,
  pathTemplate: Schema.String
}) {
  override get message(): string {
    return `path template ${JSON.stringify(this.pathTemplate)} of tool ${
      JSON.stringify(this.tool)
    } uses {${this.param}}` +
      `, which the argument map does not declare: expected arguments.${this.param} = "path"`
  }
}

/** A name that is already taken (names are unique per kind). */
export class DuplicateName extends Schema.TaggedError<DuplicateName>()("DuplicateName", {
  entity: EntityKind,
  name: Schema.String
}) {
  override get message(): string {
    return `a ${this.entity} named ${JSON.stringify(this.name)} already exists: expected a unique name`
  }
}

/** The resource addressed by id does not exist. */
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", {
  entity: EntityKind,
  id: Schema.String
}) {
  override get message(): string {
    return `no ${this.entity} with id ${JSON.stringify(this.id)}`
  }
}

/** A write refers to another resource (connection, endpoint, tool, virtual server) that does not exist. */
export class UnknownReference extends Schema.TaggedError<UnknownReference>()("UnknownReference", {
  entity: Schema.String,
  field: Schema.String,
  target: Schema.Literals(["connection", "endpoint", "tool", "virtual_server", "secret"]),
  value: Schema.String,
  expected: Schema.optional(Schema.String)
}) {
  override get message(): string {
    const expected = this.expected === undefined ? `an existing ${this.target}` : this.expected
    return `${this.entity} ${this.field} refers to unknown ${this.target} ${JSON.stringify(this.value)}: ` +
      `expected ${expected}`
  }
}

/** Optimistic concurrency: the caller's `version` is stale. */
export class VersionConflict extends Schema.TaggedError<VersionConflict>()("VersionConflict", {
  entity: EntityKind,
  id: Schema.String,
  expected: Schema.Int,
  actual: Schema.Int
}) {
  override get message(): string {
    return `${this.entity} ${this.id} was changed by someone else: the write expected version ${this.expected}, ` +
      `the stored version is ${this.actual}; re-read and retry`
  }
}

/** No secret with that name. */
export class SecretNotFound extends Schema.TaggedError<SecretNotFound>()("SecretNotFound", {
  name: Schema.String
}) {
  override get message(): string {
    return `no secret named ${JSON.stringify(this.name)}`
  }
}

/** A stored secret could not be decrypted: unknown key id, wrong key, or tampered ciphertext. */
export class SecretDecryptionFailed extends Schema.TaggedError<SecretDecryptionFailed>()("SecretDecryptionFailed", {
  name: Schema.String,
  keyId: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `cannot decrypt secret ${JSON.stringify(this.name)} (key id ${this.keyId}): ${this.reason}`
  }
}

/** A master key that is not 32 bytes of base64, or a key file that cannot be read or written. */
export class InvalidMasterKey extends Schema.TaggedError<InvalidMasterKey>()("InvalidMasterKey", {
  source: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `invalid master key from ${this.source}: ${this.reason}; expected 32 random bytes, base64-encoded ` +
      `(e.g. \`openssl rand -base64 32\`)`
  }
}

/** An unexpected database failure while doing `operation`. */
export class StorageError extends Schema.TaggedError<StorageError>()("StorageError", {
  operation: Schema.String,
  cause: Schema.Defect()
}) {
  override get message(): string {
    const cause = this.cause as { readonly message?: unknown } | undefined
    const detail = cause !== null && typeof cause === "object" && typeof cause.message === "string"
      ? cause.message
      : String(this.cause)
    return `storage operation ${this.operation} failed: ${detail}`
  }
}

/** The database does not answer, or its migrations are not all applied. */
export class StorageUnavailable extends Schema.TaggedError<StorageUnavailable>()("StorageUnavailable", {
  reason: Schema.String
}) {
  override get message(): string {
    return `storage unavailable: ${this.reason}`
  }
}

/** Every error a write can fail with because of its input. */
export type ValidationError =
  | InvalidInput
  | InvalidToolName
  | InvalidUrl
  | InvalidInputSchema
  | UndeclaredPathParam
  | DuplicateName
  | UnknownReference
  | VersionConflict
