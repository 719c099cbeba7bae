/**
 * A kustomize renderer for the subset of kustomize that `deploy/k8s` uses.
 *
 * **Why our own renderer.** kustomize is a Go program. The npm packages that
 * run it download a release binary at install or run time, which cannot work
 * on machines that reach only the npm registry and adds an unpinned binary to
 * CI. The layout under `deploy/k8s` needs only a small subset, so this module
 * implements that subset, follows kustomize's semantics for it, and REFUSES
 * every other kustomization field, kind or patch form: a manifest change that
 * needs more fails the tests loudly instead of rendering differently from
 * `kubectl apply -k`.
 *
 * **Supported**
 *
 * - `resources`: YAML files (several documents each) and directories holding
 *   a `kustomization.yaml` of kind `Kustomization`.
 * - `components`: directories holding a `kustomization.yaml` of kind
 *   `Component`; a component adds its resources to, and runs its transformers
 *   on, everything accumulated so far (kustomize's order).
 * - `patches` with `path` to a strategic merge patch whose target is named by
 *   its own apiVersion/kind/metadata.name (no `target`, no inline `patch`, no
 *   JSON 6902). Merge semantics: maps merge recursively, `null` deletes a key,
 *   the lists in `MERGE_KEYS` merge item by item on their merge key, every
 *   other list is replaced whole (what Kubernetes' strategic merge does for
 *   lists without a patch merge key). `$patch` directives are refused.
 * - `namespace` (set on every namespaced object), `labels` with
 *   `includeSelectors`/`includeTemplates` false (metadata.labels only), and
 *   `images` (`newName`, `newTag`, `digest`).
 *
 * Transformers run in kustomize's order: patches, namespace, labels, images.
 *
 * @since 0.1.0
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as Yaml from "yaml"

/** One Kubernetes object as parsed from YAML. */
export type K8sObject = {
  apiVersion: string
  kind: string
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; [key: string]: unknown }
  [key: string]: unknown
}

type Json = null | boolean | number | string | Array<Json> | { [key: string]: Json }
type JsonObject = { [key: string]: Json }

/** A manifest or kustomization that this renderer cannot render faithfully. */
export class KustomizeError extends Error {
  override readonly name = "KustomizeError"
}

/**
 * Kinds whose scope the renderer knows; any other kind is refused, because the
 * namespace transformer must not guess whether to set a namespace on it.
 */
const NAMESPACED = new Set([
  "ConfigMap",
  "Secret",
  "Service",
  "ServiceAccount",
  "Deployment",
  "StatefulSet",
  "HorizontalPodAutoscaler",
  "PodDisruptionBudget",
  "Ingress",
  "NetworkPolicy",
  "PersistentVolumeClaim"
])
const CLUSTER_SCOPED = new Set(["Namespace"])

/**
 * Lists that strategic merge patches merge item by item, keyed by the field
 * named here (the `patchMergeKey` of the Kubernetes API). `ports` depends on
 * the item: container ports merge on `containerPort`, Service ports on `port`.
 */
const MERGE_KEYS: Record<string, (item: JsonObject) => string> = {
  containers: () => "name",
  initContainers: () => "name",
  ephemeralContainers: () => "name",
  env: () => "name",
  volumes: () => "name",
  volumeMounts: () => "mountPath",
  volumeDevices: () => "devicePath",
  imagePullSecrets: () => "name",
  hostAliases: () => "ip",
  topologySpreadConstraints: () => "topologyKey",
  conditions: () => "type",
  ports: (item) => "containerPort" in item ? "containerPort" : "port"
}

const KUSTOMIZATION_FIELDS = new Set([
  "apiVersion",
  "kind",
  "resources",
  "components",
  "patches",
  "namespace",
  "labels",
  "images"
])

const isObject = (value: unknown): value is JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * Parses a multi-document YAML text the way Kubernetes does: YAML 1.1, so an
 * unquoted `on`, `off`, `yes` or `no` is a boolean (sigs.k8s.io/yaml reads it
 * so), and a misquoted annotation fails schema validation here as it would
 * in the cluster. Empty documents are skipped.
 */
