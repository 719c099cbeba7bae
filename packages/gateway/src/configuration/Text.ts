/**
 * Documents and plans as text: what `janus export` writes and what
 * `janus apply` prints.
 *
 * **Rules**
 *
 * - YAML is written for YAML 1.2 readers (the one `janus apply` is), without
 *   anchors or folded lines; JSON with two-space indentation. Both end with
 *   a newline, and the same document always gives the same text.
 * - A plan is a diff: `+` added, `~` changed (with the changed fields), `-`
 *   removed; a removal that was not carried out (no `--prune`) says so.
 *   Lines never carry a value (no secret or token is part of a plan).
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { Section } from "./Document.ts"
import type { Change, Plan } from "./Plan.ts"

const yaml = Effect.promise(() => import("yaml"))

export type Format = "yaml" | "json"

/** `document` as YAML or JSON text. */
export const write = (document: unknown, format: Format): Effect.Effect<string> =>
  format === "json"
    ? Effect.succeed(`${JSON.stringify(document, null, 2)}\n`)
    : Effect.map(yaml, (Yaml) =>
      Yaml.stringify(document, { version: "1.2", lineWidth: 0, aliasDuplicateObjects: false, indentSeq: true }))

/** How a section's resources are called in a plan. */
export const NOUNS: Readonly<Record<Section, string>> = {
  secrets: "secret",
  connections: "connection",
  endpoints: "endpoint",
  virtualServers: "virtual server",
  clientTokens: "client token"
}

const SIGNS = { add: "+", change: "~", remove: "-" } as const

/** One line of a plan, e.g. `~ endpoint get_repo (description, inputSchema)`. */
export const line = (change: Change, prune: boolean): string => {
  const what = `${SIGNS[change.action]} ${NOUNS[change.section]} ${change.name}`
  if (change.action === "change") return `${what} (${change.fields.join(", ")})`
  if (change.action === "remove" && !prune) return `${what} (not in the document; kept: apply with --prune to remove)`
  return what
}

/** Counts, e.g. `2 to add, 1 to change, 0 to remove, 12 unchanged`. */
export const summary = (plan: Plan): string => {
  const count = (action: Change["action"]) => plan.changes.filter((c) => c.action === action).length
  const removed = count("remove")
  return `${count("add")} to add, ${count("change")} to change, ${removed} to remove` +
    (removed > 0 && !plan.prune ? " (kept without --prune)" : "") +
    `, ${plan.unchanged} unchanged`
}

/** The plan as lines for people: the summary, each change, each warning. */
export const plan = (plan: Plan): ReadonlyArray<string> => [
  `Plan: ${summary(plan)}`,
  ...plan.changes.map((change) => `  ${line(change, plan.prune)}`),
  ...plan.warnings.map((warning) => `warning: ${warning}`)
]
