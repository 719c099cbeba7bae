/**
 * Each kustomization a user may apply (base, overlays/dev, overlays/prod)
 * renders, every object is valid for Kubernetes 1.36 with no unknown field,
 * and the objects refer to each other correctly: what a Service, HPA, PDB,
 * Ingress or NetworkPolicy points at exists, and every Secret the pods need is
 * either rendered or created by the operator as deploy/README.md says.
 */
import { assert, describe, it } from "@effect/vitest"
import type { IContainerPort } from "kubernetes-models/v1/ContainerPort"
import type { INamespace } from "kubernetes-models/v1/Namespace"
import type { IServiceAccount } from "kubernetes-models/v1/ServiceAccount"
import * as Fs from "node:fs"
import * as Path from "node:path"
import {
  containers,
  DEPLOY_DIR,
  podSpec,
  Rendered,
  secretData,
  selects,
  type Target,
  TARGETS,
  type Workload
} from "../src/Manifests.ts"
import { KUBERNETES_VERSION, validateObject } from "../src/Validate.ts"

const targets = Object.keys(TARGETS) as Array<Target>
const readme = Fs.readFileSync(Path.join(DEPLOY_DIR, "README.md"), "utf8")

/** The keys each `kubectl ... create secret generic NAME` command of the README sets (continued lines included). */
const documentedSecrets = (): Map<string, Set<string>> => {
  const secrets = new Map<string, Set<string>>()
  const commands = readme.replace(/\\\n/g, " ").split("\n").filter((line) =>
    /kubectl\b.*create secret generic/.test(line)
  )
  for (const command of commands) {
    const name = /create secret generic ([a-z0-9-]+)/.exec(command)![1]!
    const keys = secrets.get(name) ?? new Set<string>()
    for (const m of command.matchAll(/--from-literal=([A-Za-z_][A-Za-z0-9_]*)=/g)) keys.add(m[1]!)
    secrets.set(name, keys)
  }
  return secrets
}

const ports = (w: Workload): Array<IContainerPort> => containers(w).flatMap((c) => c.ports ?? [])
const podsSelectedBy = (r: Rendered, selector: Record<string, string> | undefined) =>
  r.workloads.filter((w) => selects({ matchLabels: selector ?? {} }, w.spec!.template.metadata?.labels))

