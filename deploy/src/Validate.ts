/**
 * Validates rendered objects against the Kubernetes OpenAPI schemas of ONE
 * pinned Kubernetes version.
 *
 * **Schemas.** `kubernetes-models@5.1.0` (pinned exactly in
 * deploy/package.json) ships the schemas of Kubernetes v1.36.0, precompiled
 * into one validate function per kind (ajv standalone code, no network, no
 * binary). That package merges in older releases' schemas so that removed
 * APIs can still be typed, so a schema existing there does not mean the API
 * is served: `SERVED` lists the apiVersion/kind pairs this repository uses, all
 * served by Kubernetes 1.36, and anything else (say `policy/v1beta1`
 * PodDisruptionBudget, removed in 1.25) is rejected.
 *
 * **Unknown fields.** Kubernetes' schemas do not forbid unknown properties,
 * so a typo such as `livenesProbe` passes schema validation while the API
 * server (strict field validation, kubectl's default) rejects it, or older
 * servers silently drop it. The validator reads every property it knows, so
 * we wrap the object in a Proxy that records each read: a key the validator
 * never read is a field the schema does not have.
 *
 * @since 0.1.0
 */
import { validate as deployment } from "kubernetes-models/_schemas/IoK8sApiAppsV1Deployment"
import { validate as statefulSet } from "kubernetes-models/_schemas/IoK8sApiAppsV1StatefulSet"
import { validate as hpa } from "kubernetes-models/_schemas/IoK8sApiAutoscalingV2HorizontalPodAutoscaler"
import { validate as configMap } from "kubernetes-models/_schemas/IoK8sApiCoreV1ConfigMap"
import { validate as namespace } from "kubernetes-models/_schemas/IoK8sApiCoreV1Namespace"
import { validate as secret } from "kubernetes-models/_schemas/IoK8sApiCoreV1Secret"
import { validate as service } from "kubernetes-models/_schemas/IoK8sApiCoreV1Service"
import { validate as serviceAccount } from "kubernetes-models/_schemas/IoK8sApiCoreV1ServiceAccount"
import { validate as ingress } from "kubernetes-models/_schemas/IoK8sApiNetworkingV1Ingress"
import { validate as networkPolicy } from "kubernetes-models/_schemas/IoK8sApiNetworkingV1NetworkPolicy"
import { validate as pdb } from "kubernetes-models/_schemas/IoK8sApiPolicyV1PodDisruptionBudget"

/** The Kubernetes version whose schemas `kubernetes-models@5.1.0` ships. */
export const KUBERNETES_VERSION = "1.36.0"

type SchemaError = { readonly instancePath: string; readonly keyword: string; readonly params: unknown }
type ValidateFunction = ((data: unknown) => boolean) & { errors?: ReadonlyArray<SchemaError> | null }

/** The apiVersion/kind pairs used here, each served by Kubernetes 1.36, with its schema. */
export const SERVED: Record<string, ValidateFunction> = {
  "v1/ConfigMap": configMap,
  "v1/Namespace": namespace,
  "v1/Secret": secret,
  "v1/Service": service,
  "v1/ServiceAccount": serviceAccount,
  "apps/v1/Deployment": deployment,
  "apps/v1/StatefulSet": statefulSet,
  "autoscaling/v2/HorizontalPodAutoscaler": hpa,
  "networking.k8s.io/v1/Ingress": ingress,
  "networking.k8s.io/v1/NetworkPolicy": networkPolicy,
  "policy/v1/PodDisruptionBudget": pdb
}

const track = (value: unknown, reads: WeakMap<object, Set<string>>): unknown => {
  if (value === null || typeof value !== "object") return value
  const read = reads.get(value) ?? new Set<string>()
  reads.set(value, read)
  return new Proxy(value, {
    get(target, key, receiver) {
      if (typeof key === "string") read.add(key)
      return track(Reflect.get(target, key, receiver), reads)
    }
  })
}

const unread = (value: unknown, reads: WeakMap<object, Set<string>>, path: string): Array<string> => {
  if (value === null || typeof value !== "object") return []
  const read = reads.get(value) ?? new Set<string>()
  return Object.entries(value).flatMap(([key, child]) =>
    Array.isArray(value) || read.has(key) ? unread(child, reads, `${path}/${key}`) : [`${path}/${key}`]
  )
}

/**
 * Problems with one object, one line each: not a served apiVersion/kind,
 * schema violations, unknown fields. Empty when the object is valid.
 */
export const validateObject = (object: { apiVersion?: unknown; kind?: unknown }): Array<string> => {
  const id = `${String(object.apiVersion)}/${String(object.kind)}`
  const validate = SERVED[id]
  if (validate === undefined) return [`${id} is not a served API used by these manifests (Kubernetes 1.36)`]
  const reads = new WeakMap<object, Set<string>>()
  const problems: Array<string> = []
  if (!validate(track(object, reads))) {
    for (const e of validate.errors ?? []) {
      problems.push(`${e.instancePath || "/"}: ${e.keyword} ${JSON.stringify(e.params)}`)
    }
  }
  for (const path of unread(object, reads, "")) problems.push(`${path}: unknown field`)
  return problems
}
