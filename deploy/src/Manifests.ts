/**
 * The rendered manifests of `deploy/k8s` and typed accessors over them, for
 * the manifest tests.
 *
 * @since 0.1.0
 */
import type { IDeployment } from "kubernetes-models/apps/v1/Deployment"
import type { IStatefulSet } from "kubernetes-models/apps/v1/StatefulSet"
import type { IHorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler"
import type { IIngress } from "kubernetes-models/networking.k8s.io/v1/Ingress"
import type { INetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy"
import type { IPodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget"
import type { IConfigMap } from "kubernetes-models/v1/ConfigMap"
import type { IContainer } from "kubernetes-models/v1/Container"
import type { IPodSpec } from "kubernetes-models/v1/PodSpec"
import type { ISecret } from "kubernetes-models/v1/Secret"
import type { IService } from "kubernetes-models/v1/Service"
import * as Path from "node:path"
import * as Yaml from "yaml"
import { type K8sObject, render } from "./Kustomize.ts"

/** deploy/ */
export const DEPLOY_DIR = Path.resolve(import.meta.dirname, "..")
/** The repository root. */
export const REPO_DIR = Path.resolve(DEPLOY_DIR, "..")

/** Every kustomization a user may apply, by name. */
export const TARGETS = {
  base: Path.join(DEPLOY_DIR, "k8s/base"),
  dev: Path.join(DEPLOY_DIR, "k8s/overlays/dev"),
  prod: Path.join(DEPLOY_DIR, "k8s/overlays/prod")
} as const

export type Target = keyof typeof TARGETS

/** The gateway's Deployment, its HPA and its ConfigMap are all named this. */
export const GATEWAY = "janus"
/** The Postgres StatefulSet and its Service. */
export const DATABASE = "janus-db"

export type Workload = IDeployment | IStatefulSet

/** One rendered kustomization with lookups by kind and name. */
export class Rendered {
  readonly target: Target
  readonly objects: ReadonlyArray<K8sObject>

  constructor(target: Target, objects: ReadonlyArray<K8sObject>) {
    this.target = target
    this.objects = objects
  }

  static of(target: Target): Rendered {
    return new Rendered(target, render(TARGETS[target]))
  }

  all<A>(kind: string): Array<A> {
    return this.objects.filter((o) => o.kind === kind) as unknown as Array<A>
  }

  find<A>(kind: string, name: string): A | undefined {
    return this.objects.find((o) => o.kind === kind && o.metadata.name === name) as A | undefined
  }

  get<A>(kind: string, name: string): A {
    const found = this.find<A>(kind, name)
    if (found === undefined) throw new Error(`${this.target}: no ${kind}/${name}`)
    return found
  }

  get deployment(): IDeployment {
    return this.get("Deployment", GATEWAY)
  }
  get gateway(): IContainer {
    return containers(this.deployment).find((c) => c.name === "gateway")!
  }
  get hpa(): IHorizontalPodAutoscaler {
    return this.get("HorizontalPodAutoscaler", GATEWAY)
  }
  get pdb(): IPodDisruptionBudget {
    return this.get("PodDisruptionBudget", GATEWAY)
  }
  get database(): IStatefulSet {
    return this.get("StatefulSet", DATABASE)
  }
  get workloads(): Array<Workload> {
    return [...this.all<IDeployment>("Deployment"), ...this.all<IStatefulSet>("StatefulSet")]
  }
  get services(): Array<IService> {
    return this.all("Service")
  }
  get configMaps(): Array<IConfigMap> {
    return this.all("ConfigMap")
  }
  get secrets(): Array<ISecret> {
    return this.all("Secret")
  }
  get ingresses(): Array<IIngress> {
    return this.all("Ingress")
  }
  get networkPolicies(): Array<INetworkPolicy> {
    return this.all("NetworkPolicy")
  }

  /**
   * The environment the gateway container gets from ConfigMaps (envFrom and
   * configMapKeyRef) and plain `value` entries, as raw text; Secret-sourced
   * entries are listed by name with `undefined`, and taken from a rendered
   * Secret when there is one.
   */
  gatewayEnvironment(): Map<string, string | undefined> {
    const env = new Map<string, string | undefined>()
    for (const source of this.gateway.envFrom ?? []) {
      if (source.configMapRef) {
        const data = this.find<IConfigMap>("ConfigMap", source.configMapRef.name!)?.data ?? {}
        for (const [k, v] of Object.entries(data)) env.set(`${source.prefix ?? ""}${k}`, v)
      }
      if (source.secretRef) {
        const secret = this.find<ISecret>("Secret", source.secretRef.name!)
        for (const [k, v] of Object.entries(secretData(secret))) env.set(`${source.prefix ?? ""}${k}`, v)
      }
    }
    for (const entry of this.gateway.env ?? []) {
      const cmRef = entry.valueFrom?.configMapKeyRef
      const secretRef = entry.valueFrom?.secretKeyRef
      if (entry.value !== undefined) env.set(entry.name, entry.value)
      else if (cmRef) env.set(entry.name, this.find<IConfigMap>("ConfigMap", cmRef.name!)?.data?.[cmRef.key])
      else if (secretRef) env.set(entry.name, secretData(this.find<ISecret>("Secret", secretRef.name!))[secretRef.key])
      else env.set(entry.name, undefined)
    }
    return env
  }
}

/**
 * The environment variables the configuration document reads
 * (`valueFrom: { env }` of its secrets and client tokens): the document is
 * the key JANUS_CONFIG_FILE names, in the ConfigMap volume mounted at its
 * directory. Empty when there is none.
 */
export const documentVariables = (r: Rendered): Set<string> => {
  const file = r.gatewayEnvironment().get("JANUS_CONFIG_FILE")
  if (file === undefined) return new Set()
  const mount = (r.gateway.volumeMounts ?? []).find((m) => m.mountPath === Path.dirname(file))
  const volume = (podSpec(r.deployment).volumes ?? []).find((v) => v.name === mount?.name)
  const text = volume?.configMap?.name === undefined
    ? undefined
    : r.find<IConfigMap>("ConfigMap", volume.configMap.name)?.data?.[Path.basename(file)]
  // the gateway reads documents as YAML 1.2
  const doc = text === undefined ? undefined : Yaml.parse(text, { version: "1.2" }) as Record<string, unknown>
  const items = [doc?.secrets, doc?.clientTokens].flatMap((list) => Array.isArray(list) ? list : [])
  return new Set(
    items.flatMap((item: { valueFrom?: { env?: unknown } }) =>
      typeof item?.valueFrom?.env === "string" ? [item.valueFrom.env] : []
    )
  )
}

/** A Secret's values as text, from `stringData` and base64 `data`. */
export const secretData = (secret: ISecret | undefined): Record<string, string> => ({
  ...Object.fromEntries(
    Object.entries(secret?.data ?? {}).map(([k, v]) => [k, Buffer.from(v, "base64").toString("utf8")])
  ),
  ...secret?.stringData
})

export const podSpec = (w: Workload): IPodSpec => w.spec!.template.spec!

export const containers = (w: Workload): Array<IContainer> => [
  ...(podSpec(w).initContainers ?? []),
  ...podSpec(w).containers
]

/** Whether a label selector's matchLabels all appear in `labels` (matchExpressions are not used here). */
export const selects = (
  selector: { matchLabels?: Record<string, string>; matchExpressions?: Array<unknown> } | undefined,
  labels: Record<string, string> | undefined
): boolean => {
  if (selector?.matchExpressions?.length) throw new Error("matchExpressions are not supported by these tests")
  return Object.entries(selector?.matchLabels ?? {}).every(([k, v]) => labels?.[k] === v)
}
