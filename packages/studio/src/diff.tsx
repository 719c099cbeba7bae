/**
 * A plan as a diff: one line per resource, `+` added, `~` changed (with the
 * fields), `−` removed, `=` unchanged. The OpenAPI import's preview and the
 * configuration document's preview show their plans with it.
 */
import type { ComponentChildren } from "preact"

export type DiffKind = "added" | "changed" | "removed" | "unchanged"

export interface DiffLine {
  readonly key: string
  readonly kind: DiffKind
  readonly children: ComponentChildren
}

const SIGNS: Record<DiffKind, string> = { added: "+", changed: "~", removed: "−", unchanged: "=" }

export const Diff = (props: { lines: ReadonlyArray<DiffLine>; label?: string }) => (
  <ul class="diff" aria-label={props.label}>
    {props.lines.map((line) => (
      <li key={line.key} class={line.kind === "unchanged" ? undefined : line.kind}>
        {SIGNS[line.kind]} {line.children}
      </li>
    ))}
  </ul>
)
