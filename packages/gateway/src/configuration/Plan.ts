/**
 * What applying a document to what is stored does: the checks a document
 * must pass as a whole, and the plan (added, changed with the changed
 * fields, removed) with the writes that carry it out. Pure: values from the
 * environment are resolved by the caller.
 *
 * **Rules**
 *
 * - A document is checked as a whole first (`Checks.ts`: names, references,
 *   kinds, revocations); every problem is reported at once.
 * - Resources are matched by name. One that the document names and storage
 *   lacks is added; one whose full form differs is changed (the fields that
 *   differ are listed); one storage has and the document does not name is
 *   removed only with `prune`, otherwise listed as kept.
 * - A secret with `valueFrom` changes only when the value differs from the
 *   stored one; a token with `valueFrom` likewise (compared by hash). A
 *   secret listed without a value that is not stored is a warning: the
 *   document is valid, calls that need it fail until it is set.
 * - A token the document adds gets its `valueFrom` value, or a new value
 *   that is shown once to whoever applied; where nobody would see it (a
 *   `JANUS_CONFIG_FILE` apply, `issueTokens: false`) the document must give
 *   `valueFrom`.
 * - Writes run in dependency order: secrets, connections, endpoints,
 *   virtual servers, tokens; removals last, in the reverse order.
 *
 * @since 0.1.0
 */
import { type ClientToken, type Connection, type Endpoint, type SecretInfo, type VirtualServer } from "@janus/storage"
import type { Redacted } from "effect"
import { check } from "./Checks.ts"
import {
  type ClientTokenItem,
  type Configuration,
  type ConfigurationInvalid,
  type ConnectionItem,
  type EndpointItem,
  invalid,
  type Located,
  type Section,
  SECTIONS,
  type VirtualServerItem,
  within
} from "./Document.ts"
import {
  changedFields,
  clientTokenFull,
  clientTokenItem,
  connectionFull,
  connectionInput,
  endpointFull,
  endpointItem,
  type Full,
  secretFull,
  type State,
  virtualServerFull
} from "./Items.ts"

export type Action = "add" | "change" | "remove"

/** One line of a plan. */
export interface Change {
  readonly section: Section
  readonly name: string
  readonly action: Action
  /** For a change: the fields that differ (`value` for a secret or token value from the environment). */
  readonly fields: ReadonlyArray<string>
  /** Where the document defines it (added and changed resources). */
  readonly at?: string | undefined
}

export interface Plan {
  /** By section, then added, changed, removed, each by name. */
  readonly changes: ReadonlyArray<Change>
  readonly unchanged: number
  /** Whether removals are carried out (`--prune`) or only listed. */
  readonly prune: boolean
  readonly warnings: ReadonlyArray<string>
}

/** A `valueFrom` resolved by the caller: the value and whether storage already has it. */
export type Resolved =
  | { readonly _tag: "Value"; readonly value: Redacted.Redacted<string>; readonly stored: boolean }
  /** Not read: values are not taken from the environment here (the admin API). */
  | { readonly _tag: "NotRead" }

/** One write of a plan, in execution order; `change` is what it carries out. */
export type Step =
  & { readonly change: Change }
  & (
    | { readonly _tag: "SecretSet"; readonly value: Redacted.Redacted<string> }
    | { readonly _tag: "SecretDelete"; readonly current: SecretInfo }
    | { readonly _tag: "ConnectionCreate"; readonly item: ConnectionItem }
    | { readonly _tag: "ConnectionUpdate"; readonly current: Connection; readonly item: ConnectionItem }
    | { readonly _tag: "ConnectionDelete"; readonly current: Connection }
    | { readonly _tag: "EndpointCreate"; readonly item: EndpointItem }
    | { readonly _tag: "EndpointUpdate"; readonly current: Endpoint; readonly item: EndpointItem }
    | { readonly _tag: "EndpointDelete"; readonly current: Endpoint }
    | { readonly _tag: "VirtualServerCreate"; readonly item: VirtualServerItem }
    | { readonly _tag: "VirtualServerUpdate"; readonly current: VirtualServer; readonly item: VirtualServerItem }
    | { readonly _tag: "VirtualServerDelete"; readonly current: VirtualServer }
    | {
      readonly _tag: "ClientTokenCreate"
      readonly item: ClientTokenItem
      readonly value: Redacted.Redacted<string> | undefined
    }
    | {
      readonly _tag: "ClientTokenUpdate"
      readonly current: ClientToken
      readonly item: ClientTokenItem
      /** A new value (from valueFrom), or undefined to keep the stored one. */
      readonly value: Redacted.Redacted<string> | undefined
      /** Whether the scopes or expiry changed. */
      readonly definition: boolean
      readonly revoke: boolean
    }
    | { readonly _tag: "ClientTokenDelete"; readonly current: ClientToken }
  )

