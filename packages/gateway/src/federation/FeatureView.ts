/**
 * One caller's view of the federated resources, templates and prompts: what
 * it lists and where each served name or URI goes. The rules (selection,
 * naming, collisions, routing of unlisted URIs) are `FeatureNames.ts`'s.
 *
 * @since 0.1.0
 */
import type { ConfigSnapshot } from "@janus/storage"
import { Predicate } from "effect"
import type { Caller } from "../mcp/Caller.ts"
import type { FeatureItem, FeatureKind } from "../mcp/Features.ts"
import {
  type Candidate,
  disambiguate,
  qualify,
  selects,
  selectsAny,
  templatePattern,
  unqualify
} from "./FeatureNames.ts"
import { exposedName, ORIGIN_META } from "./ToolNames.ts"
import { type Params } from "./upstream/Wire.ts"
import type { Upstream } from "./UpstreamPool.ts"

/** Where a served name goes: the upstream, its own name (or URI), the guard's label, and the metrics' one. */
export interface RouteTarget {
  readonly upstream: Upstream
  readonly name: string
  readonly label: string
  /**
   * The catalog name metrics label the request with: `<connection>/<name>` of
   * a listed resource or prompt, `<connection>/<uriTemplate>` of a template
   * the URI matched; `null` for a URI no upstream lists (labelled `other`:
   * the client chose it).
   */
  readonly metric: string | null
}

/** Two or more upstreams of one view exposing the same URI, template or prompt name. */
export interface Collision {
  readonly kind: "resource" | "resourceTemplate" | "prompt"
  /** The URI, template or (served) prompt name they share. */
  readonly name: string
  readonly connections: ReadonlyArray<string>
  /** `/mcp`, or the virtual server's name. */
  readonly view: string
}

export interface View {
  readonly lists: Readonly<Record<FeatureKind, ReadonlyArray<FeatureItem>>>
  readonly promptByName: ReadonlyMap<string, RouteTarget>
  readonly resourceByUri: ReadonlyMap<string, RouteTarget>
  readonly templateByServed: ReadonlyMap<string, RouteTarget>
  /** Where a `resources/read` of `uri` may go, in order (empty: nowhere). */
  readonly resolve: (uri: string) => ReadonlyArray<RouteTarget>
  readonly offers: { readonly resources: boolean; readonly prompts: boolean; readonly completions: boolean }
  readonly collisions: ReadonlyArray<Collision>
}

const byKey = (a: FeatureItem, b: FeatureItem) => a.key < b.key ? -1 : a.key > b.key ? 1 : 0

const empty: View = {
  lists: { resources: [], resourceTemplates: [], prompts: [] },
  promptByName: new Map(),
  resourceByUri: new Map(),
  templateByServed: new Map(),
  resolve: () => [],
  offers: { resources: false, prompts: false, completions: false },
  collisions: []
}

