/**
 * The secrets a connection names must exist, as the tools a virtual server
 * names must: a credential that names no secret would be saved and only fail
 * at the first call.
 *
 * **Rules**
 *
 * - Checked on create and on replace (and so on patch) over the admin API:
 *   `auth.secret` and every `env.<KEY>.secret` of a stdio connection. An
 *   edit checks only the names it introduces: one the connection already
 *   named (e.g. applied from a document whose value comes from the server's
 *   environment) does not block an edit of something else.
 * - Only a body that is otherwise valid is checked: a malformed one is left
 *   to storage, whose 400 names its field first.
 * - The first unknown name is 422 `unknown_reference` at its path.
 *   (Configuration documents check the same against their own `secrets`.)
 *
 * @since 0.1.0
 */
import { type Connection, ConnectionInput, type Secrets, UnknownReference } from "@janus/storage"
import { Effect, Option, Schema } from "effect"

const decode = Schema.decodeUnknownOption(ConnectionInput, { onExcessProperty: "error" })

/** Where `input` names a secret: its path and the name. */
export const secretReferences = (input: unknown): ReadonlyArray<readonly [string, string]> => {
  const decoded = decode(input)
  if (Option.isNone(decoded)) return []
  const c: any = decoded.value
  const found: Array<readonly [string, string]> = []
  if (c.auth !== undefined && "secret" in c.auth && typeof c.auth.secret === "string") {
    found.push(["auth.secret", c.auth.secret])
  }
  for (const [key, value] of Object.entries(c.env ?? {})) {
    if (typeof value === "object" && value !== null && "secret" in value) {
      found.push([`env.${key}.secret`, String((value as { secret: unknown }).secret)])
    }
  }
  return found
}

/** The secret names a stored connection uses. */
export const secretsOf = (c: Connection): ReadonlySet<string> => {
  const names = new Set<string>()
  if ("secret" in c.auth && typeof c.auth.secret === "string") names.add(c.auth.secret)
  for (const value of Object.values(("env" in c ? c.env : undefined) ?? {})) {
    if (typeof value === "object" && value !== null && "secret" in value) names.add(String(value.secret))
  }
  return names
}

/**
 * Fails with `UnknownReference` for the first secret `input` names that `secrets` does not hold (and that
 * `already` does not contain: the names the connection had before this edit).
 */
export const checkSecrets = (secrets: Secrets["Service"], input: unknown, already: ReadonlySet<string> = new Set()) =>
  Effect.gen(function*() {
    const references = secretReferences(input).filter(([, name]) => !already.has(name))
    if (references.length === 0) return
    const known = new Set((yield* secrets.list).map((s) => s.name))
    const missing = references.find(([, name]) => !known.has(name))
    if (missing === undefined) return
    return yield* new UnknownReference({
      entity: "connection",
      field: missing[0],
      target: "secret",
      value: missing[1],
      expected: "the name of a secret that is set (PUT /api/v1/secrets/<name>, or Studio's Settings)"
    })
  })