export const parseYaml = (text: string, source: string): Array<unknown> =>
  Yaml.parseAllDocuments(text, { version: "1.1" }).flatMap((doc) => {
    if (doc.errors.length > 0) {
      throw new KustomizeError(`${source}: ${doc.errors.map((e) => e.message).join("; ")}`)
    }
    const value: unknown = doc.toJS()
    return value === null || value === undefined ? [] : [value]
  })

const readYamlFile = (file: string): Array<unknown> => parseYaml(Fs.readFileSync(file, "utf8"), file)

const asK8sObject = (value: unknown, source: string): K8sObject => {
  if (
    !isObject(value) || typeof value.apiVersion !== "string" || typeof value.kind !== "string" ||
    !isObject(value.metadata) || typeof value.metadata.name !== "string"
  ) {
    throw new KustomizeError(`${source}: every document needs apiVersion, kind and metadata.name`)
  }
  if (!NAMESPACED.has(value.kind) && !CLUSTER_SCOPED.has(value.kind)) {
    throw new KustomizeError(`${source}: kind ${value.kind} is not known to this renderer (add it with its scope)`)
  }
  return value as unknown as K8sObject
}

const group = (apiVersion: string): string => apiVersion.includes("/") ? apiVersion.split("/")[0]! : ""

/** kustomize's resource id: group, kind, namespace and name (the version does not count). */
export const resourceId = (o: K8sObject): string =>
  `${group(o.apiVersion)}/${o.kind}/${o.metadata.namespace ?? "~"}/${o.metadata.name}`

const stringList = (value: unknown, field: string, source: string): Array<string> => {
  if (value === undefined) return []
  if (!Array.isArray(value) || !value.every((v) => typeof v === "string")) {
    throw new KustomizeError(`${source}: ${field} must be a list of paths`)
  }
  return value
}

// ---------------------------------------------------------------------------
// Strategic merge patch
// ---------------------------------------------------------------------------

const mergeValue = (original: Json | undefined, patch: Json, field: string, path: string): Json => {
  if (isObject(patch)) {
    return isObject(original) ? mergeMap(original, patch, path) : mergeMap({}, patch, path)
  }
  if (Array.isArray(patch)) {
    const keyOf = MERGE_KEYS[field]
    if (keyOf === undefined || !Array.isArray(original)) return structuredClone(patch)
    return mergeList(original, patch, keyOf, path)
  }
  return patch
}

const mergeMap = (original: JsonObject, patch: JsonObject, path: string): JsonObject => {
  const result: JsonObject = structuredClone(original)
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith("$")) {
      throw new KustomizeError(`${path}: strategic merge directive ${key} is not supported`)
    }
    if (value === null) delete result[key]
    else result[key] = mergeValue(result[key], value, key, `${path}.${key}`)
  }
  return result
}

const mergeList = (
  original: Array<Json>,
  patch: Array<Json>,
  keyOf: (item: JsonObject) => string,
  path: string
): Array<Json> => {
  const result = structuredClone(original)
  for (const item of patch) {
    if (!isObject(item)) throw new KustomizeError(`${path}: items of a merged list must be objects`)
    const key = keyOf(item)
    if (!(key in item)) throw new KustomizeError(`${path}: patch item lacks its merge key ${key}`)
    const index = result.findIndex((existing) => isObject(existing) && existing[key] === item[key])
    if (index === -1) result.push(mergeMap({}, item, path))
    else result[index] = mergeMap(result[index] as JsonObject, item, `${path}[${key}=${String(item[key])}]`)
  }
  return result
}

/** Applies one strategic merge patch to one object (exported for tests). */
export const strategicMerge = (original: K8sObject, patch: K8sObject): K8sObject =>
  mergeMap(original as unknown as JsonObject, patch as unknown as JsonObject, patch.kind) as unknown as K8sObject