/** The view of `caller` over `upstreams` (only healthy ones count). */
export const viewOf = (
  upstreams: ReadonlyArray<Upstream>,
  snapshot: ConfigSnapshot | undefined,
  caller: Caller
): View => {
  const vs = caller.virtualServer === undefined ? undefined : snapshot?.virtualServerByName.get(caller.virtualServer)
  if (caller.virtualServer !== undefined && vs === undefined) return empty
  const members: ReadonlySet<string> | null = vs === undefined ? null : new Set(vs.tools)
  const tokens: ReadonlySet<string> | null = caller.tools ?? null
  const bare = vs?.bareNames === true
  const viewName = caller.virtualServer ?? "/mcp"
  const inView = upstreams
    .filter((u) =>
      u.state === "healthy" && u.session !== undefined &&
      selectsAny(members, u.connection.name) && selectsAny(tokens, u.connection.name)
    )
    .sort((a, b) => a.connection.name < b.connection.name ? -1 : a.connection.name > b.connection.name ? 1 : 0)
  const chosen = (u: Upstream, name: string) =>
    selects(members, u.connection.name, name) && selects(tokens, u.connection.name, name)
  // everything of the connection is selected (`<connection>/*`): unlisted URIs may go to it
  const whole = (u: Upstream) => chosen(u, "*")

  const byConnection = new Map(inView.map((u) => [u.connection.name, u]))
  const collect = (list: (u: Upstream) => ReadonlyArray<Params>, key: string) => {
    const out: Array<Candidate & { readonly upstream: Upstream }> = []
    for (const u of inView) {
      for (const item of list(u)) {
        const original = item[key] as string
        if (chosen(u, original)) out.push({ connection: u.connection.name, original, item, upstream: u })
      }
    }
    return out
  }
  const collisions: Array<Collision> = []
  const target = (c: Candidate & { readonly upstream: Upstream }): RouteTarget => ({
    upstream: c.upstream,
    name: c.original,
    label: `${c.connection}/${c.original}`,
    metric: `${c.connection}/${c.original}`
  })

  // prompts: prefixed (or bare), shared names qualified with the connection for each
  const prompts = collect((u) => u.features.prompts, "name")
  const promptNames = disambiguate(
    prompts,
    (c) => exposedName(bare ? "" : byConnection.get(c.connection)!.prefix, c.original),
    (c) => exposedName(`${c.connection}/`, c.original),
    false
  )
  const promptByName = new Map<string, RouteTarget>()
  const promptItems: Array<FeatureItem> = prompts.map((c, i) => {
    const name = promptNames.keys[i]!
    promptByName.set(name, target(c))
    const meta = Predicate.isReadonlyObject(c.item._meta) ? c.item._meta : {}
    return {
      key: name,
      json: { ...c.item, name, _meta: { ...meta, [ORIGIN_META]: { connection: c.connection, prompt: c.original } } }
    }
  })
  for (const [name, connections] of promptNames.collisions) {
    collisions.push({ kind: "prompt", name, connections, view: viewName })
  }

  // resources and templates: as given where unique, else the first connection keeps it
  const named = (
    candidates: ReadonlyArray<Candidate & { readonly upstream: Upstream }>,
    field: string,
    kind: Collision["kind"]
  ) => {
    const names = disambiguate(candidates, (c) => c.original, (c) => qualify(c.connection, c.original), true)
    const map = new Map<string, RouteTarget>()
    const items = candidates.map((c, i) => {
      const key = names.keys[i]!
      map.set(key, target(c))
      return { key, json: key === c.original ? c.item : { ...c.item, [field]: key } }
    })
    for (const [name, connections] of names.collisions) collisions.push({ kind, name, connections, view: viewName })
    return { map, items }
  }
  const resources = named(collect((u) => u.features.resources, "uri"), "uri", "resource")
  const templateCandidates = collect((u) => u.features.templates, "uriTemplate")
  const templates = named(templateCandidates, "uriTemplate", "resourceTemplate")
  const patterns = templateCandidates.map((c) => ({ c, pattern: templatePattern(c.original) }))

  // `<connection>\u0000<uri>` of every listed resource: a qualified URI naming one is a catalog name
  const listedUris = new Set(Array.from(resources.map.values(), (t) => `${t.upstream.connection.name}\u0000${t.name}`))
  const resolve = (uri: string): ReadonlyArray<RouteTarget> => {
    const qualified = unqualify(uri)
    if (qualified !== undefined) {
      const u = byConnection.get(qualified.connection)
      if (u !== undefined) {
        const label = `${u.connection.name}/${qualified.uri}`
        const listed = listedUris.has(`${u.connection.name}\u0000${qualified.uri}`)
        return [{ upstream: u, name: qualified.uri, label, metric: listed ? label : null }]
      }
    }
    const listed = resources.map.get(uri)
    if (listed !== undefined) return [listed]
    for (const { c, pattern } of patterns) {
      if (pattern?.test(uri) === true) {
        return [{
          upstream: c.upstream,
          name: uri,
          label: `${c.connection}/${uri}`,
          metric: `${c.connection}/${c.original}`
        }]
      }
    }
    return inView
      .filter((u) => Predicate.isReadonlyObject(u.session?.capabilities.resources) && whole(u))
      .map((u) => ({ upstream: u, name: uri, label: `${u.connection.name}/${uri}`, metric: null }))
  }

  const announces = (kind: string) => inView.some((u) => Predicate.isReadonlyObject(u.session?.capabilities[kind]))
  return {
    lists: {
      resources: resources.items.sort(byKey),
      resourceTemplates: templates.items.sort(byKey),
      prompts: promptItems.sort(byKey)
    },
    promptByName,
    resourceByUri: resources.map,
    templateByServed: templates.map,
    resolve,
    offers: {
      resources: announces("resources"),
      prompts: announces("prompts"),
      completions: announces("completions")
    },
    collisions
  }
}