export interface PlanOptions {
  readonly prune: boolean
  /** Whether a token the document adds without `valueFrom` may get a new value (shown to the one applying). */
  readonly issueTokens: boolean
  /** `valueFrom` of secrets and tokens, by the item's location (`at`). */
  readonly resolved: ReadonlyMap<string, Resolved>
}

// -----------------------------------------------------------------------------
// The plan
// -----------------------------------------------------------------------------

const byName = (a: Change, b: Change) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0
const ACTIONS: ReadonlyArray<Action> = ["add", "change", "remove"]

/** The plan of applying `doc` to `state`, and its writes; or every problem of the document. */
export const make = (
  doc: Configuration,
  state: State,
  options: PlanOptions
): { readonly plan: Plan; readonly steps: ReadonlyArray<Step> } | ConfigurationInvalid => {
  const problems = check(doc, state)
  const warnings: Array<string> = []
  const writes: Record<Section, Array<Step>> = {
    secrets: [],
    connections: [],
    endpoints: [],
    virtualServers: [],
    clientTokens: []
  }
  const removals: Record<Section, Array<Step>> = {
    secrets: [],
    connections: [],
    endpoints: [],
    virtualServers: [],
    clientTokens: []
  }
  let unchanged = 0

  /** Matches `items` with `current` by name: the added, changed (with fields) and removed ones. */
  const diff = <I extends { readonly name: string }, C extends { readonly name: string }>(
    section: Section,
    items: ReadonlyArray<Located<I>>,
    current: ReadonlyArray<C>,
    full: (item: I) => Full,
    fullOf: (stored: C) => Full,
    step: {
      readonly add: (item: Located<I>, change: Change) => Step | undefined
      readonly change: (item: Located<I>, stored: C, fields: ReadonlyArray<string>) => Step | undefined
      readonly remove: (stored: C, change: Change) => Step
      readonly extra?: (item: Located<I>, stored: C) => ReadonlyArray<string>
    }
  ) => {
    const named = new Map(current.map((c) => [c.name, c]))
    const wanted = new Set(items.map((i) => i.value.name))
    for (const item of items) {
      const stored = named.get(item.value.name)
      if (stored === undefined) {
        const added = step.add(item, { section, name: item.value.name, action: "add", fields: [], at: item.at })
        if (added !== undefined) writes[section].push(added)
        continue
      }
      const fields = [...changedFields(fullOf(stored), full(item.value)), ...(step.extra?.(item, stored) ?? [])]
      if (fields.length === 0) {
        unchanged++
        continue
      }
      const changed = step.change(item, stored, fields)
      if (changed !== undefined) writes[section].push(changed)
    }
    for (const stored of current) {
      if (!wanted.has(stored.name)) {
        removals[section].push(step.remove(stored, { section, name: stored.name, action: "remove", fields: [] }))
      }
    }
  }
  const changeOf = (section: Section, item: Located<{ readonly name: string }>, fields: ReadonlyArray<string>) => ({
    section,
    name: item.value.name,
    action: "change" as const,
    fields,
    at: item.at
  })
  /** What a plain update step carries: its change, the stored item and the document's. */
  const updateOf = <I extends { readonly name: string }, C>(
    section: Section,
    item: Located<I>,
    current: C,
    fields: ReadonlyArray<string>
  ) => ({ change: changeOf(section, item, fields), current, item: item.value })

  // secrets: their names; a value only from valueFrom, when it differs from the stored one
  const resolvedAt = (at: string) => options.resolved.get(at)
  const newValue = (at: string) => {
    const resolved = resolvedAt(at)
    return resolved?._tag === "Value" && !resolved.stored ? resolved.value : undefined
  }
  diff("secrets", doc.secrets, state.secrets, secretFull, (s) => secretFull({ name: s.name }), {
    add: (item, change) => {
      const resolved = resolvedAt(item.at)
      if (resolved?._tag === "Value") return { change, _tag: "SecretSet", value: resolved.value }
      warnings.push(
        `${item.at}: secret ${JSON.stringify(item.value.name)} has no value yet; calls that use it fail until ` +
          `it is set (janus secret set ${item.value.name}` +
          (resolved?._tag === "NotRead"
            ? "; valueFrom is not read from the server's environment over the admin API)"
            : ", or give valueFrom.env)")
      )
      return undefined
    },
    extra: (item) => newValue(item.at) === undefined ? [] : ["value"],
    // only the value can differ (a secret's full form is its name)
    change: (item, _current, fields) => ({
      change: changeOf("secrets", item, fields),
      _tag: "SecretSet",
      value: newValue(item.at)!
    }),
    remove: (current, change) => ({ change, _tag: "SecretDelete", current })
  })

  diff("connections", doc.connections, state.connections, connectionFull, (c) => connectionFull(connectionInput(c)), {
    add: (item, change) => ({ change, _tag: "ConnectionCreate", item: item.value }),
    change: (item, current, fields) => ({
      _tag: "ConnectionUpdate",
      ...updateOf("connections", item, current, fields)
    }),
    remove: (current, change) => ({ change, _tag: "ConnectionDelete", current })
  })

  const connectionNames = new Map(state.connections.map((c) => [c.id, c.name]))
  diff(
    "endpoints",
    doc.endpoints,
    state.endpoints,
    endpointFull,
    (e) => endpointFull(endpointItem(e, connectionNames.get(e.connectionId) ?? "")),
    {
      add: (item, change) => ({ change, _tag: "EndpointCreate", item: item.value }),
      change: (item, current, fields) => ({ _tag: "EndpointUpdate", ...updateOf("endpoints", item, current, fields) }),
      remove: (current, change) => ({ change, _tag: "EndpointDelete", current })
    }
  )

  diff("virtualServers", doc.virtualServers, state.virtualServers, virtualServerFull, (s) => virtualServerFull(s), {
    add: (item, change) => ({ change, _tag: "VirtualServerCreate", item: item.value }),
    change: (item, current, fields) => ({
      _tag: "VirtualServerUpdate",
      ...updateOf("virtualServers", item, current, fields)
    }),
    remove: (current, change) => ({ change, _tag: "VirtualServerDelete", current })
  })

  diff(
    "clientTokens",
    doc.clientTokens,
    state.clientTokens,
    clientTokenFull,
    (t) => clientTokenFull(clientTokenItem(t)),
    {
      add: (item, change) => {
        if (item.value.valueFrom === undefined && item.value.revoked !== true && !options.issueTokens) {
          problems.push({
            path: within(item.at, "valueFrom"),
            message: "missing: a token this document creates needs valueFrom.env here (a new value would be " +
              "shown to no one); expected { env: NAME }, or create it with janus apply or janus token create"
          })
        }
        const resolved = resolvedAt(item.at)
        return {
          change,
          _tag: "ClientTokenCreate",
          item: item.value,
          value: resolved?._tag === "Value" ? resolved.value : undefined
        }
      },
      extra: (item) => newValue(item.at) === undefined ? [] : ["value"],
      change: (item, current, fields) => ({
        change: changeOf("clientTokens", item, fields),
        _tag: "ClientTokenUpdate",
        current,
        item: item.value,
        value: newValue(item.at),
        definition: fields.some((f) => f !== "revoked" && f !== "value"),
        revoke: fields.includes("revoked")
      }),
      remove: (current, change) => ({ change, _tag: "ClientTokenDelete", current })
    }
  )

  if (problems.length > 0) return invalid(problems)

  const steps: Array<Step> = SECTIONS.flatMap((section) => writes[section])
  if (options.prune) steps.push(...[...SECTIONS].reverse().flatMap((section) => removals[section]))
  const changes = SECTIONS.flatMap((section) =>
    ACTIONS.flatMap((action) =>
      [...writes[section], ...removals[section]].map((s) => s.change).filter((c) => c.action === action).sort(byName)
    )
  )
  return { plan: { changes, unchanged, prune: options.prune, warnings }, steps }
}