// ---------------------------------------------------------------------------
// Transformers
// ---------------------------------------------------------------------------

const applyPatches = (objects: Array<K8sObject>, entries: unknown, dir: string, source: string): Array<K8sObject> => {
  if (entries === undefined) return objects
  if (!Array.isArray(entries)) throw new KustomizeError(`${source}: patches must be a list`)
  let result = objects
  for (const entry of entries) {
    if (!isObject(entry) || typeof entry.path !== "string" || Object.keys(entry).some((k) => k !== "path")) {
      throw new KustomizeError(`${source}: only \`patches: [{ path }]\` strategic merge patches are supported`)
    }
    const file = Path.join(dir, entry.path)
    for (const doc of readYamlFile(file)) {
      if (Array.isArray(doc)) throw new KustomizeError(`${file}: JSON 6902 patches are not supported`)
      const patch = asK8sObject(doc, file)
      const matches = result.filter((o) =>
        o.kind === patch.kind && group(o.apiVersion) === group(patch.apiVersion) &&
        o.metadata.name === patch.metadata.name &&
        (patch.metadata.namespace === undefined || o.metadata.namespace === patch.metadata.namespace)
      )
      if (matches.length !== 1) {
        throw new KustomizeError(
          `${file}: patch ${patch.kind}/${patch.metadata.name} matches ${matches.length} resources, expected 1`
        )
      }
      result = result.map((o) => o === matches[0] ? strategicMerge(o, patch) : o)
    }
  }
  return result
}

const applyNamespace = (objects: Array<K8sObject>, namespace: unknown, source: string): Array<K8sObject> => {
  if (namespace === undefined) return objects
  if (typeof namespace !== "string") throw new KustomizeError(`${source}: namespace must be a string`)
  return objects.map((o) => CLUSTER_SCOPED.has(o.kind) ? o : { ...o, metadata: { ...o.metadata, namespace } })
}

const applyLabels = (objects: Array<K8sObject>, entries: unknown, source: string): Array<K8sObject> => {
  if (entries === undefined) return objects
  if (!Array.isArray(entries)) throw new KustomizeError(`${source}: labels must be a list`)
  let result = objects
  for (const entry of entries) {
    if (
      !isObject(entry) || !isObject(entry.pairs) ||
      Object.keys(entry).some((k) => !["pairs", "includeSelectors", "includeTemplates"].includes(k)) ||
      entry.includeSelectors === true || entry.includeTemplates === true
    ) {
      throw new KustomizeError(
        `${source}: only labels with pairs (includeSelectors and includeTemplates false) are supported`
      )
    }
    const pairs = entry.pairs
    if (!Object.values(pairs).every((v) => typeof v === "string")) {
      throw new KustomizeError(`${source}: label values must be strings`)
    }
    result = result.map((o) => ({
      ...o,
      metadata: { ...o.metadata, labels: { ...o.metadata.labels, ...(pairs as Record<string, string>) } }
    }))
  }
  return result
}

/** Splits an image reference into name, tag and digest (a `:` after the last `/` starts the tag). */
export const splitImage = (image: string): { name: string; tag?: string; digest?: string } => {
  const [withoutDigest, digest] = image.split("@", 2) as [string, string | undefined]
  const colon = withoutDigest.lastIndexOf(":")
  const hasTag = colon > withoutDigest.lastIndexOf("/")
  const name = hasTag ? withoutDigest.slice(0, colon) : withoutDigest
  return {
    name,
    ...(hasTag ? { tag: withoutDigest.slice(colon + 1) } : {}),
    ...(digest !== undefined ? { digest } : {})
  }
}

const podSpecOf = (o: JsonObject): JsonObject | undefined => {
  const spec = o.spec
  if (!isObject(spec)) return undefined
  const template = spec.template
  return isObject(template) && isObject(template.spec) ? template.spec : undefined
}