describe.each(targets)("kustomization %s", (target) => {
  const r = Rendered.of(target)

  it(`every object is valid for Kubernetes ${KUBERNETES_VERSION}, with no unknown field`, () => {
    const problems = r.objects.flatMap((o) =>
      validateObject(o).map((p) => `${o.kind}/${o.metadata.name}${p.startsWith("/") ? "" : " "}${p}`)
    )
    assert.deepStrictEqual(problems, [])
  })

  it("has the gateway, its autoscaling and disruption budget, Postgres, Ingress and NetworkPolicies", () => {
    const names = new Set(r.objects.map((o) => `${o.kind}/${o.metadata.name}`))
    for (
      const expected of [
        "Deployment/janus",
        "Service/janus",
        "ConfigMap/janus",
        "ServiceAccount/janus",
        "HorizontalPodAutoscaler/janus",
        "PodDisruptionBudget/janus",
        "Ingress/janus",
        "NetworkPolicy/janus",
        "StatefulSet/janus-db",
        "Service/janus-db",
        "NetworkPolicy/janus-db"
      ]
    ) assert.isTrue(names.has(expected), `${target} lacks ${expected}`)
    assert.strictEqual(names.has("Deployment/janus-redis"), target === "prod", "Redis is in prod only")
  })

  it("puts every object in the overlay's own Namespace (base has none)", () => {
    const namespaces = r.all<INamespace>("Namespace").map((n) => n.metadata!.name!)
    if (target === "base") {
      assert.deepStrictEqual(namespaces, [])
      assert.isTrue(r.objects.every((o) => o.metadata.namespace === undefined))
    } else {
      assert.strictEqual(namespaces.length, 1)
      const ns = r.all<INamespace>("Namespace")[0]!
      assert.strictEqual(ns.metadata!.labels?.["pod-security.kubernetes.io/enforce"], "restricted")
      for (const o of r.objects) if (o.kind !== "Namespace") assert.strictEqual(o.metadata.namespace, namespaces[0])
    }
  })

  it("renders Secrets only in dev, so `kubectl apply -k` never overwrites real credentials", () => {
    assert.deepStrictEqual(r.secrets.map((s) => s.metadata!.name).sort(), target === "dev" ? ["janus", "janus-db"] : [])
  })

  it("every Service selects pods that have its target ports", () => {
    for (const svc of r.services) {
      const pods = podsSelectedBy(r, svc.spec!.selector)
      assert.isAbove(pods.length, 0, `Service ${svc.metadata!.name} selects no pods`)
      for (const port of svc.spec!.ports ?? []) {
        for (const w of pods) {
          const found = ports(w).some((p) =>
            typeof port.targetPort === "string" ? p.name === port.targetPort : p.containerPort === port.targetPort
          )
          assert.isTrue(found, `Service ${svc.metadata!.name} port ${port.name} has no target in ${w.metadata!.name}`)
        }
      }
    }
  })

  it("the HPA targets the gateway Deployment, which leaves `replicas` to it", () => {
    const ref = r.hpa.spec!.scaleTargetRef
    assert.deepStrictEqual([ref.apiVersion, ref.kind, ref.name], ["apps/v1", "Deployment", "janus"])
    assert.isUndefined(r.deployment.spec!.replicas)
  })

  it("the PodDisruptionBudget and the Deployment select the same pods", () => {
    assert.isTrue(selects(r.pdb.spec!.selector, r.deployment.spec!.template.metadata!.labels))
    assert.isTrue(selects(r.deployment.spec!.selector, r.deployment.spec!.template.metadata!.labels))
  })

  it("the Ingress routes to an existing Service port", () => {
    for (const ingress of r.ingresses) {
      for (const rule of ingress.spec!.rules ?? []) {
        for (const path of rule.http!.paths) {
          const backend = path.backend.service!
          const svc = r.get<any>("Service", backend.name)
          assert.isTrue(
            svc.spec.ports.some((p: any) => p.name === backend.port!.name || p.port === backend.port!.number),
            `Ingress ${ingress.metadata!.name} routes to a missing port of ${backend.name}`
          )
        }
      }
    }
  })

  it("every NetworkPolicy applies to some pods, and the gateway's admits only the ingress controller", () => {
    for (const np of r.networkPolicies) {
      assert.isAbove(podsSelectedBy(r, np.spec!.podSelector?.matchLabels).length, 0, np.metadata!.name)
      assert.deepStrictEqual(np.spec!.policyTypes, ["Ingress", "Egress"])
    }
    const gateway = r.get<any>("NetworkPolicy", "janus")
    assert.strictEqual(gateway.spec.ingress.length, 1)
    assert.strictEqual(
      gateway.spec.ingress[0].from[0].namespaceSelector.matchLabels["kubernetes.io/metadata.name"],
      "ingress-nginx"
    )
    const egressPorts = gateway.spec.egress.flatMap((rule: any) => rule.ports.map((p: any) => p.port))
    for (const port of [53, 5432, 6379, 443]) assert.include(egressPorts, port)
  })

  it("the StatefulSet's governing Service is headless, and every volume mount has its volume", () => {
    const db = r.database
    const svc = r.get<any>("Service", db.spec!.serviceName!)
    assert.strictEqual(svc.spec.clusterIP, "None")
    for (const w of r.workloads) {
      const volumes = new Set([
        ...(podSpec(w).volumes ?? []).map((v) => v.name),
        ...((w as any).spec.volumeClaimTemplates ?? []).map((t: any) => t.metadata.name)
      ])
      for (const c of containers(w)) {
        for (const m of c.volumeMounts ?? []) {
          assert.isTrue(volumes.has(m.name), `${w.metadata!.name}/${c.name} mounts missing volume ${m.name}`)
        }
      }
      const sa = podSpec(w).serviceAccountName
      if (sa !== undefined) assert.isDefined(r.find<IServiceAccount>("ServiceAccount", sa))
    }
  })

  it("every ConfigMap a pod uses is rendered; every Secret is rendered or documented for the operator", () => {
    for (const w of r.workloads) {
      for (const c of containers(w)) {
        for (const source of c.envFrom ?? []) {
          if (source.configMapRef) assert.isDefined(r.find("ConfigMap", source.configMapRef.name!))
          assert.isUndefined(source.secretRef, "name Secret keys one by one, so each is checked")
        }
        for (const e of c.env ?? []) {
          const ref = e.valueFrom?.secretKeyRef
          if (ref === undefined) continue
          const secret = r.secrets.find((s) => s.metadata!.name === ref.name)
          if (secret !== undefined) {
            assert.property(secretData(secret), ref.key, `Secret ${ref.name} lacks ${ref.key}`)
          } else {
            // Created by hand: deploy/README.md must show the key in its create command.
            assert.notStrictEqual(target, "dev", "dev renders every Secret it needs")
            assert.isTrue(
              documentedSecrets().get(ref.name!)?.has(ref.key),
              `deploy/README.md has no \`kubectl create secret generic ${ref.name}\` setting ${ref.key}`
            )
          }
        }
      }
    }
    for (const ingress of r.ingresses) {
      for (const tls of ingress.spec!.tls ?? []) assert.include(readme, tls.secretName!)
    }
  })
})
