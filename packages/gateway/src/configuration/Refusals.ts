/**
 * How a failure while applying a document is told: a storage refusal at the
 * document path of the value it refused, a concurrent write as a change since
 * the plan, and the database's own trouble as itself.
 *
 * **Rules**
 *
 * - A storage refusal (`InvalidInput`, `InvalidUrl`, ...) names the field of
 *   the item being written; it is reported at that item's document path plus
 *   the field, in the document's own names (`connection`, not
 *   `connectionId`), with what was given and what is expected.
 * - A stale version, a name taken or a resource gone since the plan, a
 *   deadlock or a serialization failure: `ConfigurationChanged` (plan again).
 * - Data the database refuses without a field (before storage checks it, text
 *   it cannot store) is a problem at the item's path; a database that is down,
 *   unreachable or slow stays a `StorageError`.
 *
 * @since 0.1.0
 */
import { StorageError } from "@janus/storage"
import { Schema } from "effect"
import type { SqlError } from "effect/sql/SqlError"
import { type ConfigurationInvalid, invalid, within } from "./Document.ts"
import type * as Plan from "./Plan.ts"

/** What the stored configuration changed since a plan was made from it; nothing was applied. */
export class ConfigurationChanged extends Schema.TaggedError<ConfigurationChanged>()("ConfigurationChanged", {
  detail: Schema.String
}) {
  override get message(): string {
    return `the configuration was changed by someone else since the plan was made (${this.detail}); nothing was ` +
      "applied: make the plan again (dry run) and apply that one"
  }
}

/** SqlError reasons that are the database's trouble, not the data's. */
const INFRASTRUCTURE: ReadonlySet<string> = new Set([
  "ConnectionError",
  "AuthenticationError",
  "AuthorizationError",
  "LockTimeoutError",
  "StatementTimeoutError"
])

/** SqlError reasons that mean another transaction wrote meanwhile. */
const CONCURRENT: ReadonlySet<string> = new Set(["DeadlockError", "SerializationError"])

const reasonOf = (cause: unknown): string => {
  const reason = (cause as { readonly reason?: { readonly _tag?: unknown } } | undefined)?.reason?._tag
  return typeof reason === "string" ? reason : ""
}

/** Storage's field names where the document says something else. */
const DOCUMENT_FIELDS: Readonly<Record<string, string>> = { connectionId: "connection", value: "valueFrom.env" }

const indexIn = (list: unknown, value: string): number => Array.isArray(list) ? list.indexOf(value) : -1

/** A refusal of storage while writing `step`, said at the document path of what was being written. */
export const located = (
  step: Plan.Step,
  error: unknown
): ConfigurationInvalid | ConfigurationChanged | StorageError => {
  const tag = (error as { readonly _tag?: unknown })._tag
  const at = step.change.at ?? `${step.change.section} ${JSON.stringify(step.change.name)}`
  const item = "item" in step ? step.item as unknown as Record<string, unknown> : {}
  const one = (field: string, message: string) => invalid([{ path: within(at, field), message }])
  const e = error as Record<string, unknown> & { readonly message: string }
  switch (tag) {
    case "InvalidInput": {
      const field = String(e.field)
      const top = field.split(".")[0]!
      const path = (DOCUMENT_FIELDS[top] ?? top) + field.slice(top.length)
      return one(path, `${e.value === undefined ? "" : `got ${String(e.value)}; `}expected ${String(e.expected)}`)
    }
    case "InvalidUrl":
      return one(String(e.field), `got ${JSON.stringify(e.value)}; expected ${String(e.expected)}`)
    case "InvalidToolName": {
      const index = indexIn(item.allowedTools, String(e.value))
      return one(
        index === -1 ? "name" : `allowedTools[${index}]`,
        `got ${JSON.stringify(e.value)}; expected ${e.expected}`
      )
    }
    case "InvalidInputSchema":
      return one(String(e.field ?? "inputSchema"), `${String(e.reason)}; expected a JSON Schema with "type": "object"`)
    case "UndeclaredPathParam":
      return one(`arguments.${String(e.param)}`, e.message)
    case "UnknownReference": {
      const field = String(e.field)
      const index = indexIn(item[field === "connectionId" ? "" : field], String(e.value))
      return one(
        index === -1 ? DOCUMENT_FIELDS[field] ?? field : `${field}[${index}]`,
        `refers to unknown ${String(e.target)} ${JSON.stringify(e.value)}`
      )
    }
    case "DuplicateName":
    case "VersionConflict":
    case "NotFound":
    case "SecretNotFound":
      return new ConfigurationChanged({ detail: `${at}: ${e.message}` })
    case "StorageError":
      // the database refused this item's data (text it cannot store, say): the document's problem, at its path;
      // a concurrent write is a change since the plan; a database that is down or slow is neither
      return CONCURRENT.has(reasonOf(e.cause))
        ? new ConfigurationChanged({ detail: `${at}: a concurrent write conflicted with this one` })
        : INFRASTRUCTURE.has(reasonOf(e.cause))
        ? error as StorageError
        : invalid([{ path: at, message: `could not be stored: ${e.message}` }])
    default:
      return invalid([{ path: at, message: e.message ?? String(error) }])
  }
}

/** A failure of the apply's own statements (begin, lock, commit). */
export const sqlFailure = (cause: SqlError): ConfigurationChanged | StorageError =>
  CONCURRENT.has(reasonOf(cause))
    ? new ConfigurationChanged({ detail: "a concurrent write conflicted with this one" })
    : new StorageError({ operation: "configuration.apply", cause })