const applyImages = (objects: Array<K8sObject>, entries: unknown, source: string): Array<K8sObject> => {
  if (entries === undefined) return objects
  if (!Array.isArray(entries)) throw new KustomizeError(`${source}: images must be a list`)
  for (const entry of entries) {
    if (
      !isObject(entry) || typeof entry.name !== "string" ||
      Object.entries(entry).some(([k, v]) =>
        !["name", "newName", "newTag", "digest"].includes(k) || typeof v !== "string"
      )
    ) {
      throw new KustomizeError(`${source}: images entries take name, newName, newTag and digest (strings)`)
    }
  }
  const rules = entries as Array<{ name: string; newName?: string; newTag?: string; digest?: string }>
  return objects.map((o) => {
    const copy = structuredClone(o) as unknown as JsonObject
    const podSpec = podSpecOf(copy)
    for (const field of ["containers", "initContainers"]) {
      const containers = podSpec?.[field]
      if (!Array.isArray(containers)) continue
      for (const container of containers) {
        if (!isObject(container) || typeof container.image !== "string") continue
        const image = splitImage(container.image)
        const rule = rules.find((r) => r.name === image.name)
        if (rule === undefined) continue
        const name = rule.newName ?? image.name
        if (rule.digest !== undefined) container.image = `${name}@${rule.digest}`
        else if (rule.newTag !== undefined) container.image = `${name}:${rule.newTag}`
        else {
          container.image = name + (image.tag !== undefined ? `:${image.tag}` : "") +
            (image.digest !== undefined ? `@${image.digest}` : "")
        }
      }
    }
    return copy as unknown as K8sObject
  })
}

// ---------------------------------------------------------------------------
// Build
// ---------------------------------------------------------------------------

const readKustomization = (dir: string): { file: string; k: JsonObject } => {
  const file = ["kustomization.yaml", "kustomization.yml", "Kustomization"].map((f) => Path.join(dir, f))
    .find((f) => Fs.existsSync(f))
  if (file === undefined) throw new KustomizeError(`${dir}: no kustomization.yaml`)
  const docs = readYamlFile(file)
  const k = docs[0]
  if (docs.length !== 1 || !isObject(k)) throw new KustomizeError(`${file}: expected one mapping`)
  for (const key of Object.keys(k)) {
    if (!KUSTOMIZATION_FIELDS.has(key)) {
      throw new KustomizeError(`${file}: field \`${key}\` is not supported by this renderer`)
    }
  }
  return { file, k }
}

const build = (dir: string, expectedKind: "Kustomization" | "Component", input: Array<K8sObject>) => {
  const { file, k } = readKustomization(dir)
  const kind = k.kind ?? "Kustomization"
  if (kind !== expectedKind) {
    throw new KustomizeError(`${file}: is a ${String(kind)}, expected a ${expectedKind} here`)
  }
  let objects = [...input]
  for (const entry of stringList(k.resources, "resources", file)) {
    if (/^[a-z]+:\/\//i.test(entry)) throw new KustomizeError(`${file}: remote resources are not supported`)
    const target = Path.join(dir, entry)
    const added = Fs.statSync(target).isDirectory()
      ? build(target, "Kustomization", [])
      : readYamlFile(target).map((doc) => asK8sObject(doc, target))
    objects.push(...added)
  }
  for (const entry of stringList(k.components, "components", file)) {
    objects = build(Path.join(dir, entry), "Component", objects)
  }
  const seen = new Set<string>()
  for (const o of objects) {
    const id = resourceId(o)
    if (seen.has(id)) throw new KustomizeError(`${file}: resource ${id} is defined twice`)
    seen.add(id)
  }
  objects = applyPatches(objects, k.patches, dir, file)
  objects = applyNamespace(objects, k.namespace, file)
  objects = applyLabels(objects, k.labels, file)
  objects = applyImages(objects, k.images, file)
  return objects
}

/** Renders the kustomization in `dir`, like `kustomize build dir`. */
export const render = (dir: string): Array<K8sObject> => build(Path.resolve(dir), "Kustomization", [])
