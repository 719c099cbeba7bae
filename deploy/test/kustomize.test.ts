/**
 * The kustomize renderer (src/Kustomize.ts) against small kustomizations
 * written to a temporary directory: each supported feature behaves as
 * kustomize's does, and each unsupported one is refused instead of ignored.
 */
import { afterEach, assert, beforeEach, describe, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { type K8sObject, KustomizeError, parseYaml, render, splitImage, strategicMerge } from "../src/Kustomize.ts"

let root = ""

beforeEach(() => {
  root = Fs.mkdtempSync(Path.join(Os.tmpdir(), "janus-kustomize-"))
})
afterEach(() => {
  Fs.rmSync(root, { recursive: true, force: true })
})

const write = (files: Record<string, string>) => {
  for (const [name, text] of Object.entries(files)) {
    const file = Path.join(root, name)
    Fs.mkdirSync(Path.dirname(file), { recursive: true })
    Fs.writeFileSync(file, text)
  }
}

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
  labels: { app: x }
spec:
  selector: { matchLabels: { app: x } }
  template:
    metadata: { labels: { app: x } }
    spec:
      containers:
        - name: main
          image: example/app:1.0
          args: ["--a", "--b"]
          env:
            - { name: A, value: "1" }
            - { name: B, value: "2" }
          ports:
            - { name: http, containerPort: 8080 }
        - name: sidecar
          image: registry.local:5000/example/side
`

const base = {
  "base/kustomization.yaml": "resources: [deployment.yaml, config.yaml]\n",
  "base/deployment.yaml": deployment,
  "base/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: { name: cfg }\ndata: { A: one, B: two }\n"
}

const containersOf = (o: K8sObject | undefined): Array<any> => (o as any).spec.template.spec.containers

const expectError = (f: () => unknown, pattern: RegExp) => {
  try {
    f()
  } catch (error) {
    assert.instanceOf(error, KustomizeError)
    assert.match((error as Error).message, pattern)
    return
  }
  assert.fail(`expected a KustomizeError matching ${pattern}`)
}

describe("Kustomize renderer", () => {
  it("renders resources from files and nested kustomizations, in order", () => {
    write({ ...base, "overlay/kustomization.yaml": "resources: [../base, extra.yaml]\n" })
    write({ "overlay/extra.yaml": "apiVersion: v1\nkind: Service\nmetadata: { name: svc }\n---\n" })
    const objects = render(Path.join(root, "overlay"))
    assert.deepStrictEqual(objects.map((o) => `${o.kind}/${o.metadata.name}`), [
      "Deployment/app",
      "ConfigMap/cfg",
      "Service/svc"
    ])
  })

  it("merges strategic patches: maps recursively, null deletes, named lists by key, other lists replaced", () => {
    write({
      ...base,
      "overlay/kustomization.yaml": "resources: [../base]\npatches:\n  - path: patch.yaml\n  - path: cfg.yaml\n",
      "overlay/patch.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: { name: app }
spec:
  template:
    spec:
      containers:
        - name: main
          args: ["--c"]
          env:
            - { name: B, value: "20" }
            - { name: C, value: "3" }
          ports:
            - { containerPort: 8080, protocol: TCP }
        - name: added
          image: example/added:2
`,
      "overlay/cfg.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: { name: cfg }\ndata: { A: null, C: three }\n"
    })
    const objects = render(Path.join(root, "overlay"))
    const [main, sidecar, added] = containersOf(objects[0])
    assert.deepStrictEqual(main.args, ["--c"])
    assert.deepStrictEqual(main.env, [{ name: "A", value: "1" }, { name: "B", value: "20" }, { name: "C", value: "3" }])
    assert.deepStrictEqual(main.ports, [{ name: "http", containerPort: 8080, protocol: "TCP" }])
    assert.strictEqual(main.image, "example/app:1.0")
    assert.strictEqual(sidecar.name, "sidecar")
    assert.deepStrictEqual(added, { name: "added", image: "example/added:2" })
    assert.deepStrictEqual((objects[1] as any).data, { B: "two", C: "three" })
  })

  it("merges Service ports on `port`", () => {
    const svc = parseYaml(
      "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec:\n  ports: [{port: 80, name: a}, {port: 81}]\n",
      "svc"
    )[0] as K8sObject
    const patch = parseYaml(
      "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec:\n  ports: [{port: 80, name: b}]\n",
      "patch"
    )[0] as K8sObject
    assert.deepStrictEqual((strategicMerge(svc, patch) as any).spec.ports, [{ port: 80, name: "b" }, { port: 81 }])
  })

  it("applies components after resources, before the kustomization's own patches", () => {
    write({
      ...base,
      "comp/kustomization.yaml": "kind: Component\nresources: [svc.yaml]\npatches: [{ path: cfg.yaml }]\n",
      "comp/svc.yaml": "apiVersion: v1\nkind: Service\nmetadata: { name: svc }\nspec: { type: ClusterIP }\n",
      "comp/cfg.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: { name: cfg }\ndata: { FROM: component }\n",
      "overlay/kustomization.yaml":
        "resources: [../base]\ncomponents: [../comp]\npatches: [{ path: svc.yaml }, { path: cfg.yaml }]\n",
      "overlay/svc.yaml": "apiVersion: v1\nkind: Service\nmetadata: { name: svc }\nspec: { type: NodePort }\n",
      "overlay/cfg.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: { name: cfg }\ndata: { FROM: overlay }\n"
    })
    const objects = render(Path.join(root, "overlay"))
    assert.strictEqual((objects.find((o) => o.kind === "Service") as any).spec.type, "NodePort")
    assert.strictEqual((objects.find((o) => o.kind === "ConfigMap") as any).data.FROM, "overlay")
  })

  it("sets the namespace on namespaced objects only, and adds labels to metadata only", () => {
    write({
      ...base,
      "overlay/kustomization.yaml": `namespace: team
resources: [../base, ns.yaml]
labels:
  - pairs: { env: test }
`,
      "overlay/ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: { name: team }\n"
    })
    const objects = render(Path.join(root, "overlay"))
    assert.deepStrictEqual(objects.map((o) => o.metadata.namespace), ["team", "team", undefined])
    assert.deepStrictEqual(objects[0]!.metadata.labels, { app: "x", env: "test" })
    assert.deepStrictEqual((objects[0] as any).spec.selector.matchLabels, { app: "x" })
    assert.deepStrictEqual((objects[0] as any).spec.template.metadata.labels, { app: "x" })
  })

  it("rewrites images by name: tag, new name, digest; registry ports are not tags", () => {
    write({
      ...base,
      "overlay/kustomization.yaml": `resources: [../base]
images:
  - { name: example/app, newTag: "2.0" }
  - { name: registry.local:5000/example/side, newName: other/side, digest: "sha256:abc" }
`
    })
    const [main, sidecar] = containersOf(render(Path.join(root, "overlay"))[0])
    assert.strictEqual(main.image, "example/app:2.0")
    assert.strictEqual(sidecar.image, "other/side@sha256:abc")
    assert.deepStrictEqual(splitImage("registry.local:5000/a/b"), { name: "registry.local:5000/a/b" })
    assert.deepStrictEqual(splitImage("a/b:1@sha256:x"), { name: "a/b", tag: "1", digest: "sha256:x" })
  })

  it("parses YAML 1.1 like Kubernetes: unquoted off/yes are booleans", () => {
    assert.deepStrictEqual(parseYaml("a: off\nb: \"off\"\nc: yes\n", "t"), [{ a: false, b: "off", c: true }])
  })

  it("refuses what it does not implement instead of rendering it differently", () => {
    write({ ...base, "k1/kustomization.yaml": "resources: [../base]\nnamePrefix: x-\n" })
    expectError(() => render(Path.join(root, "k1")), /namePrefix.*not supported/)
    write({ "k2/kustomization.yaml": "resources: [../base]\npatches: [{ path: p.yaml, target: { kind: X } }]\n" })
    expectError(() => render(Path.join(root, "k2")), /only `patches: \[\{ path \}\]`/)
    write({
      "k3/kustomization.yaml": "resources: [../base]\npatches: [{ path: p.yaml }]\n",
      "k3/p.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: { name: cfg }\ndata: { $patch: replace }\n"
    })
    expectError(() => render(Path.join(root, "k3")), /directive \$patch/)
    write({ "k4/kustomization.yaml": "resources: [../base]\nlabels: [{ pairs: { a: b }, includeSelectors: true }]\n" })
    expectError(() => render(Path.join(root, "k4")), /includeSelectors/)
    write({
      "k5/kustomization.yaml": "resources: [cr.yaml]\n",
      "k5/cr.yaml": "apiVersion: x/v1\nkind: Widget\nmetadata: { name: w }\n"
    })
    expectError(() => render(Path.join(root, "k5")), /kind Widget is not known/)
    write({ "k6/kustomization.yaml": "resources: [https://example.com/x.yaml]\n" })
    expectError(() => render(Path.join(root, "k6")), /remote resources/)
  })

  it("fails when a patch matches no resource, or a resource is defined twice", () => {
    write({
      ...base,
      "k1/kustomization.yaml": "resources: [../base]\npatches: [{ path: p.yaml }]\n",
      "k1/p.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: { name: nope }\ndata: { A: x }\n",
      "k2/kustomization.yaml": "resources: [../base, ../base/config.yaml]\n"
    })
    expectError(() => render(Path.join(root, "k1")), /matches 0 resources/)
    expectError(() => render(Path.join(root, "k2")), /defined twice/)
  })

  it("refuses a Component under resources and a Kustomization under components", () => {
    write({
      ...base,
      "comp/kustomization.yaml": "kind: Component\n",
      "k1/kustomization.yaml": "resources: [../comp]\n",
      "k2/kustomization.yaml": "components: [../base]\n"
    })
    expectError(() => render(Path.join(root, "k1")), /is a Component, expected a Kustomization/)
    expectError(() => render(Path.join(root, "k2")), /is a Kustomization, expected a Component/)
  })
})
